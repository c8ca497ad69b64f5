package audit

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/core/canonjson"
)

// VerifyOptions tune Verify.
type VerifyOptions struct {
	// RequireSigned fails on any entry, legacy line or retention checkpoint
	// that carries no signature.
	RequireSigned bool
	// ExpectHead, when set, is an entry the ledger is known to have held
	// (the app's last own entry, or an anchor exported earlier). A chain
	// that ends before it has lost its tail, which no hash chain shows by
	// itself; one that holds a different entry at its sequence was
	// rewritten.
	ExpectHead *Head
}

// Head names one ledger entry by sequence and entryHash.
type Head struct {
	Sequence uint64
	Hash     string // "sha256:<64 hex digits>"
}

// ErrBadHead is returned by ParseHead for anything but SEQ:sha256:HEX.
var ErrBadHead = errors.New("audit: an expected head is SEQ:sha256:<64 hex digits>, with SEQ from 1")

// String is the SEQ:HASH form ParseHead reads.
func (h Head) String() string { return strconv.FormatUint(h.Sequence, 10) + ":" + h.Hash }

// ParseHead reads SEQ:HASH, where HASH is an entryHash ("sha256:" may be
// left off).
func ParseHead(s string) (Head, error) {
	seqStr, hash, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return Head{}, ErrBadHead
	}
	seq, err := strconv.ParseUint(seqStr, 10, 64)
	if err != nil || seq == 0 {
		return Head{}, ErrBadHead
	}
	hash = strings.TrimPrefix(hash, "sha256:")
	if len(hash) != 64 || strings.Trim(hash, "0123456789abcdef") != "" {
		return Head{}, ErrBadHead
	}
	return Head{Sequence: seq, Hash: "sha256:" + hash}, nil
}

// Report summarises a verified ledger. Entries = Chained + Legacy and
// Chained = Signed + Unsigned.
type Report struct {
	Entries int // lines read
	Chained int // entries with auditChainVersion
	Legacy  int // pre-chain lines, allowed only at the start of the oldest file
	// LegacySigned counts the legacy lines that carry a valid signature.
	LegacySigned int
	Signed       int // chained entries with a valid signature
	Unsigned     int // chained entries without a signature
	// Segments counts the files read: rotated segment files plus the active
	// file when it exists.
	Segments int
	// FirstSeq and LastSeq bound the retained chain; both are 0 when it holds
	// no chained entry.
	FirstSeq, LastSeq uint64
	// CheckpointUsed is the base name of the retention checkpoint that vouches
	// for pruned history, or "none" when the chain starts at sequence 1.
	CheckpointUsed string
	// CheckpointSigned reports whether that checkpoint was signed.
	CheckpointSigned bool
	// LastHash is the entryHash of the entry at LastSeq: with it, the
	// head can be kept elsewhere and given back as ExpectHead.
	LastHash string
	// HeadChecked says whether ExpectHead's entry was still retained and
	// matched; false when it was pruned behind a checkpoint (only its
	// presence in the chain's range was checked) or none was given.
	HeadChecked bool
}

// VerifyError is an integrity or signature failure. It names the file and
// line and why, and never repeats anything an entry contains.
type VerifyError struct {
	Segment string // base name of the ledger, segment or checkpoint file
	Line    int    // 1-based; 0 when the failure concerns the file as a whole
	Reason  string
}

func (e *VerifyError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("audit: verification failed: %s line %d: %s", e.Segment, e.Line, e.Reason)
	}
	return fmt.Sprintf("audit: verification failed: %s: %s", e.Segment, e.Reason)
}

