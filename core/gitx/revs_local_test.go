package gitx

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// TestResolveLocal_SameAsGit: the pins read in this process (and
// ResolveCommit's answers) are git rev-parse's (loose and packed refs, a loose ref over its packed
// line, short names by git's rules and their order, a symbolic
// remote-tracking HEAD, a detached HEAD, a linked worktree's own HEAD,
// objects loose and packed), and every case it leaves to git is left:
// an annotated tag, a name that resolves to nothing, a file of the name
// in the git directory, rev syntax, an object id, a pseudo-ref.
func TestResolveLocal_SameAsGit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := gitxtest.InitAt(t, filepath.Join(root, "repo"))
	r.Write("a.txt", "one\n")
	first := r.Commit("one")
	r.Git("branch", "packed")
	r.Git("branch", "amb")
	r.Git("tag", "amb")
	r.Git("tag", "v1")
	r.Git("tag", "-a", "-m", "annotated", "v2")
	r.Git("update-ref", "refs/remotes/origin/main", first)
	r.Git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
	r.Git("pack-refs", "--all")
	// After packing: main moves on (a loose ref over its packed line),
	// and amb (the branch) too, so that the tag of that name is the one
	// git's order finds.
	r.Write("a.txt", "two\n")
	r.Commit("two")
	r.Git("branch", "-f", "amb", "HEAD")
	open := func(dir string) *Repo {
		runner, err := NewRunner(RunnerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		repo, err := runner.Open(ctx, Roots{root}, dir)
		if err != nil {
			t.Fatal(err)
		}
		return repo
	}
	same := func(t *testing.T, dir string, revs []string) {
		t.Helper()
		repo := open(dir)
		commits, head, err := repo.ResolveLocal(revs, true)
		if err != nil {
			t.Fatalf("ResolveLocal(%v): %v", revs, err)
		}
		for _, rev := range revs {
			want := gitxtest.Git(t, dir, "rev-parse", rev+"^{commit}")
			if commits[rev] != want {
				t.Errorf("%s: %s, git says %s", rev, commits[rev], want)
			}
			if got, err := repo.ResolveCommit(ctx, rev, rev); err != nil || got != want {
				t.Errorf("ResolveCommit(%s): %s, %v; git says %s", rev, got, err, want)
			}
		}
		lines := strings.Split(gitxtest.Git(t, dir, "rev-parse", "HEAD", "HEAD^{tree}", "--symbolic-full-name", "HEAD"), "\n")
		want := LocalHead{SHA: lines[0], Tree: lines[1]}
		if lines[2] != "HEAD" {
			want.Sym = lines[2]
		}
		if head != want {
			t.Errorf("HEAD: %+v, git says %+v", head, want)
		}
	}
	revs := []string{"HEAD", "main", "refs/heads/main", "packed", "refs/heads/packed", "amb", "v1", "refs/tags/v1",
		"origin", "origin/main", "refs/remotes/origin/HEAD", "heads/main", "tags/amb"}
	t.Run("loose", func(t *testing.T) { same(t, r.Dir, revs) })
	r.Git("gc", "-q")
	t.Run("packed", func(t *testing.T) { same(t, r.Dir, revs) })
	r.Git("checkout", "-q", "--detach", "packed")
	t.Run("detached", func(t *testing.T) { same(t, r.Dir, revs) })
	r.Git("checkout", "-q", "main")
	wt := filepath.Join(root, "wt")
	r.Git("worktree", "add", "-q", "-b", "side", wt, "packed")
	t.Run("linked worktree", func(t *testing.T) { same(t, wt, []string{"HEAD", "main", "side"}) })

	r.Write(".git/ORPHAN", first+"\n")
	second := r.Git("rev-parse", "main")
	if err := os.WriteFile(filepath.Join(r.Dir, ".git", "v1"), []byte(second+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, rev := range []string{"v2", "refs/tags/v2", "nope", "refs/heads/nope", "v1", "ORPHAN", "main~1", "main^", "HEAD@{0}", first, first[:12], "FETCH_HEAD"} {
		repo := open(r.Dir)
		if _, _, err := repo.ResolveLocal([]string{rev}, false); !errors.Is(err, ErrNotLocal) {
			t.Errorf("%s: read in this process (%v); git must answer", rev, err)
		}
		// git answers it, as before.
		want, gitErr := gitxtest.GitErr(t, r.Dir, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
		if got, err := repo.ResolveCommit(ctx, rev, rev); (err == nil) != (gitErr == nil) || err == nil && got != want {
			t.Errorf("ResolveCommit(%s): %s, %v; git says %s, %v", rev, got, err, want, gitErr)
		}
	}
	// The one git reads otherwise than the rules above: .git/v1 is what
	// v1 names, not the tag.
	if got := gitxtest.Git(t, r.Dir, "rev-parse", "v1"); got != second {
		t.Fatalf("the fixture's .git/v1 is not what git reads for v1 (%s)", got)
	}
}
