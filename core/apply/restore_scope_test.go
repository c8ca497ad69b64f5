//go:build unix

package apply

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/restorepoint"
)

// scopeFiles is the size of the repositories the scope tests work in:
// large enough that a walk of the working tree is not free.
const scopeFiles = 5000

// fileID is what says a file was not written: its inode and its
// modification and change times.
type fileID struct {
	ino          uint64
	mtime, ctime int64
}

// fileIDs reads the fileID of every file of the working tree at dir,
// .git excepted.
func fileIDs(t *testing.T, dir string) map[string]fileID {
	t.Helper()
	out := map[string]fileID{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = fileID{ino: st.Ino, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// requireUntouched fails when a file of before outside the paths except
// was written or removed since.
func requireUntouched(t *testing.T, when string, before, now map[string]fileID, except []string) {
	t.Helper()
	var touched []string
	for p, id := range before {
		if slices.Contains(except, p) {
			continue
		}
		if now[p] != id {
			touched = append(touched, p)
		}
	}
	if len(touched) > 0 {
		slices.Sort(touched)
		t.Errorf("%s rewrote %d files outside the change, e.g. %q", when, len(touched), touched[:min(5, len(touched))])
	}
}

// scopedPatch is scalePatch of n with a file created in a new directory
// and one file deleted; it returns the patch and the paths it names.
func scopedPatch(n int) (string, []string) {
	var p strings.Builder
	p.WriteString(scalePatch(n, 0))
	p.WriteString("diff --git a/newdir/sub/new.txt b/newdir/sub/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/newdir/sub/new.txt\n@@ -0,0 +1 @@\n+new\n")
	gone := scalePath(5)
	fmt.Fprintf(&p, "diff --git a/%s b/%s\ndeleted file mode 100644\n--- a/%s\n+++ /dev/null\n@@ -1,20 +0,0 @@\n", gone, gone, gone)
	for l := range 20 {
		fmt.Fprintf(&p, "-file 5 line %d\n", l)
	}
	paths := []string{"newdir/sub/new.txt", gone}
	for j := range scaleChanged {
		paths = append(paths, scalePath(j*(n/scaleChanged)+1))
	}
	slices.Sort(paths)
	return p.String(), paths
}

// personWork gives the repository of f the person's own uncommitted work
// around a change: a staged and an unstaged edit and an untracked file
// outside it, and inside it (the first file the patch changes, away
// from the lines the patch changes) a staged edit with an unstaged one on
// top, so that its index entry is not its file. It returns the
// untracked file's blob id, which no one has written to the repository.
func personWork(t *testing.T, f *fixture) string {
	t.Helper()
	inside := scalePath(1)
	f.repo.Write(inside, strings.Replace(benchContent(1, ""), "file 1 line 0\n", "staged by the person\n", 1))
	f.git("add", inside)
	f.repo.Write(inside, strings.Replace(benchContent(1, ""), "file 1 line 0\n", "staged by the person, then edited\n", 1))
	f.repo.Write(scalePath(2), "staged outside the change\n")
	f.git("add", scalePath(2))
	f.repo.Write(scalePath(3), "unstaged outside the change\n")
	f.repo.Write("notes/untracked.txt", "the person's untracked notes, never hashed by anyone\n")
	blob := f.git("hash-object", "notes/untracked.txt")
	if _, err := gitxtest.GitErr(t, f.repo.Dir, "cat-file", "-e", blob); err == nil {
		t.Fatal("the fixture's untracked file is in the object database already")
	}
	return blob
}

// laterWork is the person's work outside the change after it ran, which
// no restore may overwrite; undoLater takes it away again, so that what
// remains can be compared with the state before the change.
func laterWork(f *fixture) {
	f.repo.Write(scalePath(4), "edited after the change\n")
	f.repo.Write("notes/later.txt", "written after the change\n")
}

func undoLater(t *testing.T, f *fixture) {
	t.Helper()
	if got := f.read(scalePath(4)); got != "edited after the change\n" {
		t.Errorf("the person's later edit of %s is gone: %q", scalePath(4), got)
	}
	if got := f.read("notes/later.txt"); got != "written after the change\n" {
		t.Errorf("the person's later file is gone: %q", got)
	}
	f.repo.Write(scalePath(4), benchContent(4, ""))
	if err := os.Remove(filepath.Join(f.repo.Dir, "notes", "later.txt")); err != nil {
		t.Fatal(err)
	}
	// The directory goes too when the later file was all it held.
	_ = os.Remove(filepath.Join(f.repo.Dir, "notes"))
}

// A 10-file patch in a 5,000-file working tree with the person's own
// work in it: the restore point records the patch's paths alone (the
// person's untracked file is never hashed), no file outside the patch is
// written by the execution or by the restore, the person's work done
// after the patch is neither a conflict nor overwritten, and the restore
// brings back exactly what was there, the staged edit inside the patch's
// files included.
func TestRestore_ScopedPatch_ExactAndNothingElseTouched(t *testing.T) {
	f := scaleFixture(t, scopeFiles, false)
	untracked := personWork(t, f)
	patch, paths := scopedPatch(scopeFiles)
	before := repoState(t, f.repo.Dir)
	ids := fileIDs(t, f.repo.Dir)

	done := f.mustComplete(f.propose(&proposal.PatchArgs{Patch: patch, Target: proposal.PatchWorktree}))
	requireUntouched(t, "the execution", ids, fileIDs(t, f.repo.Dir), paths)
	if _, err := gitxtest.GitErr(t, f.repo.Dir, "cat-file", "-e", untracked); err == nil {
		t.Error("the person's untracked file outside the patch was hashed into the repository")
	}
	list, err := f.e.ListRestorePoints(testCtx(t), f.repo.Dir)
	if err != nil || len(list) != 1 || len(list[0].Worktrees) != 1 {
		t.Fatalf("restore points %+v, %v", list, err)
	}
	if w := list[0].Worktrees[0]; !slices.Equal(w.Paths, paths) {
		t.Errorf("the restore point records %q, want the patch's paths %q", w.Paths, paths)
	}
	// git accepts the snapshot as a stash: it lists the patch's paths
	// that the person had work in, or that were there to change.
	snap := f.git("rev-parse", RestorePrefix+done.Outcome.RestorePoint+"/worktree/0")
	if out, err := gitxtest.GitErr(t, f.repo.Dir, "fsck", "--strict", "--no-dangling", "--no-progress"); err != nil || out != "" {
		t.Fatalf("git fsck --strict: %v\n%s", err, out)
	}
	if got := f.git("show", snap+"^2:"+scalePath(1)); !strings.HasPrefix(got, "staged by the person") {
		t.Errorf("the snapshot's index commit has %s as %q", scalePath(1), got)
	}

	laterWork(f)
	afterLater := fileIDs(t, f.repo.Dir)
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false); err != nil {
		t.Fatalf("restore with the person's later work outside the patch: %v", err)
	}
	requireUntouched(t, "the restore", afterLater, fileIDs(t, f.repo.Dir), paths)
	undoLater(t, f)
	if now := repoState(t, f.repo.Dir); now != before {
		t.Errorf("the restore did not bring back the state before the patch:\n%s", diffState(before, now))
	}
	if _, err := os.Stat(filepath.Join(f.repo.Dir, "newdir")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the directory the patch made is still there: %v", err)
	}
}

// A merge into the checked-out main of a 5,000-file repository records
// the paths the merge changes; restoring it puts main, the index and
// those files back, and leaves the person's later work elsewhere as it
// is, without a conflict and without rewriting any other file.
func TestRestore_ScopedMerge_KeepsWorkElsewhere(t *testing.T) {
	f := scaleFixture(t, scopeFiles, true)
	before := repoState(t, f.repo.Dir)
	old := f.git("rev-parse", "HEAD")
	done := f.mustComplete(f.propose(&proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit}))
	changed := strings.Split(f.git("diff", "--name-only", old, "HEAD"), "\n")
	list, err := f.e.ListRestorePoints(testCtx(t), f.repo.Dir)
	if err != nil || len(list) != 1 || len(list[0].Worktrees) != 1 {
		t.Fatalf("restore points %+v, %v", list, err)
	}
	if w := list[0].Worktrees[0]; !slices.Equal(w.Paths, changed) {
		t.Errorf("the restore point records %q, want the merge's paths %q", w.Paths, changed)
	}

	laterWork(f)
	afterLater := fileIDs(t, f.repo.Dir)
	res, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false)
	if err != nil {
		t.Fatalf("restore with the person's later work outside the merge: %v", err)
	}
	if len(res.Refs) != 1 || res.Refs[0].To != old {
		t.Errorf("restore result %+v: want main back at %s", res, old)
	}
	requireUntouched(t, "the restore", afterLater, fileIDs(t, f.repo.Dir), changed)
	undoLater(t, f)
	if now := repoState(t, f.repo.Dir); now != before {
		t.Errorf("the restore did not bring back the state before the merge:\n%s", diffState(before, now))
	}
}

