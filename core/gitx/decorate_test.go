package gitx

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// gitDecorations is what git's own %D decoration names at rev, limited to
// branches, tags and remote-tracking refs, as commit_details and history
// read it before.
func gitDecorations(t *testing.T, dir, rev string) []string {
	t.Helper()
	d := gitxtest.Git(t, dir, "show", "-s", "--decorate-refs=refs/heads", "--decorate-refs=refs/tags", "--decorate-refs=refs/remotes", "--format=%D", rev)
	var out []string
	for _, r := range strings.Split(strings.TrimSpace(d), ", ") {
		r = strings.TrimPrefix(strings.TrimPrefix(r, "HEAD -> "), "tag: ")
		if r != "" && r != "HEAD" {
			out = append(out, r)
		}
	}
	return out
}

// TestRefNames_AsGitDecorates: the refs commit_details and history name at
// a commit are git's decoration of it, in its order: the branch checked
// out, other branches, a lightweight and an annotated tag, remote-tracking
// refs with a symbolic one; none of Sluice's own refs, however many.
func TestRefNames_AsGitDecorates(t *testing.T) {
	r := gitxtest.Diverged(t)
	head := gitxtest.Git(t, r.Dir, "rev-parse", "HEAD")
	for _, args := range [][]string{
		{"branch", "zz-later"}, {"branch", "aa-early"}, {"tag", "v1"}, {"tag", "-a", "-m", "release", "v2"},
		{"update-ref", "refs/remotes/origin/main", head},
		{"symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main"},
	} {
		gitxtest.Git(t, r.Dir, args...)
	}
	for i := range 200 {
		gitxtest.Git(t, r.Dir, "update-ref", fmt.Sprintf("refs/sluice/sealed/p%d", i), head)
	}

	repo := openIn(t, newRunner(t), r.Dir)
	want := gitDecorations(t, r.Dir, "HEAD")
	if len(want) < 6 {
		t.Fatalf("git decorates HEAD with %q: the fixture is not what the test means", want)
	}
	d, err := repo.CommitDetails(ctx(t), "HEAD", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Refs, want) {
		t.Errorf("commit_details names %q at HEAD, git decorates %q", d.Refs, want)
	}
	h, err := repo.History(ctx(t), HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range h.Commits {
		if w := gitDecorations(t, r.Dir, c.SHA); !slices.Equal(c.Refs, w) && !(len(c.Refs) == 0 && len(w) == 0) {
			t.Errorf("history names %q at %s, git decorates %q", c.Refs, c.SHA, w)
		}
	}
}
