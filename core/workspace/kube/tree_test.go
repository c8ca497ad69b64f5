package kube

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
)

// TestReplaceFromSpool_StopsWhenCancelled: a run whose context ended does
// not swap the tree for the pod's archive; one whose context goes on does.
func TestReplaceFromSpool_StopsWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	from, tree := filepath.Join(dir, "from"), filepath.Join(dir, "tree")
	for _, d := range []string{from, tree} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(from, "new.txt"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "old.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spool := func() *os.File {
		f, err := os.CreateTemp(dir, "spool")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if _, err := workspace.PackTree(f, from, ""); err != nil {
			t.Fatal(err)
		}
		return f
	}
	uid, gid := os.Getuid(), os.Getgid()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := replaceFromSpool(ctx, spool(), tree, uid, gid)
	wantCode(t, err, errcode.Timeout, "cancelled")
	if _, err := os.Stat(filepath.Join(tree, "old.txt")); err != nil {
		t.Fatalf("the tree changed after the run was cancelled: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tree, "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("the pod's tree was applied after the run was cancelled: %v", err)
	}

	if err := replaceFromSpool(context.Background(), spool(), tree, uid, gid); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(tree, "new.txt")); err != nil || string(b) != "new\n" {
		t.Fatalf("the tree was not replaced: %q %v", b, err)
	}
}
