package apply

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

func TestMerge_Conflict_FailsWithFilesCheckoutUntouched(t *testing.T) {
	f := newFixture(t)
	f.git("checkout", "-q", "-b", "feature")
	f.repo.WriteCommit("src/a.txt", "feature\n", "feature changes a")
	f.repo.WriteCommit("src/b.txt", "feature\n", "feature changes b")
	f.git("checkout", "-q", "main")
	f.repo.WriteCommit("src/a.txt", "main\n", "main changes a")
	f.repo.WriteCommit("src/b.txt", "main\n", "main changes b")
	f.repo.Write("untracked.txt", "mine\n")
	// The conflict is known when the proposal arrives: it never becomes a
	// card, and the agent is told which files conflict.
	f.refuseAtSeal(&proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit},
		ErrMergeConflict, "src/a.txt", "src/b.txt")
	if op := f.git("status", "--porcelain", "--untracked-files=no"); op != "" {
		t.Errorf("status %q", op)
	}
}

func TestMerge_DirtyTarget_RefusedNothingTouched(t *testing.T) {
	f := newFixture(t)
	f.diverge()
	f.repo.Write("src/b.txt", "uncommitted work\n")
	rec := f.propose(&proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit})
	before := gitxtest.Snapshot(t, f.root)
	out, err := f.execute(rec)
	if !errors.Is(err, ErrDirtyWorktree) || outcomeCode(out) != errcode.DirtyWorktree {
		t.Fatalf("code %s err %v: want dirty_worktree", outcomeCode(out), err)
	}
	data, _ := dataOf(err).(map[string]any)
	if files, _ := data["files"].([]string); !slices.Equal(files, []string{"src/b.txt"}) {
		t.Errorf("data %#v: want the dirty file", data)
	}
	requireSame(t, before, gitxtest.Snapshot(t, f.root))
}

// An untracked file where the merge brings a tracked one: the checkout
// cannot follow, so the branch does not move either.
func TestMerge_UntrackedInTheWay_RefusedNothingMoved(t *testing.T) {
	f := newFixture(t)
	f.diverge()
	f.repo.Write("feature.txt", "the person's own file\n")
	rec := f.propose(&proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit})
	before := repoState(t, f.repo.Dir)
	_, err := f.execute(rec)
	if !errors.Is(err, ErrDirtyWorktree) {
		t.Fatalf("err %v: want dirty_worktree", err)
	}
	if after := repoState(t, f.repo.Dir); after != before {
		t.Errorf("the repository changed:\n%s", diffState(before, after))
	}
}

// An ignored file (a .env, say) where the merge brings a tracked one: git
// read-tree would overwrite it, and no restore point holds ignored files,
// so the merge is refused and nothing moves.
func TestMerge_IgnoredInTheWay_RefusedNothingMoved(t *testing.T) {
	f := newFixture(t)
	f.repo.WriteCommit(".gitignore", ".env\n", "ignore .env")
	f.git("checkout", "-q", "-b", "feature")
	f.repo.Write(".gitignore", "")
	f.repo.Write(".env", "TOKEN=from-the-branch\n")
	f.git("add", "-f", ".gitignore", ".env")
	f.repo.Commit("track .env")
	f.git("checkout", "-q", "main")
	f.repo.Write(".env", "TOKEN=the-person's-own\n")
	if st := f.git("status", "--porcelain"); st != "" {
		t.Fatalf("status %q: want a checkout with no change but the ignored file", st)
	}
	out := f.mustRefuseUnchanged(f.propose(&proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit}),
		ErrDirtyWorktree, ".env")
	if out.Outcome.RestorePoint != "" || f.git("for-each-ref", RestorePrefix) != "" {
		t.Errorf("nothing changed, yet restore point %q was kept", out.Outcome.RestorePoint)
	}
	if got := f.repo.Read(".env"); got != "TOKEN=the-person's-own\n" {
		t.Errorf(".env is %q", got)
	}
}

