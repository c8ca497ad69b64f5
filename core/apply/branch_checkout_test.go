package apply

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// A branch proposal with checkout creates the branch at its start point,
// moves the working tree's files there and points HEAD at it; the restore
// point puts HEAD, files and refs back.
func TestBranch_Checkout_SwitchesAndRestores(t *testing.T) {
	f := newFixture(t)
	f.diverge()
	before := repoState(t, f.repo.Dir)
	done := f.mustComplete(f.propose(&proposal.BranchArgs{Name: "topic", StartPoint: "feature", Checkout: true}))
	if got := f.git("symbolic-ref", "HEAD"); got != "refs/heads/topic" {
		t.Fatalf("HEAD is %s, want refs/heads/topic", got)
	}
	if f.git("rev-parse", "topic") != f.git("rev-parse", "feature") {
		t.Fatal("topic is not at feature")
	}
	if b, err := os.ReadFile(filepath.Join(f.repo.Dir, "feature.txt")); err != nil || string(b) != "feature\n" {
		t.Fatalf("the working tree did not follow: %q %v", b, err)
	}
	if st := f.git("status", "--porcelain"); st != "" {
		t.Fatalf("working tree after the switch: %q", st)
	}
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if got := f.git("symbolic-ref", "HEAD"); got != "refs/heads/main" {
		t.Errorf("HEAD after restore is %s", got)
	}
	if _, err := os.Stat(filepath.Join(f.repo.Dir, "feature.txt")); !os.IsNotExist(err) {
		t.Errorf("feature.txt still there after restore: %v", err)
	}
	if after := repoState(t, f.repo.Dir); after != before {
		t.Errorf("restore did not bring the repository back:\nbefore %s\nafter  %s", before, after)
	}
}

// With uncommitted changes the switch is refused before anything moves.
func TestBranch_Checkout_DirtyRefused(t *testing.T) {
	f := newFixture(t)
	f.diverge()
	f.repo.Write("README.md", "# changed\n")
	before := repoState(t, f.repo.Dir)
	out, err := f.execute(f.propose(&proposal.BranchArgs{Name: "topic", StartPoint: "feature", Checkout: true}))
	if errcode.Of(err) != errcode.DirtyWorktree || out.State != proposal.Failed {
		t.Fatalf("state %s err %v: want failed dirty_worktree", out.State, err)
	}
	if after := repoState(t, f.repo.Dir); after != before {
		t.Fatalf("the repository changed:\nbefore %s\nafter  %s", before, after)
	}
}
