package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[true,null,"x"]}`,
		`"<>&\u2028\u2029é😀"`,
		`{"\ue000":1,"\ud83d\ude00":2}`,
		`"\u0000\u001f\b\f\n\r\t\"\\/"`,
		`[-0,0,123456789012345678901234567890]`,
		`1.5`,
		`{"a":{"a":{"a":[]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		out, err := Marshal(v)
		if err != nil {
			if !errors.Is(err, ErrNonInteger) && !errors.Is(err, ErrInvalidJSON) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("not valid JSON: %q", out)
		}
		again, err := Marshal(json.RawMessage(out))
		if err != nil {
			t.Fatalf("output does not re-canonicalize: %v\n%q", err, out)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point:\n%q\n%q", out, again)
		}
		// The strict Parser, where it accepts the input at all, agrees with
		// the encoding/json route.
		if direct, err := Marshal(json.RawMessage(data)); err == nil && !bytes.Equal(direct, out) {
			t.Fatalf("parsers disagree:\n%q\n%q", direct, out)
		}
	})
}
