package app

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// A reader for the part of TypeScript that frontend/src/api.ts uses: its
// interfaces and type aliases, and the calls in its api object. It is no
// TypeScript parser: a type it cannot read stops the tests, except a
// function's type (not data), which it skips.

type tsKind int

const (
	tsRef     tsKind = iota // a name, with type arguments
	tsObject                // { a: T; b?: U }
	tsArray                 // T[]
	tsUnion                 // T | U
	tsLiteral               // "x" or 1
)

type tsType struct {
	kind      tsKind
	name      string
	args      []*tsType
	fields    []tsField
	elem      *tsType
	alts      []*tsType
	literalOf string // string or number
	text      string
}

func (t *tsType) String() string { return t.text }

func (t *tsType) field(name string) *tsField {
	for i := range t.fields {
		if t.fields[i].name == name {
			return &t.fields[i]
		}
	}
	return nil
}

type tsField struct {
	name     string
	optional bool
	typ      *tsType
}

// tsExpr is what the reader keeps of an argument: a name, an object
// literal's properties, or nothing.
type tsExpr struct {
	ident  string
	object []tsProp
}

type tsProp struct {
	key    string
	spread string
	value  tsExpr
}

type tsFile struct {
	decls map[string]*tsType // interfaces (as objects) and type aliases
	calls []tsCall
}

// keys are the names JSON.stringify writes for e: a value of a declared
// type, or an object literal (a spread adds the fields of its type, a key
// set to undefined is left out).
func (f *tsFile) keys(e tsExpr, params map[string]*tsType) ([]string, error) {
	fieldsOf := func(name string) ([]string, error) {
		t := f.resolve(params[name])
		if t == nil || t.kind != tsObject {
			return nil, fmt.Errorf("cannot see the fields of %s", name)
		}
		var out []string
		for _, fl := range t.fields {
			out = append(out, fl.name)
		}
		return out, nil
	}
	if e.ident != "" {
		return fieldsOf(e.ident)
	}
	var out []string
	for _, p := range e.object {
		switch {
		case p.spread != "":
			more, err := fieldsOf(p.spread)
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
		case p.value.ident == "undefined":
			out = slices.DeleteFunc(out, func(k string) bool { return k == p.key })
		default:
			out = append(out, p.key)
		}
	}
	return out, nil
}

// resolve follows names to the object or union they stand for; Omit<T, K>
// is T without K's fields. Built-in names stay references.
func (f *tsFile) resolve(t *tsType) *tsType {
	for range 20 {
		if t == nil || t.kind != tsRef {
			return t
		}
		if t.name == "Omit" && len(t.args) == 2 {
			base := f.resolve(t.args[0])
			if base == nil || base.kind != tsObject {
				return nil
			}
			var drop []string
			for _, a := range append([]*tsType{t.args[1]}, t.args[1].alts...) {
				if a.kind == tsLiteral {
					drop = append(drop, a.name)
				}
			}
			o := &tsType{kind: tsObject, text: t.text}
			for _, fl := range base.fields {
				if !slices.Contains(drop, fl.name) {
					o.fields = append(o.fields, fl)
				}
			}
			return o
		}
		d, ok := f.decls[t.name]
		if !ok {
			return t
		}
		t = d
	}
	return nil
}

func readAPITS(t *testing.T) *tsFile {
	t.Helper()
	src, err := os.ReadFile("../frontend/src/api.ts")
	if err != nil {
		t.Fatal(err)
	}
	toks, err := tsTokens(string(src))
	if err != nil {
		t.Fatalf("api.ts: %v", err)
	}
	p := &tsParser{toks: toks}
	f, err := p.file()
	if err != nil {
		t.Fatalf("api.ts: %v", err)
	}
	if len(f.calls) < 20 || len(f.decls) < 20 {
		t.Fatalf("read only %d calls and %d types in api.ts; the reader is looking in the wrong place", len(f.calls), len(f.decls))
	}
	return f
}

type tsTok struct {
	kind byte // 'i' name, 's' string, 't' template, 'n' number, 'p' punctuation
	text string
	line int
}

