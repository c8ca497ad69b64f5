//go:build unix

package apply

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
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

// filesAlonePatch is a patch to the working tree that changes a file's
// content, makes another executable, adds a file in a new directory and
// a symbolic link, and deletes a file: made by git from the fixture's
// base, which it leaves as it was.
func filesAlonePatch(t *testing.T, f *fixture) string {
	t.Helper()
	f.repo.Write("src/a.txt", "a1\nchanged\na3\n")
	if err := os.Chmod(filepath.Join(f.repo.Dir, "src", "b.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.repo.Write("newdir/sub/new.txt", "new\n")
	if err := os.Symlink("../src/a.txt", filepath.Join(f.repo.Dir, "newdir", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(f.repo.Dir, "README.md")); err != nil {
		t.Fatal(err)
	}
	f.git("add", "-A")
	patch := f.git("diff", "--cached", "--binary") + "\n"
	f.git("reset", "-q", "--hard")
	f.git("clean", "-fdq")
	return patch
}

// indexID says whether the index file was written: its inode, size and
// modification time.
func indexID(t *testing.T, f *fixture) [3]int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(f.repo.Dir, ".git", "index"), &st); err != nil {
		t.Fatal(err)
	}
	return [3]int64{int64(st.Ino), st.Size, st.Mtim.Nano()}
}

// written lists the files of after that are not those of before
// (see fileID).
func written(before, after map[string]fileID) string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(after)) {
		if b, ok := before[p]; !ok || b != after[p] {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

// restoredState is what a restore leaves as git reports it: files,
// modes, links, refs and index entries (repoState), the index entries'
// flags (ls-files -v), their line endings as git reads them, status and
// the diff of files against the index.
func restoredState(t *testing.T, f *fixture) string {
	t.Helper()
	var b strings.Builder
	snap := gitxtest.Snapshot(t, f.repo.Dir)
	for _, k := range slices.Sorted(maps.Keys(snap)) {
		if k != ".git/" && !strings.HasPrefix(k, ".git/") && !strings.HasPrefix(k, ".git"+string(filepath.Separator)) {
			b.WriteString(k + " " + snap[k] + "\n")
		}
	}
	b.WriteString("flags\n" + f.git("ls-files", "-s", "-v") + "\n")
	b.WriteString("eol\n" + f.git("ls-files", "--eol") + "\n")
	b.WriteString("status\n" + f.git("status", "--porcelain=v2", "--untracked-files=all") + "\n")
	b.WriteString("diff\n" + f.git("diff") + "\n")
	b.WriteString("diff-files after refresh\n")
	f.git("update-index", "-q", "--really-refresh")
	b.WriteString(f.git("diff-files", "--name-status") + "\n")
	return b.String()
}

// A restore of a working-tree patch whose index entries the patch left
// alone writes the files alone, and leaves exactly what git's own restore
// of the same paths (`git restore --source --staged --worktree`) leaves:
// files, modes, links, index entries and their flags, status and diff,
// and the same files written (a file already as recorded, whose stat
// data its entry holds, is left alone by both), on two repositories set
// up alike. Where that cannot be known for certain (a conversion on
// checkout, attributes that the index and the working tree disagree on,
// staged work at a path, an intent-to-add entry, an index that can hold
// skip-worktree entries) git restores, and the index is written.
func TestRestore_FilesAlone_SameAsGitRestore(t *testing.T) {
	cases := []struct {
		name string
		// setup runs before the patch is proposed, after runs once it
		// has completed.
		setup, after func(t *testing.T, f *fixture)
		// alone: the index is not written.
		alone bool
		// converted: git's checkout converts the files, so that they are
		// not as before the patch (git's restore and this one alike).
		converted bool
		// force: after changes a path, so the restore asks.
		force bool
		// init: git init's arguments.
		init []string
		// patch, when set, is the patch (filesAlonePatch otherwise), made
		// from the fixture's base before setup runs.
		patch func(t *testing.T, f *fixture) string
	}{
		{name: "plain", alone: true},
		{name: "sha256", alone: true, init: []string{"--object-format=sha256"}},
		{name: "assume-unchanged", setup: func(_ *testing.T, f *fixture) { f.git("update-index", "--assume-unchanged", "src/a.txt") }, alone: true},
		{name: "work elsewhere", setup: func(_ *testing.T, f *fixture) {
			f.repo.Write("notes.txt", "untracked\n")
			f.repo.Write("other.txt", "staged\n")
			f.git("add", "other.txt")
		}, alone: true},
		{name: "a file already as recorded", after: func(_ *testing.T, f *fixture) {
			// The person's own checkout of it: a clean entry, whose file
			// neither restore writes again.
			f.git("checkout", "HEAD", "--", "src/a.txt")
		}, alone: true, force: true},
		{name: "attributes the same in the index and the working tree", setup: func(_ *testing.T, f *fixture) {
			f.repo.Write(".gitattributes", "*.bin binary\n[attr]notes diff\n")
			f.repo.Write("src/.gitattributes", "*.md diff=markdown\n")
			f.git("add", ".gitattributes", "src/.gitattributes")
			f.git("commit", "-q", "-m", "attributes")
		}, alone: true},
		{name: "autocrlf", setup: func(_ *testing.T, f *fixture) { f.git("config", "core.autocrlf", "input") }},
		{name: "attribute", setup: func(_ *testing.T, f *fixture) {
			f.repo.Write(".gitattributes", "*.txt ident\n")
			f.git("add", ".gitattributes")
			f.git("commit", "-q", "-m", "attributes")
		}, converted: true},
		{name: "attribute in the index alone", setup: func(t *testing.T, f *fixture) {
			f.repo.Write("src/.gitattributes", "*.txt eol=crlf\n")
			f.git("add", "src/.gitattributes")
			if err := os.Remove(filepath.Join(f.repo.Dir, "src", ".gitattributes")); err != nil {
				t.Fatal(err)
			}
		}, converted: true},
		{name: "an ident rule the index takes back", setup: func(t *testing.T, f *fixture) {
			// git's restore reads src's attributes from the index
			// (!ident), as the working tree has no file there, so
			// b.txt's $Id$ stays unexpanded; the working tree's root
			// file alone would expand it.
			f.repo.Write("src/b.txt", "b1\n$Id$\nb3\n")
			f.git("commit", "-q", "-am", "ident")
			f.repo.Write(".gitattributes", "*.txt ident\n")
			f.repo.Write("src/.gitattributes", "*.txt !ident\n")
			f.git("add", "src/.gitattributes")
			if err := os.Remove(filepath.Join(f.repo.Dir, "src", ".gitattributes")); err != nil {
				t.Fatal(err)
			}
		}, alone: true},
		{name: "attributes the index and the working tree disagree on, none a conversion", setup: func(_ *testing.T, f *fixture) {
			// The working tree's file is read where there is one.
			f.repo.Write("src/.gitattributes", "*.txt ident\n")
			f.git("add", "src/.gitattributes")
			f.git("commit", "-q", "-m", "attributes")
			f.repo.Write("src/.gitattributes", "*.md diff=markdown\n")
		}, alone: true},
		{name: "an eol rule the working tree changes", setup: func(_ *testing.T, f *fixture) {
			f.repo.Write("src/.gitattributes", "*.txt -text\n")
			f.git("add", "src/.gitattributes")
			f.git("commit", "-q", "-m", "attributes")
			f.repo.Write("src/.gitattributes", "*.txt eol=crlf\n")
		}, converted: true},
		{name: "staged work at a path", setup: func(_ *testing.T, f *fixture) {
			f.repo.Write("src/b.txt", "b1\nb2\nb3\nstaged\n")
			f.git("add", "src/b.txt")
			f.repo.Write("src/b.txt", "b1\nb2\nb3\n")
		}},
		{name: "skip-worktree elsewhere", setup: func(_ *testing.T, f *fixture) {
			f.repo.Write("other.txt", "other\n")
			f.git("add", "other.txt")
			f.git("commit", "-q", "-m", "other")
			f.git("update-index", "--skip-worktree", "other.txt")
		}},
		{name: "a .gitattributes the patch created hides a conversion", setup: func(_ *testing.T, f *fixture) {
			// src/a.txt stays as committed (LF) under the new root rule;
			// the patch's own src/.gitattributes takes the rule back for
			// as long as it is there, and the restore removes it before
			// checking a.txt out (converted, CRLF, by both).
			f.repo.Write(".gitattributes", "*.txt text eol=crlf\n")
			f.git("add", ".gitattributes")
			f.git("commit", "-q", "-m", "attributes")
		}, patch: func(*testing.T, *fixture) string {
			return "diff --git a/src/.gitattributes b/src/.gitattributes\nnew file mode 100644\n--- /dev/null\n+++ b/src/.gitattributes\n@@ -0,0 +1 @@\n+*.txt !text !eol\n" +
				"diff --git a/src/a.txt b/src/a.txt\ndeleted file mode 100644\n--- a/src/a.txt\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-a1\n-a2\n-a3\n"
		}, converted: true},
		{name: "a .gitattributes the patch created above no restored file", patch: func(t *testing.T, f *fixture) string {
			f.repo.Write("src/a.txt", "a1\nchanged\na3\n")
			f.repo.Write("docs/.gitattributes", "*.md diff=markdown\n")
			f.git("add", "-A")
			patch := f.git("diff", "--cached", "--binary") + "\n"
			f.git("reset", "-q", "--hard")
			f.git("clean", "-fdq")
			return patch
		}},
		{name: "core.ignoreStat", setup: func(_ *testing.T, f *fixture) { f.git("config", "core.ignoreStat", "true") }},
		// Settings under which git's restore leaves the same entries:
		// the untracked cache is checked against directories' times,
		// checkStat and trustctime are read by the checkout alike, and
		// skipHash and manyFiles change the index file's own bytes (the
		// version manyFiles sets is that of a new index only).
		{name: "core.untrackedCache", setup: func(_ *testing.T, f *fixture) {
			f.git("config", "core.untrackedCache", "true")
			f.git("update-index", "--untracked-cache")
			f.repo.Write("notes/u.txt", "untracked\n")
			f.git("status")
		}, alone: true},
		{name: "core.checkStat minimal", setup: func(_ *testing.T, f *fixture) { f.git("config", "core.checkStat", "minimal") }, alone: true},
		{name: "core.trustctime off", setup: func(_ *testing.T, f *fixture) { f.git("config", "core.trustctime", "false") }, alone: true},
		{name: "index.skipHash", setup: func(_ *testing.T, f *fixture) {
			f.git("config", "index.skipHash", "true")
			f.git("update-index", "--really-refresh")
		}, alone: true},
		{name: "feature.manyFiles", setup: func(_ *testing.T, f *fixture) {
			f.git("config", "feature.manyFiles", "true")
			f.git("update-index", "--really-refresh")
		}, alone: true},
	}
	defer func() { restoreFilesAlone = true }()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got, wrote [2]string
			for i, alone := range []bool{true, false} {
				restoreFilesAlone = alone
				f := newFixture(t, c.init...)
				mk := filesAlonePatch
				if c.patch != nil {
					mk = c.patch
				}
				patch := mk(t, f)
				if c.setup != nil {
					c.setup(t, f)
				}
				before := repoState(t, f.repo.Dir)
				done := f.mustComplete(f.propose(&proposal.PatchArgs{Patch: patch, Target: proposal.PatchWorktree}))
				if c.after != nil {
					c.after(t, f)
				}
				ix, ids := indexID(t, f), fileIDs(t, f.repo.Dir)
				if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, c.force); err != nil {
					t.Fatalf("restore: %v", err)
				}
				if written := indexID(t, f) != ix; alone && written == c.alone {
					t.Errorf("index written %v by the restore, want %v", written, !c.alone)
				}
				if _, err := os.Lstat(filepath.Join(f.repo.Dir, ".git", "index.lock")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("index.lock after the restore: %v", err)
				}
				if now := repoState(t, f.repo.Dir); now != before && !c.converted {
					t.Errorf("the restore did not bring back the state before the patch:\n%s", diffState(before, now))
				}
				wrote[i] = written(ids, fileIDs(t, f.repo.Dir))
				got[i] = restoredState(t, f)
			}
			if got[0] != got[1] {
				t.Errorf("the restore and git's restore leave different states:\n%s", diffState(got[1], got[0]))
			}
			if wrote[0] != wrote[1] {
				t.Errorf("the restore wrote %q, git's restore %q", wrote[0], wrote[1])
			}
		})
	}
}

