package jsonc

import (
	"bytes"
	"fmt"
	"strings"
)

// Bytes is the document's current text.
func (d *Doc) Bytes() []byte { return d.src }

// Check parses the current text again: an edit that produced anything but
// valid JSON(C) is a bug, and its result must never reach a disk.
func (d *Doc) Check() error {
	_, err := d.parse()
	return err
}

// Keys returns the member names of the object at path, in file order;
// none when it does not exist.
func (d *Doc) Keys(path []string) ([]string, error) {
	root, err := d.root()
	if err != nil {
		return nil, err
	}
	obj, missing, err := d.walkTo(root, path)
	if err != nil || missing < len(path) {
		return nil, nil
	}
	var out []string
	for _, m := range obj.members {
		out = append(out, m.key)
	}
	return out, nil
}

// Value returns the decoded value at path (as encoding/json would give
// it into an any), or nil.
func (d *Doc) Value(path []string) (any, error) {
	root, err := d.root()
	if err != nil {
		return nil, err
	}
	return ValueAt(root, path), nil
}

// array returns the array at path, or nil with missing < len(path) when
// some of path does not exist.
func (d *Doc) array(path []string) (arr *Node, key *Member, parent *Node, missing int, err error) {
	root, err := d.root()
	if err != nil {
		return nil, nil, nil, 0, err
	}
	parent, missing, err = d.walkTo(root, path[:len(path)-1])
	if err != nil || missing < len(path)-1 {
		return nil, nil, parent, missing, err
	}
	m := parent.member(path[len(path)-1])
	if m == nil {
		return nil, nil, parent, len(path) - 1, nil
	}
	if m.value.kind != 'a' {
		return nil, nil, nil, 0, fmt.Errorf("%q is not an array", strings.Join(path, "."))
	}
	return m.value, m, parent, len(path), nil
}

// Append adds v as the last element of the array at path, creating the
// array (and the objects leading to it) when it does not exist. An
// element that starts its own line is rendered at its neighbours'
// indentation; a one-line array stays on one line.
func (d *Doc) Append(path []string, v any) error {
	arr, m, parent, missing, err := d.array(path)
	if err != nil {
		return err
	}
	if arr == nil {
		return d.insertMember(parent, path[missing], nest(path[missing+1:], []any{v}))
	}
	if len(arr.elems) == 0 {
		ind := lineIndent(d.src, m.keyStart)
		text, err := d.Render(v, ind+d.unit)
		if err != nil {
			return err
		}
		if d.interiorBlank(arr) {
			d.splice(arr.start, arr.end, "["+d.nl+ind+d.unit+text+d.nl+ind+"]")
			return nil
		}
		// Only comments inside: keep them, and put the element after them.
		q := arr.end - 1
		for q > arr.start+1 && strings.IndexByte(" \t\r\n", d.src[q-1]) >= 0 {
			q--
		}
		d.splice(q, arr.end-1, d.nl+ind+d.unit+text+d.nl+ind)
		return nil
	}
	last := arr.elems[len(arr.elems)-1]
	if !startsLine(d.src, last.start) {
		b, err := marshal(v)
		if err != nil {
			return err
		}
		d.splice(last.end, last.end, ", "+string(b))
		return nil
	}
	ind := lineIndent(d.src, last.start)
	text, err := d.Render(v, ind)
	if err != nil {
		return err
	}
	d.insertAfter(last.end, arr.end-1, lineIndent(d.src, arr.start), ind+text)
	return nil
}

// DeleteElement removes element i of the array at path, with the
// separator it needs. Comments inside the element, and those after it on
// its own lines up to the next element, go with it; every other byte
// stays.
func (d *Doc) DeleteElement(path []string, i int) error {
	arr, _, _, _, err := d.array(path)
	if err != nil {
		return err
	}
	if arr == nil || i < 0 || i >= len(arr.elems) {
		return fmt.Errorf("%q has no element %d", strings.Join(path, "."), i)
	}
	e := arr.elems[i]
	switch {
	case i+1 < len(arr.elems):
		d.splice(lineStartOr(d.src, e.start), lineStartOr(d.src, arr.elems[i+1].start), "")
	case i > 0:
		// The last element: the comma after the one before it goes too,
		// unless this one had a trailing comma (JSONC) to keep the style.
		comma := arr.elems[i-1].end
		for comma < e.start && d.src[comma] != ',' {
			comma++
		}
		if !startsLine(d.src, e.start) {
			d.splice(comma, e.end, "")
			break
		}
		trailing := false
		for p := e.end; p < arr.end-1 && !trailing; p++ {
			if c := d.src[p]; c == ',' {
				trailing = true
			} else if c != ' ' && c != '\t' {
				break
			}
		}
		d.splice(d.lineStartWithBreak(e.start), d.lineRestEnd(e.end), "")
		if !trailing {
			d.splice(comma, comma+1, "")
		}
	default:
		d.splice(d.lineStartWithBreak(e.start), d.lineRestEnd(e.end), "")
		// Nothing left inside but blanks: an empty array, as written.
		if arr, _, _, _, err := d.array(path); err == nil && arr != nil && d.interiorBlank(arr) {
			d.splice(arr.start, arr.end, "[]")
		}
	}
	return nil
}

// lineStartWithBreak is where an item at pos starts owning its line: the
// line break before it, when only blanks precede it on its line; else pos.
func (d *Doc) lineStartWithBreak(pos int) int {
	start := lineStartOr(d.src, pos)
	if start > 0 && d.src[start-1] == '\n' {
		start--
		if start > 0 && d.src[start-1] == '\r' {
			start--
		}
	}
	return start
}

// lineRestEnd is where an item that ends at end stops owning its line: past
// its comma and a // comment after it, when nothing else follows on the
// line; else end.
func (d *Doc) lineRestEnd(end int) int {
	p := end
	for p < len(d.src) && (d.src[p] == ' ' || d.src[p] == '\t') {
		p++
	}
	if p < len(d.src) && d.src[p] == ',' {
		p++
	}
	for p < len(d.src) && (d.src[p] == ' ' || d.src[p] == '\t') {
		p++
	}
	if d.comments && bytes.HasPrefix(d.src[p:], []byte("//")) {
		for p < len(d.src) && d.src[p] != '\n' && d.src[p] != '\r' {
			p++
		}
	}
	if p >= len(d.src) || d.src[p] == '\n' || d.src[p] == '\r' {
		return p
	}
	return end
}

// Plain returns src (JSONC) as strict JSON: comments and trailing commas
// are gone, and every string and number is kept exactly as written, so
// that encoding/json decodes what the person wrote. A syntax error names
// its line and column.
func Plain(src []byte) ([]byte, error) {
	n, err := Parse(src, true)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, nil
	}
	var b bytes.Buffer
	n.plain(&b, src)
	return b.Bytes(), nil
}

func (n *Node) plain(b *bytes.Buffer, src []byte) {
	switch n.kind {
	case 'o':
		b.WriteByte('{')
		for i, m := range n.members {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := marshal(m.key)
			b.Write(k)
			b.WriteByte(':')
			m.value.plain(b, src)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, e := range n.elems {
			if i > 0 {
				b.WriteByte(',')
			}
			e.plain(b, src)
		}
		b.WriteByte(']')
	default:
		b.Write(src[n.start:n.end])
	}
}
