package audit

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// File names. Given the ledger <file>:
//
//	<file>.lock                                            flock target
//	<file>.segment-<first:020>-<last:020>-<segmentId>      rotated data
//	<file>.checkpoint-<nextSeq:020>-<uuid>.json            retention checkpoint
//	<file>.tmp-checkpoint-<uuid>                           checkpoint being written
//
// Sequence numbers are zero-padded so that names sort in chain order.

type segmentFile struct {
	name        string // base name
	path        string
	first, last uint64
	segID       string
}

type checkpointFile struct {
	name    string
	path    string
	nextSeq uint64
}

func segmentName(base string, first, last uint64, segID string) string {
	return fmt.Sprintf("%s.segment-%020d-%020d-%s", base, first, last, segID)
}

func checkpointName(base string, nextSeq uint64, id string) string {
	return fmt.Sprintf("%s.checkpoint-%020d-%s.json", base, nextSeq, id)
}

// parseSeq20 reads exactly 20 decimal digits.
func parseSeq20(s string) (uint64, bool) {
	if len(s) != 20 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

func parseSegmentName(base, name string) (segmentFile, bool) {
	rest, ok := strings.CutPrefix(name, base+".segment-")
	if !ok || len(rest) < 20+1+20+1+1 || rest[20] != '-' || rest[41] != '-' {
		return segmentFile{}, false
	}
	first, ok1 := parseSeq20(rest[:20])
	last, ok2 := parseSeq20(rest[21:41])
	segID := rest[42:]
	if !ok1 || !ok2 || first == 0 || last < first || strings.ContainsAny(segID, `/\`) {
		return segmentFile{}, false
	}
	return segmentFile{name: name, first: first, last: last, segID: segID}, true
}

func parseCheckpointName(base, name string) (checkpointFile, bool) {
	rest, ok := strings.CutPrefix(name, base+".checkpoint-")
	if !ok {
		return checkpointFile{}, false
	}
	rest, ok = strings.CutSuffix(rest, ".json")
	if !ok || len(rest) < 22 || rest[20] != '-' {
		return checkpointFile{}, false
	}
	next, ok := parseSeq20(rest[:20])
	if !ok || next < 2 {
		return checkpointFile{}, false
	}
	return checkpointFile{name: name, nextSeq: next}, true
}

// ledgerDir lists the segment and checkpoint files of the ledger at path.
// Names that start like one but do not parse are returned in bad, for the
// verifier to refuse and the writer to leave alone.
type ledgerDir struct {
	segments    []segmentFile // sorted by first sequence
	checkpoints []checkpointFile
	tmp         []string // leftovers of interrupted checkpoint writes
	bad         []string
}

func listLedgerDir(path string) (ledgerDir, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ledgerDir{}, err
	}
	var d ledgerDir
	for _, e := range entries {
		name := e.Name()
		ok := true // false for a name that starts like a segment or checkpoint but does not parse
		switch {
		case strings.HasPrefix(name, base+".segment-"):
			var s segmentFile
			if s, ok = parseSegmentName(base, name); ok {
				s.path = filepath.Join(dir, name)
				d.segments = append(d.segments, s)
			}
		case strings.HasPrefix(name, base+".checkpoint-"):
			var c checkpointFile
			if c, ok = parseCheckpointName(base, name); ok {
				c.path = filepath.Join(dir, name)
				d.checkpoints = append(d.checkpoints, c)
			}
		case strings.HasPrefix(name, base+".tmp-checkpoint-"):
			d.tmp = append(d.tmp, filepath.Join(dir, name))
		}
		if !ok {
			d.bad = append(d.bad, name)
		}
	}
	slices.SortFunc(d.segments, func(a, b segmentFile) int {
		switch {
		case a.first < b.first:
			return -1
		case a.first > b.first:
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	return d, nil
}

// lastLine returns the last newline-terminated line in f[0:size), without its
// newline. Bytes after the last newline (an unterminated tail) are ignored.
// It reads backwards and never holds more than MaxLineBytes plus one chunk.
func lastLine(f io.ReaderAt, size int64) ([]byte, error) {
	end, err := lastNewline(f, size)
	if err != nil || end < 0 {
		return nil, err
	}
	start, err := lastNewline(f, end)
	if err != nil {
		return nil, err
	}
	start++
	if end-start > MaxLineBytes {
		return nil, fmt.Errorf("%w: line longer than %d bytes", ErrCorrupt, MaxLineBytes)
	}
	buf := make([]byte, end-start)
	if _, err := f.ReadAt(buf, start); err != nil {
		return nil, err
	}
	return buf, nil
}

// lastNewline returns the offset of the last '\n' in f[0:end), or -1. It
// gives up with ErrCorrupt after scanning more than a line's worth, because
// a well-formed ledger always has a newline within that distance.
func lastNewline(f io.ReaderAt, end int64) (int64, error) {
	const chunk = 4 << 10
	var buf [chunk]byte
	limit := end - MaxLineBytes - 2
	for pos := end; pos > 0; {
		n := int64(chunk)
		if pos < n {
			n = pos
		}
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return pos + int64(i), nil
		}
		if pos < limit {
			return 0, fmt.Errorf("%w: line longer than %d bytes", ErrCorrupt, MaxLineBytes)
		}
	}
	return -1, nil
}

// lastLineOfFile opens path and returns its last complete line.
func lastLineOfFile(path string) ([]byte, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return lastLine(f, size)
}
