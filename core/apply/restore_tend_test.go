package apply

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/restorepoint"
)

// restorePointRefs is how many refs of restore point id for-each-ref
// lists.
func (f *fixture) restorePointRefs(id string) int {
	out := f.git("for-each-ref", "--format=%(refname)", RestorePrefix+id+"/")
	if out == "" {
		return 0
	}
	return len(strings.Split(out, "\n"))
}

// executedAt completes n commits of files of their own, each taken with
// the executor's clock at at, and returns their restore point ids.
func (f *fixture) executedAt(at time.Time, from, n int) []string {
	f.t.Helper()
	f.e.now = func() time.Time { return at }
	var ids []string
	for i := from; i < from+n; i++ {
		rec := f.distinctCommit(i)
		approved, err := f.j.Approve(rec.Proposal.ID, rec.Proposal.Digest, "pat", "")
		if err != nil {
			f.t.Fatal(err)
		}
		ids = append(ids, f.mustComplete(approved).Outcome.RestorePoint)
	}
	f.e.now = time.Now
	return ids
}

// TestTendRestorePoints_RemovesPastRetention: of 14 executions, the three
// taken 60 days ago are past a 30-day retention; the one the caller keeps
// (as the app keeps a proposal that needs reconciliation) stays, the
// other two lose every ref, the journal still records them, and the
// timeline, safety_event and a restore say they expired. Every restore
// point within retention is still listed, and the newest restores.
func TestTendRestorePoints_RemovesPastRetention(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	old := f.executedAt(now.Add(-60*24*time.Hour), 0, 3)
	recent := f.executedAt(now, 3, 11)
	for _, id := range append(append([]string{}, old...), recent...) {
		if f.restorePointRefs(id) == 0 {
			t.Fatalf("restore point %s has no refs before the tend", id)
		}
	}
	var asked []string
	keep := func(rps []RestorePoint) (map[string]bool, error) {
		for _, rp := range rps {
			asked = append(asked, rp.ID)
		}
		return map[string]bool{old[1]: true}, nil
	}
	got, err := f.e.TendRestorePoints(testCtx(t), f.repo.Dir, now.Add(-30*24*time.Hour), keep)
	if err != nil {
		t.Fatal(err)
	}
	if got.Removed != 2 || got.Kept != 12 || len(asked) != 3 {
		t.Errorf("tend: %+v, asked about %q: want 2 removed, 12 kept, the 3 old ones asked about", got, asked)
	}
	for _, id := range []string{old[0], old[2]} {
		if n := f.restorePointRefs(id); n != 0 {
			t.Errorf("expired restore point %s still has %d refs", id, n)
		}
		rec, err := f.j.Get(id)
		if err != nil || rec.State != proposal.Completed || rec.Outcome.RestorePoint != id {
			t.Errorf("journal record of %s: %s %v", id, rec.State, err)
		}
	}
	repo, err := f.e.runner.Open(testCtx(t), gitx.Roots{f.root}, f.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	list, err := restorepoint.List(testCtx(t), repo)
	if err != nil || len(list) != 12 {
		t.Fatalf("List: %d restore points, %v; want 12", len(list), err)
	}
	_, err = restorepoint.Describe(testCtx(t), repo, old[0])
	if errcode.Of(err) != errcode.RestorePointNotFound || !strings.Contains(err.Error(), "expired") {
		t.Errorf("details of an expired restore point: %v", err)
	}
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, old[2], true); errcode.Of(err) != errcode.RestorePointNotFound || !strings.Contains(err.Error(), "expired") {
		t.Errorf("restore of an expired restore point: %v", err)
	}
	tl, err := restorepoint.SafetyTimeline(testCtx(t), repo, restorepoint.MaxTimelineLimit)
	if err != nil {
		t.Fatal(err)
	}
	var expired *restorepoint.TimelineEvent
	for i, e := range tl.Events {
		if e.RestorePoint == old[0] {
			expired = &tl.Events[i]
		}
	}
	if expired == nil || !strings.Contains(expired.Message, "expired") {
		t.Fatalf("the timeline does not say %s expired: %+v", old[0], expired)
	}
	d, err := restorepoint.SafetyEvent(testCtx(t), repo, expired.ID)
	if err != nil || d.RestorePoint != nil || !strings.Contains(d.Event.Message, "expired") {
		t.Errorf("safety_event of the expired restore point: %+v, %v", d, err)
	}
	// A second tend has nothing to remove; the newest restores.
	if got, err := f.e.TendRestorePoints(testCtx(t), f.repo.Dir, now.Add(-30*24*time.Hour), keep); err != nil || got.Removed != 0 {
		t.Errorf("second tend: %+v, %v", got, err)
	}
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, recent[len(recent)-1], false); err != nil {
		t.Errorf("restore of the newest restore point: %v", err)
	}
}

