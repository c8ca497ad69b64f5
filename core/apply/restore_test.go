package apply

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/proposal"
)

func TestRestore_RefMovedAfter_RefusedUnlessForced(t *testing.T) {
	f := newFixture(t)
	f.diverge()
	before, mainBefore := repoState(t, f.repo.Dir), f.git("rev-parse", "main")
	done := f.mustComplete(f.propose(&proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit}))
	f.repo.WriteCommit("later.txt", "later\n", "the person's work after the merge")
	later := repoState(t, f.repo.Dir)

	_, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false)
	if !errors.Is(err, ErrRestoreConflict) {
		t.Fatalf("err %v: want restore_conflict", err)
	}
	conflicts, _ := dataOf(err).([]Conflict)
	if len(conflicts) == 0 || conflicts[0].Kind != "ref" || conflicts[0].Ref != "refs/heads/main" {
		t.Errorf("conflicts %+v: want main named", conflicts)
	}
	if now := repoState(t, f.repo.Dir); now != later {
		t.Errorf("a refused restore changed the repository:\n%s", diffState(later, now))
	}

	res, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, true)
	if err != nil {
		t.Fatalf("forced restore: %v", err)
	}
	if !res.Forced || len(res.Conflicts) == 0 || len(res.Refs) != 1 || res.Refs[0].Ref != "refs/heads/main" || res.Refs[0].To != mainBefore {
		t.Errorf("result %+v", res)
	}
	// The restore point holds the paths the merge changed: those, main
	// and HEAD come back as they were before the merge. The person's
	// later.txt, which the merge never touched, is not overwritten: it
	// stays in the index and on disk, now a change on top of main.
	if got := f.git("diff", "--cached", "--name-status"); got != "A\tlater.txt" {
		t.Errorf("staged after the forced restore: %q, want the person's later.txt alone", got)
	}
	if got := f.read("later.txt"); got != "later\n" {
		t.Errorf("later.txt after the forced restore: %q", got)
	}
	f.git("rm", "-q", "--cached", "later.txt")
	if err := os.Remove(filepath.Join(f.repo.Dir, "later.txt")); err != nil {
		t.Fatal(err)
	}
	if now := repoState(t, f.repo.Dir); now != before {
		t.Errorf("forced restore did not bring back the state before the merge:\n%s", diffState(before, now))
	}
	f.repo.Write("later.txt", "later\n")
	f.git("add", "later.txt")

	// The restore took its own restore point: undoing it brings back the
	// person's later work.
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, res.UndoPoint, false); err != nil {
		t.Fatalf("undo the restore: %v", err)
	}
	if now := repoState(t, f.repo.Dir); now != later {
		t.Errorf("undoing the restore did not bring back the later work:\n%s", diffState(later, now))
	}
}

func TestRestore_FilesChangedAfter_RefusedUnlessForced(t *testing.T) {
	f := newFixture(t)
	before := repoState(t, f.repo.Dir)
	done := f.mustComplete(f.propose(&proposal.PatchArgs{Patch: addNewPatch, Target: proposal.PatchWorktree}))
	f.repo.Write("src/new.txt", "the person edited it\n")
	f.repo.Write("notes.txt", "new untracked notes\n")
	later := repoState(t, f.repo.Dir)

	_, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false)
	conflicts, _ := dataOf(err).([]Conflict)
	if !errors.Is(err, ErrRestoreConflict) || !slices.ContainsFunc(conflicts, func(c Conflict) bool { return c.Kind == "files" }) {
		t.Fatalf("err %v conflicts %+v: want a files conflict", err, conflicts)
	}
	if now := repoState(t, f.repo.Dir); now != later {
		t.Errorf("a refused restore changed the repository:\n%s", diffState(later, now))
	}
	res, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, true)
	if err != nil {
		t.Fatalf("forced restore: %v", err)
	}
	// The person's edit of the patched file is overwritten (they
	// confirmed); their notes.txt, which the patch never touched, stays.
	if got := f.read("notes.txt"); got != "new untracked notes\n" {
		t.Errorf("notes.txt after the forced restore: %q", got)
	}
	if err := os.Remove(filepath.Join(f.repo.Dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	if now := repoState(t, f.repo.Dir); now != before {
		t.Errorf("forced restore:\n%s", diffState(before, now))
	}
	f.repo.Write("notes.txt", "new untracked notes\n")
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, res.UndoPoint, false); err != nil {
		t.Fatalf("undo the restore: %v", err)
	}
	if now := repoState(t, f.repo.Dir); now != later {
		t.Errorf("undoing the restore lost the person's edits:\n%s", diffState(later, now))
	}
}