// A real executor process killed after a scoped patch was applied, before
// its end was recorded: after the restart the restore needs
// confirmation, and then brings the patch's paths back exactly, while the
// person's work after the crash, elsewhere, stays.
func TestCrash_SIGKILL_ScopedPatch_KeepsLaterWork(t *testing.T) {
	f := scaleFixture(t, 1000, false)
	personWork(t, f)
	patch, paths := scopedPatch(1000)
	before := repoState(t, f.repo.Dir)
	rec := f.propose(&proposal.PatchArgs{Patch: patch, Target: proposal.PatchWorktree})
	id := rec.Proposal.ID
	db, audit := f.j.DB().Path(), f.rec.path
	f.j.Close()

	cmd, out, stderr := startHelper(t, f, db, audit, id, "applied")
	reached := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "AT ") || strings.HasPrefix(line, "DONE") {
				reached <- line
				return
			}
		}
		reached <- "EOF"
	}()
	select {
	case line := <-reached:
		if line != "AT applied" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the helper did not stop after applying: %s\n%s", line, stderr.String())
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the helper did not reach the applied step\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	f.recoverInterrupted(t, db, audit, id)

	laterWork(f)
	afterLater := fileIDs(t, f.repo.Dir)
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, id, false); !errors.Is(err, ErrRestoreConflict) {
		t.Fatalf("restore of an interrupted operation without confirmation: %v, want restore_conflict", err)
	}
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, id, true); err != nil {
		t.Fatalf("confirmed restore: %v", err)
	}
	requireUntouched(t, "the restore", afterLater, fileIDs(t, f.repo.Dir), paths)
	undoLater(t, f)
	if now := repoState(t, f.repo.Dir); now != before {
		t.Errorf("the restore did not bring back the state before the patch:\n%s", diffState(before, now))
	}
}