// A restore that stopped after writing some of the files (a kill while
// git checked them out: the index was not written) is completed exactly
// by a second restore, confirmed, since the files are neither the state
// before nor after.
func TestRestore_FilesAlone_PartlyWrittenCompletes(t *testing.T) {
	f := newFixture(t)
	patch := filesAlonePatch(t, f)
	before := repoState(t, f.repo.Dir)
	done := f.mustComplete(f.propose(&proposal.PatchArgs{Patch: patch, Target: proposal.PatchWorktree}))
	// Half of it put back: a.txt's content and README.md; b.txt still
	// executable, the new files still there.
	f.repo.Write("src/a.txt", "a1\na2\na3\n")
	f.repo.Write("README.md", "# demo\n")
	ix := indexID(t, f)
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, true); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if indexID(t, f) != ix {
		t.Error("the restore wrote the index")
	}
	if now := repoState(t, f.repo.Dir); now != before {
		t.Errorf("the second restore did not complete the first:\n%s", diffState(before, now))
	}
	if out := gitxtest.Git(t, f.repo.Dir, "status", "--porcelain=v2", "--untracked-files=all"); out != "" {
		t.Errorf("status after the restore: %q", out)
	}
}

// The person stages a patched path after the restore's undo point read
// the index and before the files are written: the restore then does what
// git's restore does at that moment (the entry is set back to the
// recorded one, as the undo point and end state say), where writing the
// files alone would have left the person's entry staged under an end
// state that records the index without it.
func TestRestore_FilesAlone_StagedAfterTheCheck(t *testing.T) {
	defer func() { restoreFilesAlone = true }()
	var got [2]string
	for i, alone := range []bool{true, false} {
		restoreFilesAlone = alone
		f := newFixture(t)
		patch := filesAlonePatch(t, f)
		before := repoState(t, f.repo.Dir)
		done := f.mustComplete(f.propose(&proposal.PatchArgs{Patch: patch, Target: proposal.PatchWorktree}))
		staged := false
		f.e.beforeStep = func(step string) {
			if step == "restore-undo-point" {
				f.repo.Write("src/a.txt", "a1\nthe person's\na3\n")
				f.git("add", "src/a.txt")
				staged = true
			}
		}
		if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false); err != nil {
			t.Fatalf("restore: %v", err)
		}
		f.e.beforeStep = nil
		if !staged {
			t.Fatal("the person's git add did not run")
		}
		if now := repoState(t, f.repo.Dir); now != before {
			t.Errorf("alone=%v: the restore did not bring back the state before the patch:\n%s", alone, diffState(before, now))
		}
		got[i] = restoredState(t, f)
	}
	if got[0] != got[1] {
		t.Errorf("the restore and git's restore leave different states:\n%s", diffState(got[1], got[0]))
	}
}