// Verify checks the whole ledger at path: every rotated segment in sequence
// order, then the active file, reading line by line so memory stays bounded
// whatever the ledger's size. Each line must parse, its entryHash must match
// its canonical form, it must link to the line before by sequence and
// previousHash, its segmentId must be constant within its file and match the
// segment file's name, and a signed entry must carry pub's key id and a valid
// signature. When the retained chain does not start at sequence 1, exactly
// one retention checkpoint for its first sequence must exist, verify, and
// agree with the first retained entry.
//
// Integrity and signature failures are returned as *VerifyError; other
// errors are I/O errors. The Report counts what was read up to the failure.
func Verify(path string, pub ed25519.PublicKey, opts VerifyOptions) (Report, error) {
	rep := Report{CheckpointUsed: "none"}
	if pub != nil && len(pub) != ed25519.PublicKeySize {
		return rep, fmt.Errorf("audit: public key has %d bytes: %w", len(pub), ErrKeyInvalid)
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return rep, err
	}
	base := filepath.Base(path)
	d, err := listLedgerDir(path)
	if errors.Is(err, fs.ErrNotExist) {
		return rep, &VerifyError{Segment: base, Reason: "ledger file missing"}
	}
	if err != nil {
		return rep, err
	}
	if len(d.bad) > 0 {
		return rep, &VerifyError{Segment: d.bad[0], Reason: "unrecognised segment or checkpoint file name"}
	}
	for i := 1; i < len(d.segments); i++ {
		if d.segments[i].first == d.segments[i-1].first {
			return rep, &VerifyError{Segment: d.segments[i].name, Reason: "two segments start at the same sequence"}
		}
	}
	_, err = os.Lstat(path)
	activeExists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return rep, err
	}
	if !activeExists && len(d.segments) == 0 {
		return rep, &VerifyError{Segment: base, Reason: "ledger file missing"}
	}
	v := &verifier{
		c:    newLineChecker(pub),
		opts: opts,
		rep:  &rep,
		dir:  d,
		r:    bufio.NewReaderSize(nil, MaxLineBytes+1),
	}
	for i := range d.segments {
		if err := v.file(d.segments[i].path, d.segments[i].name, &d.segments[i], i == 0); err != nil {
			return rep, err
		}
		rep.Segments++
	}
	if activeExists {
		if err := v.file(path, base, nil, len(d.segments) == 0); err != nil {
			return rep, err
		}
		rep.Segments++
	}
	if h := opts.ExpectHead; h != nil {
		switch {
		case rep.LastSeq < h.Sequence:
			return rep, &VerifyError{Segment: base, Reason: fmt.Sprintf("entries missing after sequence %d: the ledger is known to have held sequence %d", rep.LastSeq, h.Sequence)}
		case v.headHash == "":
			// Pruned behind a checkpoint that vouches for it.
		case v.headHash != h.Hash:
			return rep, &VerifyError{Segment: base, Reason: fmt.Sprintf("the entry at sequence %d is not the expected head: the ledger was rewritten", h.Sequence)}
		default:
			rep.HeadChecked = true
		}
	}
	return rep, nil
}

type verifier struct {
	c    *lineChecker
	opts VerifyOptions
	rep  *Report
	dir  ledgerDir
	r    *bufio.Reader

	started     bool
	seq         uint64
	hash        []byte
	prevFileSeg []byte
	headHash    string // entryHash at opts.ExpectHead's sequence, once read
	// legacyAnchor folds the legacy lines before the chain (FluxGit's rule).
	legacyAnchor [32]byte
}