// TestTendRestorePoints_CrashBetweenSteps: a tend stopped after it read
// the restore points, or after it recorded their expiry but before it
// deleted their refs, leaves every restore point listed and found; the
// next tend removes them.
func TestTendRestorePoints_CrashBetweenSteps(t *testing.T) {
	for _, step := range []string{"restore-tend-read", "restore-tend-recorded"} {
		t.Run(step, func(t *testing.T) {
			f := newFixture(t)
			now := time.Now()
			old := f.executedAt(now.Add(-60*24*time.Hour), 0, 2)
			f.executedAt(now, 2, RestorePointsKeptAtLeast)
			ctx, cancel := context.WithCancel(testCtx(t))
			f.e.beforeStep = func(s string) {
				if s == step {
					cancel() // the process stops here: no git runs after
				}
			}
			cutoff := now.Add(-30 * 24 * time.Hour)
			if _, err := f.e.TendRestorePoints(ctx, f.repo.Dir, cutoff, nil); err == nil {
				t.Fatal("the stopped tend finished")
			}
			f.e.beforeStep = nil
			repo, err := f.e.runner.Open(testCtx(t), gitx.Roots{f.root}, f.repo.Dir)
			if err != nil {
				t.Fatal(err)
			}
			tl, err := restorepoint.SafetyTimeline(testCtx(t), repo, restorepoint.MaxTimelineLimit)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range old {
				if rp, err := restorepoint.Find(testCtx(t), repo, id); err != nil || rp.End == nil {
					t.Errorf("after the stopped tend, %s: %+v, %v", id, rp, err)
				}
				n := 0
				for _, e := range tl.Events {
					if e.RestorePoint == id {
						n++
						if strings.Contains(e.Message, "expired") {
							t.Errorf("the timeline says %s, still there, expired: %q", id, e.Message)
						}
					}
				}
				if n != 1 {
					t.Errorf("the timeline shows %s %d times", id, n)
				}
			}
			got, err := f.e.TendRestorePoints(testCtx(t), f.repo.Dir, cutoff, nil)
			if err != nil || got.Removed != 2 {
				t.Fatalf("next tend: %+v, %v", got, err)
			}
			for _, id := range old {
				if f.restorePointRefs(id) != 0 {
					t.Errorf("%s kept its refs after the next tend", id)
				}
			}
		})
	}
}

// TestTendRestorePoints_Batches: a tend removes at most restoreTendBatch
// restore points, the oldest first, and says how many it left for the
// next.
func TestTendRestorePoints_Batches(t *testing.T) {
	defer func(n int) { restoreTendBatch = n }(restoreTendBatch)
	restoreTendBatch = 2
	f := newFixture(t)
	now := time.Now()
	oldest := f.executedAt(now.Add(-90*24*time.Hour), 0, 1)
	old := f.executedAt(now.Add(-60*24*time.Hour), 1, 2)
	f.executedAt(now, 3, RestorePointsKeptAtLeast)
	cutoff := now.Add(-30 * 24 * time.Hour)
	got, err := f.e.TendRestorePoints(testCtx(t), f.repo.Dir, cutoff, nil)
	if err != nil || got.Removed != 2 || got.Left != 1 {
		t.Fatalf("first tend: %+v, %v; want 2 removed, 1 left", got, err)
	}
	if f.restorePointRefs(oldest[0]) != 0 || f.restorePointRefs(old[0])+f.restorePointRefs(old[1]) == 0 {
		t.Errorf("the first tend did not remove the oldest first")
	}
	if got, err := f.e.TendRestorePoints(testCtx(t), f.repo.Dir, cutoff, nil); err != nil || got.Removed != 1 || got.Left != 0 {
		t.Errorf("second tend: %+v, %v", got, err)
	}
}
