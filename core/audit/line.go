package audit

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"math"

	"github.com/sluicehq/sluice/core/canonjson"
)

// Format constants, fixed by format v1 and shared with FluxGit.
const (
	schemaVersion     = 1
	chainVersion      = 1
	signatureVersion  = 3
	checkpointVersion = 1
	genesisHash       = "genesis"

	// MaxLineBytes is the longest ledger line, newline excluded. Readers
	// never buffer more than this per line.
	MaxLineBytes = 256 << 10
)

var sigEncoding = base64.RawURLEncoding.Strict()

// lineInfo is what the chain needs from one line. The byte slices alias the
// line, so they are valid only as long as it is.
type lineInfo struct {
	legacy       bool
	seq          uint64
	segmentID    []byte
	previousHash []byte
	entryHash    []byte
	signed       bool
	// canonical is a legacy line's canonical form, which the chain folds
	// into its legacy anchor; it aliases the checker's buffer.
	canonical []byte
}

// Reasons are fixed strings: a verification failure names where and why,
// never what an entry said.
const (
	reasonJSON            = "line is not valid JSON"
	reasonNotObject       = "line is not a JSON object"
	reasonLegacyChain     = "line without auditChainVersion carries chain fields"
	reasonChainVersion    = "unsupported auditChainVersion"
	reasonSchemaVersion   = "unsupported auditSchemaVersion"
	reasonID              = "missing or invalid id"
	reasonSequence        = "missing or invalid sequence"
	reasonSegmentID       = "missing or invalid segmentId"
	reasonPreviousHash    = "missing or invalid previousHash"
	reasonTimestamp       = "missing or invalid timestamp"
	reasonEntryHash       = "missing or invalid entryHash"
	reasonSigFields       = "signatureKeyId or signatureVersion without signature"
	reasonSigKeyID        = "missing or invalid signatureKeyId"
	reasonSigVersion      = "unsupported signatureVersion"
	reasonNonInteger      = "entry holds a non-integer number"
	reasonCanonical       = "entry cannot be canonicalized"
	reasonHashMismatch    = "entryHash does not match the entry"
	reasonNoPublicKey     = "signed entry but no public key to check it"
	reasonKeyIDMismatch   = "signatureKeyId does not match the public key"
	reasonSigMalformed    = "malformed signature"
	reasonSigInvalid      = "signature does not verify"
	reasonBlank           = "blank line"
	reasonUnterminated    = "last line is not terminated by a newline"
	reasonTooLong         = "line longer than 256 KiB"
	reasonUnsigned        = "unsigned entry where signatures are required"
	reasonLegacyUnsigned  = "legacy entry where signatures are required"
	reasonLegacyPlacement = "legacy line after the start of the chain"
	reasonLegacyPruned    = "legacy lines before a pruned chain"
	reasonGenesis         = "first entry of the chain does not link to genesis"
	reasonLegacyAnchor    = "first entry after legacy lines does not link to their legacy anchor"
	reasonLegacyLink      = "previousHash names a legacy anchor but the entry does not start the chain after legacy lines"
	reasonSeqGap          = "sequence does not follow the previous entry"
	reasonLink            = "previousHash does not match the previous entryHash"
	reasonSegmentChange   = "segmentId changes within a file"
	reasonSegmentReuse    = "segmentId repeats the previous file's"
	reasonSegmentName     = "segmentId does not match the segment file name"
	reasonSegmentRange    = "segment file name does not match its first and last sequence"
	reasonSegmentEmpty    = "segment holds no chained entries"
)

// lineChecker parses and checks single lines, reusing its buffers from one
// line to the next.
type lineChecker struct {
	p      canonjson.Parser
	enc    canonjson.Encoder
	sigBuf []byte
	pub    ed25519.PublicKey
	keyID  string

	// foreignKeysOK accepts an entry signed by a key other than pub on the
	// strength of its hash alone. Only the writer's torn-tail repair sets it,
	// since several keys may legitimately write one ledger; the verifier
	// never does.
	foreignKeysOK bool
}