// tsTokens splits TypeScript source into tokens, without comments.
func tsTokens(src string) ([]tsTok, error) {
	var out []tsTok
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated comment", line)
			}
			line += strings.Count(src[i:i+2+end], "\n")
			i += end + 4
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			depth := 0
			for ; j < len(src); j++ {
				if src[j] == '\\' {
					j++
					continue
				}
				if c == '`' && src[j] == '$' && j+1 < len(src) && src[j+1] == '{' {
					depth++
					j++
					continue
				}
				if depth > 0 && src[j] == '}' {
					depth--
					continue
				}
				if depth == 0 && src[j] == c {
					break
				}
			}
			if j >= len(src) {
				return nil, fmt.Errorf("line %d: unterminated string", line)
			}
			kind := byte('s')
			if c == '`' {
				kind = 't'
			}
			text := src[i+1 : j]
			if kind == 's' {
				text, _ = strconv.Unquote(`"` + strings.ReplaceAll(text, `"`, `\"`) + `"`)
			}
			out = append(out, tsTok{kind, text, line})
			line += strings.Count(src[i:j], "\n")
			i = j + 1
		case c == '_' || c == '$' || unicode.IsLetter(rune(c)):
			j := i
			for j < len(src) && (src[j] == '_' || src[j] == '$' || unicode.IsLetter(rune(src[j])) || unicode.IsDigit(rune(src[j]))) {
				j++
			}
			out = append(out, tsTok{'i', src[i:j], line})
			i = j
		case unicode.IsDigit(rune(c)):
			j := i
			for j < len(src) && (unicode.IsDigit(rune(src[j])) || src[j] == '.' || src[j] == '_') {
				j++
			}
			out = append(out, tsTok{'n', src[i:j], line})
			i = j
		default:
			n := 1
			for _, op := range []string{"...", "===", "!==", "=>", "??", "?.", "&&", "||", "==", "!=", "<=", ">="} {
				if strings.HasPrefix(src[i:], op) {
					n = len(op)
					break
				}
			}
			out = append(out, tsTok{'p', src[i : i+n], line})
			i += n
		}
	}
	return out, nil
}

type tsParser struct {
	toks []tsTok
	pos  int
}

func (p *tsParser) peek() tsTok {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return tsTok{kind: 0}
}

func (p *tsParser) next() tsTok { t := p.peek(); p.pos++; return t }

func (p *tsParser) is(text string) bool {
	t := p.peek()
	return (t.kind == 'p' || t.kind == 'i') && t.text == text
}

func (p *tsParser) expect(text string) error {
	if t := p.next(); t.text != text || (t.kind != 'p' && t.kind != 'i') {
		return fmt.Errorf("line %d: want %q, got %q", t.line, text, t.text)
	}
	return nil
}

// file reads the interfaces and type aliases at the top level, and the
// api object's calls; everything else is skipped.
func (p *tsParser) file() (*tsFile, error) {
	f := &tsFile{decls: map[string]*tsType{}}
	depth := 0
	for p.pos < len(p.toks) {
		tk := p.peek()
		if tk.kind == 'p' {
			switch tk.text {
			case "{", "(", "[":
				depth++
			case "}", ")", "]":
				depth--
			}
		}
		if depth != 0 || tk.kind != 'i' {
			p.next()
			continue
		}
		prev := ""
		if p.pos > 0 {
			prev = p.toks[p.pos-1].text
		}
		switch {
		case tk.text == "interface" && (prev == "export" || prev == ";" || prev == "}" || p.pos == 0):
			p.next()
			name := p.next().text
			var bases []string
			if p.is("extends") {
				p.next()
				for !p.is("{") {
					if t := p.next(); t.kind == 'i' {
						bases = append(bases, t.text)
					}
				}
			}
			at := p.pos
			obj, err := p.object()
			if err != nil && prev != "export" {
				// A module's own interface (with a function's type, say) is
				// not part of what crosses to Go: skipped like the rest.
				p.pos = at
				continue
			}
			if err != nil {
				return nil, err
			}
			for _, b := range bases {
				base := f.resolve(&tsType{kind: tsRef, name: b})
				if base == nil || base.kind != tsObject {
					return nil, fmt.Errorf("interface %s extends %s, which is not declared before it", name, b)
				}
				obj.fields = append(slices.Clone(base.fields), obj.fields...)
			}
			obj.text = name
			f.decls[name] = obj
		case tk.text == "type" && prev == "export" || tk.text == "type" && (prev == ";" || prev == "}"):
			p.next()
			name := p.next().text
			if err := p.expect("="); err != nil {
				return nil, err
			}
			at := p.pos
			if ty, err := p.union(); err == nil && p.is(";") {
				f.decls[name] = ty
			} else {
				p.pos = at
				p.skipTo(";") // a type the reader does not follow (a function's)
			}
		case tk.text == "api" && prev == "const":
			p.next()
			if err := p.expect("="); err != nil {
				return nil, err
			}
			calls, err := p.apiObject()
			if err != nil {
				return nil, err
			}
			f.calls = calls
		default:
			p.next()
		}
	}
	return f, nil
}