// A directory where the patch wrote a file is a change made after the
// operation: the restore asks for confirmation, and then takes the file
// the patch added out of the index but leaves the person's directory and
// what is in it, as git's own checkout does; undoing the restore brings
// back exactly what was there.
func TestRestore_ScopedPatch_DirectoryInPlaceOfAFile(t *testing.T) {
	f := newFixture(t)
	before := repoState(t, f.repo.Dir)
	done := f.mustComplete(f.propose(&proposal.PatchArgs{Patch: addNewPatch, Target: proposal.PatchWorktree}))
	if err := os.Remove(filepath.Join(f.repo.Dir, "src", "new.txt")); err != nil {
		t.Fatal(err)
	}
	f.repo.Write("src/new.txt/inside.txt", "the person's directory\n")
	later := repoState(t, f.repo.Dir)

	_, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false)
	conflicts, _ := dataOf(err).([]Conflict)
	if !errors.Is(err, ErrRestoreConflict) || !slices.ContainsFunc(conflicts, func(c Conflict) bool { return c.Kind == "files" }) {
		t.Fatalf("err %v conflicts %+v: want a files conflict", err, conflicts)
	}
	res, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, true)
	if err != nil {
		t.Fatalf("forced restore: %v", err)
	}
	if got := f.read("src/new.txt/inside.txt"); got != "the person's directory\n" {
		t.Errorf("the person's file in the directory: %q", got)
	}
	if err := os.RemoveAll(filepath.Join(f.repo.Dir, "src", "new.txt")); err != nil {
		t.Fatal(err)
	}
	if now := repoState(t, f.repo.Dir); now != before {
		t.Errorf("forced restore:\n%s", diffState(before, now))
	}
	f.repo.Write("src/new.txt/inside.txt", "the person's directory\n")
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, res.UndoPoint, false); err != nil {
		t.Fatalf("undo the restore: %v", err)
	}
	if now := repoState(t, f.repo.Dir); now != later {
		t.Errorf("undoing the restore did not bring back the person's directory:\n%s", diffState(later, now))
	}
}

