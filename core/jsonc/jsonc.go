package jsonc

// Parse reads JSON and JSONC into a tree that keeps the byte range of every
// member and element, which is what Doc's splices need: new text goes in
// at the file's own indentation and line style, and every byte around it
// stays. encoding/json refuses comments and decodes values, not where they
// sit; tidwall/jsonc only blanks comments out and builds no tree;
// tailscale/hujson keeps comments in a tree but has no tagged release, and
// its Format rewrites the whole layout. Strings, numbers and the values
// ValueAt returns are decoded by encoding/json.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Node is a parsed JSON value with its byte range in the source.
type Node struct {
	kind       byte // 'o' object, 'a' array, 's' string, 'n' number, 'l' literal
	start, end int  // [start, end)
	members    []Member
	elems      []*Node
	str        string
	// src is the document, kept on the root Parse returns for ValueAt.
	src []byte
}

type Member struct {
	key      string
	keyStart int
	value    *Node
}

type jparser struct {
	src      []byte
	pos      int
	comments bool // JSONC: comments and trailing commas
}

// SyntaxError carries a position for a message a person can act on.
type SyntaxError struct {
	line, col int
	msg       string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.line, e.col, e.msg)
}

// ErrorAt is msg at byte offset pos of src, as a line and column.
func ErrorAt(src []byte, pos int, msg string) error {
	line, col := 1, 1
	for _, c := range src[:min(pos, len(src))] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return &SyntaxError{line, col, msg}
}

func (p *jparser) fail(msg string) error { return ErrorAt(p.src, p.pos, msg) }

// Parse parses src (JSONC when comments is true). An empty or
// whitespace-only document yields nil and no error.
func Parse(src []byte, comments bool) (*Node, error) {
	p := &jparser{src: src, comments: comments}
	if bytes.HasPrefix(src, []byte("\xef\xbb\xbf")) {
		p.pos = 3
	}
	if err := p.skip(); err != nil {
		return nil, err
	}
	if p.pos == len(src) {
		return nil, nil
	}
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if err := p.skip(); err != nil {
		return nil, err
	}
	if p.pos != len(src) {
		return nil, p.fail("unexpected text after the end of the document")
	}
	n.src = src
	return n, nil
}

func (p *jparser) skip() error {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == '/' && p.comments && p.pos+1 < len(p.src) && p.src[p.pos+1] == '/':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case c == '/' && p.comments && p.pos+1 < len(p.src) && p.src[p.pos+1] == '*':
			end := bytes.Index(p.src[p.pos+2:], []byte("*/"))
			if end < 0 {
				return p.fail("unterminated /* comment")
			}
			p.pos += end + 4
		case c == '/':
			return p.fail("comments are not allowed in this JSON file")
		default:
			return nil
		}
	}
	return nil
}

const maxDepth = 200

func (p *jparser) value(depth int) (*Node, error) {
	if depth > maxDepth {
		return nil, p.fail("nesting too deep")
	}
	if p.pos >= len(p.src) {
		return nil, p.fail("unexpected end of file")
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.string()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(p.src[p.pos:], []byte(lit)) {
				n := &Node{kind: 'l', start: p.pos, end: p.pos + len(lit), str: lit}
				p.pos += len(lit)
				return n, nil
			}
		}
		return nil, p.fail(fmt.Sprintf("unexpected character %q", c))
	}
}

