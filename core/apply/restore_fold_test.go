package apply

import (
	"context"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/restorepoint"
)

// executedRecording completes n commits of files of their own, as
// executedAt does, and returns their restore point ids with HEAD and
// `git status` as they were before each ran.
func (f *fixture) executedRecording(at time.Time, from, n int) (ids, heads, statuses []string) {
	f.t.Helper()
	f.e.now = func() time.Time { return at }
	defer func() { f.e.now = time.Now }()
	for i := from; i < from+n; i++ {
		rec := f.distinctCommit(i)
		heads = append(heads, f.git("rev-parse", "HEAD"))
		statuses = append(statuses, f.git("status", "--porcelain", "--untracked-files=all"))
		approved, err := f.j.Approve(rec.Proposal.ID, rec.Proposal.Digest, "pat", "")
		if err != nil {
			f.t.Fatal(err)
		}
		ids = append(ids, f.mustComplete(approved).Outcome.RestorePoint)
	}
	return ids, heads, statuses
}

func (f *fixture) openRepo() *gitx.Repo {
	f.t.Helper()
	repo, err := f.e.runner.Open(testCtx(f.t), gitx.Roots{f.root}, f.repo.Dir)
	if err != nil {
		f.t.Fatal(err)
	}
	return repo
}

// looseRestoreRefNames lists the refs under RestorePrefix.
func (f *fixture) looseRestoreRefNames() []string {
	out := f.git("for-each-ref", "--format=%(refname)", RestorePrefix)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// TestFoldRestorePoints_ReadAndRestoreAsLoose: after a fold, the restore
// points are one ref instead of four each; after git's gc they list,
// page, describe and appear on the timeline exactly as before the fold;
// the person's `git log --all` begins with their own commit; and the
// newest restores HEAD, index and files exactly as they were. Its undo
// point is folded by the next fold.
func TestFoldRestorePoints_ReadAndRestoreAsLoose(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t)
	ids, heads, statuses := f.executedRecording(time.Now(), 0, 3)
	repo := f.openRepo()
	before, err := restorepoint.List(ctx, repo)
	if err != nil || len(before) != 3 {
		t.Fatalf("List before the fold: %d, %v", len(before), err)
	}
	got, err := f.e.FoldRestorePoints(ctx, f.repo.Dir)
	if err != nil || got.Folded != 3 || got.Loose != 0 || got.Kept != 3 {
		t.Fatalf("fold: %+v, %v; want 3 folded, none loose", got, err)
	}
	if refs := f.looseRestoreRefNames(); len(refs) != 0 {
		t.Errorf("loose restore point refs after the fold: %q", refs)
	}
	if refs := f.sluiceRefs(); !slices.Contains(refs, restorepoint.FoldedRef) {
		t.Errorf("Sluice's refs after the fold: %q", refs)
	}
	// A date-ordered `git log --all` shows the fold's commit, and parses
	// its parents, only after every commit of the person's branches.
	branches, _ := strconv.Atoi(f.git("rev-list", "--count", "--branches"))
	root := f.git("rev-parse", restorepoint.FoldedRef)
	if at := slices.Index(strings.Split(f.git("log", "--all", "--format=%H"), "\n"), root); at < branches {
		t.Errorf("git log --all shows the fold's commit at %d, before the last of the %d commits of the person's branches", at, branches)
	}
	f.prune()
	after, err := restorepoint.List(ctx, repo)
	if err != nil || !reflect.DeepEqual(before, after) {
		t.Fatalf("List after the fold and gc differs (%v):\nbefore %+v\nafter  %+v", err, before, after)
	}
	page, total, err := restorepoint.Page(ctx, repo, 2)
	if err != nil || total != 3 || !reflect.DeepEqual(page, before[:2]) {
		t.Errorf("Page(2): %d of %d, %v; want the 2 newest of 3", len(page), total, err)
	}
	tl, err := restorepoint.SafetyTimeline(ctx, repo, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		n := 0
		for _, e := range tl.Events {
			if e.RestorePoint == id && strings.HasSuffix(e.Message, "completed") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("the timeline shows %s completed %d times", id, n)
		}
	}
	d, err := restorepoint.Describe(ctx, repo, ids[2])
	if err != nil || !d.Restorable || len(d.Conflicts) != 0 {
		t.Fatalf("Describe of the folded newest: %+v, %v", d, err)
	}
	res, err := f.e.Restore(ctx, f.repo.Dir, ids[2], false)
	if err != nil {
		t.Fatalf("restore of a folded restore point: %v", err)
	}
	if h := f.git("rev-parse", "HEAD"); h != heads[2] {
		t.Errorf("HEAD after the restore: %s, want %s", h, heads[2])
	}
	if st := f.git("status", "--porcelain", "--untracked-files=all"); st != statuses[2] {
		t.Errorf("status after the restore:\n%s\nwant\n%s", st, statuses[2])
	}
	got, err = f.e.FoldRestorePoints(ctx, f.repo.Dir)
	if err != nil || got.Folded != 1 || got.Kept != 4 {
		t.Errorf("the next fold: %+v, %v; want the undo point %s folded", got, err, res.UndoPoint)
	}
	if _, err := restorepoint.Find(ctx, repo, res.UndoPoint); err != nil {
		t.Errorf("the folded undo point: %v", err)
	}
}

