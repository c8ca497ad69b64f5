package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

func roots(t *testing.T, dir string) gitx.Roots {
	t.Helper()
	r, err := gitx.NewRoots([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func runner(t *testing.T) *gitx.Runner {
	t.Helper()
	r, err := gitx.Default()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The copy is a repository of its own at the person's HEAD: the same
// branch, refs and files, its objects borrowed through the origin
// alternate, and nothing of the person's repository written.
func TestMakeCopy_AtHead_SharesNothingWritable(t *testing.T) {
	repo := gitxtest.Basic(t, 3)
	repo.Git("branch", "feature")
	repo.Git("tag", "v1")
	repo.Write("dirty.txt", "uncommitted\n")
	before := gitxtest.Snapshot(t, repo.Dir)
	dest := filepath.Join(t.TempDir(), "copy")
	home := t.TempDir()
	c, err := MakeCopy(context.Background(), runner(t), roots(t, filepath.Dir(repo.Dir)), repo.Dir, dest, home)
	if err != nil {
		t.Fatal(err)
	}
	if d := gitxtest.DiffSnapshots(before, gitxtest.Snapshot(t, repo.Dir)); len(d) > 0 {
		t.Fatalf("making the copy changed the person's repository: %v", d)
	}
	head := strings.TrimSpace(repo.Git("rev-parse", "HEAD"))
	if c.Base != head || c.Branch != "refs/heads/main" {
		t.Fatalf("copy base %s on %q, want %s on main", c.Base, c.Branch, head)
	}
	// Read as the sandbox does: the person's objects at the alternate.
	if err := os.Remove(filepath.Join(dest, ".git", OriginAlternate)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(c.Objects, filepath.Join(dest, ".git", OriginAlternate)); err != nil {
		t.Fatal(err)
	}
	got := gitxtest.Git(t, dest, "rev-parse", "HEAD", "feature", "v1")
	want := gitxtest.Git(t, repo.Dir, "rev-parse", "HEAD", "feature", "v1")
	if got != want {
		t.Fatalf("refs of the copy:\n%s\nwant\n%s", got, want)
	}
	if st := gitxtest.Git(t, dest, "status", "--porcelain"); st != "" {
		t.Fatalf("the copy is not clean at HEAD: %q", st)
	}
	if _, err := os.Stat(filepath.Join(dest, "dirty.txt")); !os.IsNotExist(err) {
		t.Fatalf("an uncommitted file of the person's reached the copy: %v", err)
	}
	// A commit in the copy writes only the copy.
	if err := os.WriteFile(filepath.Join(dest, "new.txt"), []byte("agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitxtest.Git(t, dest, "add", "new.txt")
	gitxtest.Git(t, dest, "commit", "-q", "-m", "agent's own commit")
	if d := gitxtest.DiffSnapshots(before, gitxtest.Snapshot(t, repo.Dir)); len(d) > 0 {
		t.Fatalf("a commit in the copy changed the person's repository: %v", d)
	}
	if cfg, _ := os.ReadFile(filepath.Join(dest, ".git", "config")); strings.Contains(string(cfg), "remote") {
		t.Fatalf("the person's config reached the copy:\n%s", cfg)
	}
}

func TestMakeCopy_NoCommit_Refused(t *testing.T) {
	repo := gitxtest.NoCommits(t)
	_, err := MakeCopy(context.Background(), runner(t), roots(t, filepath.Dir(repo.Dir)), repo.Dir, filepath.Join(t.TempDir(), "copy"), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "no commit") {
		t.Fatalf("got %v, want a refusal naming the missing commit", err)
	}
}

func TestMakeCopy_OutsideRoots_Refused(t *testing.T) {
	repo := gitxtest.Basic(t, 1)
	_, err := MakeCopy(context.Background(), runner(t), roots(t, t.TempDir()), repo.Dir, filepath.Join(t.TempDir(), "copy"), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "outside the allowed roots") {
		t.Fatalf("got %v, want path_outside_roots", err)
	}
}
