package apply

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

const readmePatched = "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-# demo\n+# patched\n"

// completeReadingIndex proposes readmePatched to target in f and carries
// it out through a git that logs its calls, and returns the record and
// the git ls-files calls the execution made (each a read of the whole
// index).
func completeReadingIndex(t *testing.T, f *fixture, target proposal.PatchTarget) (journal.Record, []string) {
	t.Helper()
	e, log := loggedGit(t, f)
	f.e = e
	rec := f.propose(&proposal.PatchArgs{Patch: readmePatched, Target: target})
	if err := os.WriteFile(log, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	done := f.mustComplete(rec)
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var reads []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if sub, rest := gitSubcommand(line); sub == "ls-files" {
			reads = append(reads, rest)
		}
	}
	return done, reads
}

// Where git's ls-files answers (the index not read in process), a patch
// to the working tree reads the person's whole index twice: once
// before git apply (the intent-to-add check, the check that the files
// are as sealed and the restore point) and once after it (the check of
// the result and the end state), since git apply without --index
// changes no index entry. Each git ls-files loads the whole index,
// whatever its pathspec.
func TestExecute_ScopedPatch_ReadsTheIndexTwice(t *testing.T) {
	executeEntriesInProcess = false
	defer func() { executeEntriesInProcess = true }()
	for _, target := range []proposal.PatchTarget{proposal.PatchWorktree, proposal.PatchIndex} {
		t.Run(string(target), func(t *testing.T) {
			f := newFixture(t)
			_, reads := completeReadingIndex(t, f, target)
			if len(reads) > 2 {
				t.Errorf("the execution read the index %d times, want at most 2:\n%s", len(reads), strings.Join(reads, "\n"))
			}
		})
	}
}

// The person stages a file of the patch after the patch was applied and
// checked, before the execution records its end state: the end state is
// what the check read, so a restore sees the staging as a change made
// after the operation and asks for confirmation instead of silently
// putting the index entry back; confirmed, it brings back exactly the
// state before the patch.
func TestRestore_ScopedPatch_StagedBeforeTheEnd_Asks(t *testing.T) {
	for _, target := range []proposal.PatchTarget{proposal.PatchWorktree, proposal.PatchIndex} {
		t.Run(string(target), func(t *testing.T) {
			f := newFixture(t)
			before := repoState(t, f.repo.Dir)
			rec := f.propose(&proposal.PatchArgs{Patch: readmePatched, Target: target})
			var staged error
			f.e.beforeStep = func(step string) {
				if step != "applied" {
					return
				}
				// The person's own git, between the check of the result
				// and the end state: it stages the file as it is on disk
				// (the patch's result, or for a patch to the index the
				// file the patch left alone).
				cmd := exec.Command("git", "add", "README.md")
				cmd.Dir = f.repo.Dir
				if out, err := cmd.CombinedOutput(); err != nil {
					staged = errors.New(err.Error() + ": " + string(out))
				}
			}
			done := f.mustComplete(rec)
			f.e.beforeStep = nil
			if staged != nil {
				t.Fatalf("staging: %v", staged)
			}
			if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false); !errors.Is(err, ErrRestoreConflict) {
				t.Fatalf("restore after the person staged README.md: %v, want restore_conflict", err)
			}
			disk, err := os.ReadFile(f.repo.Dir + "/README.md")
			if err != nil {
				t.Fatal(err)
			}
			if got := f.git("show", ":README.md"); got != strings.TrimSpace(string(disk)) {
				t.Errorf("the refused restore changed the index: README.md staged as %q", got)
			}
			if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, true); err != nil {
				t.Fatalf("confirmed restore: %v", err)
			}
			if now := repoState(t, f.repo.Dir); now != before {
				t.Errorf("the restore did not bring back the state before the patch:\n%s", diffState(before, now))
			}
		})
	}
}

// On an index read in process (a whole version 2 one), a patch reads no
// whole index through git: the intent-to-add check, the check that the
// files are as sealed, the restore point and the end state take the
// entries at the patch's paths from the index file (listEntries), and
// record what they record when git's ls-files answers. Where git must
// answer (a version 4 index here) git's ls-files reads it, as before.
func TestExecute_ScopedPatch_ReadsTheEntriesInProcess(t *testing.T) {
	defer func() { executeEntriesInProcess = true }()
	for _, target := range []proposal.PatchTarget{proposal.PatchWorktree, proposal.PatchIndex} {
		for _, v4 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s v4=%v", target, v4), func(t *testing.T) {
				var recorded [2]string
				for i, inProcess := range []bool{true, false} {
					executeEntriesInProcess = inProcess
					f := newFixture(t)
					// Staged work beside the patch.
					f.repo.Write("other.txt", "staged\n")
					f.git("add", "other.txt")
					if v4 {
						f.git("update-index", "--index-version", "4")
					}
					done, reads := completeReadingIndex(t, f, target)
					switch {
					case inProcess && !v4 && len(reads) > 0:
						t.Errorf("the execution read the index through git %d times, want none:\n%s", len(reads), strings.Join(reads, "\n"))
					case (v4 || !inProcess) && len(reads) == 0:
						t.Errorf("in process %v: the execution did not read the index through git", inProcess)
					}
					rps, err := f.e.ListRestorePoints(testCtx(t), f.repo.Dir)
					if err != nil {
						t.Fatal(err)
					}
					var b2 strings.Builder
					for _, rp := range rps {
						if rp.ID != done.Outcome.RestorePoint || rp.End == nil {
							continue
						}
						for _, w := range append(rp.Worktrees, rp.End.Worktrees...) {
							fmt.Fprintf(&b2, "files=%v index=%s tree=%s paths=%q\n", w.Files, w.Index, w.Tree, w.Paths)
						}
					}
					if b2.Len() == 0 {
						t.Fatal("no restore point with an end state")
					}
					recorded[i] = b2.String()
				}
				if recorded[0] != recorded[1] {
					t.Errorf("recorded in process:\n%s\nwith git's ls-files:\n%s", recorded[0], recorded[1])
				}
			})
		}
	}
}
