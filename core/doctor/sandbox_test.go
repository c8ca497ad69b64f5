package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each kernel switch that keeps ordinary users from creating user
// namespaces is named, with how to turn it on; none set is no finding.
func TestUsernsOff_NamesTheSwitch(t *testing.T) {
	for _, c := range []struct {
		file, value, want, hint string
	}{
		{"kernel/unprivileged_userns_clone", "0", "unprivileged_userns_clone = 0", "sysctl -w kernel.unprivileged_userns_clone=1"},
		{"kernel/apparmor_restrict_unprivileged_userns", "1", "AppArmor", "/etc/apparmor.d/bwrap"},
		{"user/max_user_namespaces", "0", "max_user_namespaces = 0", "user.max_user_namespaces=15000"},
		{"kernel/unprivileged_userns_clone", "1", "", ""},
	} {
		proc := t.TempDir()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(proc, c.file)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, c.file), []byte(c.value+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		why, hint := usernsOff(proc)
		if c.want == "" {
			if why != "" {
				t.Errorf("%s=%s: %q, want no finding", c.file, c.value, why)
			}
			continue
		}
		if !strings.Contains(why, c.want) || !strings.Contains(hint, c.hint) {
			t.Errorf("%s=%s: %q / %q, want %q / %q", c.file, c.value, why, hint, c.want, c.hint)
		}
	}
}

// On this machine bubblewrap is installed and user namespaces are on
// (make test installs it): the check runs a sandbox and says ok.
func TestCheckSandbox_RunsOne(t *testing.T) {
	r := checkSandbox(context.Background())
	if os.Getenv("SLUICE_REQUIRE_E2E") == "" && r.Status != OK {
		t.Skipf("no usable bubblewrap here: %s", r.Detail)
	}
	if r.Status != OK || !strings.Contains(r.Detail, "bwrap") {
		t.Fatalf("%+v", r)
	}
}