// loggedGit is an executor over f's journal and roots whose git is the
// real one behind a script that appends each command line to a file,
// which it returns with the executor.
func loggedGit(t *testing.T, f *fixture) (*Executor, string) {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "git.log")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '" + log + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	runner, err := gitx.NewRunner(gitx.RunnerOptions{GitPath: filepath.Join(dir, "git")})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Options{Journal: f.j, Roots: gitx.Roots{f.root}, Runner: runner, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return e, log
}

// An approved merge into the checked-out branch and a patch to the
// working tree, and the restore of each, run no git command that walks
// or rewrites the whole working tree: no status that looks for untracked
// files, no add --all, no read-tree --reset -u, no refresh of the whole
// index.
func TestExecuteAndRestore_Scoped_NoWholeTreeWalk(t *testing.T) {
	f := newFixture(t)
	f.diverge()
	e, log := loggedGit(t, f)
	f.e = e
	merge := f.propose(&proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit})
	patch := func() journal.Record {
		return f.propose(&proposal.PatchArgs{Patch: "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-# demo\n+# patched\n", Target: proposal.PatchWorktree})
	}
	// What sealing runs when the proposal arrives is not the execution's.
	for i, run := range []func() journal.Record{func() journal.Record { return merge }, patch} {
		rec := run()
		if err := os.WriteFile(log, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		done := f.mustComplete(rec)
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
				t.Errorf("%s: git %s %s walks the whole working tree", rec.Proposal.Op, sub, rest)
			}
		}
	}
}

// gitSubcommand splits a logged git command line into its subcommand and
// what follows it, past the global options (-c takes a value).
func gitSubcommand(line string) (string, string) {
	f := strings.Fields(line)
	for i := 0; i < len(f); i++ {
		switch {
		case f[i] == "-c":
			i++
		case strings.HasPrefix(f[i], "-"):
		default:
			return f[i], strings.Join(f[i+1:], " ")
		}
	}
	return "", ""
}

