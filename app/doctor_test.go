package app

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctor_FreshInstall_Passes: the app starts its own gateway, so on a
// fresh install its doctor only warns that none is running.
func TestDoctor_FreshInstall_Passes(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	t.Setenv("SLUICE_ALLOWED_ROOTS", "")
	var out, errOut bytes.Buffer
	if code := Main([]string{"doctor"}, nil, &out, &errOut); code != 0 || !strings.Contains(out.String(), "warn  gateway") {
		t.Fatalf("doctor on a fresh install: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}