func TestRestore_UnknownPoint(t *testing.T) {
	f := newFixture(t)
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, "no-such-point", false); errcode.Of(err) != errcode.RestorePointNotFound {
		t.Fatalf("err %v: want restore_point_not_found", err)
	}
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, "../../etc", false); errcode.Of(err) != errcode.InvalidArgument {
		t.Fatalf("err %v: want invalid_argument", err)
	}
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	if _, err := f.e.Restore(testCtx(t), outside, "x", false); errcode.Of(err) != errcode.PathOutsideRoots {
		t.Fatalf("err %v: want path_outside_roots", err)
	}
}

func TestRestorePoints_ListAndDetails(t *testing.T) {
	f := newFixture(t)
	first := f.mustComplete(f.propose(&proposal.BranchArgs{Name: "one", StartPoint: "main"}))
	f.repo.Write("src/a.txt", "edited\n")
	// A pre-commit hook could change files, so the commit's restore point
	// records index and files.
	f.hook("pre-commit", "exit 0")
	second := f.mustComplete(f.propose(&proposal.CommitArgs{Message: "edit a", StageAll: true}))
	list, err := f.e.ListRestorePoints(testCtx(t), f.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != second.Proposal.ID || list[1].ID != first.Proposal.ID {
		t.Fatalf("list %+v: want the commit's then the branch's, newest first", list)
	}
	rp := list[0]
	if rp.Kind != KindProposal || rp.Op != "commit" || rp.Digest != second.Proposal.Digest || rp.End == nil || rp.End.Outcome != EndCompleted {
		t.Errorf("restore point %+v", rp)
	}
	if len(rp.Worktrees) != 1 || !rp.Worktrees[0].Files || rp.Worktrees[0].Clean || rp.Worktrees[0].Snapshot == "" {
		t.Errorf("worktree snapshot %+v", rp.Worktrees)
	}
	// The snapshot is shaped like a stash entry: parents HEAD and the
	// index commit, and git stash can show it.
	snap := rp.Worktrees[0].Snapshot
	if parents := strings.Fields(f.git("rev-list", "--parents", "-n1", snap)); len(parents) != 3 || parents[1] != rp.Worktrees[0].HeadSHA {
		t.Errorf("snapshot parents %v", parents)
	}
	if got := f.git("stash", "show", "--name-only", snap); got != "src/a.txt" {
		t.Errorf("git stash show of the snapshot: %q", got)
	}

	before := gitxtest.Snapshot(t, f.root)
	d, err := f.e.RestorePointDetails(testCtx(t), f.repo.Dir, rp.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Conflicts) != 0 || len(d.Current) != 1 || d.Current[0].SHA != f.git("rev-parse", "main") {
		t.Errorf("details %+v", d)
	}
	requireSame(t, before, gitxtest.Snapshot(t, f.root))
	f.repo.Write("src/b.txt", "later\n")
	before = gitxtest.Snapshot(t, f.root)
	if d, err = f.e.RestorePointDetails(testCtx(t), f.repo.Dir, rp.ID); err != nil || len(d.Conflicts) != 1 || d.Conflicts[0].Kind != "files" {
		t.Fatalf("details after an edit: %+v, %v", d, err)
	}
	requireSame(t, before, gitxtest.Snapshot(t, f.root))
}

// Without a hook of the person's, a commit changes only the branch and
// the index entries at its paths, and that is what its restore point
// records (a scope of the index) and restores; later edits to files, and
// later work staged at other paths, are not the restore's business.
func TestRestore_CommitWithoutHooks_RecordsIndexOnly(t *testing.T) {
	f := newFixture(t)
	f.repo.Write("src/a.txt", "staged\n")
	f.git("add", "src/a.txt")
	f.repo.Write("src/a.txt", "staged, then edited\n")
	f.repo.Write("src/new.txt", "new\n")
	indexBefore := f.git("write-tree")
	headBefore := f.git("rev-parse", "HEAD")
	// entryAt is the index entry at src/a.txt as ls-tree shows it.
	entryAt := func() string {
		mode, rest, _ := strings.Cut(f.git("ls-files", "-s", "--", "src/a.txt"), " ")
		sha, _, _ := strings.Cut(rest, " ")
		return mode + " blob " + sha + "\tsrc/a.txt"
	}
	stagedBefore := entryAt()
	done := f.mustComplete(f.propose(&proposal.CommitArgs{Message: "commit a", Paths: []string{"src/a.txt"}}))

	list, err := f.e.ListRestorePoints(testCtx(t), f.repo.Dir)
	if err != nil || len(list) != 1 {
		t.Fatalf("restore points %+v, %v", list, err)
	}
	w := list[0].Worktrees
	if len(w) != 1 || w[0].Files || w[0].Tree != "" || !slices.Equal(w[0].Paths, []string{"src/a.txt"}) || w[0].HeadSHA != headBefore {
		t.Fatalf("worktree record %+v: want the index at src/a.txt and HEAD %s only", w, headBefore)
	}
	if got := f.git("ls-tree", "-r", "--full-tree", w[0].Index); got != stagedBefore {
		t.Errorf("the recorded index entries are %q, want %q", got, stagedBefore)
	}
	// The snapshot is a commit of those entries on top of HEAD.
	if got := f.git("rev-parse", w[0].Snapshot+"^{tree}", w[0].Snapshot+"^"); got != w[0].Index+"\n"+headBefore {
		t.Errorf("snapshot %s: tree and parent %q", w[0].Snapshot, got)
	}
	if end := list[0].End; end == nil || len(end.Worktrees) != 1 || end.Worktrees[0].Files ||
		f.git("ls-tree", "-r", "--full-tree", end.Worktrees[0].Index) != entryAt() {
		t.Errorf("end state %+v", list[0].End)
	}

	// Files edited after the commit do not stand in the restore's way,
	// and the restore leaves them alone.
	f.repo.Write("src/new.txt", "edited after the commit\n")
	res, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false)
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if res.Forced || len(res.Conflicts) != 0 {
		t.Errorf("restore result %+v", res)
	}
	if got := f.git("rev-parse", "HEAD"); got != headBefore {
		t.Errorf("HEAD %s after the restore, want %s", got, headBefore)
	}
	if got := f.git("write-tree"); got != indexBefore {
		t.Errorf("index %s after the restore, want %s", got, indexBefore)
	}
	if got := f.repo.Read("src/a.txt"); got != "staged, then edited\n" {
		t.Errorf("src/a.txt is %q after the restore", got)
	}
	if got := f.repo.Read("src/new.txt"); got != "edited after the commit\n" {
		t.Errorf("src/new.txt is %q after the restore", got)
	}
	if st := f.git("status", "--porcelain"); st != "MM src/a.txt\n?? src/new.txt" {
		t.Errorf("status after the restore:\n%s", st)
	}

	// Work staged at another path after the commit is not a conflict;
	// a change to the index at the commit's path is.
	again := f.mustComplete(f.propose(&proposal.CommitArgs{Message: "commit a again", Paths: []string{"src/a.txt"}}))
	f.git("add", "src/new.txt")
	d, err := f.e.RestorePointDetails(testCtx(t), f.repo.Dir, again.Outcome.RestorePoint)
	if err != nil || len(d.Conflicts) != 0 {
		t.Fatalf("details after staging elsewhere: %+v, %v", d, err)
	}
	f.repo.Write("src/a.txt", "staged after the commit\n")
	f.git("add", "src/a.txt")
	d, err = f.e.RestorePointDetails(testCtx(t), f.repo.Dir, again.Outcome.RestorePoint)
	if err != nil || len(d.Conflicts) != 1 || d.Conflicts[0].Kind != "index" {
		t.Fatalf("details after staging at the commit's path: %+v, %v", d, err)
	}
}