func (p *jparser) object(depth int) (*Node, error) {
	n := &Node{kind: 'o', start: p.pos}
	p.pos++
	for {
		if err := p.skip(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.src) {
			return nil, p.fail("unterminated object")
		}
		if p.src[p.pos] == '}' {
			// A trailing comma was refused (or, with comments, allowed)
			// where it was read, below.
			p.pos++
			n.end = p.pos
			return n, nil
		}
		if len(n.members) > 0 {
			return nil, p.fail("expected ',' or '}'")
		}
		for {
			if p.pos >= len(p.src) || p.src[p.pos] != '"' {
				return nil, p.fail("expected a string key")
			}
			k, err := p.string()
			if err != nil {
				return nil, err
			}
			if err := p.skip(); err != nil {
				return nil, err
			}
			if p.pos >= len(p.src) || p.src[p.pos] != ':' {
				return nil, p.fail("expected ':' after a key")
			}
			p.pos++
			if err := p.skip(); err != nil {
				return nil, err
			}
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.members = append(n.members, Member{key: k.str, keyStart: k.start, value: v})
			if err := p.skip(); err != nil {
				return nil, err
			}
			if p.pos < len(p.src) && p.src[p.pos] == ',' {
				p.pos++
				if err := p.skip(); err != nil {
					return nil, err
				}
				if p.pos < len(p.src) && p.src[p.pos] == '}' {
					if !p.comments {
						return nil, p.fail("trailing comma")
					}
					break
				}
				continue
			}
			break
		}
	}
}

func (p *jparser) array(depth int) (*Node, error) {
	n := &Node{kind: 'a', start: p.pos}
	p.pos++
	for {
		if err := p.skip(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.src) {
			return nil, p.fail("unterminated array")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			n.end = p.pos
			return n, nil
		}
		if len(n.elems) > 0 {
			return nil, p.fail("expected ',' or ']'")
		}
		for {
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, v)
			if err := p.skip(); err != nil {
				return nil, err
			}
			if p.pos < len(p.src) && p.src[p.pos] == ',' {
				p.pos++
				if err := p.skip(); err != nil {
					return nil, err
				}
				if p.pos < len(p.src) && p.src[p.pos] == ']' {
					if !p.comments {
						return nil, p.fail("trailing comma")
					}
					break
				}
				continue
			}
			break
		}
	}
}

func (p *jparser) string() (*Node, error) {
	start := p.pos
	p.pos++
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == '\\':
			p.pos += 2
		case c == '"':
			p.pos++
			n := &Node{kind: 's', start: start, end: p.pos}
			if err := json.Unmarshal(p.src[start:p.pos], &n.str); err != nil {
				p.pos = start
				return nil, p.fail("invalid string")
			}
			return n, nil
		case c < 0x20:
			return nil, p.fail("control character in a string")
		default:
			p.pos++
		}
	}
	return nil, p.fail("unterminated string")
}

func (p *jparser) number() (*Node, error) {
	start := p.pos
	for p.pos < len(p.src) && strings.IndexByte("+-0123456789.eE", p.src[p.pos]) >= 0 {
		p.pos++
	}
	var f json.Number
	if err := json.Unmarshal(p.src[start:p.pos], &f); err != nil {
		p.pos = start
		return nil, p.fail("invalid number")
	}
	return &Node{kind: 'n', start: start, end: p.pos, str: string(f)}, nil
}

// decode is what encoding/json gives for n, a value parsed from src.
func (n *Node) decode(src []byte) any {
	var b bytes.Buffer
	n.plain(&b, src)
	var v any
	_ = json.Unmarshal(b.Bytes(), &v)
	return v
}

// member returns the last member named key (later duplicates win, as in
// every JSON parser the clients use).
func (n *Node) member(key string) *Member {
	for i := len(n.members) - 1; i >= 0; i-- {
		if n.members[i].key == key {
			return &n.members[i]
		}
	}
	return nil
}

// Ordered is a JSON object that keeps its keys in the order given, so that
// what Sluice writes reads naturally (command before args).
type Ordered []KV

type KV struct {
	K string
	V any
}

