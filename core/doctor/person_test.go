package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// personGit points the person's git at a fresh home whose .gitconfig is
// cfg, with nothing else to read an identity from.
func personGit(t *testing.T, cfg string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestCheckIdentity_Configured_OK(t *testing.T) {
	personGit(t, "[user]\n\tname = Pat Person\n\temail = pat@example.com\n")
	r := checkIdentity(context.Background())
	if r.Status != OK || r.Detail != "Pat Person <pat@example.com>" {
		t.Fatalf("identity check: %+v; want ok naming Pat Person <pat@example.com>", r)
	}
}

// No identity, and git told not to guess one: commits in the person's
// name would fail, and the doctor says so with the commands that fix it.
func TestCheckIdentity_Missing_Warns(t *testing.T) {
	personGit(t, "[user]\n\tuseConfigOnly = true\n")
	r := checkIdentity(context.Background())
	if r.Status != Warn || !strings.Contains(r.Detail, "no identity") || !strings.Contains(r.Hint, "user.email") {
		t.Fatalf("identity check: %+v; want a warning saying there is none and how to set it", r)
	}
}

func TestCheckRoots(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(dir, "gone")
	res := checkRoots([]string{dir, gone, file})
	if len(res) != 3 {
		t.Fatalf("%d results for 3 roots: %+v", len(res), res)
	}
	if res[0].Status != OK || res[0].Detail != dir {
		t.Errorf("a readable directory: %+v", res[0])
	}
	if res[1].Status != Fail || !strings.Contains(res[1].Detail, "does not exist") || !strings.Contains(res[1].Hint, "sluice roots remove "+gone) {
		t.Errorf("a missing root: %+v", res[1])
	}
	if res[2].Status != Fail || !strings.Contains(res[2].Detail, "not a directory") {
		t.Errorf("a file as root: %+v", res[2])
	}
	if none := checkRoots(nil); len(none) != 1 || none[0].Status != Warn || !strings.Contains(none[0].Hint, "sluice roots add") {
		t.Errorf("no roots: %+v", none)
	}
}

// Both checks are part of every doctor run.
func TestRun_ChecksIdentityAndRoots(t *testing.T) {
	cfg := testConfig(t)
	personGit(t, "[user]\n\tname = Pat Person\n\temail = pat@example.com\n")
	cfg.AllowedRoots = []string{t.TempDir()}
	m := byName(Run(context.Background(), cfg, Options{}))
	if m["git identity"].Status != OK || m["allowed root"].Status != OK {
		t.Fatalf("identity %+v, root %+v", m["git identity"], m["allowed root"])
	}
}
