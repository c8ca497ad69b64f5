package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Canonical JSON is the byte form that hashes and signatures are computed
// over. It has to match the FluxGit ledger byte for byte, which is why it is
// written out here rather than borrowed from encoding/json: that package
// escapes <, >, &, U+2028 and U+2029 and sorts keys as Go strings only for
// maps, none of which the format allows.
//
// The rules: object keys sorted by their UTF-8 bytes at every level, arrays
// in order, no insignificant whitespace, strings escaped the way
// JSON.stringify escapes them (\" \\ \b \f \n \r \t, other control characters
// as \u00xx, everything else literal), integers only.

var (
	// ErrNonInteger is returned when a value to be canonicalized holds a
	// floating-point number. The format carries integers only so that every
	// implementation prints a number the same way.
	ErrNonInteger = errors.New("audit: canonical JSON allows integers only")

	// ErrInvalidJSON is returned when bytes handed to the canonical encoder,
	// or a ledger line, are not strict JSON: malformed syntax, invalid
	// UTF-8, a lone surrogate escape, a duplicate object key, or nesting
	// deeper than the encoder accepts.
	ErrInvalidJSON = errors.New("audit: invalid JSON")
)

// maxDepth bounds nesting so that neither the parser nor the encoder can be
// driven into unbounded recursion by a hostile line.
const maxDepth = 64

// Canonical returns the canonical JSON encoding of v.
//
// Accepted: nil, bool, string (valid UTF-8), every Go integer type,
// json.Number holding an integer literal, json.RawMessage (parsed strictly,
// then re-encoded), map[string]any, []any, and anything else that
// encoding/json can marshal (structs, typed maps and slices), which is
// marshalled and then canonicalized. Floating-point values are refused with
// ErrNonInteger wherever they appear, even when their value is whole.
func Canonical(v any) ([]byte, error) {
	var e encoder
	if err := e.any(v, 0); err != nil {
		return nil, err
	}
	return e.buf, nil
}

type encoder struct {
	buf []byte
}

func (e *encoder) any(v any, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: nesting deeper than %d", ErrInvalidJSON, maxDepth)
	}
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	case string:
		return e.str(x)
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int8:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int16:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int32:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int64:
		e.buf = strconv.AppendInt(e.buf, x, 10)
	case uint:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint8:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint16:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint32:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint64:
		e.buf = strconv.AppendUint(e.buf, x, 10)
	case float32, float64:
		return ErrNonInteger
	case json.Number:
		return e.number([]byte(x))
	case json.RawMessage:
		return e.raw(x, depth)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys) // Go string order is UTF-8 byte order.
		e.buf = append(e.buf, '{')
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.str(k); err != nil {
				return err
			}
			e.buf = append(e.buf, ':')
			if err := e.any(x[k], depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '}')
	case []any:
		e.buf = append(e.buf, '[')
		for i, el := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.any(el, depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	default:
		// encoding/json prints a whole float as an integer, so floats are
		// looked for before marshalling rather than after.
		if hasFloat(reflect.ValueOf(v), 0) {
			return ErrNonInteger
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("audit: canonical JSON: %w", err)
		}
		return e.raw(b, depth)
	}
	return nil
}

