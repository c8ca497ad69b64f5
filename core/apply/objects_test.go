package apply

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/proposal"
)

// The bookkeeping commits of a restore point (record, end state, the
// stash-shaped snapshot) are written in process for SHA-1 repositories and
// by git commit-tree for SHA-256 ones. Either way git must accept them as
// its own: fsck --strict finds nothing, git stash reads the snapshot, and
// the restore point restores.
func TestRestorePoint_BookkeepingObjects(t *testing.T) {
	for name, init := range map[string][]string{
		"sha1":   {"--object-format=sha1"},
		"sha256": {"--object-format=sha256"},
		// git writes the objects of a shared repository itself, with
		// group permissions.
		"shared": {"--shared=group"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, init...)
			if format := strings.TrimPrefix(init[0], "--object-format="); format != init[0] {
				if got := f.git("rev-parse", "--show-object-format"); got != format {
					t.Fatalf("object format %q, want %q", got, format)
				}
			}
			// Staged, unstaged and untracked work: the snapshot needs an
			// index commit and a files commit.
			f.repo.Write("src/a.txt", "staged\n")
			f.git("add", "src/a.txt")
			f.repo.Write("src/b.txt", "unstaged\n")
			f.repo.Write("notes.txt", "untracked\n")
			before := repoState(t, f.repo.Dir)
			// A hard reset: its restore point records the whole working
			// tree, staged, unstaged and untracked work included.
			done := f.mustComplete(f.propose(&proposal.ResetArgs{Mode: proposal.ResetHard, Target: "HEAD"}))
			id := done.Outcome.RestorePoint

			if out, err := gitxtest.GitErr(t, f.repo.Dir, "fsck", "--strict", "--no-dangling", "--no-progress"); err != nil || out != "" {
				t.Fatalf("git fsck --strict: %v\n%s", err, out)
			}
			meta := f.git("rev-parse", RestorePrefix+id+"/meta")
			if got := f.git("log", "-1", "--format=%an <%ae>|%cn <%ce>|%G?", meta); got != "Sluice <sluice@localhost>|Sluice <sluice@localhost>|N" {
				t.Errorf("record commit identity and signature: %q", got)
			}
			if got := f.git("rev-parse", RestorePrefix+id+"/end^"); got != meta {
				t.Errorf("the end state's parent is %s, want the record %s", got, meta)
			}
			snap := f.git("rev-parse", RestorePrefix+id+"/worktree/0")
			// The files tree holds the untracked file too, so git stash
			// show lists it with the staged and unstaged changes.
			if got := f.git("stash", "show", "--name-only", snap); got != "notes.txt\nsrc/a.txt\nsrc/b.txt" {
				t.Errorf("git stash show of the snapshot: %q", got)
			}
			if got := f.git("show", snap+":notes.txt"); got != "untracked" {
				t.Errorf("the snapshot's files lack the untracked file: %q", got)
			}
			if got := f.git("show", snap+"^2:src/a.txt"); got != "staged" {
				t.Errorf("the snapshot's index commit has src/a.txt as %q", got)
			}

			if name == "shared" {
				// Every directory git made for the restore point's
				// objects can be written by the group.
				dir := filepath.Join(f.repo.Dir, ".git", "objects", meta[:2])
				if st, err := os.Stat(dir); err != nil || st.Mode().Perm()&0o070 != 0o070 {
					t.Errorf("%s: %v %v, want group read, write and search", dir, st.Mode(), err)
				}
			}
			if _, err := f.e.Restore(testCtx(t), f.repo.Dir, id, false); err != nil {
				t.Fatalf("restore: %v", err)
			}
			if after := repoState(t, f.repo.Dir); after != before {
				t.Errorf("the restore did not bring the worktree back:\n%s", diffState(before, after))
			}
		})
	}
}