func TestBranchDelete_KeepsUnsafeBranches_AcrossRepos(t *testing.T) {
	f := newFixture(t)
	f.git("branch", "merged")
	f.git("checkout", "-q", "-b", "unmerged")
	f.repo.WriteCommit("u.txt", "u\n", "unmerged work")
	f.git("checkout", "-q", "main")
	f.git("branch", "busy")
	f.git("worktree", "add", "-q", filepath.Join(f.root, "busy-wt"), "busy")

	other := gitxtest.InitAt(t, filepath.Join(f.root, "other"))
	other.WriteCommit("o.txt", "o\n", "other base")
	bare := filepath.Join(f.root, "other-remote.git")
	gitxtest.Git(t, f.root, "init", "-q", "--bare", bare)
	other.Git("remote", "add", "origin", "file://"+bare)
	other.Git("checkout", "-q", "-b", "pushed")
	other.WriteCommit("p.txt", "p\n", "pushed work")
	other.Git("push", "-q", "-u", "origin", "pushed")
	other.Git("checkout", "-q", "main")
	other.Git("branch", "also-merged")

	rec := f.propose(&proposal.BranchDeleteArgs{Branches: []string{"merged", "unmerged", "busy"},
		OtherRepos: []proposal.RepoBranches{{Repo: other.Dir, Branches: []string{"pushed", "also-merged"}}}})
	done := f.mustComplete(rec)
	msg := done.Outcome.Message
	for _, want := range []string{"deleted merged, " + other.Dir + ":also-merged, " + other.Dir + ":pushed", "unmerged (its commits are not in HEAD and it has no upstream)", "busy (it is checked out in "} {
		if !strings.Contains(msg, want) {
			t.Errorf("outcome %q lacks %q", msg, want)
		}
	}
	for _, gone := range []string{"refs/heads/merged"} {
		if _, err := gitxtest.GitErr(t, f.repo.Dir, "rev-parse", "--verify", "-q", gone); err == nil {
			t.Errorf("%s still exists", gone)
		}
	}
	for _, kept := range []string{"unmerged", "busy"} {
		f.git("rev-parse", "--verify", "-q", "refs/heads/"+kept)
	}
	if refs := other.Git("for-each-ref", "--format=%(refname)", "refs/heads/"); refs != "refs/heads/main" {
		t.Errorf("other repository's branches: %q", refs)
	}
	// Each repository has its own restore point under the proposal's id,
	// and each restores its branches and their configuration.
	if _, err := f.e.Restore(testCtx(t), other.Dir, rec.Proposal.ID, false); err != nil {
		t.Fatalf("restore in the other repository: %v", err)
	}
	if other.Git("config", "branch.pushed.remote") != "origin" || other.Git("rev-parse", "pushed") == "" {
		t.Errorf("pushed was not restored with its upstream")
	}
}

