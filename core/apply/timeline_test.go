package apply

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/restorepoint"
)

func TestSafetyTimeline_RestorePointsAndReflog(t *testing.T) {
	f := newFixture(t)
	f.diverge()
	done := f.mustComplete(f.propose(&proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit}))
	f.git("reset", "-q", "--hard", "HEAD~1")
	repo, err := f.e.runner.Open(testCtx(t), gitx.Roots{f.root}, f.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	before := gitxtest.Snapshot(t, f.root)
	tl, err := restorepoint.SafetyTimeline(testCtx(t), repo, 20)
	if err != nil {
		t.Fatal(err)
	}
	requireSame(t, before, gitxtest.Snapshot(t, f.root))
	var rp, bySluice, reset *restorepoint.TimelineEvent
	for i, e := range tl.Events {
		switch {
		case e.Kind == restorepoint.EventRestorePoint && e.RestorePoint == done.Outcome.RestorePoint:
			rp = &tl.Events[i]
		case e.Kind == restorepoint.EventRefMoved && e.BySluice && e.Ref == "refs/heads/main":
			bySluice = &tl.Events[i]
		case e.Kind == restorepoint.EventRefMoved && e.Action == "reset" && e.Ref == "HEAD":
			reset = &tl.Events[i]
		}
	}
	if rp == nil || bySluice == nil || reset == nil {
		t.Fatalf("timeline lacks the restore point, Sluice's merge or the person's reset: %+v", tl.Events)
	}
	if !strings.Contains(bySluice.Message, done.Proposal.ID) || tl.Events[0].At.Before(tl.Events[len(tl.Events)-1].At) {
		t.Errorf("merge movement %+v; events not newest first", bySluice)
	}

	d, err := restorepoint.SafetyEvent(testCtx(t), repo, rp.ID)
	if err != nil || d.RestorePoint == nil || len(d.RestorePoint.Conflicts) == 0 {
		t.Fatalf("restore point event: %+v, %v (the reset moved main after the merge: a conflict)", d, err)
	}
	// The reset left the merge commit reachable from the reflog only.
	d, err = restorepoint.SafetyEvent(testCtx(t), repo, reset.ID)
	if err != nil {
		t.Fatalf("reset event: %v", err)
	}
	if d.Event.Action != "reset" || len(d.Recoverable) != 1 || !strings.HasPrefix(d.Recoverable[0].SHA, reset.From) {
		t.Errorf("reset event %+v: want the merge commit as recoverable", d)
	}
	if _, err := restorepoint.SafetyEvent(testCtx(t), repo, "reflog:refs/heads/main:0000000:1"); errcode.Of(err) != errcode.InvalidArgument {
		t.Errorf("unknown event: %v", err)
	}
	requireSame(t, before, gitxtest.Snapshot(t, f.root))
}