func (o Ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(e.K)
		if err != nil {
			return nil, err
		}
		v, err := marshal(e.V)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// normalize turns v into what decoding its JSON would give, for comparison.
func normalize(v any) any {
	b, err := marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// Doc is a document being edited.
type Doc struct {
	src      []byte
	comments bool
	nl       string
	unit     string
	// tree is src parsed, until the next splice.
	tree *Node
}

func NewDoc(src []byte, comments bool) (*Doc, error) {
	d := &Doc{src: src, comments: comments, nl: "\n", unit: "  "}
	if bytes.Contains(src, []byte("\r\n")) {
		d.nl = "\r\n"
	}
	root, err := d.parse()
	if err != nil {
		return nil, err
	}
	d.tree = root
	if root != nil && root.kind != 'o' {
		return nil, fmt.Errorf("the top level is not a JSON object")
	}
	d.unit = detectUnit(src, root)
	return d, nil
}

func (d *Doc) parse() (*Node, error) { return Parse(d.src, d.comments) }

// root parses the document, starting an empty one as {}.
func (d *Doc) root() (*Node, error) {
	if d.tree != nil {
		return d.tree, nil
	}
	n, err := d.parse()
	if err != nil {
		return nil, err
	}
	if n == nil {
		lead := len(d.src) - len(bytes.TrimLeft(d.src, " \t\r\n"))
		d.src = append(append(append([]byte{}, d.src[:lead]...), "{}"...), d.nl...)
		return d.parse()
	}
	return n, nil
}

// detectUnit finds the indentation step of the file: the extra indentation
// of the first member that starts its own line.
func detectUnit(src []byte, root *Node) string {
	var walk func(n *Node) string
	walk = func(n *Node) string {
		if n == nil {
			return ""
		}
		for _, m := range n.members {
			if startsLine(src, m.keyStart) {
				outer, inner := lineIndent(src, n.start), lineIndent(src, m.keyStart)
				if strings.HasPrefix(inner, outer) && len(inner) > len(outer) {
					return inner[len(outer):]
				}
			}
			if u := walk(m.value); u != "" {
				return u
			}
		}
		return ""
	}
	if u := walk(root); u != "" {
		return u
	}
	return "  "
}

// lineIndent is the leading whitespace of the line containing pos.
func lineIndent(src []byte, pos int) string {
	start := bytes.LastIndexByte(src[:pos], '\n') + 1
	end := start
	for end < len(src) && (src[end] == ' ' || src[end] == '\t') {
		end++
	}
	return string(src[start:end])
}

// startsLine reports whether only whitespace precedes pos on its line.
func startsLine(src []byte, pos int) bool {
	start := bytes.LastIndexByte(src[:pos], '\n') + 1
	return strings.TrimLeft(string(src[start:pos]), " \t") == ""
}

func (d *Doc) Render(v any, indent string) (string, error) {
	b, err := marshal(v)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, indent, d.unit); err != nil {
		return "", err
	}
	s := out.String()
	if d.nl != "\n" {
		s = strings.ReplaceAll(s, "\n", d.nl)
	}
	return s, nil
}

func (d *Doc) splice(start, end int, text string) {
	d.tree = nil
	d.src = append(append(append([]byte{}, d.src[:start]...), text...), d.src[end:]...)
}

// walkTo returns the object at path, creating nothing. missing is the
// index of the first path element that does not exist (len(path) if all
// do).
func (d *Doc) walkTo(root *Node, path []string) (obj *Node, missing int, err error) {
	obj = root
	for i, k := range path {
		m := obj.member(k)
		if m == nil {
			return obj, i, nil
		}
		if m.value.kind != 'o' {
			return nil, i, fmt.Errorf("%q is not an object", strings.Join(path[:i+1], "."))
		}
		obj = m.value
	}
	return obj, len(path), nil
}

// nest wraps v in objects for the keys of path.
func nest(path []string, v any) any {
	for i := len(path) - 1; i >= 0; i-- {
		v = Ordered{{path[i], v}}
	}
	return v
}

// Set makes the member at path equal to v. It reports whether the text
// changed; a member that already has an equal value is left as it is.
func (d *Doc) Set(path []string, v any) (bool, error) {
	root, err := d.root()
	if err != nil {
		return false, err
	}
	parent, missing, err := d.walkTo(root, path[:len(path)-1])
	if err != nil {
		return false, err
	}
	if missing < len(path)-1 {
		return true, d.insertMember(parent, path[missing], nest(path[missing+1:], v))
	}
	key := path[len(path)-1]
	m := parent.member(key)
	if m == nil {
		return true, d.insertMember(parent, key, v)
	}
	if reflect.DeepEqual(m.value.decode(d.src), normalize(v)) {
		return false, nil
	}
	text, err := d.Render(v, lineIndent(d.src, m.keyStart))
	if err != nil {
		return false, err
	}
	d.splice(m.value.start, m.value.end, text)
	return true, nil
}

// AppendStrings makes sure the array at path contains every value, adding
// the missing ones at its end and leaving the rest untouched. It returns
// the values it added.
func (d *Doc) AppendStrings(path []string, values []string) ([]string, error) {
	root, err := d.root()
	if err != nil {
		return nil, err
	}
	parent, missing, err := d.walkTo(root, path[:len(path)-1])
	if err != nil {
		return nil, err
	}
	if missing < len(path)-1 {
		return values, d.insertMember(parent, path[missing], nest(path[missing+1:], values))
	}
	m := parent.member(path[len(path)-1])
	if m == nil {
		return values, d.insertMember(parent, path[len(path)-1], values)
	}
	if m.value.kind != 'a' {
		return nil, fmt.Errorf("%q is not an array", strings.Join(path, "."))
	}
	have := map[string]bool{}
	for _, e := range m.value.elems {
		if e.kind == 's' {
			have[e.str] = true
		}
	}
	var add []string
	for _, v := range values {
		if !have[v] {
			add = append(add, v)
			have[v] = true
		}
	}
	if len(add) == 0 {
		return nil, nil
	}
	arr := m.value
	items := make([]string, len(add))
	for i, v := range add {
		s, _ := marshal(v)
		items[i] = string(s)
	}
	if len(arr.elems) == 0 {
		// One item a line, one step in from ind.
		lines := func(ind string) string {
			var b strings.Builder
			for i, s := range items {
				b.WriteString(d.nl + ind + d.unit + s)
				if i < len(items)-1 {
					b.WriteString(",")
				}
			}
			return b.String()
		}
		if d.interiorBlank(arr) {
			ind := lineIndent(d.src, m.keyStart)
			d.splice(arr.start, arr.end, "["+lines(ind)+d.nl+ind+"]")
			return add, nil
		}
		// Only comments inside: keep them, and put the items after them,
		// in place of the blank run before the bracket.
		ind := lineIndent(d.src, arr.start)
		q := arr.end - 1
		for q > arr.start+1 && strings.IndexByte(" \t\r\n", d.src[q-1]) >= 0 {
			q--
		}
		d.splice(q, arr.end-1, lines(ind)+d.nl+ind)
		return add, nil
	}
	last := arr.elems[len(arr.elems)-1]
	if !startsLine(d.src, last.start) {
		d.splice(last.end, last.end, ", "+strings.Join(items, ", "))
		return add, nil
	}
	ind := lineIndent(d.src, last.start)
	var parts []string
	for _, s := range items {
		parts = append(parts, ind+s)
	}
	d.insertAfter(last.end, arr.end-1, lineIndent(d.src, arr.start), strings.Join(parts, ","+d.nl))
	return add, nil
}

// interiorBlank reports whether a container holds only whitespace.
func (d *Doc) interiorBlank(n *Node) bool {
	return strings.TrimSpace(string(d.src[n.start+1:n.end-1])) == ""
}

// insertMember adds "key": v as the last member of obj.
func (d *Doc) insertMember(obj *Node, key string, v any) error {
	k, err := marshal(key)
	if err != nil {
		return err
	}
	objIndent := lineIndent(d.src, obj.start)
	if len(obj.members) == 0 {
		ind := objIndent + d.unit
		val, err := d.Render(v, ind)
		if err != nil {
			return err
		}
		member := ind + string(k) + ": " + val
		if d.interiorBlank(obj) {
			d.splice(obj.start+1, obj.end-1, d.nl+member+d.nl+objIndent)
			return nil
		}
		// Only comments inside: keep them and add before the brace.
		d.splice(obj.end-1, obj.end-1, d.nl+member+d.nl+objIndent)
		return nil
	}
	last := obj.members[len(obj.members)-1]
	if !startsLine(d.src, last.keyStart) {
		// A one-line object stays on one line.
		b, err := marshal(v)
		if err != nil {
			return err
		}
		d.splice(last.value.end, last.value.end, ", "+string(k)+": "+string(b))
		return nil
	}
	ind := lineIndent(d.src, last.keyStart)
	val, err := d.Render(v, ind)
	if err != nil {
		return err
	}
	d.insertAfter(last.value.end, obj.end-1, objIndent, ind+string(k)+": "+val)
	return nil
}

// insertAfter puts text (already indented) on a new line after the item
// that ends at itemEnd, adding the comma the item needs. A comment after
// the item on its line stays with the item. closePos is the container's
// closing bracket: when it shares the item's line, it moves to a new line.
func (d *Doc) insertAfter(itemEnd, closePos int, closeIndent, text string) {
	p := itemEnd
	for p < len(d.src) && (d.src[p] == ' ' || d.src[p] == '\t') {
		p++
	}
	hasComma := p < len(d.src) && d.src[p] == ','
	if hasComma {
		p++
	}
	// Skip comments on the rest of the line.
	for {
		for p < len(d.src) && (d.src[p] == ' ' || d.src[p] == '\t') {
			p++
		}
		if d.comments && bytes.HasPrefix(d.src[p:], []byte("//")) {
			for p < len(d.src) && d.src[p] != '\n' {
				p++
			}
			if p > 0 && d.src[p-1] == '\r' {
				p--
			}
			break
		}
		if d.comments && bytes.HasPrefix(d.src[p:], []byte("/*")) {
			end := bytes.Index(d.src[p:], []byte("*/"))
			if end >= 0 && !bytes.Contains(d.src[p:p+end], []byte("\n")) {
				p += end + 2
				continue
			}
		}
		break
	}
	atEOL := p >= len(d.src) || d.src[p] == '\n' || d.src[p] == '\r'
	insert := d.nl + text
	if hasComma {
		// A trailing comma (JSONC) already separates; keep one after ours too.
		insert += ","
	}
	if !atEOL {
		if p == closePos {
			insert += d.nl + closeIndent
		} else {
			insert += d.nl
		}
	}
	d.splice(p, p, insert)
	if !hasComma {
		d.splice(itemEnd, itemEnd, ",")
	}
}

// ValueAt returns the decoded value at path in root, a tree Parse
// returned, or nil.
func ValueAt(root *Node, path []string) any {
	n := root
	for _, k := range path {
		if n == nil || n.kind != 'o' {
			return nil
		}
		m := n.member(k)
		if m == nil {
			return nil
		}
		n = m.value
	}
	if n == nil {
		return nil
	}
	return n.decode(root.src)
}

// Delete removes the member at path, with the separator it needs, and
// reports whether it was there. Comments inside the removed member go with
// it; every other byte stays.
func (d *Doc) Delete(path []string) (bool, error) {
	root, err := d.root()
	if err != nil {
		return false, err
	}
	parent, missing, err := d.walkTo(root, path[:len(path)-1])
	if err != nil || missing < len(path)-1 {
		return false, err
	}
	key := path[len(path)-1]
	i := -1
	for j := len(parent.members) - 1; j >= 0; j-- {
		if parent.members[j].key == key {
			i = j
			break
		}
	}
	if i < 0 {
		return false, nil
	}
	m := parent.members[i]
	switch {
	case i+1 < len(parent.members):
		// "key": value, <space> next → next
		d.splice(lineStartOr(d.src, m.keyStart), lineStartOr(d.src, parent.members[i+1].keyStart), "")
	case i > 0:
		// prev<, "key": value> → prev
		d.splice(parent.members[i-1].value.end, m.value.end, "")
		// A comma that followed the removed member (JSONC) would now
		// follow prev; that is still valid JSONC and nothing else.
	default:
		d.splice(parent.start+1, parent.end-1, "")
	}
	return true, nil
}

// lineStartOr is the start of pos's line when only blanks precede pos on
// it (so that a removed member takes its indentation along), else pos.
func lineStartOr(src []byte, pos int) int {
	p := pos
	for p > 0 && (src[p-1] == ' ' || src[p-1] == '\t') {
		p--
	}
	if p == 0 || src[p-1] == '\n' {
		return p
	}
	return pos
}
