package gitx

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
// commit starts no git process while no ref changes (the commit is read
// in process, see commitDetailsLocal), and a ref created, moved, deleted
// or packed since is named (or no longer named) at once, as git decorates
// the commit.
func TestCommitDetails_RefsReadOnce(t *testing.T) {
	noUserAttributes(t)
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
		if n := run.Started() - before; wantProcs >= 0 && n != wantProcs {
			t.Errorf("%s: started %d git processes, want %d", step, n, wantProcs)
		}
	}
	check("first", 1)
	check("again", 0)
	check("and again", 0)
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
		check(step.name, -1)
		// Aged again, the refs as they are now are read once more and
		// then kept.
		ageRefs(t, gitDir)
		check(step.name+", aged", 1)
		check(step.name+", aged, again", 0)
	}
}

// TestBrief_RefsReadOnce: once the refs are read, a brief starts one git
// process (its status) while no ref changes, and its local branches
// and default branch are what the brief's own for-each-ref of refs/heads
// and refs/remotes/origin/HEAD says after each change to the refs (loose,
// packed, nested, symbolic, a symbolic ref to a ref outside the branches,
// tags and remote-tracking refs, a detached HEAD, an unborn branch), in a
// SHA-1 and a SHA-256 repository. The whole brief is the one a runner
// that never read the refs before gives.
func TestBrief_RefsReadOnce(t *testing.T) {
	noUserAttributes(t)
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			r := gitxtest.InitAt(t, dir, "--object-format="+format)
			r.WriteCommit("a.txt", "a\n", "feat: a")
			r.WriteCommit("b.txt", "b\n", "fix: b")
			head := gitxtest.Git(t, r.Dir, "rev-parse", "HEAD")
			parent := gitxtest.Git(t, r.Dir, "rev-parse", "HEAD~1")
			gitDir := filepath.Join(r.Dir, ".git")
			ageRefs(t, gitDir)
			run := newRunner(t)
			repo := openIn(t, run, r.Dir)
			check := func(step string, wantProcs int64) {
				t.Helper()
				before := run.Started()
				b, err := repo.Brief(ctx(t))
				if err != nil {
					t.Fatalf("%s: %v", step, err)
				}
				n := run.Started() - before
				ref, err := repo.briefRefsByGit(ctx(t))
				if err != nil {
					t.Fatal(err)
				}
				if got, want := b.Conventions.LocalBranches, len(ref.branches); got != want {
					t.Errorf("%s: the brief counts %d local branches, for-each-ref lists %d", step, got, want)
				}
				if got, want := b.Conventions.DefaultBranch, repo.defaultBranch(ref.originHead, ref.branches); got != want {
					t.Errorf("%s: the brief's default branch is %q, for-each-ref says %q", step, got, want)
				}
				fresh, err := openIn(t, newRunner(t), r.Dir).Brief(ctx(t))
				if err != nil {
					t.Fatal(err)
				}
				if got, want := mustJSON(t, b), mustJSON(t, fresh); got != want {
					t.Errorf("%s: brief\n%s\nfrom a runner that never read the refs:\n%s", step, got, want)
				}
				if wantProcs > 0 && n != wantProcs {
					t.Errorf("%s: started %d git processes, want %d", step, n, wantProcs)
				}
			}
			// Warm, a brief starts its status; and its log where git
			// answers it (a SHA-256 repository, an unborn HEAD).
			warm := int64(1)
			if format != "sha1" {
				warm = 2
			}
			// The first starts the refs' for-each-ref besides, once,
			// though the brief and its log both ask for the refs.
			check("first", warm+1)
			check("again", warm)
			check("and again", warm)
			for _, step := range []struct {
				name string
				args []string
			}{
				{"branch created", []string{"branch", "created"}},
				{"nested branch", []string{"branch", "team/topic", parent}},
				{"origin/main", []string{"update-ref", "refs/remotes/origin/main", head}},
				{"origin/HEAD set", []string{"symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main"}},
				{"origin/dev", []string{"update-ref", "refs/remotes/origin/dev", parent}},
				{"origin/HEAD moved", []string{"symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/dev"}},
				{"refs packed", []string{"pack-refs", "--all"}},
				{"packed branch deleted", []string{"branch", "-D", "created"}},
				{"origin/HEAD deleted", []string{"symbolic-ref", "--delete", "refs/remotes/origin/HEAD"}},
				{"symbolic branch", []string{"symbolic-ref", "refs/heads/alias", "refs/heads/main"}},
				{"ref outside", []string{"update-ref", "refs/sluice/x", head}},
				{"symbolic branch outside", []string{"symbolic-ref", "refs/heads/outside", "refs/sluice/x"}},
				{"its target deleted, outside", []string{"update-ref", "-d", "refs/sluice/x"}},
				{"its target back, outside", []string{"update-ref", "refs/sluice/x", head}},
				{"its target deleted again, outside", []string{"update-ref", "-d", "refs/sluice/x"}},
				{"dangling branch removed", []string{"update-ref", "--no-deref", "-d", "refs/heads/outside"}},
				{"detached HEAD", []string{"checkout", "-q", "--detach", "HEAD~1"}},
				{"unborn branch", []string{"checkout", "-q", "--orphan", "fresh"}},
				{"back on main", []string{"checkout", "-q", "-f", "main"}},
			} {
				gitxtest.Git(t, r.Dir, step.args...)
				check(step.name, 0)
				// Aged, the refs as they are now are read once more and
				// then kept, unless a symbolic ref leaves the namespaces
				// the stamps cover.
				ageRefs(t, gitDir)
				check(step.name+", aged", 0)
				if !strings.Contains(step.name, "outside") {
					want := warm
					if step.name == "unborn branch" {
						want = 2
					}
					check(step.name+", aged, again", want)
				}
			}
		})
	}
}