// The person stages a file the patch created after the restore's undo
// point read the index: the restore takes the entry out with the file,
// as it sets back an entry staged since at a path the patch changed, on
// both ways of restoring alike, and what it records as the state it left
// is what is there: the undo point is then restored without asking.
// Removing the file alone left it staged and missing (AD), under an end
// state that records no entry.
func TestRestore_FilesAlone_CreatedFileStagedAfterTheCheck(t *testing.T) {
	defer func() { restoreFilesAlone = true }()
	var got [2]string
	for i, alone := range []bool{true, false} {
		restoreFilesAlone = alone
		f := newFixture(t)
		patch := filesAlonePatch(t, f)
		before := repoState(t, f.repo.Dir)
		done := f.mustComplete(f.propose(&proposal.PatchArgs{Patch: patch, Target: proposal.PatchWorktree}))
		after := repoState(t, f.repo.Dir)
		staged := false
		f.e.beforeStep = func(step string) {
			if step == "restore-undo-point" && !staged {
				f.git("add", "newdir/sub/new.txt")
				staged = true
			}
		}
		res, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false)
		f.e.beforeStep = nil
		if err != nil {
			t.Fatalf("restore: %v", err)
		}
		if !staged {
			t.Fatal("the person's git add did not run")
		}
		if now := repoState(t, f.repo.Dir); now != before {
			t.Errorf("alone=%v: the restore did not bring back the state before the patch:\n%s", alone, diffState(before, now))
		}
		got[i] = restoredState(t, f)
		if _, err := f.e.Restore(testCtx(t), f.repo.Dir, res.UndoPoint, false); err != nil {
			t.Errorf("alone=%v: the restore's end state is not what it left: undoing it: %v", alone, err)
		} else if now := repoState(t, f.repo.Dir); now != after {
			t.Errorf("alone=%v: undoing the restore did not bring back the patch:\n%s", alone, diffState(after, now))
		}
	}
	if got[0] != got[1] {
		t.Errorf("the restore and git's restore leave different states:\n%s", diffState(got[1], got[0]))
	}
}