// A merge into a checkout with no change at all records its end state
// as the paths it changed, exactly as the HEAD it left has them; a later
// edit of one of those paths shows as a change made after the operation,
// and an edit elsewhere, which a restore would not touch, does not. Both
// a merge commit and a fast-forward.
func TestMerge_PristineCheckout_EndStateClean(t *testing.T) {
	for name, setup := range map[string]func(*fixture){
		"merge commit": func(f *fixture) { f.diverge() },
		"fast-forward": func(f *fixture) {
			f.git("checkout", "-q", "-b", "feature")
			f.repo.WriteCommit("feature.txt", "feature\n", "feat: add feature.txt")
			f.git("checkout", "-q", "main")
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			setup(f)
			done := f.mustComplete(f.propose(&proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit}))
			if st := f.git("status", "--porcelain"); st != "" {
				t.Fatalf("status after the merge: %q", st)
			}
			if ff := f.git("rev-parse", "HEAD") == f.git("rev-parse", "feature"); ff != (name == "fast-forward") {
				t.Fatalf("fast-forward %v: the fixture is not a %s", ff, name)
			}
			list, err := f.e.ListRestorePoints(testCtx(t), f.repo.Dir)
			if err != nil || len(list) != 1 || list[0].End == nil || len(list[0].End.Worktrees) != 1 {
				t.Fatalf("restore points %+v, %v", list, err)
			}
			w := list[0].End.Worktrees[0]
			changed := strings.Split(f.git("diff", "--name-only", list[0].Worktrees[0].HeadSHA, "HEAD"), "\n")
			atHead := f.git(append([]string{"ls-tree", "-r", "HEAD", "--"}, changed...)...)
			if !slices.Equal(w.Paths, changed) || f.git("ls-tree", "-r", w.Index) != atHead || f.git("ls-tree", "-r", w.Tree) != atHead ||
				w.HeadSHA != f.git("rev-parse", "HEAD") || w.Head != "refs/heads/main" {
				t.Errorf("end state %+v: want the paths %q on main as HEAD has them", w, changed)
			}
			if d, err := f.e.RestorePointDetails(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint); err != nil || len(d.Conflicts) != 0 {
				t.Fatalf("details right after: %+v, %v", d, err)
			}
			f.repo.Write("README.md", "edited after the merge, where the merge changed nothing\n")
			if d, err := f.e.RestorePointDetails(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint); err != nil || len(d.Conflicts) != 0 {
				t.Fatalf("details after an edit outside the merge: %+v, %v", d, err)
			}
			f.repo.Write("feature.txt", "edited after the merge\n")
			if d, err := f.e.RestorePointDetails(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint); err != nil || len(d.Conflicts) != 1 || d.Conflicts[0].Kind != "files" {
				t.Fatalf("details after an edit: %+v, %v", d, err)
			}
		})
	}
}

// TestExecute_Race_TenApprovedAtOnce: ten merges against the same base are
// approved and executed at once; exactly one applies and the other nine
// fail with stale_base.
func TestExecute_Race_TenApprovedAtOnce(t *testing.T) {
	f := newFixture(t)
	var recs []journal.Record
	for i := range 10 {
		b := fmt.Sprintf("agent-%d", i)
		f.git("checkout", "-q", "-b", b, "main")
		f.repo.WriteCommit(fmt.Sprintf("agent/%d.txt", i), "work\n", "work of "+b)
	}
	f.git("checkout", "-q", "main")
	for i := range 10 {
		recs = append(recs, f.propose(&proposal.MergeArgs{Source: fmt.Sprintf("agent-%d", i), Target: "main", Strategy: proposal.MergeCommit}))
	}
	var wg sync.WaitGroup
	results := make([]journal.Record, len(recs))
	errs := make([]error, len(recs))
	for i, rec := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = f.e.Execute(testCtx(t), rec.Proposal.ID)
		}()
	}
	wg.Wait()
	completed, stale := 0, 0
	for i, out := range results {
		switch {
		case out.State == proposal.Completed && errs[i] == nil:
			completed++
		case out.State == proposal.Failed && errors.Is(errs[i], ErrStaleBase):
			stale++
		default:
			t.Errorf("proposal %d: state %s err %v", i, out.State, errs[i])
		}
	}
	if completed != 1 || stale != 9 {
		t.Fatalf("%d completed, %d stale: want exactly one applied", completed, stale)
	}
	if files := splitLines(f.git("ls-tree", "-r", "--name-only", "main", "agent/")); len(files) != 1 {
		t.Errorf("main holds the work of %d agents: %v", len(files), files)
	}
}

// TestExecute_CASLost_StaleBase: the branch moves after the pins were
// checked and the merge computed, just before the ref update. The
// compare-and-swap refuses, nothing moves, and the unused restore point
// is dropped.
func TestExecute_CASLost_StaleBase(t *testing.T) {
	f := newFixture(t)
	f.diverge()
	f.git("branch", "release", "main")
	rec := f.propose(&proposal.MergeArgs{Source: "feature", Target: "release", Strategy: proposal.MergeCommit})
	var moved string
	f.e.beforeStep = func(step string) {
		if step == "before-ref-update" {
			f.git("commit", "-q", "--allow-empty", "-m", "meanwhile")
			f.git("branch", "-f", "release", "main")
			moved = f.git("rev-parse", "release")
		}
	}
	out, err := f.execute(rec)
	if !errors.Is(err, ErrStaleBase) || outcomeCode(out) != errcode.StaleBase {
		t.Fatalf("code %s err %v: want stale_base", outcomeCode(out), err)
	}
	if data, _ := dataOf(err).(map[string]string); data["refs/heads/release"] != moved {
		t.Errorf("stale_base data %#v, want release at %s", data, moved)
	}
	if got := f.git("rev-parse", "release"); got != moved {
		t.Errorf("release moved to %s", got)
	}
	if refs := f.git("for-each-ref", RestorePrefix); refs != "" || out.Outcome.RestorePoint != "" {
		t.Errorf("the unused restore point was kept: %q", refs)
	}
}