func TestRevalidate_MovedBase_RecoverFails(t *testing.T) {
	f := newFixture(t)
	stale := f.propose(&proposal.BranchArgs{Name: "topic", StartPoint: "main"})
	moveMain(f)
	f.git("tag", "keep", "HEAD")
	if err := f.e.Revalidate(stale); !errors.Is(err, ErrStaleBase) {
		t.Fatalf("Revalidate: %v, want stale_base", err)
	}
	ok := f.propose(&proposal.BranchArgs{Name: "third", StartPoint: "keep"})
	rec, err := f.j.Recover(f.e.Revalidate)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rec.Invalidated, stale.Proposal.ID) || !slices.Contains(rec.Revalidated, ok.Proposal.ID) {
		t.Fatalf("recovery %+v", rec)
	}
	got, _ := f.j.Get(stale.Proposal.ID)
	if got.State != proposal.Failed || outcomeCode(got) != errcode.StaleBase {
		t.Errorf("stale proposal after recovery: %s %s", got.State, outcomeCode(got))
	}
}

// A branch the restore would move is checked out now in a worktree the
// restore point never saw: the restore refuses, even when forced, rather
// than pull the branch from under that checkout.
func TestRestore_BranchNowCheckedOutElsewhere_Refused(t *testing.T) {
	f := newFixture(t)
	f.diverge()
	f.git("branch", "release", "main")
	done := f.mustComplete(f.propose(&proposal.MergeArgs{Source: "feature", Target: "release", Strategy: proposal.MergeCommit}))
	f.git("worktree", "add", "-q", filepath.Join(f.root, "later-wt"), "release")
	later := repoState(t, f.repo.Dir)
	for _, force := range []bool{false, true} {
		if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, force); !errors.Is(err, ErrRestoreConflict) {
			t.Fatalf("force=%v: err %v, want restore_conflict", force, err)
		}
	}
	if now := repoState(t, f.repo.Dir); now != later {
		t.Errorf("a refused restore changed the repository:\n%s", diffState(later, now))
	}
}