// While the restore writes the files the person's index is locked as
// git's restore locks it: the person's git add then fails with git's own
// message and stages nothing, and the restore completes exactly.
func TestRestore_FilesAlone_IndexLockedWhileWriting(t *testing.T) {
	f := newFixture(t)
	patch := filesAlonePatch(t, f)
	f.repo.Write("other.txt", "other\n")
	before := repoState(t, f.repo.Dir)
	done := f.mustComplete(f.propose(&proposal.PatchArgs{Patch: patch, Target: proposal.PatchWorktree}))
	ix := indexID(t, f)
	var addErr error
	ran := false
	f.e.beforeStep = func(step string) {
		if step == "restore-files-locked" {
			ran = true
			_, addErr = gitxtest.GitErr(t, f.repo.Dir, "add", "other.txt")
		}
	}
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if !ran {
		t.Fatal("the restore did not write the files alone under the index lock")
	}
	if addErr == nil || !strings.Contains(addErr.Error(), "index.lock': File exists") {
		t.Errorf("the person's git add while the restore held the index: %v", addErr)
	}
	if indexID(t, f) != ix {
		t.Error("the index was written")
	}
	if now := repoState(t, f.repo.Dir); now != before {
		t.Errorf("the restore did not bring back the state before the patch:\n%s", diffState(before, now))
	}
	if _, err := os.Lstat(filepath.Join(f.repo.Dir, ".git", "index.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("index.lock after the restore: %v", err)
	}
}

const restoreHelperEnv = "SLUICE_APPLY_RESTORE_HELPER"

// TestRestoreHelperProcess is not a test: the restore crash test runs the
// test binary again with restoreHelperEnv set, and this restores one
// restore point in that process, stopping at the step RESTORE_STEP to be
// killed.
func TestRestoreHelperProcess(t *testing.T) {
	if os.Getenv(restoreHelperEnv) != "1" {
		t.Skip("helper for TestRestore_FilesAlone_KilledHoldingTheLock")
	}
	err := func() error {
		j, err := journal.Open(os.Getenv("RESTORE_DB"), journal.Options{Recorder: &fileRecorder{path: os.Getenv("RESTORE_AUDIT")}, LockTimeout: 10 * time.Second})
		if err != nil {
			return err
		}
		runner, err := gitx.NewRunner(gitx.RunnerOptions{})
		if err != nil {
			return err
		}
		e, err := New(Options{Journal: j, Roots: gitx.Roots{os.Getenv("RESTORE_ROOT")}, Runner: runner, Logger: quiet})
		if err != nil {
			return err
		}
		e.beforeStep = func(step string) {
			if step == os.Getenv("RESTORE_STEP") {
				os.Stdout.WriteString("AT " + step + "\n")
				time.Sleep(time.Hour)
			}
		}
		_, err = e.Restore(context.Background(), os.Getenv("RESTORE_REPO"), os.Getenv("RESTORE_POINT"), false)
		return err
	}()
	fmt.Printf("DONE %v\n", err)
	os.Exit(0)
}

// A Sluice killed while it holds the person's index lock leaves it, as a
// git restore killed midway leaves its own, and nothing else: the index
// is as it was, the person's git refuses to write it with git's message,
// and Sluice's next restore refuses (repo_locked, naming the lock)
// instead of writing past it. Once the person removes it, the restore
// brings back the state before the patch exactly.
func TestRestore_FilesAlone_KilledHoldingTheLock(t *testing.T) {
	f := newFixture(t)
	patch := filesAlonePatch(t, f)
	before := repoState(t, f.repo.Dir)
	done := f.mustComplete(f.propose(&proposal.PatchArgs{Patch: patch, Target: proposal.PatchWorktree}))
	after := repoState(t, f.repo.Dir)
	indexBytes := func() string {
		b, err := os.ReadFile(filepath.Join(f.repo.Dir, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ix := indexBytes()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRestoreHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), restoreHelperEnv+"=1", "RESTORE_DB="+filepath.Join(t.TempDir(), "j.db"),
		"RESTORE_AUDIT="+filepath.Join(t.TempDir(), "audit.jsonl"), "RESTORE_ROOT="+f.root, "RESTORE_REPO="+f.repo.Dir,
		"RESTORE_POINT="+done.Outcome.RestorePoint, "RESTORE_STEP=restore-files-locked")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "AT restore-files-locked\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the helper did not stop holding the lock: %q", line)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	if indexBytes() != ix {
		t.Error("the index changed")
	}
	if now := repoState(t, f.repo.Dir); now != after {
		t.Errorf("the killed restore changed the repository:\n%s", diffState(after, now))
	}
	if _, err := gitxtest.GitErr(t, f.repo.Dir, "add", "src/a.txt"); err == nil || !strings.Contains(err.Error(), "index.lock': File exists") {
		t.Errorf("the person's git add beside the left lock: %v", err)
	}
	_, err = f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false)
	if !errors.Is(err, ErrRepoLocked) || !strings.Contains(err.Error(), ".git/index.lock") {
		t.Fatalf("restore beside the left lock: %v", err)
	}
	if err := os.Remove(filepath.Join(f.repo.Dir, ".git", "index.lock")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false); err != nil {
		t.Fatalf("restore once the lock is removed: %v", err)
	}
	if now := repoState(t, f.repo.Dir); now != before {
		t.Errorf("the restore did not bring back the state before the patch:\n%s", diffState(before, now))
	}
}

