//go:build unix

package apply

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/proposal"
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

// restoredState is what a restore leaves as git reports it: files,
// modes, links, refs and index entries (repoState), the index entries'
// flags (ls-files -v), status and the diff of files against the index.
func restoredState(t *testing.T, f *fixture) string {
	t.Helper()
	var b strings.Builder
	snap := gitxtest.Snapshot(t, f.repo.Dir)
	keys := slices.Sorted(maps.Keys(snap))
	for _, k := range keys {
		if k != ".git/" && !strings.HasPrefix(k, ".git/") && !strings.HasPrefix(k, ".git"+string(filepath.Separator)) {
			b.WriteString(k + " " + snap[k] + "\n")
		}
	}
	b.WriteString("flags\n" + f.git("ls-files", "-s", "-v") + "\n")
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
// on two repositories set up alike. Where that cannot be known for
// certain (a conversion on checkout, staged work at a path, an
// intent-to-add entry, an index that can hold skip-worktree entries) git
// restores, and the index is written.
func TestRestore_FilesAlone_SameAsGitRestore(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, f *fixture)
		// alone: the index is not written.
		alone bool
		// converted: git's checkout converts the files, so that they are
		// not as before the patch (git's restore and this one alike).
		converted bool
	}{
		{"plain", func(*testing.T, *fixture) {}, true, false},
		{"assume-unchanged", func(_ *testing.T, f *fixture) { f.git("update-index", "--assume-unchanged", "src/a.txt") }, true, false},
		{"work elsewhere", func(_ *testing.T, f *fixture) {
			f.repo.Write("notes.txt", "untracked\n")
			f.repo.Write("other.txt", "staged\n")
			f.git("add", "other.txt")
		}, true, false},
		{"autocrlf", func(_ *testing.T, f *fixture) { f.git("config", "core.autocrlf", "input") }, false, false},
		{"attribute", func(_ *testing.T, f *fixture) {
			f.repo.Write(".gitattributes", "*.txt ident\n")
			f.git("add", ".gitattributes")
			f.git("commit", "-q", "-m", "attributes")
		}, false, true},
		{"attribute in the index alone", func(t *testing.T, f *fixture) {
			f.repo.Write("src/.gitattributes", "*.txt eol=crlf\n")
			f.git("add", "src/.gitattributes")
			if err := os.Remove(filepath.Join(f.repo.Dir, "src", ".gitattributes")); err != nil {
				t.Fatal(err)
			}
		}, false, true},
		{"staged work at a path", func(_ *testing.T, f *fixture) {
			f.repo.Write("src/b.txt", "b1\nb2\nb3\nstaged\n")
			f.git("add", "src/b.txt")
			f.repo.Write("src/b.txt", "b1\nb2\nb3\n")
		}, false, false},
		{"skip-worktree elsewhere", func(_ *testing.T, f *fixture) {
			f.repo.Write("other.txt", "other\n")
			f.git("add", "other.txt")
			f.git("commit", "-q", "-m", "other")
			f.git("update-index", "--skip-worktree", "other.txt")
		}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got [2]string
			for i, alone := range []bool{true, false} {
				restoreFilesAlone = alone
				f := newFixture(t)
				patch := filesAlonePatch(t, f)
				c.setup(t, f)
				before := repoState(t, f.repo.Dir)
				done := f.mustComplete(f.propose(&proposal.PatchArgs{Patch: patch, Target: proposal.PatchWorktree}))
				ix := indexID(t, f)
				if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false); err != nil {
					t.Fatalf("restore: %v", err)
				}
				if written := indexID(t, f) != ix; alone && written == c.alone {
					t.Errorf("index written %v by the restore, want %v", written, !c.alone)
				}
				if now := repoState(t, f.repo.Dir); now != before && !c.converted {
					t.Errorf("the restore did not bring back the state before the patch:\n%s", diffState(before, now))
				}
				got[i] = restoredState(t, f)
			}
			restoreFilesAlone = true
			if got[0] != got[1] {
				t.Errorf("the restore and git's restore leave different states:\n%s", diffState(got[1], got[0]))
			}
		})
	}
	restoreFilesAlone = true
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
