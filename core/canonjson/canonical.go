package canonjson

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
	ErrNonInteger = errors.New("canonical JSON allows integers only")

	// ErrInvalidJSON is returned when bytes handed to the canonical Encoder,
	// or a ledger line, are not strict JSON: malformed syntax, invalid
	// UTF-8, a lone surrogate escape, a duplicate object key, or nesting
	// deeper than the Encoder accepts.
	ErrInvalidJSON = errors.New("invalid JSON")
)

// maxDepth bounds nesting so that neither the Parser nor the Encoder can be
// driven into unbounded recursion by a hostile line.
const maxDepth = 64

// Marshal returns the canonical JSON encoding of v.
//
// Accepted: nil, bool, string (valid UTF-8), every Go integer type,
// json.Number holding an integer literal, json.RawMessage (parsed strictly,
// then re-encoded), map[string]any, []any, and anything else that
// encoding/json can marshal (structs, typed maps and slices), which is
// marshalled and then canonicalized. Floating-point values are refused with
// ErrNonInteger wherever they appear, even when their value is whole.
func Marshal(v any) ([]byte, error) {
	var e Encoder
	if err := e.any(v, 0); err != nil {
		return nil, err
	}
	return e.Buf, nil
}

// Encoder writes canonical JSON. Marshal is the way in for Go values; the
// audit ledger's verifier uses an Encoder directly to re-encode parsed lines
// without allocating per line.
type Encoder struct {
	// Buf is the encoding so far; a caller that reuses an Encoder for
	// many values truncates it between them.
	Buf []byte
}

func (e *Encoder) any(v any, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: nesting deeper than %d", ErrInvalidJSON, maxDepth)
	}
	switch x := v.(type) {
	case nil:
		e.Buf = append(e.Buf, "null"...)
	case bool:
		e.Buf = strconv.AppendBool(e.Buf, x)
	case string:
		return e.quote(x)
	case int:
		e.Buf = strconv.AppendInt(e.Buf, int64(x), 10)
	case int8:
		e.Buf = strconv.AppendInt(e.Buf, int64(x), 10)
	case int16:
		e.Buf = strconv.AppendInt(e.Buf, int64(x), 10)
	case int32:
		e.Buf = strconv.AppendInt(e.Buf, int64(x), 10)
	case int64:
		e.Buf = strconv.AppendInt(e.Buf, x, 10)
	case uint:
		e.Buf = strconv.AppendUint(e.Buf, uint64(x), 10)
	case uint8:
		e.Buf = strconv.AppendUint(e.Buf, uint64(x), 10)
	case uint16:
		e.Buf = strconv.AppendUint(e.Buf, uint64(x), 10)
	case uint32:
		e.Buf = strconv.AppendUint(e.Buf, uint64(x), 10)
	case uint64:
		e.Buf = strconv.AppendUint(e.Buf, x, 10)
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
		e.Buf = append(e.Buf, '{')
		for i, k := range keys {
			if i > 0 {
				e.Buf = append(e.Buf, ',')
			}
			if err := e.quote(k); err != nil {
				return err
			}
			e.Buf = append(e.Buf, ':')
			if err := e.any(x[k], depth+1); err != nil {
				return err
			}
		}
		e.Buf = append(e.Buf, '}')
	case []any:
		e.Buf = append(e.Buf, '[')
		for i, el := range x {
			if i > 0 {
				e.Buf = append(e.Buf, ',')
			}
			if err := e.any(el, depth+1); err != nil {
				return err
			}
		}
		e.Buf = append(e.Buf, ']')
	default:
		// encoding/json prints a whole float as an integer, so floats are
		// looked for before marshalling rather than after.
		if hasFloat(reflect.ValueOf(v), 0) {
			return ErrNonInteger
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("canonical JSON: %w", err)
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

func (e *Encoder) raw(b []byte, depth int) error {
	p := Parser{depth: depth}
	v, err := p.Parse(b)
	if err != nil {
		return err
	}
	return e.Value(&v, depth)
}

// number writes an integer literal, refusing fractions and exponents.
// "-0" is written as "0", as JSON.stringify does.
func (e *Encoder) number(lit []byte) error {
	if !IsIntegerLiteral(lit) {
		if isNumberLiteral(lit) {
			return ErrNonInteger
		}
		return fmt.Errorf("%w: malformed number", ErrInvalidJSON)
	}
	if len(lit) == 2 && lit[0] == '-' && lit[1] == '0' {
		lit = lit[1:]
	}
	e.Buf = append(e.Buf, lit...)
	return nil
}

const hexDigits = "0123456789abcdef"

func (e *Encoder) quote(s string) error { return appendQuoted(e, s, utf8.DecodeRuneInString) }

// StringBytes writes s as a JSON string; a byte slice, so that the
// verifier's hot path does not convert every string it re-encodes.
func (e *Encoder) StringBytes(s []byte) error { return appendQuoted(e, s, utf8.DecodeRune) }

// appendQuoted writes s as a JSON string: control characters, '"' and '\\'
// escaped, everything else (HTML characters, U+2028/U+2029, non-ASCII)
// as itself; invalid UTF-8 is an error.
func appendQuoted[T string | []byte](e *Encoder, s T, decode func(T) (rune, int)) error {
	e.Buf = append(e.Buf, '"')
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
		e.Buf = append(e.Buf, s[start:i]...)
		e.Buf = appendEscape(e.Buf, c)
		i++
		start = i
	}
	e.Buf = append(e.Buf, s[start:]...)
	e.Buf = append(e.Buf, '"')
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

// Value encodes a parsed value at nesting depth. Object members are already sorted and free
// of duplicates (the Parser guarantees both).
func (e *Encoder) Value(v *Value, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: nesting deeper than %d", ErrInvalidJSON, maxDepth)
	}
	switch v.Kind {
	case Null:
		e.Buf = append(e.Buf, "null"...)
	case False:
		e.Buf = append(e.Buf, "false"...)
	case True:
		e.Buf = append(e.Buf, "true"...)
	case Number:
		return e.number(v.Str)
	case String:
		return e.StringBytes(v.Str)
	case Array:
		e.Buf = append(e.Buf, '[')
		for i := range v.Arr {
			if i > 0 {
				e.Buf = append(e.Buf, ',')
			}
			if err := e.Value(&v.Arr[i], depth+1); err != nil {
				return err
			}
		}
		e.Buf = append(e.Buf, ']')
	case Object:
		return e.Object(v.Obj, depth, "")
	}
	return nil
}

// Object encodes sorted members at nesting depth, leaving out the key skip (when not
// empty). Leaving a key out here is how the signature input is produced
// from a parsed line without copying it.
func (e *Encoder) Object(members []Member, depth int, skip string) error {
	e.Buf = append(e.Buf, '{')
	first := true
	for i := range members {
		m := &members[i]
		if skip != "" && string(m.Key) == skip {
			continue
		}
		if !first {
			e.Buf = append(e.Buf, ',')
		}
		first = false
		if err := e.StringBytes(m.Key); err != nil {
			return err
		}
		e.Buf = append(e.Buf, ':')
		if err := e.Value(&m.Val, depth+1); err != nil {
			return err
		}
	}
	e.Buf = append(e.Buf, '}')
	return nil
}

// IsIntegerLiteral reports whether b is a JSON number without fraction or
// exponent.
func IsIntegerLiteral(b []byte) bool {
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
	p := Parser{data: b}
	end, ok := p.scanNumber(0)
	return ok && end == len(b)
}