func newLineChecker(pub ed25519.PublicKey) *lineChecker {
	return &lineChecker{pub: pub, keyID: KeyID(pub)}
}

// fields parses a line and checks the form of its chain fields without
// hashing. It returns the sorted top-level members for check.
func (c *lineChecker) fields(line []byte) (lineInfo, []canonjson.Member, string) {
	var info lineInfo
	v, err := c.p.Parse(line)
	if err != nil {
		return info, nil, reasonJSON
	}
	if v.Kind != canonjson.Object {
		return info, nil, reasonNotObject
	}
	m := v.Obj
	cv, ok := canonjson.Lookup(m, "auditChainVersion")
	if !ok {
		// A line from before the chain existed. One that still carries
		// chain fields is a chained line with its version stripped. It may
		// be signed (FluxGit signed lines before it chained them).
		for _, k := range [...]string{"entryHash", "previousHash", "segmentId"} {
			if _, ok := canonjson.Lookup(m, k); ok {
				return info, nil, reasonLegacyChain
			}
		}
		info.legacy = true
		if _, ok := canonjson.Lookup(m, "signature"); ok {
			info.signed = true
		}
		return info, m, ""
	}
	if !isSmallInt(cv, chainVersion) {
		return info, nil, reasonChainVersion
	}
	if sv, ok := canonjson.Lookup(m, "auditSchemaVersion"); !ok || !isSmallInt(sv, schemaVersion) {
		return info, nil, reasonSchemaVersion
	}
	if id, ok := canonjson.Lookup(m, "id"); !ok || id.Kind != canonjson.String || len(id.Str) == 0 {
		return info, nil, reasonID
	}
	seq, ok := canonjson.Lookup(m, "sequence")
	if !ok || seq.Kind != canonjson.Number {
		return info, nil, reasonSequence
	}
	if info.seq, ok = parseSequence(seq.Str); !ok {
		return info, nil, reasonSequence
	}
	seg, ok := canonjson.Lookup(m, "segmentId")
	if !ok || seg.Kind != canonjson.String || len(seg.Str) == 0 || len(seg.Str) > 128 {
		return info, nil, reasonSegmentID
	}
	info.segmentID = seg.Str
	prev, ok := canonjson.Lookup(m, "previousHash")
	if !ok || prev.Kind != canonjson.String || !(string(prev.Str) == genesisHash || isDigest(prev.Str) || isLegacyAnchor(prev.Str)) {
		return info, nil, reasonPreviousHash
	}
	info.previousHash = prev.Str
	if ts, ok := canonjson.Lookup(m, "timestamp"); !ok || ts.Kind != canonjson.Number || !canonjson.IsIntegerLiteral(ts.Str) || ts.Str[0] == '-' {
		return info, nil, reasonTimestamp
	}
	eh, ok := canonjson.Lookup(m, "entryHash")
	if !ok || eh.Kind != canonjson.String || !isDigest(eh.Str) {
		return info, nil, reasonEntryHash
	}
	info.entryHash = eh.Str
	signed, reason := sigFields(m)
	if reason != "" {
		return info, nil, reason
	}
	info.signed = signed
	return info, m, ""
}

// sigFields checks that a line's (or a checkpoint's) signature fields come
// together and are well formed, and reports whether it is signed.
func sigFields(m []canonjson.Member) (signed bool, reason string) {
	_, hasSig := canonjson.Lookup(m, "signature")
	kid, hasKid := canonjson.Lookup(m, "signatureKeyId")
	sv, hasSV := canonjson.Lookup(m, "signatureVersion")
	switch {
	case !hasSig && (hasKid || hasSV):
		return false, reasonSigFields
	case !hasSig:
		return false, ""
	case !hasKid || kid.Kind != canonjson.String || len(kid.Str) != 16:
		return true, reasonSigKeyID
	case !hasSV || !isSmallInt(sv, signatureVersion):
		return true, reasonSigVersion
	}
	return true, ""
}