func (v *verifier) file(path, name string, seg *segmentFile, oldest bool) error {
	f, _, err := openRegular(path)
	if errors.Is(err, ErrNotRegular) {
		return &VerifyError{Segment: name, Reason: "not a regular file"}
	}
	if err != nil {
		return err
	}
	defer f.Close()
	v.r.Reset(f)
	fail := func(line int, reason string) error {
		return &VerifyError{Segment: name, Line: line, Reason: reason}
	}
	var (
		lineNo              int
		fileSeg             []byte
		fileFirst, fileLast uint64
	)
	for {
		line, err := v.r.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			return fail(lineNo+1, reasonTooLong)
		case errors.Is(err, io.EOF):
			if len(line) > 0 {
				return fail(lineNo+1, reasonUnterminated)
			}
		case err != nil:
			return fmt.Errorf("audit: reading %s: %w", name, err)
		}
		if err != nil {
			break
		}
		lineNo++
		body := line[:len(line)-1]
		if len(bytes.TrimSpace(body)) == 0 {
			return fail(lineNo, reasonBlank)
		}
		info, reason := v.c.check(body)
		if reason != "" {
			return fail(lineNo, reason)
		}
		v.rep.Entries++
		if info.legacy {
			switch {
			case !oldest || v.started:
				return fail(lineNo, reasonLegacyPlacement)
			case v.opts.RequireSigned && !info.signed:
				return fail(lineNo, reasonLegacyUnsigned)
			}
			v.legacyAnchor = nextLegacyAnchor(v.legacyAnchor, info.canonical)
			v.rep.Legacy++
			if info.signed {
				v.rep.LegacySigned++
			}
			continue
		}
		if isLegacyAnchor(info.previousHash) && (v.started || v.rep.Legacy == 0) {
			return fail(lineNo, reasonLegacyLink)
		}
		if !v.started {
			switch {
			case v.rep.Legacy > 0:
				if info.seq != 1 {
					return fail(lineNo, reasonLegacyPruned)
				}
				if string(info.previousHash) != legacyAnchorString(v.legacyAnchor) {
					return fail(lineNo, reasonLegacyAnchor)
				}
			case info.seq == 1:
				if string(info.previousHash) != genesisHash {
					return fail(lineNo, reasonGenesis)
				}
			default:
				if err := v.useCheckpoint(info, name, lineNo); err != nil {
					return err
				}
			}
			v.started = true
			v.rep.FirstSeq = info.seq
		} else {
			if info.seq != v.seq+1 {
				return fail(lineNo, reasonSeqGap)
			}
			if !bytes.Equal(info.previousHash, v.hash) {
				return fail(lineNo, reasonLink)
			}
		}
		if fileSeg == nil {
			if bytes.Equal(info.segmentID, v.prevFileSeg) {
				return fail(lineNo, reasonSegmentReuse)
			}
			if seg != nil && string(info.segmentID) != seg.segID {
				return fail(lineNo, reasonSegmentName)
			}
			fileSeg = bytes.Clone(info.segmentID)
			fileFirst = info.seq
		} else if !bytes.Equal(fileSeg, info.segmentID) {
			return fail(lineNo, reasonSegmentChange)
		}
		fileLast = info.seq
		if info.signed {
			v.rep.Signed++
		} else {
			if v.opts.RequireSigned {
				return fail(lineNo, reasonUnsigned)
			}
			v.rep.Unsigned++
		}
		if h := v.opts.ExpectHead; h != nil {
			switch info.seq {
			case h.Sequence:
				v.headHash = string(info.entryHash)
			case h.Sequence + 1:
				// The head itself may be pruned; what follows names it.
				if v.headHash == "" {
					v.headHash = string(info.previousHash)
				}
			}
		}
		v.seq = info.seq
		v.hash = append(v.hash[:0], info.entryHash...)
		v.rep.Chained++
		v.rep.LastSeq = info.seq
		v.rep.LastHash = string(info.entryHash)
	}
	if seg != nil {
		if fileSeg == nil {
			return fail(0, reasonSegmentEmpty)
		}
		if fileFirst != seg.first || fileLast != seg.last {
			return fail(0, reasonSegmentRange)
		}
	}
	if fileSeg != nil {
		v.prevFileSeg = fileSeg
	}
	return nil
}