// union reads T | U | …
func (p *tsParser) union() (*tsType, error) {
	start := p.pos
	if p.is("|") {
		p.next()
	}
	var alts []*tsType
	for {
		a, err := p.postfix()
		if err != nil {
			return nil, err
		}
		alts = append(alts, a)
		if !p.is("|") {
			break
		}
		p.next()
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &tsType{kind: tsUnion, alts: alts, text: p.text(start)}, nil
}

func (p *tsParser) text(from int) string {
	var parts []string
	for _, t := range p.toks[from:p.pos] {
		if t.kind == 's' {
			parts = append(parts, strconv.Quote(t.text))
		} else {
			parts = append(parts, t.text)
		}
	}
	return strings.Join(parts, " ")
}

func (p *tsParser) postfix() (*tsType, error) {
	start := p.pos
	t, err := p.primary()
	if err != nil {
		return nil, err
	}
	for p.is("[") && p.pos+1 < len(p.toks) && p.toks[p.pos+1].text == "]" {
		p.pos += 2
		t = &tsType{kind: tsArray, elem: t, text: p.text(start)}
	}
	return t, nil
}

func (p *tsParser) primary() (*tsType, error) {
	start := p.pos
	tk := p.peek()
	switch {
	case tk.kind == 'p' && tk.text == "{":
		return p.object()
	case tk.kind == 'p' && tk.text == "(":
		p.next()
		t, err := p.union()
		if err != nil {
			return nil, err
		}
		return t, p.expect(")")
	case tk.kind == 's':
		p.next()
		return &tsType{kind: tsLiteral, name: tk.text, literalOf: "string", text: p.text(start)}, nil
	case tk.kind == 'n':
		p.next()
		return &tsType{kind: tsLiteral, name: tk.text, literalOf: "number", text: p.text(start)}, nil
	case tk.kind == 'i':
		p.next()
		t := &tsType{kind: tsRef, name: tk.text}
		if p.is("<") {
			p.next()
			for {
				a, err := p.union()
				if err != nil {
					return nil, err
				}
				t.args = append(t.args, a)
				if !p.is(",") {
					break
				}
				p.next()
			}
			if err := p.expect(">"); err != nil {
				return nil, err
			}
		}
		t.text = p.text(start)
		return t, nil
	}
	return nil, fmt.Errorf("line %d: unexpected %q in a type", tk.line, tk.text)
}

// object reads { name?: T; … }.
func (p *tsParser) object() (*tsType, error) {
	start := p.pos
	if err := p.expect("{"); err != nil {
		return nil, err
	}
	o := &tsType{kind: tsObject}
	for !p.is("}") {
		name := p.next()
		if name.kind != 'i' && name.kind != 's' {
			return nil, fmt.Errorf("line %d: want a field name, got %q", name.line, name.text)
		}
		if p.is("(") { // a method: not data
			p.skipTo(";", "}")
			if p.is(";") {
				p.next()
			}
			continue
		}
		f := tsField{name: name.text}
		if p.is("?") {
			p.next()
			f.optional = true
		}
		if err := p.expect(":"); err != nil {
			return nil, err
		}
		ty, err := p.union()
		if err != nil {
			return nil, err
		}
		f.typ = ty
		o.fields = append(o.fields, f)
		if p.is(";") || p.is(",") {
			p.next()
		}
	}
	p.next()
	o.text = p.text(start)
	return o, nil
}

// apiObject reads `{ key: (params) => call<T>(binding, [args], route), … }`.
func (p *tsParser) apiObject() ([]tsCall, error) {
	if err := p.expect("{"); err != nil {
		return nil, err
	}
	var calls []tsCall
	for !p.is("}") {
		c := tsCall{key: p.next().text, params: map[string]*tsType{}}
		if err := p.expect(":"); err != nil {
			return nil, err
		}
		if err := p.expect("("); err != nil {
			return nil, err
		}
		for !p.is(")") {
			name := p.next().text
			if err := p.expect(":"); err != nil {
				return nil, err
			}
			ty, err := p.union()
			if err != nil {
				return nil, err
			}
			c.params[name] = ty
			if p.is(",") {
				p.next()
			}
		}
		p.next()
		for _, want := range []string{"=>", "call", "<"} {
			if err := p.expect(want); err != nil {
				return nil, fmt.Errorf("api.%s: %w", c.key, err)
			}
		}
		res, err := p.union()
		if err != nil {
			return nil, err
		}
		c.result = res
		if err := p.expect(">"); err != nil {
			return nil, err
		}
		if err := p.expect("("); err != nil {
			return nil, err
		}
		if b := p.next(); b.kind == 's' {
			c.binding = b.text
		} else {
			return nil, fmt.Errorf("api.%s: the binding is not a string literal", c.key)
		}
		if err := p.expect(","); err != nil {
			return nil, err
		}
		if err := p.expect("["); err != nil {
			return nil, err
		}
		for !p.is("]") {
			c.args = append(c.args, p.expr())
			if p.is(",") {
				p.next()
			}
		}
		p.next()
		if err := p.expect(","); err != nil {
			return nil, err
		}
		m := p.next().text
		if m != "get" && m != "post" {
			return nil, fmt.Errorf("api.%s: the route is %q, not get(…) or post(…)", c.key, m)
		}
		c.method = strings.ToUpper(m)
		if err := p.expect("("); err != nil {
			return nil, err
		}
		path := p.next()
		if path.kind != 's' && path.kind != 't' {
			return nil, fmt.Errorf("api.%s: the route's path is not a literal", c.key)
		}
		c.path = normalizeRoute(path.text)
		c.query = queryNames(path.text)
		if p.is(",") {
			p.next()
			body := p.expr()
			c.body = &body
		}
		p.skipTo(")")
		p.next()
		if p.is(",") {
			p.next()
		}
		if err := p.expect(")"); err != nil {
			return nil, err
		}
		if p.is(",") {
			p.next()
		}
		calls = append(calls, c)
	}
	p.next()
	return calls, nil
}

// skipTo moves to the next text at this nesting depth.
func (p *tsParser) skipTo(texts ...string) {
	depth := 0
	for p.pos < len(p.toks) {
		t := p.peek()
		if t.kind == 'p' {
			if depth == 0 && slices.Contains(texts, t.text) {
				return
			}
			switch t.text {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				depth--
			}
		}
		p.next()
	}
}

// expr reads an argument: a bare name or an object literal is kept,
// anything else skipped.
func (p *tsParser) expr() tsExpr {
	start := p.pos
	var e tsExpr
	switch t := p.peek(); {
	case t.kind == 'p' && t.text == "{":
		p.next()
		e.object = []tsProp{}
		for !p.is("}") {
			if p.is("...") {
				p.next()
				e.object = append(e.object, tsProp{spread: p.next().text})
			} else {
				key := p.next().text
				prop := tsProp{key: key, value: tsExpr{ident: key}}
				if p.is(":") {
					p.next()
					prop.value = p.expr()
				}
				e.object = append(e.object, prop)
			}
			if p.is(",") {
				p.next()
			}
		}
		p.next()
	case t.kind == 'i':
		p.next()
		e.ident = t.text
	}
	p.skipTo(",", "]", "}", ")")
	if p.pos != start+1 && e.object == nil {
		e.ident = "" // more than a bare name
	}
	return e
}