// TestFoldRestorePoints_CrashBetweenSteps: a fold stopped after it read
// the refs, or after it moved the folded ref but before it deleted the
// loose refs, leaves every restore point listed as it was, through git's
// gc; the next fold finishes; the newest still restores.
func TestFoldRestorePoints_CrashBetweenSteps(t *testing.T) {
	for _, step := range []string{"restore-fold-read", "restore-fold-written"} {
		t.Run(step, func(t *testing.T) {
			f := newFixture(t)
			ctx := testCtx(t)
			f.executedRecording(time.Now().Add(-2*time.Hour), 0, 2)
			if _, err := f.e.FoldRestorePoints(ctx, f.repo.Dir); err != nil {
				t.Fatal(err)
			}
			ids, heads, _ := f.executedRecording(time.Now(), 2, 2)
			repo := f.openRepo()
			before, err := restorepoint.List(ctx, repo)
			if err != nil || len(before) != 4 {
				t.Fatalf("List: %d, %v", len(before), err)
			}
			stopped, cancel := context.WithCancel(ctx)
			f.e.beforeStep = func(s string) {
				if s == step {
					cancel() // the process stops here: no git runs after
				}
			}
			if _, err := f.e.FoldRestorePoints(stopped, f.repo.Dir); err == nil {
				t.Fatal("the stopped fold finished")
			}
			f.e.beforeStep = nil
			f.prune()
			if after, err := restorepoint.List(ctx, repo); err != nil || !reflect.DeepEqual(before, after) {
				t.Fatalf("List after the stopped fold and gc differs (%v):\nbefore %+v\nafter  %+v", err, before, after)
			}
			if got, err := f.e.FoldRestorePoints(ctx, f.repo.Dir); err != nil || got.Kept != 4 || got.Loose != 0 {
				t.Fatalf("the next fold: %+v, %v", got, err)
			}
			if refs := f.looseRestoreRefNames(); len(refs) != 0 {
				t.Errorf("loose restore point refs after the next fold: %q", refs)
			}
			f.prune()
			if after, err := restorepoint.List(ctx, repo); err != nil || !reflect.DeepEqual(before, after) {
				t.Fatalf("List after the next fold differs: %v", err)
			}
			if _, err := f.e.Restore(ctx, f.repo.Dir, ids[1], false); err != nil {
				t.Fatalf("restore: %v", err)
			}
			if h := f.git("rev-parse", "HEAD"); h != heads[1] {
				t.Errorf("HEAD after the restore: %s, want %s", h, heads[1])
			}
		})
	}
}

// TestTendRestorePoints_Folded: retention removes folded restore points
// past it from the folded ref and keeps the rest restorable through gc;
// the last one removed takes the folded ref with it.
func TestTendRestorePoints_Folded(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t)
	now := time.Now()
	old, _, _ := f.executedRecording(now.Add(-60*24*time.Hour), 0, 2)
	recent, heads, _ := f.executedRecording(now, 2, RestorePointsKeptAtLeast)
	if got, err := f.e.FoldRestorePoints(ctx, f.repo.Dir); err != nil || got.Kept != 12 {
		t.Fatalf("fold: %+v, %v", got, err)
	}
	got, err := f.e.TendRestorePoints(ctx, f.repo.Dir, now.Add(-30*24*time.Hour), nil)
	if err != nil || got.Removed != 2 || got.Kept != 10 {
		t.Fatalf("tend: %+v, %v; want 2 removed, 10 kept", got, err)
	}
	repo := f.openRepo()
	fo, err := restorepoint.ReadFolded(ctx, repo)
	if err != nil || len(fo.Points) != 10 {
		t.Fatalf("folded after the tend: %d points, %v", len(fo.Points), err)
	}
	for _, id := range old {
		if _, ok := fo.Points[id]; ok {
			t.Errorf("expired %s is still folded", id)
		}
		if _, err := restorepoint.Describe(ctx, repo, id); err == nil || !strings.Contains(err.Error(), "expired") {
			t.Errorf("details of expired %s: %v", id, err)
		}
	}
	f.prune()
	last := len(recent) - 1
	if _, err := f.e.Restore(ctx, f.repo.Dir, recent[last], false); err != nil {
		t.Fatalf("restore of the newest after the tend: %v", err)
	}
	if h := f.git("rev-parse", "HEAD"); h != heads[last] {
		t.Errorf("HEAD after the restore: %s, want %s", h, heads[last])
	}
	// Dropping every folded point takes the folded ref with it.
	rc, err := f.e.openRepo(ctx, f.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if fo, err = restorepoint.ReadFolded(ctx, repo); err != nil {
		t.Fatal(err)
	}
	drop := map[string]bool{}
	for id := range fo.Points {
		drop[id] = true
	}
	if err := rc.rewriteFolded(ctx, fo, nil, drop); err != nil {
		t.Fatal(err)
	}
	if refs := f.sluiceRefs(); slices.Contains(refs, restorepoint.FoldedRef) {
		t.Errorf("the folded ref outlived its last restore point: %q", refs)
	}
}

