package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
)

// MaxTail caps how many entries Tail returns, which caps its memory.
const MaxTail = 10000

// Tail returns up to n of the newest entries, oldest first, as generic maps
// (numbers as json.Number) for display. It reads the active file backwards
// and continues into the newest segments if the active file holds fewer than
// n lines, so a view is not emptied by a rotation. It takes no lock: appends
// are single writes of whole lines, and a line still being written (no
// newline yet) is skipped. Tail does not verify; use Verify for that.
func Tail(path string, n int) ([]map[string]any, error) {
	if n <= 0 {
		return nil, nil
	}
	n = min(n, MaxTail)
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	files := []string{path}
	if d, err := listLedgerDir(path); err == nil {
		for _, s := range slices.Backward(d.segments) {
			files = append(files, s.path)
		}
	}
	var newestFirst []map[string]any
	for _, name := range files {
		if len(newestFirst) >= n {
			break
		}
		got, err := tailFile(name, n-len(newestFirst))
		if errors.Is(err, fs.ErrNotExist) && name == path {
			continue // between a rotation's rename and create
		}
		if err != nil {
			return nil, err
		}
		newestFirst = append(newestFirst, got...)
	}
	slices.Reverse(newestFirst)
	return newestFirst, nil
}

// tailFile returns up to n entries of one file, newest first.
func tailFile(path string, n int) ([]map[string]any, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	end, err := lastNewline(f, size)
	if err != nil {
		return nil, err
	}
	s := backScanner{f: f, pos: end + 1}
	var out []map[string]any
	for len(out) < n {
		line, ok, err := s.prev()
		if err != nil {
			return nil, fmt.Errorf("audit: reading %s: %w", filepath.Base(path), err)
		}
		if !ok {
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil || m == nil {
			return nil, fmt.Errorf("%w: %s holds a line that is not a JSON object", ErrCorrupt, filepath.Base(path))
		}
		out = append(out, m)
	}
	return out, nil
}

// backScanner yields the lines of f[0:pos) from last to first. Every line
// must end in a newline; the caller starts pos just after one.
type backScanner struct {
	f   io.ReaderAt
	pos int64  // buf holds f[pos:pos+len(buf))
	buf []byte // ends with '\n' whenever non-empty
}

func (s *backScanner) prev() ([]byte, bool, error) {
	const chunk = 64 << 10
	for {
		if len(s.buf) > 0 {
			if i := bytes.LastIndexByte(s.buf[:len(s.buf)-1], '\n'); i >= 0 {
				line := s.buf[i+1 : len(s.buf)-1]
				s.buf = s.buf[:i+1]
				return line, true, nil
			}
			if s.pos == 0 {
				line := s.buf[:len(s.buf)-1]
				s.buf = nil
				return line, true, nil
			}
			if len(s.buf) > MaxLineBytes+1 {
				return nil, false, fmt.Errorf("%w: line longer than %d bytes", ErrCorrupt, MaxLineBytes)
			}
		} else if s.pos == 0 {
			return nil, false, nil
		}
		n := min(int64(chunk), s.pos)
		s.pos -= n
		nb := make([]byte, int(n)+len(s.buf))
		if _, err := s.f.ReadAt(nb[:n], s.pos); err != nil {
			return nil, false, err
		}
		copy(nb[n:], s.buf)
		s.buf = nb
	}
}