// A file rewritten with the same size within the index's last second
// looks unchanged by its stat data; only git's racy-entry check, which
// compares the file's time with the index's, finds the change. The
// snapshot works on a copy of the index, which must keep the index's
// time for that check to hold.
func TestRestorePoint_RacilyCleanFileIsRecorded(t *testing.T) {
	f := newFixture(t)
	f.git("config", "core.trustctime", "false")
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	path := filepath.Join(f.repo.Dir, "src", "b.txt")
	if err := os.Chtimes(path, past, past); err != nil {
		t.Fatal(err)
	}
	f.git("add", "src/b.txt")
	if err := os.Chtimes(filepath.Join(f.repo.Dir, ".git", "index"), past, past); err != nil {
		t.Fatal(err)
	}
	f.repo.Write("src/b.txt", "B1\nB2\nB3\n") // the same size as before
	if err := os.Chtimes(path, past, past); err != nil {
		t.Fatal(err)
	}
	// Without optional locks status does not write the index (which
	// would mark the entry as changed for good).
	if st := f.git("--no-optional-locks", "status", "--porcelain"); st != "M src/b.txt" {
		t.Fatalf("status %q: the fixture should see the change", st)
	}
	// A hard reset: the restore point records the whole working tree (a
	// patch records its own files alone).
	done := f.mustComplete(f.propose(&proposal.ResetArgs{Mode: proposal.ResetHard, Target: "HEAD"}))
	snap := f.git("rev-parse", RestorePrefix+done.Outcome.RestorePoint+"/worktree/0")
	if got := f.git("show", snap+":src/b.txt"); got != "B1\nB2\nB3" {
		t.Errorf("the snapshot holds src/b.txt as %q, not the rewritten file", got)
	}
}

// In a plan, the end state is read after the last step, not taken from
// what an earlier step knew: a merge that moves the checkout and then a
// reset that moves the branch elsewhere end where the reset left HEAD.
func TestRestorePoint_PlanEndStateAfterLastStep(t *testing.T) {
	f := newFixture(t)
	f.diverge()
	want := f.git("rev-parse", "main~1")
	done := f.mustComplete(f.propose(&proposal.PlanArgs{Steps: []proposal.PlanStep{
		{Op: proposal.OpMerge, Args: &proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit}},
		{Op: proposal.OpReset, Args: &proposal.ResetArgs{Mode: proposal.ResetSoft, Target: "main~1", Branch: "main"}},
	}}))
	if got := f.git("rev-parse", "HEAD"); got != want {
		t.Fatalf("HEAD %s after the plan, want %s", got, want)
	}
	d, err := f.e.RestorePointDetails(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint)
	if err != nil || len(d.Conflicts) != 0 {
		t.Fatalf("details right after the plan: %+v, %v", d, err)
	}
}

// Restore points are named by what they keep: the operation and its
// agent, the restore they come before; two alike never share a label.
func TestRestorePoints_LabelsNameOperationAndAgent_Unique(t *testing.T) {
	f := newFixture(t)
	f.repo.Write("src/a.txt", "one\n")
	first := f.mustComplete(f.propose(&proposal.CommitArgs{Message: "Add line\n\nthe body is not part of the label", Paths: []string{"src/a.txt"}}))
	f.repo.Write("src/a.txt", "two\n")
	second := f.mustComplete(f.propose(&proposal.CommitArgs{Message: "Add line", Paths: []string{"src/a.txt"}}))
	f.mustComplete(f.propose(&proposal.BranchArgs{Name: "topic", StartPoint: "main"}))

	labels := func() map[string]string {
		list, err := f.e.ListRestorePoints(testCtx(t), f.repo.Dir)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		seen := map[string]bool{}
		for _, rp := range list {
			if seen[rp.Label] {
				t.Errorf("two restore points labelled %q", rp.Label)
			}
			seen[rp.Label] = true
			out[rp.ID] = rp.Label
		}
		return out
	}
	got := labels()
	want := "before commit 'Add line' by test-agent"
	if got[first.Proposal.ID] != want || got[second.Proposal.ID] != want+" (2)" {
		t.Fatalf("labels %v: want %q and %q", got, want, want+" (2)")
	}
	res, err := f.e.Restore(testCtx(t), f.repo.Dir, second.Outcome.RestorePoint, true)
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	got = labels()
	if l := got[res.UndoPoint]; l != "before restore of “"+want+" (2)”" {
		t.Fatalf("the restore's own point is labelled %q", l)
	}
	if len(got) != 4 {
		t.Fatalf("labels %v", got)
	}
}
