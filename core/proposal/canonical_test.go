package proposal

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestCanonical(t *testing.T) {
	cases := []struct {
		name string
		in   any
		want string
	}{
		{"sorted keys at every level", map[string]any{"b": 1, "a": map[string]any{"z": true, "y": nil}}, `{"a":{"y":null,"z":true},"b":1}`},
		{"keys by UTF-8 bytes", map[string]any{"é": 1, "z": 2, "Z": 3}, `{"Z":3,"z":2,"é":1}`},
		{"arrays keep order", []any{3, 1, 2}, `[3,1,2]`},
		{"no HTML escaping", "<a href='x'>&</a>", `"<a href='x'>&</a>"`},
		{"line separators literal", "a\u2028b\u2029c", "\"a\u2028b\u2029c\""},
		{"non-ASCII literal", "größe 日本", `"größe 日本"`},
		{"short escapes", "\"\\\b\f\n\r\t", `"\"\\\b\f\n\r\t"`},
		{"other controls as u00xx", "\x00\x01\x1f\x7f", `"\u0000\u0001\u001f` + "\x7f" + `"`},
		{"negative and large integers", []any{-5, int64(1) << 53, json.Number("9007199254740993")}, `[-5,9007199254740992,9007199254740993]`},
		{"struct tags and omitempty", struct {
			B string `json:"b"`
			A string `json:"a,omitempty"`
		}{B: "x"}, `{"b":"x"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := canonical(c.in)
			if err != nil {
				t.Fatalf("canonical: %v", err)
			}
			if string(got) != c.want {
				t.Fatalf("canonical\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestCanonical_RefusesNonIntegers(t *testing.T) {
	for _, v := range []any{1.5, map[string]any{"x": 1e300}, []any{json.Number("1.0")}} {
		if _, err := canonical(v); !errors.Is(err, errNonInteger) {
			t.Errorf("canonical(%v) = %v, want errNonInteger", v, err)
		}
	}
}

// encoding/json differs from the canonical form exactly where the ledger
// format says it must; this pins the difference down.
func TestCanonical_DiffersFromEncodingJSON(t *testing.T) {
	v := map[string]any{"s": "<&>\u2028"}
	std, _ := json.Marshal(v)
	got, _ := canonical(v)
	if string(std) == string(got) {
		t.Fatalf("expected encoding/json to escape differently; both gave %s", got)
	}
	if string(got) != "{\"s\":\"<&>\u2028\"}" {
		t.Fatalf("canonical = %s", got)
	}
}
