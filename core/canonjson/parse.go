package canonjson

// The strict reader. The audit ledger verifies a line over its canonical
// form, re-encoded from exactly what the line holds, so the reader must refuse
// what encoding/json quietly accepts: invalid UTF-8 and lone surrogate
// escapes (it substitutes U+FFFD) and duplicate keys (the last wins); and
// it must keep every number as its literal. encoding/json/jsontext would
// do this, but is still behind GOEXPERIMENT=jsonv2 (go-json-experiment/json
// is its unreleased copy). Strings without escapes stay slices of the
// line, which keeps the verifier's per-line allocations low.

import (
	"bytes"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Value is a parsed JSON value that keeps what canonical encoding needs and
// nothing more: strings as decoded bytes, numbers as their literal, objects
// as members sorted by key.
type Value struct {
	Kind Kind
	Str  []byte
	Arr  []Value
	Obj  []Member
}

// Member is one member of an object: its key, decoded, and its value.
type Member struct {
	Key []byte
	Val Value
}

// Kind is which JSON value a Value is.
type Kind uint8

const (
	Null Kind = iota
	False
	True
	Number
	String
	Array
	Object
)

// Lookup finds a member of a sorted object (a parsed Value's Obj).
func Lookup(members []Member, key string) (*Value, bool) {
	i, ok := slices.BinarySearchFunc(members, key, func(m Member, k string) int {
		return bytes.Compare(m.Key, []byte(k))
	})
	if !ok {
		return nil, false
	}
	return &members[i].Val, true
}

// Parser is a strict RFC 8259 parser. Strings without escapes alias the input
// rather than being copied, so a parsed value is valid only as long as the
// bytes it came from. The member stack is reused across parses of top-level
// objects, which keeps the verifier's per-line allocations low.
type Parser struct {
	data  []byte
	pos   int
	depth int
	stack []Member
}

// Parse reads data, which must hold exactly one JSON value. The value
// aliases data (see Parser).
func (p *Parser) Parse(data []byte) (Value, error) {
	p.data = data
	p.pos = 0
	p.stack = p.stack[:0]
	v, err := p.value(p.depth)
	if err != nil {
		return Value{}, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return Value{}, p.fail("trailing data")
	}
	return v, nil
}

func (p *Parser) fail(msg string) error {
	return fmt.Errorf("%w: %s at offset %d", ErrInvalidJSON, msg, p.pos)
}

func (p *Parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *Parser) value(depth int) (Value, error) {
	if depth > maxDepth {
		return Value{}, p.fail("nesting too deep")
	}
	p.skipSpace()
	if p.pos >= len(p.data) {
		return Value{}, p.fail("unexpected end")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.string()
		if err != nil {
			return Value{}, err
		}
		return Value{Kind: String, Str: s}, nil
	case c == 't':
		return p.literal("true", True)
	case c == 'f':
		return p.literal("false", False)
	case c == 'n':
		return p.literal("null", Null)
	case c == '-' || (c >= '0' && c <= '9'):
		end, ok := p.scanNumber(p.pos)
		if !ok {
			return Value{}, p.fail("malformed number")
		}
		v := Value{Kind: Number, Str: p.data[p.pos:end]}
		p.pos = end
		return v, nil
	}
	return Value{}, p.fail("unexpected character")
}

func (p *Parser) literal(word string, kind Kind) (Value, error) {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		return Value{}, p.fail("invalid literal")
	}
	p.pos += len(word)
	return Value{Kind: kind}, nil
}

// scanNumber returns the end of the JSON number starting at i.
func (p *Parser) scanNumber(i int) (int, bool) {
	d := p.data
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return i, false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return i, false
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return i, false
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	return i, true
}

func (p *Parser) array(depth int) (Value, error) {
	p.pos++ // [
	var arr []Value
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return Value{Kind: Array, Arr: []Value{}}, nil
	}
	for {
		v, err := p.value(depth + 1)
		if err != nil {
			return Value{}, err
		}
		arr = append(arr, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return Value{}, p.fail("unterminated array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return Value{Kind: Array, Arr: arr}, nil
		default:
			return Value{}, p.fail("expected , or ]")
		}
	}
}

