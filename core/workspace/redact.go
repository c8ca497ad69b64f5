package workspace

import (
	"bytes"
	"io"
	"sort"
)

// redactor replaces every occurrence of a secret value in a stream with
// [redacted:NAME] before anything downstream (captured output, progress
// callbacks, stored evidence) sees it. Output arrives in arbitrary chunks,
// so a secret can be split across two writes: the redactor holds back the
// longest tail that could still grow into a secret, and only that, until
// the next write or Flush decides it.
type redactor struct {
	pats    []redactPattern
	out     io.Writer
	pending []byte
}

type redactPattern struct {
	value []byte
	token []byte
}

func newRedactor(secrets map[string]string, out io.Writer) *redactor {
	r := &redactor{out: out}
	for name, v := range secrets {
		if v == "" {
			continue
		}
		r.pats = append(r.pats, redactPattern{value: []byte(v), token: []byte("[redacted:" + name + "]")})
	}
	// Longest first, so that where two secrets start at the same byte the
	// longer one wins.
	sort.Slice(r.pats, func(i, j int) bool { return len(r.pats[i].value) > len(r.pats[j].value) })
	return r
}

// redactString redacts a complete string.
func redactString(secrets map[string]string, s string) string {
	if len(secrets) == 0 {
		return s
	}
	var b bytes.Buffer
	r := newRedactor(secrets, &b)
	r.Write([]byte(s))
	r.Flush()
	return b.String()
}

func (r *redactor) Write(p []byte) (int, error) {
	if len(r.pats) == 0 {
		if _, err := r.out.Write(p); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	r.pending = append(r.pending, p...)
	out := r.process(false)
	if len(out) > 0 {
		if _, err := r.out.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes what is held back; the stream has ended.
func (r *redactor) Flush() error {
	if len(r.pats) == 0 || len(r.pending) == 0 {
		return nil
	}
	out := r.process(true)
	if len(out) == 0 {
		return nil
	}
	_, err := r.out.Write(out)
	return err
}

// process redacts r.pending and returns what can be released; unless
// final, it keeps the shortest suffix that might still become a secret.
func (r *redactor) process(final bool) []byte {
	buf := r.pending
	var out []byte
	i := 0
	for i < len(buf) {
		pos, pat, wait := r.next(buf[i:], final)
		if wait >= 0 {
			// A secret may start at i+wait and continue in the next write.
			out = append(out, buf[i:i+wait]...)
			i += wait
			break
		}
		if pat == nil {
			out = append(out, buf[i:]...)
			i = len(buf)
			break
		}
		out = append(out, buf[i:i+pos]...)
		out = append(out, pat.token...)
		i += pos + len(pat.value)
	}
	r.pending = append(r.pending[:0], buf[i:]...)
	return out
}

// next finds the leftmost complete occurrence in b (longest pattern at the
// leftmost position). wait >= 0 reports a position before any complete
// match where b ends in the middle of a possible secret (never when
// final).
func (r *redactor) next(b []byte, final bool) (pos int, pat *redactPattern, wait int) {
	pos, wait = -1, -1
	for k := range r.pats {
		p := &r.pats[k]
		if j := bytes.Index(b, p.value); j >= 0 && (pos < 0 || j < pos) {
			pos, pat = j, p
		}
	}
	if final {
		return pos, pat, -1
	}
	// Earliest start of an incomplete secret at the end of b. It only
	// matters if it starts before (or at) the complete match found.
	limit := len(b)
	if pos >= 0 {
		limit = pos + 1
	}
	for k := range r.pats {
		v := r.pats[k].value
		start := len(b) - len(v) + 1
		if start < 0 {
			start = 0
		}
		for s := start; s < limit && s < len(b); s++ {
			if bytes.HasPrefix(v, b[s:]) {
				if wait < 0 || s < wait {
					wait = s
				}
				break
			}
		}
	}
	if wait >= 0 && pos >= 0 && wait > pos {
		wait = -1
	}
	return pos, pat, wait
}