// A 10-file patch to the index in a 5,000-file working tree with the
// person's own work in it: the restore point records the index entries
// at the patch's paths alone, the execution and the restore write no
// file and run no git that walks or rewrites the whole index, the
// person's work staged after the patch elsewhere is neither a conflict
// nor undone, and the restore brings back exactly what was there, the
// person's staged edit inside the patch's files included.
func TestRestore_ScopedIndexPatch_ExactAndNothingElseTouched(t *testing.T) {
	f := scaleFixture(t, scopeFiles, false)
	e, log := loggedGit(t, f)
	f.e = e
	untracked := personWork(t, f)
	patch, paths := scopedPatch(scopeFiles)
	before := repoState(t, f.repo.Dir)
	ids := fileIDs(t, f.repo.Dir)
	rec := f.propose(&proposal.PatchArgs{Patch: patch, Target: proposal.PatchIndex})
	if err := os.WriteFile(log, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	done := f.mustComplete(rec)
	requireUntouched(t, "the execution", ids, fileIDs(t, f.repo.Dir), nil)
	if _, err := gitxtest.GitErr(t, f.repo.Dir, "cat-file", "-e", untracked); err == nil {
		t.Error("the person's untracked file was hashed into the repository")
	}
	if got := f.git("diff", "--cached", "--", paths[1]); !strings.Contains(got, "+patched") {
		t.Errorf("the patch is not in the index: %q", got)
	}
	list, err := f.e.ListRestorePoints(testCtx(t), f.repo.Dir)
	if err != nil || len(list) != 1 || len(list[0].Worktrees) != 1 {
		t.Fatalf("restore points %+v, %v", list, err)
	}
	if w := list[0].Worktrees[0]; !slices.Equal(w.Paths, paths) || w.Files {
		t.Errorf("the restore point records %q (files %v), want the patch's paths %q in the index alone", w.Paths, w.Files, paths)
	}

	laterWork(f)
	f.git("add", scalePath(4))
	afterLater := fileIDs(t, f.repo.Dir)
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false); err != nil {
		t.Fatalf("restore with the person's later work staged outside the patch: %v", err)
	}
	requireUntouched(t, "the restore", afterLater, fileIDs(t, f.repo.Dir), nil)
	for _, c := range wholeIndexCommands(t, log) {
		t.Errorf("the patch to the index or its restore ran %s", c)
	}
	if got := f.git("diff", "--cached", "--name-only", "--", scalePath(4)); got != scalePath(4) {
		t.Errorf("the person's later staged edit of %s is no longer staged", scalePath(4))
	}
	f.git("reset", "-q", "--", scalePath(4))
	undoLater(t, f)
	if now := repoState(t, f.repo.Dir); now != before {
		t.Errorf("the restore did not bring back the state before the patch:\n%s", diffState(before, now))
	}
}

// A patch to the index killed after it applied, before its end was
// recorded: after the restart the restore needs confirmation, and then
// brings the index entries at the patch's paths back exactly, writing no
// file, while the person's work after the crash stays.
func TestCrash_SIGKILL_ScopedIndexPatch_KeepsLaterWork(t *testing.T) {
	f := scaleFixture(t, 1000, false)
	personWork(t, f)
	patch, _ := scopedPatch(1000)
	before := repoState(t, f.repo.Dir)
	rec := f.propose(&proposal.PatchArgs{Patch: patch, Target: proposal.PatchIndex})
	id := rec.Proposal.ID
	db, audit := f.j.DB().Path(), f.rec.path
	f.j.Close()
	killAtApplied(t, f, db, audit, id)
	f.recoverInterrupted(t, db, audit, id)

	laterWork(f)
	afterLater := fileIDs(t, f.repo.Dir)
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, id, false); !errors.Is(err, ErrRestoreConflict) {
		t.Fatalf("restore of an interrupted operation without confirmation: %v, want restore_conflict", err)
	}
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, id, true); err != nil {
		t.Fatalf("confirmed restore: %v", err)
	}
	requireUntouched(t, "the restore", afterLater, fileIDs(t, f.repo.Dir), nil)
	undoLater(t, f)
	if now := repoState(t, f.repo.Dir); now != before {
		t.Errorf("the restore did not bring back the state before the patch:\n%s", diffState(before, now))
	}
}

