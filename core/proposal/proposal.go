package proposal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Errors callers branch on.
var (
	// ErrInvalid is wrapped by every validation failure; the message says
	// which field is wrong and why.
	ErrInvalid = errors.New("invalid proposal")
	// ErrDigestMismatch means a proposal's digest is not the digest of its
	// content: it was altered after it was made, or made by a buggy client.
	ErrDigestMismatch = errors.New("proposal digest does not match its content")
	// ErrInvalidTransition is wrapped by *TransitionError.
	ErrInvalidTransition = errors.New("invalid state transition")
)

// Bounds on what a proposal may carry.
const (
	MaxPatchBytes     = 4 << 20
	MaxReasonBytes    = 2000
	MaxMessageBytes   = 16 << 10
	MaxPathBytes      = 4096
	MaxPaths          = 1000
	MaxPlanSteps      = 10
	MaxRefBytes       = 255
	MaxIDBytes        = 128
	MaxAgentBytes     = 128
	MaxIdempotencyKey = 128
	MaxRepos          = 20
	MaxBranchesPerOp  = 100
)

// IDPattern is the form of a proposal id, written once: ValidID checks it,
// every message that states the rule quotes it, and the tools' input
// schemas carry it. A workspace id has the same form, since its handoff's
// ref is refs/sluice/proposals/<id>, and a restore point is named by the
// proposal that took it.
const IDPattern = `^[A-Za-z0-9_-]{1,128}$`

// The patterns of this package are compiled on first use (sync.OnceValue):
// compiled in init, their programs would cost every process that links the
// package, an idle sidecar among them, a few hundred KiB of heap and a
// millisecond at start.
var (
	idPattern    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(IDPattern) })
	agentPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`) })
	keyPattern   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`) })
	shaPattern   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`) })
)

// ValidID reports whether id may be used as a proposal id: it is checked
// before an id touches a path, a URL or a database key.
func ValidID(id string) bool { return idPattern().MatchString(id) }

// ValidAgent reports whether name is a sanitized agent name.
func ValidAgent(name string) bool { return agentPattern().MatchString(name) }

// Proposal is one immutable request from an agent. Everything but Digest is
// covered by the digest; once submitted, nothing in it changes. Its
// lifecycle state lives in the journal, not here.
type Proposal struct {
	ID string `json:"id"`
	Op Op     `json:"op"`
	// Repo is the canonical (symlinks resolved) absolute repository path.
	Repo string `json:"repo"`
	// Pinned holds the SHAs the proposal was made against; the executor
	// refuses to run when they no longer hold.
	Pinned Pinned `json:"pinned"`
	Args   Args   `json:"args"`
	Reason string `json:"reason"`
	// Agent is attribution (the sanitized client name), not authentication.
	Agent          string    `json:"agent"`
	IdempotencyKey string    `json:"idempotencyKey,omitempty"`
	CreatedAt      Timestamp `json:"createdAt"`
	ExpiresAt      Timestamp `json:"expiresAt"`
	// Sealed is the outcome the app computed when the proposal arrived;
	// an agent never sets it. The digest covers it.
	Sealed *Sealed `json:"sealed,omitempty"`
	// Origin is set by the app when the proposal came from a confined
	// session Sluice started; an agent never sets it. The digest covers it.
	Origin *Origin `json:"origin,omitempty"`
	// AgentToken is set by the app when Agent is the name of an HTTP token
	// (or a connector's token) that the sidecar authenticated, rather than
	// a name the program gave itself; an agent never sets it. The digest
	// covers it. See Identity.
	AgentToken bool `json:"agentToken,omitempty"`
	// Digest is "sha256:" + hex of the canonical JSON of everything else.
	Digest string `json:"digest,omitempty"`
}

// Pinned is what a proposal was made against.
type Pinned struct {
	// Refs maps each revision the proposal names (as written, or as a
	// full ref for branches) to the commit SHA it resolved to at submit.
	Refs map[string]string `json:"refs"`
	// WorktreeFingerprint, when set, identifies the state of the index and
	// working tree the proposal was made against.
	WorktreeFingerprint string `json:"worktreeFingerprint,omitempty"`
	// Repos pins refs in repositories other than Repo (branch deletion
	// across repositories, a submodule's checkout), keyed by canonical path.
	Repos map[string]map[string]string `json:"repos,omitempty"`
	// WorktreeNestedIn, for a worktree proposal, is the canonical working
	// tree the new worktree would be created inside ("" when it is inside
	// none). Files checked out there become part of that tree (and of
	// whatever runs in it), so the card rates it high. The sidecar computes
	// it and the app and the executor compute it again; the digest covers
	// it, so an approval is bound to what the card said.
	WorktreeNestedIn string `json:"worktreeNestedIn,omitempty"`
}

// wireProposal is Proposal with undecoded args, so that args can be decoded
// strictly into the type that the op names.
type wireProposal struct {
	ID             string          `json:"id"`
	Op             Op              `json:"op"`
	Repo           string          `json:"repo"`
	Pinned         Pinned          `json:"pinned"`
	Args           json.RawMessage `json:"args"`
	Reason         string          `json:"reason"`
	Agent          string          `json:"agent"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty"`
	CreatedAt      Timestamp       `json:"createdAt"`
	ExpiresAt      Timestamp       `json:"expiresAt"`
	Sealed         *Sealed         `json:"sealed,omitempty"`
	Origin         *Origin         `json:"origin,omitempty"`
	AgentToken     bool            `json:"agentToken,omitempty"`
	Digest         string          `json:"digest,omitempty"`
}

