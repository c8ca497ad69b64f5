//go:build unix

package apply

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// commitWork changes, in a scaleFixture of n files, the files a commit
// of named paths takes (scaleChanged edited files, one new and one
// deleted) and returns those paths, sorted.
func commitWork(f *fixture, n int) []string {
	paths := []string{"newdir/sub/new.txt", scalePath(5)}
	f.repo.Write("newdir/sub/new.txt", "new\n")
	if err := removeFile(f.repo.Dir, scalePath(5)); err != nil {
		f.t.Fatal(err)
	}
	for j := range scaleChanged {
		p := scalePath(j*(n/scaleChanged) + 1)
		if j > 0 {
			f.repo.Write(p, "committed "+p+"\n")
		}
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths
}

// A commit of 12 named paths in a 5,000-file working tree with the
// person's own work in it (a staged edit inside the commit's paths with
// an unstaged one on top, staged and unstaged work and an untracked file
// elsewhere): the restore point records the index entries at those paths
// alone, the execution and the restore write no file, the person's work
// staged after the commit elsewhere is neither a conflict nor undone, and
// the restore brings back exactly what was there, the staged edit
// included.
func TestRestore_ScopedCommit_ExactAndNothingElseTouched(t *testing.T) {
	f := scaleFixture(t, scopeFiles, false)
	untracked := personWork(t, f)
	paths := commitWork(f, scopeFiles)
	before := repoState(t, f.repo.Dir)
	ids := fileIDs(t, f.repo.Dir)

	done := f.mustComplete(f.propose(&proposal.CommitArgs{Message: "ten files", Paths: paths}))
	requireUntouched(t, "the execution", ids, fileIDs(t, f.repo.Dir), nil)
	if _, err := gitxtest.GitErr(t, f.repo.Dir, "cat-file", "-e", untracked); err == nil {
		t.Error("the person's untracked file outside the commit was hashed into the repository")
	}
	if got := f.git("diff", "--cached", "--name-only"); got != scalePath(2) {
		t.Errorf("staged after the commit: %q, want the person's own %s alone", got, scalePath(2))
	}
	list, err := f.e.ListRestorePoints(testCtx(t), f.repo.Dir)
	if err != nil || len(list) != 1 || len(list[0].Worktrees) != 1 {
		t.Fatalf("restore points %+v, %v", list, err)
	}
	if w := list[0].Worktrees[0]; !slices.Equal(w.Paths, paths) || w.Files {
		t.Errorf("the restore point records %q (files %v), want the commit's paths %q in the index alone", w.Paths, w.Files, paths)
	}
	if out, err := gitxtest.GitErr(t, f.repo.Dir, "fsck", "--strict", "--no-dangling", "--no-progress"); err != nil || out != "" {
		t.Fatalf("git fsck --strict: %v\n%s", err, out)
	}

	// Later, the person stages work of their own elsewhere.
	laterWork(f)
	f.git("add", scalePath(4))
	afterLater := fileIDs(t, f.repo.Dir)
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false); err != nil {
		t.Fatalf("restore with the person's later work staged outside the commit: %v", err)
	}
	requireUntouched(t, "the restore", afterLater, fileIDs(t, f.repo.Dir), nil)
	if got := f.git("diff", "--cached", "--name-only", "--", scalePath(4)); got != scalePath(4) {
		t.Errorf("the person's later staged edit of %s is no longer staged", scalePath(4))
	}
	f.git("reset", "-q", "--", scalePath(4))
	undoLater(t, f)
	if now := repoState(t, f.repo.Dir); now != before {
		t.Errorf("the restore did not bring back the state before the commit:\n%s", diffState(before, now))
	}
	if got := f.git("diff", "--cached", "--", scalePath(1)); !strings.Contains(got, "+staged by the person") {
		t.Errorf("the person's staged edit inside the commit is not staged again: %q", got)
	}
}

