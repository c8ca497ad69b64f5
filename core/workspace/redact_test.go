package workspace

import (
	"bytes"
	"strings"
	"testing"
)

func TestRedactor_EveryChunkBoundary(t *testing.T) {
	secrets := map[string]string{"TOKEN": "s3cr3t-value-42", "KEY": "abcdKEY"}
	input := "start s3cr3t-value-42 middle abcdKEYabcdKEY s3cr3t-value-4 end s3cr3t-value-42"
	want := "start [redacted:TOKEN] middle [redacted:KEY][redacted:KEY] s3cr3t-value-4 end [redacted:TOKEN]"
	if got := redactString(secrets, input); got != want {
		t.Fatalf("whole: got %q\nwant %q", got, want)
	}
	// Split the stream at every pair of positions.
	for i := 0; i <= len(input); i++ {
		for j := i; j <= len(input); j++ {
			var out bytes.Buffer
			r := newRedactor(secrets, &out)
			r.Write([]byte(input[:i]))
			r.Write([]byte(input[i:j]))
			r.Write([]byte(input[j:]))
			r.Flush()
			if out.String() != want {
				t.Fatalf("split at %d,%d: got %q", i, j, out.String())
			}
		}
	}
	// One byte at a time.
	var out bytes.Buffer
	r := newRedactor(secrets, &out)
	for i := 0; i < len(input); i++ {
		r.Write([]byte{input[i]})
	}
	r.Flush()
	if out.String() != want {
		t.Fatalf("byte by byte: got %q", out.String())
	}
}

func TestRedactor_OverlappingSecrets(t *testing.T) {
	// A short secret that is a prefix of a longer one must not let the
	// longer one's tail through when the stream splits between them.
	secrets := map[string]string{"SHORT": "abcd", "LONG": "abcdefgh"}
	input := "x abcdefgh y abcd z"
	want := "x [redacted:LONG] y [redacted:SHORT] z"
	for i := 0; i <= len(input); i++ {
		var out bytes.Buffer
		r := newRedactor(secrets, &out)
		r.Write([]byte(input[:i]))
		r.Write([]byte(input[i:]))
		r.Flush()
		if out.String() != want {
			t.Fatalf("split at %d: got %q, want %q", i, out.String(), want)
		}
	}
}

func TestRedactor_HoldsBackOnlyPossiblePrefixes(t *testing.T) {
	var out bytes.Buffer
	r := newRedactor(map[string]string{"T": "zzzz-secret"}, &out)
	r.Write([]byte("progress line 1\nprogress zz"))
	if got := out.String(); got != "progress line 1\nprogress " {
		t.Fatalf("released %q: text that cannot start a secret must stream at once", got)
	}
	r.Write([]byte("z!"))
	if got := out.String(); got != "progress line 1\nprogress zzz!" {
		t.Fatalf("released %q", got)
	}
	r.Flush()
}

func TestRedactor_NoSecretsPassesThrough(t *testing.T) {
	var out bytes.Buffer
	r := newRedactor(nil, &out)
	r.Write([]byte("plain"))
	r.Flush()
	if out.String() != "plain" {
		t.Fatalf("got %q", out.String())
	}
	if got := redactString(map[string]string{"A": "xxxx"}, strings.Repeat("x", 9)); got != "[redacted:A][redacted:A]x" {
		t.Fatalf("repeated: %q", got)
	}
}