// The index entries a restore reads in process are those git's ls-files
// lists, as restorepoint.IndexEntries keeps them, on indexes of several
// shapes: plain, a long name, an executable, a symbolic link, a gitlink,
// assume-unchanged, a conflict (refused alike), names that sort around a
// directory's; and where git must answer (an index of version 3 or 4,
// a split index, core.ignorecase) it is not read in process.
func TestRestore_EntriesInProcess_SameAsLsFiles(t *testing.T) {
	// A name of 4,095 bytes or more is held without its length.
	long := strings.Repeat(strings.Repeat("l", 200)+"/", 21) + "long.txt"
	paths := []string{"README.md", "src/a.txt", "src/b.txt", "src", "src/a", "src-x", "exe", "link", "sub", "gone", long, "c.txt", "d.txt"}
	cases := []struct {
		name  string
		setup func(t *testing.T, f *fixture)
		// inProcess: the index is read in process.
		inProcess bool
		// listed: how many entries at least are at the paths.
		listed int
		init   []string
	}{
		{"plain", func(*testing.T, *fixture) {}, true, 3, nil},
		{"sha256", func(*testing.T, *fixture) {}, true, 3, []string{"--object-format=sha256"}},
		{"shapes", func(t *testing.T, f *fixture) {
			f.repo.Write("src-x", "x\n")
			f.repo.Write("src/a/deep.txt", "deep\n")
			f.repo.Write("exe", "#!/bin/sh\n")
			if err := os.Chmod(filepath.Join(f.repo.Dir, "exe"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("src/a.txt", filepath.Join(f.repo.Dir, "link")); err != nil {
				t.Fatal(err)
			}
			f.git("add", "-A")
			f.git("update-index", "--add", "--cacheinfo", "100644,"+f.git("rev-parse", "HEAD:src/a.txt")+","+long)
			f.git("update-index", "--add", "--cacheinfo", "160000,"+f.git("rev-parse", "HEAD")+",sub")
			f.git("update-index", "--assume-unchanged", "src/b.txt")
		}, true, 8, nil},
		{"conflict", func(t *testing.T, f *fixture) {
			blob := f.git("rev-parse", "HEAD:src/a.txt")
			gitStdin(t, f, "0 "+strings.Repeat("0", 40)+"\tc.txt\n100644 "+blob+" 1\tc.txt\n100644 "+blob+" 2\tc.txt\n100644 "+blob+" 3\tc.txt\n",
				"update-index", "--index-info")
		}, true, 6, nil},
		{"version 4", func(_ *testing.T, f *fixture) { f.git("update-index", "--index-version", "4") }, false, 0, nil},
		{"intent to add", func(_ *testing.T, f *fixture) {
			f.repo.Write("d.txt", "d\n")
			f.git("add", "-N", "d.txt")
		}, false, 0, nil},
		{"split", func(_ *testing.T, f *fixture) { f.git("update-index", "--split-index") }, false, 0, nil},
		{"skip-worktree", func(_ *testing.T, f *fixture) { f.git("update-index", "--skip-worktree", "src/b.txt") }, false, 0, nil},
		{"ignorecase", func(_ *testing.T, f *fixture) { f.git("config", "core.ignorecase", "true") }, false, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, c.init...)
			c.setup(t, f)
			rc, err := f.e.openRepo(testCtx(t), f.repo.Dir)
			if err != nil {
				t.Fatal(err)
			}
			listed, ok := rc.g.listEntries(rc.repo.GitDir, paths)
			if ok != c.inProcess {
				t.Fatalf("read in process %v, want %v", ok, c.inProcess)
			}
			if !ok {
				return
			}
			inProcess := func(context.Context, restorepoint.Call) ([]byte, error) { return listed, nil }
			for _, scope := range [][]string{paths, {"src/a.txt"}, {"src"}, {"c.txt", "src/b.txt"}, {"nothing"}} {
				got, gotErr := restorepoint.IndexEntries(testCtx(t), inProcess, scope)
				want, wantErr := restorepoint.IndexEntries(testCtx(t), rc.g.inWorktree(rc.main()), scope)
				if string(got) != string(want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Errorf("entries at %q: in process %q, %v; git %q, %v", scope, got, gotErr, want, wantErr)
				}
			}
			if n := strings.Count(string(listed), "\x00"); n < c.listed {
				t.Errorf("%d entries listed, want %d or more", n, c.listed)
			}
			// An execution's intent-to-add check takes the same answer
			// for git's ls-files -s --debug: its entries at the paths,
			// and none intent-to-add.
			res, err := rc.g.run(testCtx(t), call{dir: rc.path, args: []string{"ls-files", "-s", "-z", "--debug"}, paths: paths})
			if err != nil {
				t.Fatal(err)
			}
			debugListed, ita, err := readDebug(res.out)
			if err != nil || len(ita) > 0 {
				t.Fatalf("ls-files --debug: intent-to-add %q, %v", ita, err)
			}

			var atPaths []string
			for rec := range strings.SplitSeq(string(debugListed), "\x00") {
				if _, p, ok := strings.Cut(rec, "\t"); ok && slices.Contains(paths, p) {
					atPaths = append(atPaths, rec+"\x00")
				}
			}
			if got, want := string(listed), strings.Join(atPaths, ""); got != want {
				t.Errorf("in process %q, ls-files -s --debug at the paths %q", got, want)
			}
		})
	}
}

func gitStdin(t *testing.T, f *fixture, stdin string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = f.repo.Dir
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}
