package connect

import (
	"github.com/sluicehq/sluice/core/jsonc"

	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// A minimal TOML scanner and table editor. It validates the whole document
// (so that a malformed file is refused rather than made worse) and records
// where each table starts and which keys it defines, which is all that is
// needed to replace Sluice's own tables and keep every other byte.

type tomlTable struct {
	path  []string
	array bool
	// start is the offset of the header line; contentEnd is the end of the
	// table's last non-blank, non-comment line (including its newline);
	// end is where the next header line starts.
	start, contentEnd, end int
	keys                   [][]string
}

type tomlDoc struct {
	src []byte
	// top holds the keys defined before the first header.
	top    [][]string
	tables []tomlTable
}

type tomlScanner struct {
	src []byte
	pos int
}

func (s *tomlScanner) fail(msg string) error { return jsonc.ErrorAt(s.src, s.pos, msg) }

func (s *tomlScanner) eof() bool { return s.pos >= len(s.src) }

func (s *tomlScanner) peek() byte {
	if s.eof() {
		return 0
	}
	return s.src[s.pos]
}

func (s *tomlScanner) skipSpace() {
	for !s.eof() && (s.src[s.pos] == ' ' || s.src[s.pos] == '\t') {
		s.pos++
	}
}

func (s *tomlScanner) skipComment() {
	if s.peek() == '#' {
		for !s.eof() && s.src[s.pos] != '\n' {
			s.pos++
		}
	}
}

// endOfLine expects optional space and comment, then a newline or EOF.
func (s *tomlScanner) endOfLine() error {
	s.skipSpace()
	s.skipComment()
	if s.eof() {
		return nil
	}
	if s.peek() == '\r' && s.pos+1 < len(s.src) && s.src[s.pos+1] == '\n' {
		s.pos += 2
		return nil
	}
	if s.peek() == '\n' {
		s.pos++
		return nil
	}
	return s.fail("expected the end of the line")
}

// skipBlank skips whitespace, newlines and comments (inside arrays).
func (s *tomlScanner) skipBlank() {
	for !s.eof() {
		switch s.peek() {
		case ' ', '\t', '\n', '\r':
			s.pos++
		case '#':
			s.skipComment()
		default:
			return
		}
	}
}

func isBare(c byte) bool {
	return c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// key parses a possibly dotted key.
func (s *tomlScanner) key() ([]string, error) {
	var parts []string
	for {
		s.skipSpace()
		switch c := s.peek(); {
		case c == '"':
			v, err := s.basicString()
			if err != nil {
				return nil, err
			}
			parts = append(parts, v)
		case c == '\'':
			v, err := s.literalString()
			if err != nil {
				return nil, err
			}
			parts = append(parts, v)
		case isBare(c):
			start := s.pos
			for !s.eof() && isBare(s.peek()) {
				s.pos++
			}
			parts = append(parts, string(s.src[start:s.pos]))
		default:
			return nil, s.fail("expected a key")
		}
		s.skipSpace()
		if s.peek() != '.' {
			return parts, nil
		}
		s.pos++
	}
}

func (s *tomlScanner) basicString() (string, error) {
	start := s.pos
	s.pos++
	for !s.eof() {
		switch c := s.src[s.pos]; {
		case c == '\\':
			s.pos += 2
		case c == '"':
			s.pos++
			return unquoteTOML(string(s.src[start+1 : s.pos-1])), nil
		case c == '\n':
			return "", s.fail("newline in a string")
		default:
			s.pos++
		}
	}
	return "", s.fail("unterminated string")
}

func (s *tomlScanner) literalString() (string, error) {
	start := s.pos
	s.pos++
	for !s.eof() {
		switch s.src[s.pos] {
		case '\'':
			s.pos++
			return string(s.src[start+1 : s.pos-1]), nil
		case '\n':
			return "", s.fail("newline in a string")
		}
		s.pos++
	}
	return "", s.fail("unterminated string")
}

func (s *tomlScanner) multiline(delim string) error {
	s.pos += 3
	for !s.eof() {
		if delim == `"""` && s.src[s.pos] == '\\' {
			s.pos += 2
			continue
		}
		if bytes.HasPrefix(s.src[s.pos:], []byte(delim)) {
			s.pos += 3
			// Up to two more quotes belong to the content.
			for i := 0; i < 2 && !s.eof() && s.src[s.pos] == delim[0]; i++ {
				s.pos++
			}
			return nil
		}
		s.pos++
	}
	return s.fail("unterminated multi-line string")
}

var (
	tomlScalar = regexp.MustCompile(`^(true|false|[+-]?(inf|nan)|` +
		`[+-]?(0|[1-9](_?[0-9])*)(\.[0-9](_?[0-9])*)?([eE][+-]?[0-9](_?[0-9])*)?|` +
		`0x[0-9A-Fa-f](_?[0-9A-Fa-f])*|0o[0-7](_?[0-7])*|0b[01](_?[01])*|` +
		`[0-9]{4}-[0-9]{2}-[0-9]{2}([Tt ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?([Zz]|[+-][0-9]{2}:[0-9]{2})?)?|` +
		`[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?)$`)
	tomlDateTimeSpace = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:`)
)

func (s *tomlScanner) value(depth int) error {
	if depth > 100 {
		return s.fail("nesting too deep")
	}
	switch c := s.peek(); {
	case bytes.HasPrefix(s.src[s.pos:], []byte(`"""`)):
		return s.multiline(`"""`)
	case bytes.HasPrefix(s.src[s.pos:], []byte(`'''`)):
		return s.multiline(`'''`)
	case c == '"':
		_, err := s.basicString()
		return err
	case c == '\'':
		_, err := s.literalString()
		return err
	case c == '[':
		s.pos++
		for {
			s.skipBlank()
			if s.peek() == ']' {
				s.pos++
				return nil
			}
			if err := s.value(depth + 1); err != nil {
				return err
			}
			s.skipBlank()
			switch s.peek() {
			case ',':
				s.pos++
			case ']':
				s.pos++
				return nil
			default:
				return s.fail("expected ',' or ']' in an array")
			}
		}
	case c == '{':
		s.pos++
		first := true
		for {
			s.skipBlank()
			if s.peek() == '}' {
				s.pos++
				return nil
			}
			if !first {
				return s.fail("expected ',' or '}' in an inline table")
			}
			for {
				if _, err := s.key(); err != nil {
					return err
				}
				if s.peek() != '=' {
					return s.fail("expected '=' after a key")
				}
				s.pos++
				s.skipSpace()
				if err := s.value(depth + 1); err != nil {
					return err
				}
				s.skipBlank()
				if s.peek() == ',' {
					s.pos++
					s.skipBlank()
					continue
				}
				break
			}
			first = false
		}
	default:
		start := s.pos
		if tomlDateTimeSpace.Match(s.src[s.pos:]) {
			s.pos += 11
		}
		for !s.eof() && (isBare(s.peek()) || strings.IndexByte("+.:", s.peek()) >= 0) {
			s.pos++
		}
		if !tomlScalar.Match(s.src[start:s.pos]) {
			s.pos = start
			return s.fail("invalid value")
		}
		return nil
	}
}

// parseTOML validates src and records its tables.
func parseTOML(src []byte) (*tomlDoc, error) {
	d := &tomlDoc{src: src}
	s := &tomlScanner{src: src}
	var cur *tomlTable
	lastContent := 0
	closeTable := func(at int) {
		if cur != nil {
			cur.end = at
			cur.contentEnd = max(lastContent, cur.start)
			d.tables = append(d.tables, *cur)
		}
	}
	for {
		lineStart := s.pos
		s.skipSpace()
		if s.eof() {
			break
		}
		switch s.peek() {
		case '\n', '\r', '#':
			if err := s.endOfLine(); err != nil {
				return nil, err
			}
			continue
		case '[':
			closeTable(lineStart)
			s.pos++
			array := s.peek() == '['
			if array {
				s.pos++
			}
			path, err := s.key()
			if err != nil {
				return nil, err
			}
			if s.peek() != ']' || (array && (s.pos+1 >= len(s.src) || s.src[s.pos+1] != ']')) {
				return nil, s.fail("expected ']' to close a table header")
			}
			s.pos++
			if array {
				s.pos++
			}
			if err := s.endOfLine(); err != nil {
				return nil, err
			}
			cur = &tomlTable{path: path, array: array, start: lineStart}
			lastContent = s.pos
		default:
			k, err := s.key()
			if err != nil {
				return nil, err
			}
			if s.peek() != '=' {
				return nil, s.fail("expected '=' after a key")
			}
			s.pos++
			s.skipSpace()
			if err := s.value(0); err != nil {
				return nil, err
			}
			if err := s.endOfLine(); err != nil {
				return nil, err
			}
			if cur == nil {
				d.top = append(d.top, k)
			} else {
				cur.keys = append(cur.keys, k)
			}
			lastContent = s.pos
		}
	}
	closeTable(len(src))
	if err := checkDuplicateTables(d); err != nil {
		return nil, err
	}
	return d, nil
}

func checkDuplicateTables(d *tomlDoc) error {
	seen := map[string]bool{}
	for _, t := range d.tables {
		if t.array {
			continue
		}
		k := strings.Join(t.path, "\x00")
		if seen[k] {
			return fmt.Errorf("table [%s] is defined twice", strings.Join(t.path, "."))
		}
		seen[k] = true
	}
	return nil
}

func hasPrefix(path, prefix []string) bool {
	if len(path) < len(prefix) {
		return false
	}
	for i := range prefix {
		if path[i] != prefix[i] {
			return false
		}
	}
	return true
}

// ReplaceTables removes every table at or below prefix and puts block (a
// complete, newline-terminated TOML fragment) where the first of them was,
// or at the end. Definitions of prefix in another form (an inline table, a
// dotted key) are refused rather than guessed at.
func (d *tomlDoc) ReplaceTables(prefix []string, block string) ([]byte, error) {
	name := strings.Join(prefix, ".")
	for _, k := range d.top {
		if hasPrefix(k, prefix) || hasPrefix(prefix, k) {
			return nil, fmt.Errorf("%w: %s is defined with a top-level key; edit it by hand", ErrConflict, name)
		}
	}
	type region struct{ start, end int }
	var regions []region
	for _, t := range d.tables {
		if hasPrefix(t.path, prefix) {
			if t.array {
				return nil, fmt.Errorf("%w: [[%s]] is an array of tables; edit it by hand", ErrConflict, strings.Join(t.path, "."))
			}
			regions = append(regions, region{t.start, t.contentEnd})
			continue
		}
		if hasPrefix(prefix, t.path) {
			for _, k := range t.keys {
				if hasPrefix(append(append([]string{}, t.path...), k...), prefix) || hasPrefix(prefix, append(append([]string{}, t.path...), k...)) {
					return nil, fmt.Errorf("%w: %s is defined inside [%s]; edit it by hand", ErrConflict, name, strings.Join(t.path, "."))
				}
			}
		}
	}
	nl := "\n"
	if bytes.Contains(d.src, []byte("\r\n")) {
		nl = "\r\n"
		block = strings.ReplaceAll(block, "\n", "\r\n")
	}
	var out bytes.Buffer
	if len(regions) == 0 {
		out.Write(d.src)
		if out.Len() > 0 {
			if !bytes.HasSuffix(d.src, []byte("\n")) {
				out.WriteString(nl)
			}
			if !bytes.HasSuffix(out.Bytes(), []byte(nl+nl)) {
				out.WriteString(nl)
			}
		}
		out.WriteString(block)
		return out.Bytes(), nil
	}
	pos := 0
	for i, r := range regions {
		out.Write(d.src[pos:r.start])
		if i == 0 {
			out.WriteString(block)
		}
		pos = r.end
		// Removing a later region leaves its surrounding blank lines; drop
		// one so that repeated edits do not accumulate them.
		if i > 0 {
			pos = skipOneBlankLine(d.src, pos)
		}
	}
	out.Write(d.src[pos:])
	return out.Bytes(), nil
}

func skipOneBlankLine(src []byte, pos int) int {
	switch {
	case bytes.HasPrefix(src[pos:], []byte("\r\n")):
		return pos + 2
	case bytes.HasPrefix(src[pos:], []byte("\n")):
		return pos + 1
	}
	return pos
}

// tomlString renders s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlKey renders a key part, quoting it when it is not bare.
func tomlKey(k string) string {
	for i := 0; i < len(k); i++ {
		if !isBare(k[i]) {
			return tomlString(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}

// unquoteTOML decodes the escapes of a basic string well enough to compare
// keys; values are never decoded.
func unquoteTOML(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	r := strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\n`, "\n", `\t`, "\t", `\r`, "\r", `\b`, "\b", `\f`, "\f")
	return r.Replace(s)
}