// UnmarshalJSON decodes strictly: unknown fields anywhere are refused, and
// args are decoded into the type that op names.
func (p *Proposal) UnmarshalJSON(b []byte) error {
	var w wireProposal
	if err := decodeStrict(b, &w); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	args, err := DecodeArgs(w.Op, w.Args)
	if err != nil {
		return err
	}
	*p = Proposal{
		ID: w.ID, Op: w.Op, Repo: w.Repo, Pinned: w.Pinned, Args: args, Reason: w.Reason,
		Agent: w.Agent, IdempotencyKey: w.IdempotencyKey, CreatedAt: w.CreatedAt, ExpiresAt: w.ExpiresAt,
		Sealed: w.Sealed, Origin: w.Origin, AgentToken: w.AgentToken, Digest: w.Digest,
	}
	return nil
}

// decodeStrict decodes exactly one JSON value with unknown fields refused.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// ComputeDigest returns "sha256:" + hex(sha256(canonical JSON of p without
// its digest)).
func (p Proposal) ComputeDigest() (string, error) {
	p.Digest = ""
	if p.Args == nil {
		return "", fmt.Errorf("%w: args are missing", ErrInvalid)
	}
	// nil and empty encode differently; a proposal that pins nothing must
	// have one digest whichever way it was built.
	if p.Pinned.Refs == nil {
		p.Pinned.Refs = map[string]string{}
	}
	c, err := canonical(p)
	if err != nil {
		return "", fmt.Errorf("proposal digest: %w", err)
	}
	sum := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Seal sets p.Digest from p's content.
func (p *Proposal) Seal() error {
	d, err := p.ComputeDigest()
	if err != nil {
		return err
	}
	p.Digest = d
	return nil
}

// VerifyDigest reports ErrDigestMismatch unless p.Digest is the digest of
// p's content.
func (p Proposal) VerifyDigest() error {
	d, err := p.ComputeDigest()
	if err != nil {
		return err
	}
	if p.Digest != d {
		return ErrDigestMismatch
	}
	return nil
}

// ShortDigest is the first 12 hex digits of a digest: what a card shows and
// a commit trailer carries.
func ShortDigest(digest string) string {
	h := strings.TrimPrefix(digest, "sha256:")
	if len(h) > 12 {
		h = h[:12]
	}
	return h
}

// Risk classifies p; see Risk. The sealed outcome can raise what the
// operation alone would be: an executable file, a large binary, CI
// configuration, an embedded bare repository, work that is lost.
func (p Proposal) Risk() Risk {
	r, _ := p.RiskWhy()
	return r
}

// RiskWhy is p's risk and one line saying why it is that, said before it
// runs (see RiskWhyIn).
func (p Proposal) RiskWhy() (Risk, string) { return p.RiskWhyIn(Future) }

// Destructive reports whether approving p can lose work: hard reset,
// discard, force-with-lease push, rewriting pushed history, branch delete.
func (p Proposal) Destructive() bool { return p.Risk() == RiskDestructive }

// FilesTouched lists the repository-relative paths p changes, and whether
// that list is complete (false when it cannot be known before execution,
// e.g. a merge or a commit of everything staged).
func (p Proposal) FilesTouched() ([]string, bool) {
	if p.Args == nil {
		return nil, false
	}
	if p.Sealed != nil && p.Sealed.Files != nil {
		return p.Sealed.SealedPaths(), true
	}
	return p.Args.FilesTouched()
}

// SameIntent reports whether a and b ask for the same thing: op, repository,
// arguments and reason, from the same confined session (or both from
// none: a session's retry never finds another caller's proposal). It
// ignores ids, times and pins, which differ when an agent retries the
// same request.
func SameIntent(a, b Proposal) bool {
	type intent struct {
		Op      Op     `json:"op"`
		Repo    string `json:"repo"`
		Args    Args   `json:"args"`
		Reason  string `json:"reason"`
		Session string `json:"session"`
	}
	session := func(p Proposal) string {
		if p.Origin == nil {
			return ""
		}
		return p.Origin.Session
	}
	ca, err1 := canonical(intent{a.Op, a.Repo, a.Args, a.Reason, session(a)})
	cb, err2 := canonical(intent{b.Op, b.Repo, b.Args, b.Reason, session(b)})
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

// Validate checks everything that can be checked without the file system:
// the envelope, the args of the op, that every revision the op names is
// pinned to a SHA, and the digest.
func (p Proposal) Validate() error {
	if !ValidID(p.ID) {
		return invalid("id", "must match %s", IDPattern)
	}
	if !p.Op.Valid() {
		return invalid("op", "unknown operation %q", p.Op)
	}
	if err := validAbsPath("repo", p.Repo); err != nil {
		return err
	}
	if p.Args == nil {
		return invalid("args", "missing")
	}
	if p.Args.Op() != p.Op {
		return invalid("args", "are for %q, not %q", p.Args.Op(), p.Op)
	}
	if err := p.Args.Validate(); err != nil {
		return err
	}
	if err := validReason(p.Reason); err != nil {
		return err
	}
	if !ValidAgent(p.Agent) {
		return invalid("agent", "must match ^[A-Za-z0-9._:-]{1,128}$")
	}
	if p.IdempotencyKey != "" && !keyPattern().MatchString(p.IdempotencyKey) {
		return invalid("idempotencyKey", "must match ^[A-Za-z0-9._:-]{1,128}$")
	}
	if p.CreatedAt.IsZero() || p.ExpiresAt.IsZero() {
		return invalid("createdAt", "createdAt and expiresAt are required")
	}
	if !p.ExpiresAt.After(p.CreatedAt.Time) {
		return invalid("expiresAt", "must be after createdAt")
	}
	if err := p.Pinned.validate(p.Args.Pins()); err != nil {
		return err
	}
	if rp, ok := p.Args.(repoPinner); ok {
		if err := rp.checkRepoPins(p.Pinned); err != nil {
			return err
		}
	} else if len(p.Pinned.Repos) > 0 {
		return invalid("pinned.repos", "this operation pins nothing in other repositories")
	}
	if n := p.Pinned.WorktreeNestedIn; n != "" {
		if p.Op != OpWorktree {
			return invalid("pinned.worktreeNestedIn", "only a worktree proposal is nested in a working tree")
		}
		if err := validAbsPath("pinned.worktreeNestedIn", n); err != nil {
			return err
		}
	}
	if err := p.Sealed.validate(p.ID); err != nil {
		return err
	}
	if err := p.Origin.validate(); err != nil {
		return err
	}
	if p.Digest == "" {
		return invalid("digest", "missing")
	}
	return p.VerifyDigest()
}

func (pin Pinned) validate(required []string) error {
	if len(pin.Refs) > 4*MaxBranchesPerOp {
		return invalid("pinned.refs", "too many")
	}
	for ref, sha := range pin.Refs {
		if !validPinKey(ref) {
			return invalid("pinned.refs", "%q is not a revision", ref)
		}
		if !shaPattern().MatchString(sha) {
			return invalid("pinned.refs", "%q is not pinned to a full lowercase SHA", ref)
		}
	}
	for _, ref := range required {
		if _, ok := pin.Refs[ref]; !ok {
			return invalid("pinned.refs", "%q is not pinned", ref)
		}
	}
	if f := pin.WorktreeFingerprint; f != "" && (len(f) > 128 || !utf8.ValidString(f)) {
		return invalid("pinned.worktreeFingerprint", "malformed")
	}
	if len(pin.Repos) > MaxRepos {
		return invalid("pinned.repos", "too many")
	}
	for repo, refs := range pin.Repos {
		if err := validAbsPath("pinned.repos", repo); err != nil {
			return err
		}
		for ref, sha := range refs {
			if !validPinKey(ref) || !shaPattern().MatchString(sha) {
				return invalid("pinned.repos", "%q is not pinned to a full lowercase SHA", ref)
			}
		}
	}
	return nil
}

// validPinKey accepts a revision or a full ref name as a pin key.
func validPinKey(s string) bool { return validRevision(s) }

func validReason(r string) error {
	if strings.TrimSpace(r) == "" {
		return invalid("reason", "is required: say why, for the person who decides")
	}
	if len(r) > MaxReasonBytes {
		return invalid("reason", "longer than %d bytes", MaxReasonBytes)
	}
	if !utf8.ValidString(r) || strings.ContainsRune(r, 0) {
		return invalid("reason", "is not valid text")
	}
	return nil
}

func validAbsPath(field, p string) error {
	if p == "" || !filepath.IsAbs(p) || filepath.Clean(p) != p || strings.ContainsRune(p, 0) || len(p) > MaxPathBytes {
		return invalid(field, "must be a clean absolute path")
	}
	return nil
}

func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
}

// Timestamp is a UTC instant with millisecond precision that marshals as
// RFC 3339 ("2025-01-02T03:04:05.678Z"). The text form is fixed, so the
// canonical JSON of a proposal, and therefore its digest, is the same
// wherever it is computed.
type Timestamp struct{ time.Time }

const timestampLayout = "2006-01-02T15:04:05.000Z"

// At truncates t to milliseconds in UTC.
func At(t time.Time) Timestamp { return Timestamp{t.UTC().Truncate(time.Millisecond)} }

// String is the RFC 3339 form.
func (t Timestamp) String() string { return t.UTC().Format(timestampLayout) }

// MarshalJSON writes the fixed RFC 3339 form.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte(`""`), nil
	}
	return []byte(`"` + t.String() + `"`), nil
}