// useCheckpoint vouches for a chain whose oldest retained entry is not the
// genesis entry.
func (v *verifier) useCheckpoint(first lineInfo, name string, lineNo int) error {
	var match []checkpointFile
	for _, c := range v.dir.checkpoints {
		if c.nextSeq == first.seq {
			match = append(match, c)
		}
	}
	switch len(match) {
	case 0:
		return &VerifyError{Segment: name, Line: lineNo, Reason: "chain starts after sequence 1 and no retention checkpoint covers it"}
	case 1:
	default:
		return &VerifyError{Segment: name, Line: lineNo, Reason: "more than one retention checkpoint for the first retained sequence"}
	}
	cf := match[0]
	data, err := readCheckpointData(cf.path)
	if err != nil {
		return &VerifyError{Segment: cf.name, Reason: "checkpoint unreadable: " + err.Error()}
	}
	cp, reason := parseCheckpoint(data, v.c)
	switch {
	case reason != "":
		return &VerifyError{Segment: cf.name, Line: 1, Reason: reason}
	case cp.nextSeq != cf.nextSeq:
		return &VerifyError{Segment: cf.name, Line: 1, Reason: "checkpoint nextSequence does not match its file name"}
	case cp.previousHash != string(first.previousHash):
		return &VerifyError{Segment: name, Line: lineNo, Reason: "previousHash does not match the retention checkpoint"}
	case cp.segmentID != "" && cp.segmentID != string(first.segmentID):
		return &VerifyError{Segment: name, Line: lineNo, Reason: "segmentId does not match the retention checkpoint"}
	case !cp.signed && v.opts.RequireSigned:
		return &VerifyError{Segment: cf.name, Line: 1, Reason: "unsigned checkpoint where signatures are required"}
	}
	v.rep.CheckpointUsed = cf.name
	v.rep.CheckpointSigned = cp.signed
	return nil
}

const maxCheckpointBytes = 64 << 10

type checkpointDoc struct {
	nextSeq      uint64
	previousHash string
	segmentID    string
	signed       bool
}

func readCheckpointData(path string) ([]byte, error) {
	f, _, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCheckpointBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxCheckpointBytes {
		return nil, errors.New("larger than 64 KiB")
	}
	return bytes.TrimSuffix(data, []byte{'\n'}), nil
}

// parseCheckpoint checks a checkpoint document and, when it is signed, its
// signature, with the same key rules as entries.
func parseCheckpoint(data []byte, c *lineChecker) (checkpointDoc, string) {
	var cp checkpointDoc
	v, err := c.p.Parse(data)
	if err != nil || v.Kind != canonjson.Object {
		return cp, "checkpoint is not a JSON object"
	}
	m := v.Obj
	if ver, ok := canonjson.Lookup(m, "auditCheckpointVersion"); !ok || !isSmallInt(ver, checkpointVersion) {
		return cp, "unsupported auditCheckpointVersion"
	}
	ns, ok := canonjson.Lookup(m, "nextSequence")
	if !ok || ns.Kind != canonjson.Number {
		return cp, "missing or invalid nextSequence"
	}
	if cp.nextSeq, ok = parseSequence(ns.Str); !ok || cp.nextSeq < 2 {
		return cp, "missing or invalid nextSequence"
	}
	pt, ok := canonjson.Lookup(m, "prunedThroughSequence")
	if !ok || pt.Kind != canonjson.Number {
		return cp, "missing or invalid prunedThroughSequence"
	}
	if n, ok := parseSequence(pt.Str); !ok || n != cp.nextSeq-1 {
		return cp, "prunedThroughSequence does not precede nextSequence"
	}
	ph, ok := canonjson.Lookup(m, "previousHash")
	if !ok || ph.Kind != canonjson.String || !isDigest(ph.Str) {
		return cp, "missing or invalid previousHash"
	}
	cp.previousHash = string(ph.Str)
	if ca, ok := canonjson.Lookup(m, "createdAt"); !ok || ca.Kind != canonjson.Number || !canonjson.IsIntegerLiteral(ca.Str) || ca.Str[0] == '-' {
		return cp, "missing or invalid createdAt"
	}
	if seg, ok := canonjson.Lookup(m, "segmentId"); ok {
		if seg.Kind != canonjson.String || len(seg.Str) == 0 {
			return cp, "invalid segmentId"
		}
		cp.segmentID = string(seg.Str)
	}
	signed, reason := sigFields(m)
	if reason != "" || !signed {
		return cp, reason
	}
	cp.signed = true
	raw, verify, reason := c.signature(m)
	if !verify {
		return cp, reason
	}
	c.enc.Buf = c.enc.Buf[:0]
	if err := c.enc.Object(m, 0, "signature"); err != nil {
		return cp, reasonCanonical
	}
	if !ed25519.Verify(c.pub, c.enc.Buf, raw[:]) {
		return cp, reasonSigInvalid
	}
	return cp, ""
}