// A discard of named paths (two files with the person's staged and
// unstaged edits, one whose staged edit matches HEAD on disk again, an
// untracked directory) in a 5,000-file working tree: the restore point
// records the files and index entries the discard changes alone, the
// execution and the restore write no other file, the person's work
// elsewhere (before and after) is neither a conflict nor overwritten,
// and the restore brings back exactly what was discarded.
func TestRestore_ScopedDiscard_ExactAndNothingElseTouched(t *testing.T) {
	f := scaleFixture(t, scopeFiles, false)
	personWork(t, f)
	f.repo.Write("newdir/a.txt", "untracked a\n")
	f.repo.Write("newdir/sub/b.txt", "untracked b\n")
	f.repo.Write(scalePath(7), "staged, then put back on disk\n")
	f.git("add", scalePath(7))
	f.repo.Write(scalePath(7), benchContent(7, ""))
	named := []string{scalePath(1), scalePath(2), scalePath(7), "newdir"}
	paths := []string{"newdir/a.txt", "newdir/sub/b.txt", scalePath(1), scalePath(2), scalePath(7)}
	slices.Sort(paths)
	before := repoState(t, f.repo.Dir)
	ids := fileIDs(t, f.repo.Dir)

	done := f.mustComplete(f.propose(&proposal.DiscardArgs{Paths: named, Untracked: true}))
	requireUntouched(t, "the execution", ids, fileIDs(t, f.repo.Dir), paths)
	if got := f.git("status", "--porcelain", "--", named[0], named[1], named[2], named[3]); got != "" {
		t.Errorf("after the discard: %q", got)
	}
	list, err := f.e.ListRestorePoints(testCtx(t), f.repo.Dir)
	if err != nil || len(list) != 1 || len(list[0].Worktrees) != 1 {
		t.Fatalf("restore points %+v, %v", list, err)
	}
	if w := list[0].Worktrees[0]; !slices.Equal(w.Paths, paths) || !w.Files {
		t.Errorf("the restore point records %q (files %v), want the discard's paths %q", w.Paths, w.Files, paths)
	}

	laterWork(f)
	f.git("add", scalePath(4))
	afterLater := fileIDs(t, f.repo.Dir)
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false); err != nil {
		t.Fatalf("restore with the person's later work outside the discard: %v", err)
	}
	requireUntouched(t, "the restore", afterLater, fileIDs(t, f.repo.Dir), paths)
	if got := f.git("diff", "--cached", "--name-only", "--", scalePath(4)); got != scalePath(4) {
		t.Errorf("the person's later staged edit of %s is no longer staged", scalePath(4))
	}
	f.git("reset", "-q", "--", scalePath(4))
	undoLater(t, f)
	if now := repoState(t, f.repo.Dir); now != before {
		t.Errorf("the restore did not bring back the state before the discard:\n%s", diffState(before, now))
	}
}

// An approved commit of named paths and a discard of named paths, and
// the restore of each, run no git command that walks or rewrites the
// whole working tree or index: no status that looks for untracked files,
// no add --all, no read-tree --reset -u, no refresh of the whole index.
func TestExecuteAndRestore_ScopedCommitDiscard_NoWholeTreeWalk(t *testing.T) {
	f := newFixture(t)
	e, log := loggedGit(t, f)
	f.e = e
	f.repo.Write("README.md", "# committed\n")
	commit := f.propose(&proposal.CommitArgs{Message: "readme", Paths: []string{"README.md"}})
	for i, rec := range []func() journal.Record{
		func() journal.Record { return commit },
		func() journal.Record {
			f.repo.Write("README.md", "# to discard\n")
			f.repo.Write("scratch/notes.txt", "to discard\n")
			return f.propose(&proposal.DiscardArgs{Paths: []string{"README.md", "scratch"}, Untracked: true})
		},
	} {
		r := rec()
		if err := os.WriteFile(log, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		done := f.mustComplete(r)
		if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false); err != nil {
			t.Fatalf("restore %d: %v", i, err)
		}
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			sub, rest := gitSubcommand(line)
			walks := sub == "status" && !slices.Contains(strings.Fields(rest), "--untracked-files=no") ||
				sub == "add" && strings.Contains(rest, "--all") && !strings.Contains(rest, "pathspec") ||
				sub == "read-tree" && strings.Contains(rest, "--reset") && strings.Contains(rest, "-u") ||
				sub == "update-index" && strings.Contains(rest, "--refresh")
			if walks {
				t.Errorf("%s: git %s %s walks the whole working tree or index", r.Proposal.Op, sub, rest)
			}
		}
		// The restore brought the commit's paths back; the next proposal
		// starts from there.
		f.git("reset", "-q", "--hard")
		f.git("clean", "-fdq")
	}
}