func (p *Parser) object(depth int) (Value, error) {
	p.pos++ // {
	start := len(p.stack)
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return Value{Kind: Object, Obj: []Member{}}, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return Value{}, p.fail("expected object key")
		}
		key, err := p.string()
		if err != nil {
			return Value{}, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return Value{}, p.fail("expected :")
		}
		p.pos++
		v, err := p.value(depth + 1)
		if err != nil {
			return Value{}, err
		}
		p.stack = append(p.stack, Member{Key: key, Val: v})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return Value{}, p.fail("unterminated object")
		}
		if p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.data[p.pos] != '}' {
			return Value{}, p.fail("expected , or }")
		}
		p.pos++
		break
	}
	members := p.stack[start:]
	sortMembers(members)
	for i := 1; i < len(members); i++ {
		if bytes.Equal(members[i-1].Key, members[i].Key) {
			return Value{}, p.fail("duplicate object key")
		}
	}
	if start > 0 || depth > p.depth {
		// A nested object must not share the stack with its parent, which
		// keeps appending after this returns.
		members = slices.Clone(members)
		p.stack = p.stack[:start]
	}
	return Value{Kind: Object, Obj: members}, nil
}

// sortMembers sorts by key bytes. Ledger entries have a dozen or so keys,
// often already in order, where insertion sort beats the general sort.
func sortMembers(m []Member) {
	if len(m) > 24 {
		slices.SortFunc(m, func(a, b Member) int { return bytes.Compare(a.Key, b.Key) })
		return
	}
	for i := 1; i < len(m); i++ {
		for j := i; j > 0 && bytes.Compare(m[j-1].Key, m[j].Key) > 0; j-- {
			m[j-1], m[j] = m[j], m[j-1]
		}
	}
}

// string parses a JSON string at p.pos and returns its decoded bytes.
func (p *Parser) string() ([]byte, error) {
	p.pos++ // opening quote
	start := p.pos
	d := p.data
	// Fast path: no escapes, so the result aliases the input.
	i := start
	for i < len(d) {
		c := d[i]
		if c == '"' {
			s := d[start:i]
			if !utf8.Valid(s) {
				return nil, p.fail("string is not valid UTF-8")
			}
			p.pos = i + 1
			return s, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			p.pos = i
			return nil, p.fail("control character in string")
		}
		i++
	}
	if i >= len(d) {
		return nil, p.fail("unterminated string")
	}
	out := make([]byte, i-start, i-start+16)
	copy(out, d[start:i])
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return nil, p.fail("string is not valid UTF-8")
			}
			p.pos = i + 1
			return out, nil
		case c < 0x20:
			p.pos = i
			return nil, p.fail("control character in string")
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		i++
		if i >= len(d) {
			break
		}
		switch d[i] {
		case '"', '\\', '/':
			out = append(out, d[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(d, i+1)
			if !ok {
				p.pos = i
				return nil, p.fail("malformed \\u escape")
			}
			i += 4
			if r >= 0xD800 && r <= 0xDBFF {
				if i+2 < len(d) && d[i+1] == '\\' && d[i+2] == 'u' {
					lo, ok := hex4(d, i+3)
					if ok && lo >= 0xDC00 && lo <= 0xDFFF {
						r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
						i += 6
						out = utf8.AppendRune(out, r)
						break
					}
				}
				p.pos = i
				return nil, p.fail("lone surrogate escape")
			}
			if r >= 0xDC00 && r <= 0xDFFF {
				p.pos = i
				return nil, p.fail("lone surrogate escape")
			}
			out = utf8.AppendRune(out, r)
		default:
			p.pos = i
			return nil, p.fail("invalid escape")
		}
		i++
	}
	p.pos = len(d)
	return nil, p.fail("unterminated string")
}

func hex4(d []byte, i int) (rune, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