// signature decodes the signature of a signed m for verification with
// c.pub. verify is false, with no reason, for a signature by another key
// that the checker accepts unverified (foreignKeysOK).
func (c *lineChecker) signature(m []canonjson.Member) (raw [ed25519.SignatureSize]byte, verify bool, reason string) {
	kid, _ := canonjson.Lookup(m, "signatureKeyId")
	if c.pub == nil || string(kid.Str) != c.keyID {
		switch {
		case c.foreignKeysOK:
			return raw, false, ""
		case c.pub == nil:
			return raw, false, reasonNoPublicKey
		}
		return raw, false, reasonKeyIDMismatch
	}
	raw, ok := decodeSignature(m)
	if !ok {
		return raw, false, reasonSigMalformed
	}
	return raw, true, ""
}

// decodeSignature decodes m's signature member, which must be a string of
// exactly one encoded Ed25519 signature.
func decodeSignature(m []canonjson.Member) (raw [ed25519.SignatureSize]byte, ok bool) {
	sig, _ := canonjson.Lookup(m, "signature")
	if sig.Kind != canonjson.String || len(sig.Str) != sigEncoding.EncodedLen(len(raw)) {
		return raw, false
	}
	if n, err := sigEncoding.Decode(raw[:], sig.Str); err != nil || n != len(raw) {
		return raw, false
	}
	return raw, true
}

// check is fields plus the entry hash and, for a signed entry, the
// signature.
func (c *lineChecker) check(line []byte) (lineInfo, string) {
	info, m, reason := c.fields(line)
	if reason != "" {
		return info, reason
	}
	if info.legacy {
		return c.checkLegacy(info, m)
	}
	// One encoding serves both inputs: the hash input is the entry without
	// entryHash and signature, and the signature input is the same bytes
	// with entryHash spliced in where its sorted position falls.
	ehOff := -1
	hashed, reason := c.encodeMembers(m, func(k []byte) bool {
		switch string(k) {
		case "signature":
			return true
		case "entryHash":
			// Skip is asked before the separator goes in, so this is
			// where the member would have started.
			ehOff = len(c.enc.Buf)
			return true
		}
		return false
	})
	if reason != "" {
		return info, reason
	}
	sum := sha256.Sum256(hashed)
	var want [len(sha256Prefix) + 64]byte
	copy(want[:], sha256Prefix)
	hex.Encode(want[len(sha256Prefix):], sum[:])
	if !bytes.Equal(info.entryHash, want[:]) {
		return info, reasonHashMismatch
	}
	if !info.signed {
		return info, ""
	}
	raw, verify, reason := c.signature(m)
	if !verify {
		return info, reason
	}
	// entryHash passed isDigest, so its JSON form needs no escaping, and
	// auditChainVersion always sorts before it, so it always takes a comma.
	msg := append(c.sigBuf[:0], hashed[:ehOff]...)
	msg = append(msg, `,"entryHash":"`...)
	msg = append(msg, info.entryHash...)
	msg = append(msg, '"')
	msg = append(msg, hashed[ehOff:]...)
	c.sigBuf = msg
	if !ed25519.Verify(c.pub, msg, raw[:]) {
		return info, reasonSigInvalid
	}
	return info, ""
}

