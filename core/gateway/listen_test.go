package gateway

import (
	"strings"
	"testing"
)

func TestServer_Listen_LoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.168.1.1:0", "localhost:0", ":0", "[::]:0"} {
		if _, err := Listen(Options{Addr: addr, Token: strings.Repeat("t", 32)}); err == nil {
			t.Errorf("Listen(%q) accepted a non-loopback address", addr)
		}
	}
	if _, err := Listen(Options{Token: "short"}); err == nil {
		t.Errorf("Listen accepted a short token")
	}
}

func TestParseWaitTimeout(t *testing.T) {
	cases := map[string]string{"": "50s", "30": "30s", "1500ms": "1.5s", "120": "50s", "2m": "50s", "0": "0s"}
	for in, want := range cases {
		d, err := ParseWaitTimeout(in)
		if err != nil || d.String() != want {
			t.Errorf("ParseWaitTimeout(%q) = %s, %v; want %s", in, d, err, want)
		}
	}
	for _, bad := range []string{"-1", "-5s", "soon", "1e3"} {
		if _, err := ParseWaitTimeout(bad); err == nil {
			t.Errorf("ParseWaitTimeout(%q) accepted", bad)
		}
	}
}