// killAtApplied runs proposal id in a helper process and kills it with
// SIGKILL once the operation has applied, before its end is recorded.
func killAtApplied(t *testing.T, f *fixture, db, audit, id string) {
	t.Helper()
	cmd, out, stderr := startHelper(t, f, db, audit, id, "applied")
	reached := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "AT ") || strings.HasPrefix(line, "DONE") {
				reached <- line
				return
			}
		}
		reached <- "EOF"
	}()
	select {
	case line := <-reached:
		if line != "AT applied" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the helper did not stop after applying: %s\n%s", line, stderr.String())
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the helper did not reach the applied step\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}

// A mixed reset of a 10-file commit in a 5,000-file working tree with
// the person's own work in it: the restore point records the index
// entries the reset changes alone (the commit's paths and the person's
// staged edits, each differing from the target's tree), the execution
// and the restore write no file and run no git that walks or rewrites
// the whole working tree, the person's work staged after the reset
// elsewhere is neither a conflict nor undone, and the restore brings
// back exactly what was there: the branch, the staged edits and the
// index entries of the commit.
func TestRestore_ScopedMixedReset_ExactAndNothingElseTouched(t *testing.T) {
	f := scaleFixture(t, scopeFiles, false)
	var committed []string
	for j := range scaleChanged {
		p := scalePath(j*(scopeFiles/scaleChanged) + 6)
		f.repo.Write(p, "committed "+p+"\n")
		committed = append(committed, p)
	}
	f.git("add", "--", committed[0], committed[1], committed[2], committed[3], committed[4], committed[5], committed[6], committed[7], committed[8], committed[9])
	f.git("commit", "-q", "-m", "ten files")
	e, log := loggedGit(t, f)
	f.e = e
	personWork(t, f)
	target := f.git("rev-parse", "HEAD~1")
	paths := restorepoint.SortedPaths(append([]string{scalePath(1), scalePath(2)}, committed...))
	before := repoState(t, f.repo.Dir)
	ids := fileIDs(t, f.repo.Dir)
	rec := f.propose(&proposal.ResetArgs{Mode: proposal.ResetMixed, Target: "HEAD~1"})
	if err := os.WriteFile(log, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	done := f.mustComplete(rec)
	requireUntouched(t, "the execution", ids, fileIDs(t, f.repo.Dir), nil)
	if got := f.git("diff", "--cached", "--name-only"); got != "" {
		t.Errorf("staged after a mixed reset: %q", got)
	}
	list, err := f.e.ListRestorePoints(testCtx(t), f.repo.Dir)
	if err != nil || len(list) != 1 || len(list[0].Worktrees) != 1 {
		t.Fatalf("restore points %+v, %v", list, err)
	}
	if w := list[0].Worktrees[0]; !slices.Equal(w.Paths, paths) || w.Files {
		t.Errorf("the restore point records %q (files %v), want the entries the reset changes %q in the index alone", w.Paths, w.Files, paths)
	}

	laterWork(f)
	f.git("add", scalePath(4))
	afterLater := fileIDs(t, f.repo.Dir)
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false); err != nil {
		t.Fatalf("restore with the person's later work staged outside the reset's entries: %v", err)
	}
	requireUntouched(t, "the restore", afterLater, fileIDs(t, f.repo.Dir), nil)
	// The reset's own read of the target into the index, and the diff of
	// the index against the target that finds its entries (git reset
	// --mixed runs both).
	for _, c := range wholeIndexCommands(t, log, "read-tree --reset --end-of-options "+target,
		"diff-index --cached --name-only -z --no-renames --end-of-options "+target+" --") {
		t.Errorf("the mixed reset or its restore ran %s", c)
	}
	if got := f.git("diff", "--cached", "--name-only", "--", scalePath(4)); got != scalePath(4) {
		t.Errorf("the person's later staged edit of %s is no longer staged", scalePath(4))
	}
	f.git("reset", "-q", "--", scalePath(4))
	undoLater(t, f)
	if now := repoState(t, f.repo.Dir); now != before {
		t.Errorf("the restore did not bring back the state before the reset:\n%s", diffState(before, now))
	}
}
