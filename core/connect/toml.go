package connect

// Codex keeps its settings in ~/.codex/config.toml, a file that belongs to
// the person: Sluice replaces its own [mcp_servers.sluice] tables in it and
// keeps every other byte, comments included. TOML libraries decode and
// re-encode (BurntSushi/toml, pelletier/go-toml/v2's Marshal), which drops
// comments and reorders keys, so the edit is a splice done here. Reading is
// go-toml's own parser (its unstable package, pinned in go.mod): it checks
// the syntax of the whole document, so that a malformed file is refused
// rather than made worse, and gives the byte ranges the splice needs.

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/sluicehq/sluice/core/jsonc"
)

type tomlTable struct {
	path  []string
	array bool
	// start is the offset of the header line; contentEnd is the end of the
	// table's last non-blank, non-comment line (including its newline).
	start, contentEnd int
	keys              [][]string
}

type tomlDoc struct {
	src []byte
	// top holds the keys defined before the first header.
	top    [][]string
	tables []tomlTable
}

// parseTOML checks the syntax of src and records its tables and keys. Like
// a TOML decoder it refuses a table defined twice; other redefinitions are
// left to the client that reads the file.
func parseTOML(src []byte) (*tomlDoc, error) {
	d := &tomlDoc{src: src}
	var cur *tomlTable
	p := unstable.Parser{}
	p.Reset(src)
	for p.NextExpression() {
		e := p.Expression()
		var path []string
		first, last := -1, 0
		for it := e.Key(); it.Next(); {
			k := it.Node()
			if first < 0 {
				first = int(k.Raw.Offset)
			}
			last = int(k.Raw.Offset + k.Raw.Length)
			path = append(path, string(k.Data))
		}
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			if cur != nil {
				d.tables = append(d.tables, *cur)
			}
			cur = &tomlTable{path: path, array: e.Kind == unstable.ArrayTable,
				start: bytes.LastIndexByte(src[:first], '\n') + 1}
			cur.contentEnd = lineEnd(src, last)
		case unstable.KeyValue:
			if cur == nil {
				d.top = append(d.top, path)
				continue
			}
			cur.keys = append(cur.keys, path)
			cur.contentEnd = lineEnd(src, int(e.Raw.Offset+e.Raw.Length))
		}
	}
	if err := p.Error(); err != nil {
		var pe *unstable.ParserError
		if errors.As(err, &pe) {
			at := len(src)
			if pe.Highlight != nil {
				at = cap(src) - cap(pe.Highlight)
			}
			return nil, jsonc.ErrorAt(src, at, pe.Message)
		}
		return nil, err
	}
	if cur != nil {
		d.tables = append(d.tables, *cur)
	}
	if err := checkDuplicateTables(d); err != nil {
		return nil, err
	}
	return d, nil
}

// lineEnd is the end of the line holding pos, past its newline. What
// follows an expression on its line is only a comment.
func lineEnd(src []byte, pos int) int {
	if i := bytes.IndexByte(src[pos:], '\n'); i >= 0 {
		return pos + i + 1
	}
	return len(src)
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

func isBare(c byte) bool {
	return c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}