// wholeIndexCommands are the git commands a scoped execution must not run:
// each builds, walks or rewrites the whole index or working tree (a
// temporary index read from HEAD's whole tree, an add or rm over it, a
// diff of the whole index against a tree, a status). allow lists the
// operation's own command ("read-tree --reset --end-of-options <tree>"
// for a mixed reset), which git's own command runs too.
func wholeIndexCommands(t *testing.T, log string, allow ...string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		sub, rest := gitSubcommand(line)
		if slices.Contains(allow, sub+" "+rest) {
			continue
		}
		switch {
		case sub == "read-tree" && !strings.Contains(rest, "--index-output"), sub == "add", sub == "rm", sub == "diff-index",
			sub == "status", sub == "update-index" && strings.Contains(rest, "--refresh"):
			found = append(found, "git "+sub+" "+rest)
		}
	}
	return found
}

// An approved discard of named paths checks its sealed state at those
// paths alone and reads them once for its scope, its check, its restore
// point and its run: no temporary index built from HEAD's whole tree, no
// add or rm over one, no diff of the whole index against HEAD.
func TestExecute_ScopedDiscard_ReadsItsPathsAlone(t *testing.T) {
	f := newFixture(t)
	e, log := loggedGit(t, f)
	f.e = e
	f.repo.Write("README.md", "# to discard\n")
	f.repo.Write("src/a.txt", "staged, to discard\n")
	f.git("add", "src/a.txt")
	rec := f.propose(&proposal.DiscardArgs{Paths: []string{"README.md", "src"}})
	if err := os.WriteFile(log, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.mustComplete(rec)
	for _, c := range wholeIndexCommands(t, log) {
		t.Errorf("the discard ran %s", c)
	}
	if got := f.git("status", "--porcelain"); got != "" {
		t.Errorf("after the discard: %q", got)
	}
}

// A discard is refused, naming the path and changing nothing, when what
// it would throw away changed after it was proposed in a way only its
// paths show: an untracked file it would remove is gone, a file became
// executable, a staged new file was written again.
func TestExecute_ScopedDiscard_StaleAtItsPaths(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(f *fixture)
		args   *proposal.DiscardArgs
		change func(f *fixture)
		path   string
	}{
		{"untracked gone", func(f *fixture) { f.repo.Write("src/new.txt", "new\n") },
			&proposal.DiscardArgs{Paths: []string{"src"}, Untracked: true},
			func(f *fixture) { os.Remove(filepath.Join(f.repo.Dir, "src/new.txt")) }, "src/new.txt"},
		{"made executable", func(f *fixture) { f.repo.Write("src/a.txt", "mine\n") },
			&proposal.DiscardArgs{Paths: []string{"src/a.txt"}},
			func(f *fixture) { os.Chmod(filepath.Join(f.repo.Dir, "src/a.txt"), 0o755) }, "src/a.txt"},
		{"staged file rewritten", func(f *fixture) { f.repo.Write("src/c.txt", "c\n"); f.git("add", "src/c.txt") },
			&proposal.DiscardArgs{Paths: []string{"src"}},
			func(f *fixture) { f.repo.Write("src/c.txt", "c, and more\n") }, "src/c.txt"},
		{"tracked file deleted", func(f *fixture) { f.repo.Write("src/a.txt", "mine\n") },
			&proposal.DiscardArgs{Paths: []string{"src"}},
			func(f *fixture) { os.Remove(filepath.Join(f.repo.Dir, "src/a.txt")) }, "src/a.txt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			c.setup(f)
			rec := f.propose(c.args)
			c.change(f)
			before := repoState(t, f.repo.Dir)
			out, err := f.execute(rec)
			if !errors.Is(err, ErrStaleBase) || out.State != proposal.Failed {
				t.Fatalf("state %s err %v: want stale_base", out.State, err)
			}
			data, _ := dataOf(err).(map[string]any)
			if changed, _ := data["changed"].([]string); !slices.Contains(changed, c.path) {
				t.Errorf("changed %v: want %s named", data, c.path)
			}
			if after := repoState(t, f.repo.Dir); after != before {
				t.Errorf("the repository changed:\n%s", diffState(before, after))
			}
		})
	}
}
