package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/sluicehq/sluice/core/canonjson"
)

// ErrInvalidEntry is returned by Append when an entry breaks the rules below.
// Nothing is written for a batch that holds an invalid entry.
var ErrInvalidEntry = errors.New("audit: invalid entry")

// Entry is what a caller records. The chain fields (id, sequence, hashes,
// signature, …) are added by the Ledger and cannot be set here.
//
// Every field is typed and short on purpose: the ledger is readable by anyone
// who can read the state directory, so raw repository paths, patches, file
// contents and secrets never go in. Repository paths go through RepoScope and
// tool arguments through ArgsFingerprint.
type Entry struct {
	// Exactly one of Tool and EventType is set: Tool for an MCP tool call,
	// EventType for anything else (a decision, an execution, a key event).
	Tool      string
	EventType string

	RepoScope       string // from RepoScope; raw paths are refused
	ArgsFingerprint string // from ArgsFingerprint
	Risk            string
	Approval        string
	Result          string
	SessionID       string // the agent's session
	DurationMS      int64  // written when non-zero; negative is refused
	Summary         string // truncated to MaxSummaryRunes
	ProposalID      string
	ProposalDigest  string

	// Data holds a few extra scalar details (string, bool, nil or integer).
	// It is written as a nested "data" object.
	Data map[string]any
}

const (
	// MaxSummaryRunes is the longest summary written; longer ones are cut on
	// a rune boundary and end in "…".
	MaxSummaryRunes = 512

	maxFieldBytes     = 256
	maxDataKeys       = 16
	maxDataKeyBytes   = 64
	maxDataValueBytes = 512

	repoScopePrefix = "repoPath:sha256:"
	sha256Prefix    = "sha256:"
)

// RepoScope returns the form in which a repository is named in the ledger:
// "repoPath:sha256:" and the hex SHA-256 of the cleaned path. Pass the
// absolute, symlink-resolved repository root so that one repository always
// gets one scope.
func RepoScope(path string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(path)))
	return repoScopePrefix + hex.EncodeToString(sum[:])
}

// ArgsFingerprint returns "sha256:" and the hex SHA-256 of the canonical JSON
// of v. It lets two calls with the same arguments be matched without the
// arguments themselves being written.
func ArgsFingerprint(v any) (string, error) {
	b, err := canonjson.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return sha256Prefix + hex.EncodeToString(sum[:]), nil
}

// reservedKeys are the names the ledger writes itself; Data may not use them
// either, so a reader never has to wonder which one it is looking at.
var reservedKeys = map[string]bool{
	"id": true, "auditSchemaVersion": true, "auditChainVersion": true,
	"sequence": true, "segmentId": true, "previousHash": true,
	"timestamp": true, "signatureKeyId": true, "signatureVersion": true,
	"entryHash": true, "signature": true,
	"tool": true, "event_type": true, "repo_scope": true,
	"args_fingerprint": true, "risk": true, "approval": true, "result": true,
	"session_id": true, "duration_ms": true, "summary": true,
	"proposal_id": true, "proposal_digest": true, "data": true,
}

// body validates e and returns its fields as a map ready for canonical
// encoding.
func (e Entry) body() (map[string]any, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidEntry, fmt.Sprintf(format, args...))
	}
	if (e.Tool == "") == (e.EventType == "") {
		return nil, bad("exactly one of Tool and EventType must be set")
	}
	m := make(map[string]any, 24)
	for _, f := range []struct {
		name, value string
	}{
		{"tool", e.Tool}, {"event_type", e.EventType}, {"risk", e.Risk},
		{"approval", e.Approval}, {"result", e.Result},
		{"session_id", e.SessionID}, {"proposal_id", e.ProposalID},
		{"proposal_digest", e.ProposalDigest},
	} {
		if f.value == "" {
			continue
		}
		if len(f.value) > maxFieldBytes || !utf8.ValidString(f.value) || hasControl(f.value) {
			return nil, bad("%s must be printable UTF-8 of at most %d bytes", f.name, maxFieldBytes)
		}
		m[f.name] = f.value
	}
	if e.RepoScope != "" {
		if !hasHexDigest(e.RepoScope, repoScopePrefix) {
			return nil, bad("repo_scope must come from RepoScope")
		}
		m["repo_scope"] = e.RepoScope
	}
	if e.ArgsFingerprint != "" {
		if !hasHexDigest(e.ArgsFingerprint, sha256Prefix) {
			return nil, bad("args_fingerprint must come from ArgsFingerprint")
		}
		m["args_fingerprint"] = e.ArgsFingerprint
	}
	if e.DurationMS < 0 {
		return nil, bad("duration_ms is negative")
	}
	if e.DurationMS > 0 {
		m["duration_ms"] = e.DurationMS
	}
	if e.Summary != "" {
		m["summary"] = truncateSummary(e.Summary)
	}
	if len(e.Data) > 0 {
		if len(e.Data) > maxDataKeys {
			return nil, bad("data has more than %d keys", maxDataKeys)
		}
		data := make(map[string]any, len(e.Data))
		for k, v := range e.Data {
			if k == "" || len(k) > maxDataKeyBytes || !utf8.ValidString(k) || reservedKeys[k] {
				return nil, bad("data key %q is empty, too long, not UTF-8 or reserved", k)
			}
			switch x := v.(type) {
			case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
			case string:
				if len(x) > maxDataValueBytes || !utf8.ValidString(x) {
					return nil, bad("data %q must be UTF-8 of at most %d bytes", k, maxDataValueBytes)
				}
			case json.Number:
				if !canonjson.IsIntegerLiteral([]byte(x)) {
					return nil, bad("data %q is not an integer", k)
				}
			default:
				return nil, bad("data %q must be a string, bool, nil or integer, not %T", k, v)
			}
			data[k] = v
		}
		m["data"] = data
	}
	return m, nil
}

// truncateSummary cuts s to MaxSummaryRunes runes, replacing invalid UTF-8
// first because a summary is free text that may come from anywhere.
func truncateSummary(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= MaxSummaryRunes {
		return s
	}
	n := 0
	for i := range s {
		if n == MaxSummaryRunes-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// hasHexDigest reports whether s is prefix followed by 64 lowercase hex
// digits. It takes bytes as well so that the verifier checks a line's
// fields in place, without copying them to strings.
func hasHexDigest[T string | []byte](s T, prefix string) bool {
	if len(s) != len(prefix)+64 || string(s[:len(prefix)]) != prefix {
		return false
	}
	for i := len(prefix); i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
