package kube

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestNode_SessionHomeBack: what the agent writes in its HOME in the pod
// is in the confined HOME after the session, and what another session
// changed there meanwhile stays: a file the agent did not touch, and one
// both changed (the host's is kept).
func TestNode_SessionHomeBack(t *testing.T) {
	e := onNode(t)
	cs, copyDir := endTestSpec(t, e, `trap 'exit 0' TERM; mkdir -p "$HOME/.agent" && echo logged-in > "$HOME/.agent/login.json" && `+
		`echo agent > "$HOME/both.txt" && rm "$HOME/old.txt" && echo READY; while :; do sleep 1; done`)
	home := filepath.Join(filepath.Dir(copyDir), "home")
	writeFiles(t, home, map[string]string{"both.txt": "before\n", "old.txt": "old\n", "other.txt": "before\n"})
	s, out := startUntilReady(t, e, cs)
	// Another session of the same program, meanwhile.
	writeFiles(t, home, map[string]string{"other.txt": "other session\n", "both.txt": "other session\n", "other-new.txt": "other session\n"})
	if err := s.Signal("TERM"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Wait(); err != nil {
		t.Fatalf("Wait: %v (output %q)", err, out)
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		".agent/login.json": "logged-in\n",
		"other.txt":         "other session\n", "both.txt": "other session\n", "other-new.txt": "other session\n",
	} {
		if b, err := os.ReadFile(filepath.Join(home, p)); err != nil || string(b) != want {
			t.Errorf("%s in the confined HOME: %q %v, want %q", p, b, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(home, "old.txt")); !os.IsNotExist(err) {
		t.Errorf("old.txt, which the agent removed, is still in the confined HOME: %v", err)
	}
}

// TestNode_SessionHomeBackByTheApp: a launcher gone, the app that ends
// the session carries the agent's HOME back as the launcher would have,
// and forgets what went in.
func TestNode_SessionHomeBackByTheApp(t *testing.T) {
	e := onNode(t)
	cs, copyDir := endTestSpec(t, e, `echo logged-in > "$HOME/login.json" && echo READY; while :; do sleep 1; done`)
	home := filepath.Join(filepath.Dir(copyDir), "home")
	startUntilReady(t, e, cs)
	if err := e.r.EndSession(context.Background(), cs.Session, copyDir); err != nil {
		t.Fatalf("EndSession: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(home, "login.json")); err != nil || string(b) != "logged-in\n" {
		t.Fatalf("login.json in the confined HOME: %q %v", b, err)
	}
	if _, err := os.Lstat(homeInPath(copyDir)); !os.IsNotExist(err) {
		t.Fatalf("what went in is still kept after the session ended: %v", err)
	}
}

// TestNode_SessionHomeBackRefusesASparseGiant: the agent leaves a sparse
// file of an apparent 8 TiB in its HOME (a few blocks allocated, within
// the volume's limit). The app that ends the session is not held while
// the pod would stream it: pod-tree stops before it and the stream ends,
// the HOME is refused whole (nothing of it is written) and the session's
// objects go.
func TestNode_SessionHomeBackRefusesASparseGiant(t *testing.T) {
	e := onNode(t)
	cs, copyDir := endTestSpec(t, e, `echo logged-in > "$HOME/login.json" && `+
		`{ truncate -s 8T "$HOME/huge" || dd if=/dev/zero of="$HOME/huge" bs=1 count=0 seek=8796093022208; } && echo READY; while :; do sleep 1; done`)
	home := filepath.Join(filepath.Dir(copyDir), "home")
	startUntilReady(t, e, cs)
	// The test's timeout is the backstop: without the bound the pod would
	// stream 8 TiB for hours.
	if err := e.r.EndSession(context.Background(), cs.Session, copyDir); err != nil {
		t.Fatalf("EndSession: %v", err)
	}
	for _, p := range []string{"login.json", "huge"} {
		if _, err := os.Lstat(filepath.Join(home, p)); !os.IsNotExist(err) {
			t.Errorf("%s came back from a HOME that was refused: %v", p, err)
		}
	}
	if _, err := os.Lstat(homeInPath(copyDir)); !os.IsNotExist(err) {
		t.Fatalf("what went in is still kept after the session ended: %v", err)
	}
}