// TestFoldRestorePoints_LabelsStayUnique: a restore point taken after a
// fold gets a label no folded one has, read from the folded ref's list of
// labels rather than from every folded record.
func TestFoldRestorePoints_LabelsStayUnique(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t)
	ids, _, _ := f.executedRecording(time.Now(), 0, 1)
	if got, err := f.e.FoldRestorePoints(ctx, f.repo.Dir); err != nil || got.Folded != 1 {
		t.Fatalf("fold: %+v, %v", got, err)
	}
	repo := f.openRepo()
	first, err := restorepoint.Find(ctx, repo, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	f.repo.Write("other.txt", "other\n")
	rec := f.submitPending(&proposal.CommitArgs{Message: "n000.txt", Paths: []string{"other.txt"}})
	approved, err := f.j.Approve(rec.Proposal.ID, rec.Proposal.Digest, "pat", "")
	if err != nil {
		t.Fatal(err)
	}
	second, err := restorepoint.Find(ctx, repo, f.mustComplete(approved).Outcome.RestorePoint)
	if err != nil {
		t.Fatal(err)
	}
	if want := first.Label + " (2)"; second.Label != want {
		t.Errorf("label after the fold: %q, want %q", second.Label, want)
	}
}

// TestTendRestorePoints_ExpiredRecordComesLast: the record of expired
// restore points comes after every commit of the person's branches in
// `git log --all`, and lists what expired; a record in the earlier
// format (the lines in the commit's message) is still read.
func TestTendRestorePoints_ExpiredRecordComesLast(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t)
	now := time.Now()
	old, _, _ := f.executedRecording(now.Add(-60*24*time.Hour), 0, 2)
	f.executedRecording(now, 2, RestorePointsKeptAtLeast)
	if got, err := f.e.TendRestorePoints(ctx, f.repo.Dir, now.Add(-30*24*time.Hour), nil); err != nil || got.Removed != 2 {
		t.Fatalf("tend: %+v, %v", got, err)
	}
	branches, _ := strconv.Atoi(f.git("rev-list", "--count", "--branches"))
	rec := f.git("rev-parse", restorepoint.ExpiredRef)
	if at := slices.Index(strings.Split(f.git("log", "--all", "--format=%H"), "\n"), rec); at < branches {
		t.Errorf("git log --all shows the expired record at %d, before the last of the %d commits of the person's branches", at, branches)
	}
	repo := f.openRepo()
	list, err := restorepoint.ListExpired(ctx, repo)
	if err != nil || len(list) != 2 || !slices.Contains(old, list[0].ID) || !slices.Contains(old, list[1].ID) {
		t.Fatalf("ListExpired: %+v, %v; want %q", list, err, old)
	}
	line := list[0].Line()
	earlier := f.git("commit-tree", "-m", "Sluice restore points expired\n\n"+line, f.git("rev-parse", "HEAD^{tree}"))
	f.git("update-ref", restorepoint.ExpiredRef, earlier)
	if got, err := restorepoint.ListExpired(ctx, repo); err != nil || len(got) != 1 || got[0].Line() != line {
		t.Errorf("ListExpired of an earlier record: %+v, %v", got, err)
	}
}

// TestFoldRestorePoints_LeftoverLooseRefs: a fold stopped while git
// deleted a folded point's loose refs leaves some of them; the point
// reads whole from the folded ref meanwhile, and the next fold deletes
// what is left.
func TestFoldRestorePoints_LeftoverLooseRefs(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t)
	ids, _, _ := f.executedRecording(time.Now(), 0, 2)
	repo := f.openRepo()
	before, err := restorepoint.List(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	meta := f.git("rev-parse", RestorePrefix+ids[0]+"/meta")
	if _, err := f.e.FoldRestorePoints(ctx, f.repo.Dir); err != nil {
		t.Fatal(err)
	}
	// As if the deletion had stopped after the end ref went.
	f.git("update-ref", RestorePrefix+ids[0]+"/meta", meta)
	if after, err := restorepoint.List(ctx, repo); err != nil || !reflect.DeepEqual(before, after) {
		t.Fatalf("List with a leftover loose ref differs: %v", err)
	}
	if got, err := f.e.FoldRestorePoints(ctx, f.repo.Dir); err != nil || got.Folded != 0 || got.Loose != 0 {
		t.Errorf("the next fold: %+v, %v", got, err)
	}
	if refs := f.looseRestoreRefNames(); len(refs) != 0 {
		t.Errorf("loose refs after the next fold: %q", refs)
	}
}