// checkLegacy verifies a signed legacy line the way FluxGit signed it (the
// canonical line without signature, and without signatureKeyId below
// signature version 2) and leaves its canonical form in info.canonical.
func (c *lineChecker) checkLegacy(info lineInfo, m []canonjson.Member) (lineInfo, string) {
	if info.signed {
		sv, hasSV := canonjson.Lookup(m, "signatureVersion")
		v2 := false
		if hasSV {
			n, ok := parseDigits(sv.Str)
			if sv.Kind != canonjson.Number || !ok {
				return info, reasonSigVersion
			}
			v2 = n >= 2
		}
		kid, hasKid := canonjson.Lookup(m, "signatureKeyId")
		switch {
		case c.pub == nil:
			return info, reasonNoPublicKey
		case hasKid && (kid.Kind != canonjson.String || string(kid.Str) != c.keyID):
			return info, reasonKeyIDMismatch
		}
		raw, ok := decodeSignature(m)
		if !ok {
			return info, reasonSigMalformed
		}
		msg, reason := c.encodeMembers(m, func(k []byte) bool {
			return string(k) == "signature" || (string(k) == "signatureKeyId" && !v2)
		})
		if reason != "" {
			return info, reason
		}
		if !ed25519.Verify(c.pub, msg, raw[:]) {
			return info, reasonSigInvalid
		}
	}
	canon, reason := c.encodeMembers(m, func([]byte) bool { return false })
	if reason != "" {
		return info, reason
	}
	info.canonical = canon
	return info, ""
}

// encodeMembers is the canonical form of the object m without the keys
// skip names; it aliases the checker's buffer. skip takes the key's bytes
// because a string made for an indirect call would be allocated per member.
func (c *lineChecker) encodeMembers(m []canonjson.Member, skip func(key []byte) bool) ([]byte, string) {
	e := &c.enc
	e.Buf = append(e.Buf[:0], '{')
	first := true
	for i := range m {
		if skip(m[i].Key) {
			continue
		}
		if !first {
			e.Buf = append(e.Buf, ',')
		}
		first = false
		err := e.StringBytes(m[i].Key)
		if err == nil {
			e.Buf = append(e.Buf, ':')
			err = e.Value(&m[i].Val, 1)
		}
		if errors.Is(err, canonjson.ErrNonInteger) {
			return nil, reasonNonInteger
		}
		if err != nil {
			return nil, reasonCanonical
		}
	}
	e.Buf = append(e.Buf, '}')
	return e.Buf, ""
}

// legacyAnchorPrefix and legacyAnchorLabel are FluxGit's: every line from
// before the chain is folded into an anchor,
// SHA256(prefix || previous anchor (32 zero bytes first) || canonical(line)),
// and the first chained entry links to "legacy-sha256:<hex>" of it, so no
// legacy line can change or go without the chain noticing.
const (
	legacyAnchorPrefix = "fluxgit-mcp-legacy-prefix-v1\x00"
	legacyAnchorLabel  = "legacy-sha256:"
)

// nextLegacyAnchor folds one legacy line's canonical form into anchor.
func nextLegacyAnchor(anchor [32]byte, canonical []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(legacyAnchorPrefix))
	h.Write(anchor[:])
	h.Write(canonical)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func legacyAnchorString(anchor [32]byte) string {
	return legacyAnchorLabel + hex.EncodeToString(anchor[:])
}

// isLegacyAnchor reports whether b is "legacy-sha256:" and 64 lowercase hex.
func isLegacyAnchor(b []byte) bool { return hasHexDigest(b, legacyAnchorLabel) }

func isSmallInt(v *canonjson.Value, want uint64) bool {
	n, ok := parseDigits(v.Str)
	return v.Kind == canonjson.Number && ok && n == want
}

// parseSequence accepts a positive integer literal that fits in uint64.
func parseSequence(lit []byte) (uint64, bool) {
	n, ok := parseDigits(lit)
	return n, ok && n > 0
}

// parseDigits parses an unsigned JSON integer literal (no sign, no leading
// zeros) that fits in uint64. It is hand-written because strconv would
// allocate on the verifier's per-line path.
func parseDigits(lit []byte) (uint64, bool) {
	if len(lit) == 0 || len(lit) > 20 || (lit[0] == '0' && len(lit) > 1) {
		return 0, false
	}
	var n uint64
	for _, c := range lit {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// isDigest reports whether b is "sha256:" and 64 lowercase hex digits.
func isDigest(b []byte) bool { return hasHexDigest(b, sha256Prefix) }
