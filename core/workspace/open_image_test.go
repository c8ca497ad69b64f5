package workspace

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
)

// A runtime that pulls by name is given a digest-pinned reference; a tag,
// which could change under Sluice, is refused whatever the runtime.
func TestOpen_ImageMustBePinned(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		image string
		ok    bool
	}{
		{digest, true},
		{"registry.example:5000/team/ws@" + digest, true},
		{"ws:latest", false},
		{"ws", false},
		{"ws@sha256:abc", false},
		{"WS@" + digest, false},
	} {
		state, conf := t.TempDir(), t.TempDir()
		for _, d := range []string{state, conf} {
			if err := os.Chmod(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		m, err := Open(Options{StateDir: state, ConfigDir: conf, Image: tc.image})
		if tc.ok && err != nil {
			t.Errorf("%q refused: %v", tc.image, err)
		}
		var ce *errcode.Error
		if !tc.ok && (!errors.As(err, &ce) || ce.Code != errcode.InvalidArgument) {
			t.Errorf("%q: got %v, want an invalid-argument error", tc.image, err)
		}
		if m != nil {
			m.Close()
		}
	}
}