// hasFloat reports whether marshalling v would print a floating-point
// value. Fields encoding/json skips (unexported, tagged "-") are skipped.
func hasFloat(v reflect.Value, depth int) bool {
	if depth > maxDepth || !v.IsValid() {
		return false
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		return true
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && hasFloat(v.Elem(), depth+1)
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return false // []byte marshals as a base64 string
		}
		for i := range v.Len() {
			if hasFloat(v.Index(i), depth+1) {
				return true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if hasFloat(it.Value(), depth+1) {
				return true
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() && !f.Anonymous || f.Tag.Get("json") == "-" {
				continue
			}
			if hasFloat(v.Field(i), depth+1) {
				return true
			}
		}
	}
	return false
}

func (e *encoder) raw(b []byte, depth int) error {
	p := parser{depth: depth}
	v, err := p.parse(b)
	if err != nil {
		return err
	}
	return e.value(&v, depth)
}

// number writes an integer literal, refusing fractions and exponents.
// "-0" is written as "0", as JSON.stringify does.
func (e *encoder) number(lit []byte) error {
	if !isIntegerLiteral(lit) {
		if isNumberLiteral(lit) {
			return ErrNonInteger
		}
		return fmt.Errorf("%w: malformed number", ErrInvalidJSON)
	}
	if len(lit) == 2 && lit[0] == '-' && lit[1] == '0' {
		lit = lit[1:]
	}
	e.buf = append(e.buf, lit...)
	return nil
}

const hexDigits = "0123456789abcdef"

func (e *encoder) str(s string) error { return appendQuoted(e, s, utf8.DecodeRuneInString) }

// strBytes is str for a byte slice, so that the verifier's hot path does
// not convert every string it re-encodes.
func (e *encoder) strBytes(s []byte) error { return appendQuoted(e, s, utf8.DecodeRune) }

// appendQuoted writes s as a JSON string: control characters, '"' and '\\'
// escaped, everything else (HTML characters, U+2028/U+2029, non-ASCII)
// as itself; invalid UTF-8 is an error.
func appendQuoted[T string | []byte](e *encoder, s T, decode func(T) (rune, int)) error {
	e.buf = append(e.buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := decode(s[i:])
			if r == utf8.RuneError && size == 1 {
				return fmt.Errorf("%w: string is not valid UTF-8", ErrInvalidJSON)
			}
			i += size
			continue
		}
		e.buf = append(e.buf, s[start:i]...)
		e.buf = appendEscape(e.buf, c)
		i++
		start = i
	}
	e.buf = append(e.buf, s[start:]...)
	e.buf = append(e.buf, '"')
	return nil
}

func appendEscape(buf []byte, c byte) []byte {
	switch c {
	case '"':
		return append(buf, '\\', '"')
	case '\\':
		return append(buf, '\\', '\\')
	case '\b':
		return append(buf, '\\', 'b')
	case '\f':
		return append(buf, '\\', 'f')
	case '\n':
		return append(buf, '\\', 'n')
	case '\r':
		return append(buf, '\\', 'r')
	case '\t':
		return append(buf, '\\', 't')
	}
	return append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}

// value encodes a parsed value. Object members are already sorted and free
// of duplicates (the parser guarantees both).
func (e *encoder) value(v *jvalue, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: nesting deeper than %d", ErrInvalidJSON, maxDepth)
	}
	switch v.kind {
	case jNull:
		e.buf = append(e.buf, "null"...)
	case jFalse:
		e.buf = append(e.buf, "false"...)
	case jTrue:
		e.buf = append(e.buf, "true"...)
	case jNumber:
		return e.number(v.str)
	case jString:
		return e.strBytes(v.str)
	case jArray:
		e.buf = append(e.buf, '[')
		for i := range v.arr {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(&v.arr[i], depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	case jObject:
		return e.object(v.obj, depth, "")
	}
	return nil
}

// object encodes sorted members, leaving out the key skip (when not
// empty). Leaving a key out here is how the signature input is produced
// from a parsed line without copying it.
func (e *encoder) object(members []jmember, depth int, skip string) error {
	e.buf = append(e.buf, '{')
	first := true
	for i := range members {
		m := &members[i]
		if skip != "" && string(m.key) == skip {
			continue
		}
		if !first {
			e.buf = append(e.buf, ',')
		}
		first = false
		if err := e.strBytes(m.key); err != nil {
			return err
		}
		e.buf = append(e.buf, ':')
		if err := e.value(&m.val, depth+1); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

func isIntegerLiteral(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	if b[0] == '0' {
		return len(b) == 1
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func isNumberLiteral(b []byte) bool {
	p := parser{data: b}
	end, ok := p.scanNumber(0)
	return ok && end == len(b)
}
