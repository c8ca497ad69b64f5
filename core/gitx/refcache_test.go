package gitx

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// ageRefs sets the times of packed-refs and of everything under refs/ an
// hour back, as refs are that nobody wrote within the cache's racy window.
func ageRefs(t *testing.T, gitDir string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	paths := []string{filepath.Join(gitDir, "packed-refs")}
	err := filepath.WalkDir(filepath.Join(gitDir, "refs"), func(p string, _ fs.DirEntry, err error) error {
		paths = append(paths, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Deepest first: setting a file's times does not move its directory's.
	slices.Reverse(paths)
	for _, p := range paths {
		if err := os.Chtimes(p, old, old); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

// TestCommitDetails_RefsReadOnce: once the refs are read, describing a
// commit starts one git process (the diff-tree) while no ref changes, and
// a ref created, moved, deleted or packed since is named (or no longer
// named) at once, as git decorates the commit.
func TestCommitDetails_RefsReadOnce(t *testing.T) {
	r := gitxtest.Diverged(t)
	head := gitxtest.Git(t, r.Dir, "rev-parse", "HEAD")
	parent := gitxtest.Git(t, r.Dir, "rev-parse", "HEAD~1")
	gitxtest.Git(t, r.Dir, "tag", "-a", "-m", "release", "v1")
	gitDir := filepath.Join(r.Dir, ".git")
	ageRefs(t, gitDir)
	run := newRunner(t)
	repo := openIn(t, run, r.Dir)
	check := func(step string, wantProcs int64) {
		t.Helper()
		before := run.Started()
		d, err := repo.CommitDetails(ctx(t), "HEAD", 0)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if want := gitDecorations(t, r.Dir, "HEAD"); !slices.Equal(d.Refs, want) {
			t.Errorf("%s: commit_details names %q at HEAD, git decorates %q", step, d.Refs, want)
		}
		if n := run.Started() - before; wantProcs > 0 && n != wantProcs {
			t.Errorf("%s: started %d git processes, want %d", step, n, wantProcs)
		}
	}
	check("first", 2)
	check("again", 1)
	check("and again", 1)
	for _, step := range []struct {
		name string
		args []string
	}{
		{"branch created", []string{"branch", "created"}},
		{"lightweight tag", []string{"tag", "light"}},
		{"remote-tracking ref", []string{"update-ref", "refs/remotes/origin/x", head}},
		{"branch moved away", []string{"update-ref", "refs/heads/created", parent}},
		{"tag deleted", []string{"tag", "-d", "light"}},
		{"refs packed", []string{"pack-refs", "--all"}},
		{"packed ref moved back", []string{"update-ref", "refs/heads/created", head}},
	} {
		gitxtest.Git(t, r.Dir, step.args...)
		check(step.name, 0)
		// Aged again, the refs as they are now are read once more and
		// then kept.
		ageRefs(t, gitDir)
		check(step.name+", aged", 2)
		check(step.name+", aged, again", 1)
	}
}
