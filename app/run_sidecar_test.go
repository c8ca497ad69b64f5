package app

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/gateway"
	confined "github.com/sluicehq/sluice/core/session"
)

// The session's sidecar runs in a bwrap sandbox of its own, whose set-up
// can lose the same race with the host's mounts as the agent's: it is
// made again, and the token goes only to the sidecar that runs. Another
// set-up failure is said, with bwrap's words, after one try.
func TestSessionSidecar_LostMountRace_MadeAgain(t *testing.T) {
	real, err := confined.FindBubblewrap()
	if err == nil {
		_, err = confined.ProbeBubblewrap(t.Context(), real)
	}
	needOrSkip(t, err == nil, fmt.Sprintf("a usable bubblewrap (%v)", err))
	t.Setenv("SLUICE_SIDECAR", filepath.Join(binDir(t), "sluice-sidecar"))
	base := t.TempDir()
	repo, copyDir, origin := filepath.Join(base, "repo"), filepath.Join(base, "s1", "copy"), filepath.Join(base, "origin")
	for _, d := range []string{filepath.Join(repo, ".git", "objects"), filepath.Join(copyDir, ".git", confined.OriginAlternate), origin} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	s := &confined.Session{ID: "s1", Repo: repo, Objects: filepath.Join(repo, ".git", "objects")}
	g := gateway.SessionGrant{ID: "s1", Agent: "test-agent", Repo: repo, Copy: copyDir, Origin: origin, Token: "sluice_session_test"}
	flaky := func(fails int, message string) (string, string) {
		dir := t.TempDir()
		count, path := filepath.Join(dir, "runs"), filepath.Join(dir, "bwrap")
		script := fmt.Sprintf("#!/bin/sh\nn=$(cat %[1]q 2>/dev/null || echo 0); n=$((n+1)); echo $n > %[1]q\nif [ $n -le %[2]d ]; then echo %[3]q >&2; exit 1; fi\nexec %[4]q \"$@\"\n", count, fails, message, real)
		if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return path, count
	}
	listen := func() *net.UnixListener {
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "mcp.sock"), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return ln
	}
	runs := func(count string) string {
		b, _ := os.ReadFile(count)
		return strings.TrimSpace(string(b))
	}

	bwrap, count := flaky(2, `bwrap: Can't bind mount /oldroot/ on /newroot/: Unable to apply mount flags: remount "/newroot/var/lib/docker/overlay2/c530e362/merged": Invalid argument`)
	sc, err := startSessionSidecar(s, g, bwrap, nil, listen())
	if err != nil {
		t.Fatalf("startSessionSidecar: %v", err)
	}
	sc.stop()
	if n := runs(count); n != "3" {
		t.Errorf("bwrap ran %s times, want 3 (two lost races, then the sidecar)", n)
	}

	bwrap, count = flaky(100, "bwrap: Can't find source path /nowhere: No such file or directory")
	if _, err := startSessionSidecar(s, g, bwrap, nil, listen()); err == nil || !strings.Contains(err.Error(), "Can't find source path /nowhere") {
		t.Fatalf("startSessionSidecar: %v, want bwrap's words", err)
	}
	if n := runs(count); n != "1" {
		t.Errorf("bwrap ran %s times, want 1", n)
	}
}