// UnmarshalJSON accepts exactly the form MarshalJSON writes, so that a
// decoded and re-encoded timestamp is byte-identical.
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == "" {
		*t = Timestamp{}
		return nil
	}
	v, err := time.Parse(timestampLayout, s)
	if err != nil || v.Format(timestampLayout) != s {
		return fmt.Errorf("timestamp %q is not in the form %s", s, timestampLayout)
	}
	*t = Timestamp{v.UTC()}
	return nil
}

// MergeSource is the revision p merges, when it is a merge: what the
// app's workspace handoff and its evidence look for (a workspace's
// handed-off commits).
func (p Proposal) MergeSource() (string, bool) {
	if m, ok := p.Args.(*MergeArgs); ok {
		return m.Source, true
	}
	return "", false
}

// StackedOn is the pending proposal p's commit is to be sealed on top of
// (CommitArgs.Below), or "".
func (p Proposal) StackedOn() string {
	if c, ok := p.Args.(*CommitArgs); ok {
		return c.Below
	}
	return ""
}

// Ops is p's operation and, for a plan, each step's, in order.
func (p Proposal) Ops() []Op {
	ops := []Op{p.Op}
	if plan, ok := p.Args.(*PlanArgs); ok {
		for _, s := range plan.Steps {
			ops = append(ops, s.Op)
		}
	}
	return ops
}

// ChangesCheckoutOnly reports whether o changes the files of the
// branch's checkout and never the branch itself (a discard): what a
// confirmation says the branch's name stands for.
func (o Op) ChangesCheckoutOnly() bool { return o == OpDiscard }
