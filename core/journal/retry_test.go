package journal

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// failedRun submits p, approves it, and fails its execution with o, as the
// executor records a refusal.
func failedRun(t *testing.T, j *Journal, p proposal.Proposal, o Outcome) Record {
	t.Helper()
	if _, _, err := j.Submit(p); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Approve(p.ID, p.Digest, "pat", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := j.MarkExecuting(p.ID, p.Digest); err != nil {
		t.Fatal(err)
	}
	rec, err := j.Fail(p.ID, "executor", o)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestJournal_Retry_FailureThatChangedNothing(t *testing.T) {
	j, rec, clk, _ := setup(t)
	p := newProposal(t, clk.Now(), "agent-a")
	failed := failedRun(t, j, p, Outcome{Code: errcode.DirtyWorktree, Message: "main is checked out in /work/repo, which has uncommitted changes (README.md)"})
	if !Retryable(failed) {
		t.Fatalf("a failure with no restore point is not retryable: %+v", failed.Outcome)
	}
	clk.Advance(time.Minute)
	got, err := j.Retry(p.ID, p.Digest, "owner:web", "stashed my edit")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != proposal.Approved || got.Outcome != nil {
		t.Fatalf("retried record is %s with outcome %+v; want approved, no outcome until it runs again", got.State, got.Outcome)
	}
	if d := got.Decision; d == nil || !d.Approved || d.ApprovedDigest != p.Digest || d.By != "owner:web" || !d.At.Equal(clk.Now()) {
		t.Fatalf("decision %+v: want the person's new approval of the digest", got.Decision)
	}
	last := got.History[len(got.History)-1]
	if last.From != proposal.Failed || last.To != proposal.Approved || !strings.Contains(last.Note, "dirty_worktree") || !strings.Contains(last.Note, "stashed my edit") {
		t.Fatalf("history step %+v: want failed → approved naming the failure and the note", last)
	}
	if types := rec.types(); types[len(types)-1] != EventRetried {
		t.Fatalf("audit events %v: want the retry recorded as %s", types, EventRetried)
	}
	// It is open again: the executor's start-up finds it among the approved.
	open, err := j.List(Filter{States: []proposal.State{proposal.Approved}})
	if err != nil || len(open) != 1 || open[0].Proposal.ID != p.ID {
		t.Fatalf("approved list = %v, %v; want the retried proposal", open, err)
	}
	// And it runs as any approval does.
	if _, err := j.MarkExecuting(p.ID, p.Digest); err != nil {
		t.Fatalf("MarkExecuting after a retry: %v", err)
	}
}

func TestJournal_Retry_Refused(t *testing.T) {
	j, _, clk, _ := setup(t)
	t.Run("a failure that kept a restore point", func(t *testing.T) {
		p := newProposal(t, clk.Now(), "agent-a")
		failedRun(t, j, p, Outcome{Code: errcode.HookFailed, Message: "a hook refused", RestorePoint: p.ID})
		if _, err := j.Retry(p.ID, p.Digest, "owner:web", ""); !errors.Is(err, ErrNotRetryable) {
			t.Fatalf("Retry = %v, want ErrNotRetryable", err)
		}
	})
	t.Run("a failure after reconciliation", func(t *testing.T) {
		p := newProposal(t, clk.Now(), "agent-b")
		if _, _, err := j.Submit(p); err != nil {
			t.Fatal(err)
		}
		j.Approve(p.ID, p.Digest, "pat", "")
		j.MarkExecuting(p.ID, p.Digest)
		j.Unsettled(p.ID, "executor", Outcome{Code: errcode.Interrupted})
		if _, err := j.Fail(p.ID, "owner:web", Outcome{Code: errcode.Interrupted, Message: "looked at it"}); err != nil {
			t.Fatal(err)
		}
		if _, err := j.Retry(p.ID, p.Digest, "owner:web", ""); !errors.Is(err, ErrNotRetryable) {
			t.Fatalf("Retry = %v, want ErrNotRetryable", err)
		}
	})
	t.Run("a pending proposal", func(t *testing.T) {
		p := newProposal(t, clk.Now(), "agent-c")
		if _, _, err := j.Submit(p); err != nil {
			t.Fatal(err)
		}
		if _, err := j.Retry(p.ID, p.Digest, "owner:web", ""); !errors.Is(err, ErrNotRetryable) {
			t.Fatalf("Retry = %v, want ErrNotRetryable", err)
		}
	})
	t.Run("another digest", func(t *testing.T) {
		p := newProposal(t, clk.Now(), "agent-d")
		failedRun(t, j, p, Outcome{Code: errcode.RepoLocked})
		if _, err := j.Retry(p.ID, "sha256:"+strings.Repeat("0", 64), "owner:web", ""); !errors.Is(err, ErrDigestMismatch) {
			t.Fatalf("Retry = %v, want ErrDigestMismatch", err)
		}
		if rec, _ := j.Get(p.ID); rec.State != proposal.Failed {
			t.Fatalf("state %s after a refused retry, want failed", rec.State)
		}
	})
}

// The agent's retry of the same request after its proposal failed is
// answered with that proposal as it is now, even worded differently; only
// another change under the same key is refused.
func TestJournal_Submit_IdempotentRetryAfterFailure(t *testing.T) {
	j, rec, clk, _ := setup(t)
	p := newProposal(t, clk.Now(), "agent-a")
	p.IdempotencyKey = "workspace-ws1"
	reseal(t, &p)
	failedRun(t, j, p, Outcome{Code: errcode.DirtyWorktree, Message: "uncommitted changes"})
	events := len(rec.types())

	retry := p
	retry.ID = "p-agent-retry"
	retry.Reason = "Retrying: the merge failed because of uncommitted changes"
	retry.CreatedAt = proposal.At(clk.Now().Add(time.Minute))
	reseal(t, &retry)
	got, replayed, err := j.Submit(retry)
	if err != nil {
		t.Fatalf("the agent's retry was refused: %v", err)
	}
	if !replayed || got.Proposal.ID != p.ID || got.State != proposal.Failed || got.Outcome == nil || got.Outcome.Code != errcode.DirtyWorktree {
		t.Fatalf("retry answered %s (%s, replayed %v); want the stored proposal %s as it is, failed", got.Proposal.ID, got.State, replayed, p.ID)
	}
	if n := len(rec.types()); n != events {
		t.Fatalf("a replay wrote %d audit events", n-events)
	}
	if _, err := j.Get(retry.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a second proposal was stored: %v", err)
	}

	other := retry
	other.Args = &proposal.CommitArgs{Message: "update", Paths: []string{"LICENSE"}, Branch: "agent/x"}
	reseal(t, &other)
	_, _, err = j.Submit(other)
	if !errors.Is(err, ErrIdempotencyConflict) || !strings.Contains(err.Error(), p.ID) {
		t.Fatalf("another change under the same key: %v; want ErrIdempotencyConflict naming %s", err, p.ID)
	}
}
