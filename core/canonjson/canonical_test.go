package canonjson

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func TestCanonical_Vectors(t *testing.T) {
	type tagged struct {
		Zeta  string            `json:"zeta"`
		Alpha int               `json:"alpha"`
		Map   map[string]string `json:"map,omitempty"`
	}
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"nested keys sorted", map[string]any{"b": 1, "a": map[string]any{"d": []any{3, map[string]any{"z": 1, "y": 2}}, "c": nil}},
			`{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}`},
		// UTF-8 puts U+E000 (EE 80 80) before U+1F600 (F0 9F 98 80); UTF-16
		// code-unit order (JavaScript's default sort) puts the surrogate pair
		// D83D DE00 first.
		{"utf-8 not utf-16 key order", map[string]any{"\U0001F600": 1, "\uE000": 2, "a": 3},
			"{\"a\":3,\"\uE000\":2,\"\U0001F600\":1}"},
		{"html characters literal", map[string]any{"h": `<a href="x">&amp;</a>`},
			`{"h":"<a href=\"x\">&amp;</a>"}`},
		{"line and paragraph separators literal", "a\u2028b\u2029c", "\"a\u2028b\u2029c\""},
		{"non-ascii literal", "é中😀", `"é中😀"`},
		{"slash literal", "a/b", `"a/b"`},
		{"control characters", "\x00\x01\b\t\n\x0b\f\r\x1f\x7f\"\\",
			`"\u0000\u0001\b\t\n\u000b\f\r\u001f` + "\x7f" + `\"\\"`},
		{"integers", []any{int64(-9223372036854775808), uint64(18446744073709551615), int8(-1), uint16(7), 0},
			`[-9223372036854775808,18446744073709551615,-1,7,0]`},
		{"json.Number integer", []any{json.Number("123"), json.Number("-0"), json.Number("-5")}, `[123,0,-5]`},
		{"raw message reparsed", json.RawMessage(" {\"b\" : 1, \"a\":[true, false, null, \"\\u00e9\\n\"]} "),
			"{\"a\":[true,false,null,\"é\\n\"],\"b\":1}"},
		{"raw surrogate pair", json.RawMessage(`"\ud83d\ude00"`), `"😀"`},
		{"struct through encoding/json", tagged{Zeta: "<z>", Alpha: 2, Map: map[string]string{"y": "1", "x": "2"}},
			`{"alpha":2,"map":{"x":"2","y":"1"},"zeta":"<z>"}`},
		{"empty containers", map[string]any{"o": map[string]any{}, "a": []any{}}, `{"a":[],"o":{}}`},
		{"bool and null", []any{true, false, nil}, `[true,false,null]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Marshal(tt.in)
			if err != nil {
				t.Fatalf("Canonical: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("Canonical = %s\nwant        %s", got, tt.want)
			}
			again, err := Marshal(json.RawMessage(got))
			if err != nil || string(again) != string(got) {
				t.Errorf("not a fixed point: %s, %v", again, err)
			}
		})
	}
}

// TestCanonical_DiffersFromEncodingJSON documents why the Encoder is our own:
// encoding/json escapes what the format keeps literal.
func TestCanonical_DiffersFromEncodingJSON(t *testing.T) {
	in := map[string]any{"s": "<&>\u2028\u2029"}
	std, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"s":"\u003c\u0026\u003e\u2028\u2029"}`; string(std) != want {
		t.Fatalf("encoding/json changed: %s", std)
	}
	if want := "{\"s\":\"<&>\u2028\u2029\"}"; string(ours) != want {
		t.Errorf("Canonical = %q, want %q", ours, want)
	}
	if sha256Hex(std) == sha256Hex(ours) {
		t.Error("hashes agree; the difference this test documents is gone")
	}
}

func TestCanonical_RefusesFloats(t *testing.T) {
	type withFloat struct {
		F float64 `json:"f"`
	}
	for name, v := range map[string]any{
		"float64":           1.0,
		"float32":           float32(2),
		"nested float":      map[string]any{"a": []any{1, 2.5}},
		"number fraction":   json.Number("1.5"),
		"number exponent":   json.Number("1e3"),
		"raw fraction":      json.RawMessage(`{"a":1.0}`),
		"struct float":      withFloat{F: 1.5},
		"typed float slice": []float64{1},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Marshal(v); !errors.Is(err, ErrNonInteger) {
				t.Errorf("Marshal(%v) error = %v, want ErrNonInteger", v, err)
			}
		})
	}
}

func TestCanonical_RefusesInvalid(t *testing.T) {
	for name, v := range map[string]any{
		"invalid utf-8 string": "a\xffb",
		"invalid utf-8 key":    map[string]any{"\xff": 1},
		"duplicate keys":       json.RawMessage(`{"a":1,"a":2}`),
		"lone high surrogate":  json.RawMessage(`"\ud83d"`),
		"lone low surrogate":   json.RawMessage(`"\ude00x"`),
		"trailing data":        json.RawMessage(`{} {}`),
		"raw control char":     json.RawMessage("\"a\x01\""),
		"malformed number":     json.Number("12a"),
		"leading zero":         json.RawMessage(`012`),
		"too deep":             json.RawMessage(strings.Repeat("[", 100) + strings.Repeat("]", 100)),
		"unsupported type":     make(chan int),
	} {
		t.Run(name, func(t *testing.T) {
			if out, err := Marshal(v); err == nil {
				t.Errorf("Canonical accepted it: %s", out)
			}
		})
	}
}