func TestMerge_CustomMergeDriver_Refused(t *testing.T) {
	f := newFixture(t)
	f.repo.Write(".gitattributes", "*.txt merge=mine\n")
	f.repo.Commit("attributes")
	f.diverge()
	f.git("branch", "release", "main")
	f.git("config", "merge.mine.driver", "touch "+f.root+"/driver-ran")
	f.refuseAtSeal(&proposal.MergeArgs{Source: "feature", Target: "release", Strategy: proposal.MergeCommit},
		&errcode.Error{Code: errcode.Unsupported})
	if _, err := os.Stat(filepath.Join(f.root, "driver-ran")); !os.IsNotExist(err) {
		t.Errorf("the merge driver ran: %v", err)
	}
}

func TestRebase_Conflict_Fails(t *testing.T) {
	f := newFixture(t)
	f.git("checkout", "-q", "-b", "feature")
	f.repo.WriteCommit("src/a.txt", "feature\n", "feature changes a")
	f.git("checkout", "-q", "main")
	f.repo.WriteCommit("src/a.txt", "main\n", "main changes a")
	// The rebase is computed when the proposal arrives, away from the
	// checkout: the conflict is known before any card.
	f.refuseAtSeal(&proposal.RebaseArgs{Branch: "feature", Onto: "main"}, ErrMergeConflict, "src/a.txt")
	if wts := f.git("worktree", "list"); len(splitLines(wts)) != 1 {
		t.Errorf("the temporary worktree was left behind: %s", wts)
	}
}

func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func TestExecute_NotApproved_Refused(t *testing.T) {
	f := newFixture(t)
	rec := f.propose(&proposal.BranchArgs{Name: "topic", StartPoint: "main"})
	f.mustComplete(rec)
	if _, err := f.execute(rec); !errors.Is(err, ErrNotApproved) {
		t.Fatalf("second execution: err %v, want not_approved", err)
	}
}

func TestExecute_WorktreeFingerprint_Refused(t *testing.T) {
	f := newFixture(t)
	rec := f.propose(&proposal.BranchArgs{Name: "topic", StartPoint: "main"}, func(p *proposal.Proposal) {
		p.Pinned.WorktreeFingerprint = "fp:123"
	})
	out, err := f.execute(rec)
	if errcode.Of(err) != errcode.Unsupported || out.State != proposal.Failed {
		t.Fatalf("state %s err %v: want failed unsupported", out.State, err)
	}
}

// The target branch is checked out in a linked worktree: that checkout
// follows the merge, and the person's main checkout is untouched.
func TestMerge_TargetInLinkedWorktree_CheckoutFollows(t *testing.T) {
	f := newFixture(t)
	f.diverge()
	f.git("branch", "release", "main")
	wt := filepath.Join(f.root, "release-wt")
	f.git("worktree", "add", "-q", wt, "release")
	mainBefore := repoState(t, f.repo.Dir)
	rec := f.propose(&proposal.MergeArgs{Source: "feature", Target: "release", Strategy: proposal.MergeCommit})
	done := f.mustComplete(rec)
	if st := f.gitIn(wt, "status", "--porcelain"); st != "" || f.gitIn(wt, "rev-parse", "HEAD") != f.git("rev-parse", "release") {
		t.Errorf("the linked checkout did not follow: %q", st)
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "feature.txt")); string(b) != "feature\n" {
		t.Errorf("feature.txt in the linked worktree: %q", b)
	}
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false); err != nil {
		t.Fatal(err)
	}
	if after := repoState(t, f.repo.Dir); after != mainBefore {
		t.Errorf("restore:\n%s", diffState(mainBefore, after))
	}
	if st := f.gitIn(wt, "status", "--porcelain"); st != "" {
		t.Errorf("the linked checkout is out of step after the restore: %q", st)
	}
}

// A checkout outside the allowed roots is never written to: the merge is
// refused and nothing changes.
func TestMerge_TargetCheckedOutOutsideRoots_Refused(t *testing.T) {
	f := newFixture(t)
	f.diverge()
	f.git("branch", "release", "main")
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	f.git("worktree", "add", "-q", filepath.Join(outside, "wt"), "release")
	rec := f.propose(&proposal.MergeArgs{Source: "feature", Target: "release", Strategy: proposal.MergeCommit})
	before := gitxtest.Snapshot(t, f.root)
	if _, err := f.execute(rec); errcode.Of(err) != errcode.BranchCheckedOut {
		t.Fatalf("err %v: want branch_checked_out", err)
	}
	requireSame(t, before, gitxtest.Snapshot(t, f.root))
}
