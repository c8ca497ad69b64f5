package journal

import (
	"bytes"
	bolt "go.etcd.io/bbolt"

	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

func setup(t *testing.T) (*Journal, *memRecorder, *clock, string) {
	t.Helper()
	rec, clk := &memRecorder{}, newClock()
	j, path := testJournal(t, Options{Recorder: rec, Now: clk.Now})
	return j, rec, clk, path
}

func TestJournal_Open_RequiresRecorder(t *testing.T) {
	if _, err := Open(t.TempDir()+"/j.db", Options{}); err == nil {
		t.Fatalf("Open without a Recorder succeeded")
	}
}

func TestJournal_Open_LockedByAnotherHandle(t *testing.T) {
	_, _, _, path := setup(t)
	_, err := Open(path, Options{Recorder: &memRecorder{}, LockTimeout: 100 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
}

func TestJournal_Submit_StoresPendingAndRecords(t *testing.T) {
	j, rec, clk, _ := setup(t)
	p := newProposal(t, clk.Now(), "agent-a")
	got, replayed, err := j.Submit(p)
	if err != nil || replayed {
		t.Fatalf("Submit = %v, replayed %v", err, replayed)
	}
	if got.State != proposal.Pending || got.Version != 1 || got.Proposal.Digest != p.Digest {
		t.Fatalf("stored %+v", got)
	}
	back, err := j.Get(p.ID)
	if err != nil || back.Proposal.Digest != p.Digest || back.State != proposal.Pending {
		t.Fatalf("Get = %+v, %v", back, err)
	}
	if ev := rec.events; len(ev) != 1 || ev[0].Type != EventSubmitted || ev[0].ProposalID != p.ID || ev[0].Version != 1 || ev[0].Digest != p.Digest {
		t.Fatalf("events = %+v", ev)
	}
}

func TestJournal_Reopen_KeepsEverything(t *testing.T) {
	rec, clk := &memRecorder{}, newClock()
	j, path := testJournal(t, Options{Recorder: rec, Now: clk.Now})
	p := newProposal(t, clk.Now(), "agent-a")
	p.IdempotencyKey = "k1"
	reseal(t, &p)
	if _, _, err := j.Submit(p); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Approve(p.ID, p.Digest, "person", "ok"); err != nil {
		t.Fatal(err)
	}
	j.Close()

	j2, err := Open(path, Options{Recorder: rec, Now: clk.Now})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer j2.Close()
	got, err := j2.Get(p.ID)
	if err != nil || got.State != proposal.Approved || got.Version != 2 || got.Decision == nil || got.Decision.ApprovedDigest != p.Digest {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
	if err := got.Proposal.VerifyDigest(); err != nil {
		t.Fatalf("stored proposal no longer matches its digest: %v", err)
	}
	replay := p
	replay.ID = "p-retry"
	reseal(t, &replay)
	again, replayed, err := j2.Submit(replay)
	if err != nil || !replayed || again.Proposal.ID != p.ID {
		t.Fatalf("idempotency index lost on reopen: %+v, %v, %v", again.Proposal.ID, replayed, err)
	}
}

func TestJournal_Submit_Idempotency(t *testing.T) {
	j, rec, clk, _ := setup(t)
	p := newProposal(t, clk.Now(), "agent-a")
	p.IdempotencyKey = "fix-readme"
	reseal(t, &p)
	first, _, err := j.Submit(p)
	if err != nil {
		t.Fatal(err)
	}

	retry := p
	retry.ID = "p-retry"
	retry.CreatedAt = proposal.At(clk.Now().Add(time.Second))
	reseal(t, &retry)
	got, replayed, err := j.Submit(retry)
	if err != nil || !replayed || got.Proposal.ID != first.Proposal.ID {
		t.Fatalf("replay = %s, %v, %v; want the first proposal", got.Proposal.ID, replayed, err)
	}
	if n := len(rec.events); n != 1 {
		t.Fatalf("a replay wrote %d events, want 1 in total", n)
	}

	t.Run("different request under the same key", func(t *testing.T) {
		// Another change: a reworded reason alone is the same change
		// (TestJournal_Submit_IdempotentRetryAfterFailure).
		other := retry
		other.Args = &proposal.CommitArgs{Message: "update", Paths: []string{"LICENSE"}, Branch: "agent/x"}
		reseal(t, &other)
		if _, _, err := j.Submit(other); !errors.Is(err, ErrIdempotencyConflict) {
			t.Fatalf("Submit = %v, want ErrIdempotencyConflict", err)
		}
	})
	t.Run("same key, other agent", func(t *testing.T) {
		other := retry
		other.Agent = "agent-b"
		reseal(t, &other)
		if _, replayed, err := j.Submit(other); err != nil || replayed {
			t.Fatalf("Submit = %v, replayed %v; keys are per agent", err, replayed)
		}
	})
	t.Run("same key, other confined session", func(t *testing.T) {
		in := func(session, id string) proposal.Proposal {
			p := retry
			p.Agent, p.ID = "agent-s", id
			p.Origin = &proposal.Origin{Session: session, Runtime: "bubblewrap", Network: []string{"api.anthropic.com"}}
			reseal(t, &p)
			return p
		}
		a, _, err := j.Submit(in("6b794f9503a38fe7", "p-session-a"))
		if err != nil {
			t.Fatal(err)
		}
		// Another session of the same agent, the same key and request:
		// its own proposal, not the first session's.
		b, replayed, err := j.Submit(in("0a1b2c3d4e5f6a7b", "p-session-b"))
		if err != nil || replayed || b.Proposal.ID != "p-session-b" {
			t.Fatalf("Submit = %s, replayed %v, %v; keys are per session", b.Proposal.ID, replayed, err)
		}
		// The same session retrying is answered with its own.
		again, replayed, err := j.Submit(in("6b794f9503a38fe7", "p-session-a2"))
		if err != nil || !replayed || again.Proposal.ID != a.Proposal.ID {
			t.Fatalf("retry = %s, replayed %v, %v; want %s", again.Proposal.ID, replayed, err, a.Proposal.ID)
		}
		// And the unconfined agent of that name has its own keys too.
		plain := retry
		plain.Agent, plain.ID = "agent-s", "p-session-plain"
		reseal(t, &plain)
		if got, replayed, err := j.Submit(plain); err != nil || replayed || got.Proposal.ID != "p-session-plain" {
			t.Fatalf("unconfined Submit = %s, replayed %v, %v", got.Proposal.ID, replayed, err)
		}
	})
	t.Run("no key is a new intent", func(t *testing.T) {
		a := newProposal(t, clk.Now(), "agent-c")
		b := a
		b.ID = "p-no-key-2"
		reseal(t, &b)
		if _, r, err := j.Submit(a); err != nil || r {
			t.Fatal(err)
		}
		if _, r, err := j.Submit(b); err != nil || r {
			t.Fatalf("second keyless submit = %v, replayed %v", err, r)
		}
	})
}

func TestJournal_Submit_PendingCap(t *testing.T) {
	rec, clk := &memRecorder{}, newClock()
	j, _ := testJournal(t, Options{Recorder: rec, Now: clk.Now, PendingCap: 3})
	var ids []string
	for range 3 {
		p := newProposal(t, clk.Now(), "busy")
		if _, _, err := j.Submit(p); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	if _, _, err := j.Submit(newProposal(t, clk.Now(), "busy")); !errors.Is(err, ErrPendingCap) {
		t.Fatalf("fourth Submit = %v, want ErrPendingCap", err)
	}
	if _, _, err := j.Submit(newProposal(t, clk.Now(), "calm")); err != nil {
		t.Fatalf("another agent is capped too: %v", err)
	}
	if _, err := j.Reject(ids[0], "person", "no"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := j.Submit(newProposal(t, clk.Now(), "busy")); err != nil {
		t.Fatalf("Submit after a decision = %v", err)
	}
	// Overdue proposals do not count even before they are marked expired.
	clk.Advance(16 * time.Minute)
	if n, _ := j.PendingCount("busy"); n != 0 {
		t.Fatalf("PendingCount after expiry = %d", n)
	}
	if _, _, err := j.Submit(newProposal(t, clk.Now(), "busy")); err != nil {
		t.Fatalf("Submit after expiry = %v", err)
	}
}

func TestJournal_Submit_Refuses(t *testing.T) {
	j, rec, clk, _ := setup(t)
	dup := newProposal(t, clk.Now(), "a")
	if _, _, err := j.Submit(dup); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		p    func() proposal.Proposal
		want error
	}{
		"tampered": {func() proposal.Proposal {
			p := newProposal(t, clk.Now(), "a")
			p.Reason = "changed after sealing"
			return p
		}, proposal.ErrDigestMismatch},
		"too long an expiry": {func() proposal.Proposal {
			p := newProposal(t, clk.Now(), "a")
			p.ExpiresAt = proposal.At(clk.Now().Add(DefaultPendingExpiry + time.Minute))
			reseal(t, &p)
			return p
		}, proposal.ErrInvalid},
		"already expired": {func() proposal.Proposal {
			return newProposal(t, clk.Now().Add(-20*time.Minute), "a")
		}, ErrExpired},
		"duplicate id": {func() proposal.Proposal {
			p := newProposal(t, clk.Now(), "b")
			p.ID = dup.ID
			reseal(t, &p)
			return p
		}, ErrDuplicateID},
		"invalid args": {func() proposal.Proposal {
			p := newProposal(t, clk.Now(), "a")
			p.Args = &proposal.CommitArgs{Message: "x", Paths: []string{"../etc/passwd"}}
			reseal(t, &p)
			return p
		}, proposal.ErrInvalid},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if _, _, err := j.Submit(c.p()); !errors.Is(err, c.want) {
				t.Fatalf("Submit = %v, want %v", err, c.want)
			}
		})
	}
	if n := len(rec.events); n != 1 {
		t.Fatalf("refused submits wrote events: %v", rec.types())
	}
}

func TestJournal_Approve_Checks(t *testing.T) {
	j, rec, clk, _ := setup(t)
	p := newProposal(t, clk.Now(), "a")
	j.Submit(p)
	if _, err := j.Approve(p.ID, "sha256:"+strings.Repeat("0", 64), "person", ""); !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("Approve with another digest = %v", err)
	}
	if _, err := j.Approve(p.ID, p.Digest, "", ""); err == nil {
		t.Fatalf("Approve without a decider succeeded")
	}
	got, err := j.Approve(p.ID, p.Digest, "person", "looks right")
	if err != nil || got.State != proposal.Approved || got.Decision.By != "person" || got.Decision.Note != "looks right" || !got.Decision.Approved {
		t.Fatalf("Approve = %+v, %v", got, err)
	}
	if _, err := j.Approve(p.ID, p.Digest, "person", ""); !errors.Is(err, ErrNotPending) {
		t.Fatalf("second Approve = %v, want ErrNotPending", err)
	}
	if _, err := j.Reject(p.ID, "person", ""); !errors.Is(err, ErrNotPending) {
		t.Fatalf("Reject after approval = %v, want ErrNotPending", err)
	}
	if got := rec.types(); !slices.Equal(got, []string{EventSubmitted, EventApproved}) {
		t.Fatalf("events = %v", got)
	}
}

func TestJournal_Approve_AfterExpiryExpires(t *testing.T) {
	j, rec, clk, _ := setup(t)
	p := newProposal(t, clk.Now(), "a")
	j.Submit(p)
	clk.Advance(15 * time.Minute)
	got, err := j.Approve(p.ID, p.Digest, "person", "")
	if !errors.Is(err, ErrExpired) || got.State != proposal.Expired {
		t.Fatalf("Approve after expiry = %s, %v; want expired, ErrExpired", got.State, err)
	}
	if got := rec.types(); !slices.Equal(got, []string{EventSubmitted, EventExpired}) {
		t.Fatalf("events = %v", got)
	}
}

func TestJournal_ApproveAuto_RecordsRule(t *testing.T) {
	j, rec, clk, _ := setup(t)
	p := newProposal(t, clk.Now(), "a")
	j.Submit(p)
	got, err := j.ApproveAuto(p.ID, p.Digest, "agent-commits")
	if err != nil || !got.Decision.Auto || got.Decision.By != "policy:agent-commits" {
		t.Fatalf("ApproveAuto = %+v, %v", got.Decision, err)
	}
	if ev := rec.events[1]; ev.Type != EventAutoApproved || ev.By != "policy:agent-commits" {
		t.Fatalf("event = %+v", ev)
	}
}

// TestJournal_SendBack_RejectsWithStaleBase: a stale card sent back is a
// rejection whose outcome says stale_base and what moved, on record.
func TestJournal_SendBack_RejectsWithStaleBase(t *testing.T) {
	j, rec, clk, _ := setup(t)
	p := newProposal(t, clk.Now(), "a")
	j.Submit(p)
	got, err := j.SendBack(p.ID, "owner:web", "", "main moved from 1111 to 2222")
	if err != nil || got.State != proposal.Rejected || got.Outcome == nil || got.Outcome.Code != "stale_base" ||
		!strings.Contains(got.Outcome.Message, "main moved from 1111 to 2222") || got.Decision == nil || got.Decision.Approved {
		t.Fatalf("SendBack = %+v %+v, %v", got.State, got.Outcome, err)
	}
	if ev := rec.events[len(rec.events)-1]; ev.Type != EventRejected || ev.Code != "stale_base" {
		t.Fatalf("event = %+v", ev)
	}
	if _, err := j.SendBack(p.ID, "owner:web", "", "again"); !errors.Is(err, ErrNotPending) {
		t.Fatalf("a second send back: %v", err)
	}
}

func TestJournal_Cancel_OwnerOnlyWhilePending(t *testing.T) {
	j, _, clk, _ := setup(t)
	p := newProposal(t, clk.Now(), "owner")
	j.Submit(p)
	if _, err := j.Cancel(p.ID, "intruder"); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("Cancel by another agent = %v, want ErrNotOwner", err)
	}
	got, err := j.Cancel(p.ID, "owner")
	if err != nil || got.State != proposal.Cancelled {
		t.Fatalf("Cancel = %s, %v", got.State, err)
	}
	if _, err := j.Cancel(p.ID, "owner"); !errors.Is(err, ErrNotPending) {
		t.Fatalf("second Cancel = %v, want ErrNotPending", err)
	}
	q := newProposal(t, clk.Now(), "owner")
	j.Submit(q)
	j.Approve(q.ID, q.Digest, "person", "")
	if _, err := j.Cancel(q.ID, "owner"); !errors.Is(err, ErrNotPending) {
		t.Fatalf("Cancel after approval = %v, want ErrNotPending", err)
	}
	if _, err := j.Cancel("nope", "owner"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Cancel of unknown id = %v", err)
	}
}

func TestJournal_Transition_RefusesInvalid(t *testing.T) {
	j, rec, clk, _ := setup(t)
	p := newProposal(t, clk.Now(), "a")
	j.Submit(p)
	if _, err := j.Transition(p.ID, proposal.Pending, proposal.Completed, Details{By: "x"}); !errors.Is(err, proposal.ErrInvalidTransition) {
		t.Fatalf("pending → completed = %v", err)
	}
	if _, err := j.Transition(p.ID, proposal.Approved, proposal.Executing, Details{}); !errors.Is(err, ErrStateChanged) {
		t.Fatalf("stale from = %v", err)
	}
	if _, err := j.MarkExecuting(p.ID, p.Digest); !errors.Is(err, proposal.ErrInvalidTransition) {
		t.Fatalf("MarkExecuting while pending = %v", err)
	}
	if _, err := j.Complete(p.ID, "executor", Outcome{}); !errors.Is(err, proposal.ErrInvalidTransition) {
		t.Fatalf("Complete while pending = %v", err)
	}
	if n := len(rec.events); n != 1 {
		t.Fatalf("refused transitions were recorded: %v", rec.types())
	}
}

func TestJournal_Lifecycle_FullRun(t *testing.T) {
	j, rec, clk, _ := setup(t)
	p := newProposal(t, clk.Now(), "a")
	j.Submit(p)
	j.Approve(p.ID, p.Digest, "person", "")
	if _, err := j.MarkExecuting(p.ID, "sha256:"+strings.Repeat("1", 64)); !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("MarkExecuting with another digest = %v", err)
	}
	if _, err := j.MarkExecuting(p.ID, p.Digest); err != nil {
		t.Fatal(err)
	}
	got, err := j.Complete(p.ID, "executor", Outcome{RestorePoint: "rp-1"})
	if err != nil || got.State != proposal.Completed || got.Version != 4 || got.Outcome.RestorePoint != "rp-1" {
		t.Fatalf("Complete = %+v, %v", got, err)
	}
	for i, s := range got.History {
		if s.Version != uint64(i+1) {
			t.Fatalf("history versions: %+v", got.History)
		}
	}
	want := []string{EventSubmitted, EventApproved, EventExecuting, EventCompleted}
	if got := rec.types(); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

func TestJournal_Recorder_FailureAbortsTransition(t *testing.T) {
	j, rec, clk, _ := setup(t)
	changes, cancel := j.Subscribe()
	defer cancel()
	p := newProposal(t, clk.Now(), "a")
	rec.fail.Store(true)
	if _, _, err := j.Submit(p); !errors.Is(err, ErrAudit) {
		t.Fatalf("Submit with a failing recorder = %v, want ErrAudit", err)
	}
	if _, err := j.Get(p.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the unrecorded submit was stored: %v", err)
	}
	rec.fail.Store(false)
	j.Submit(p)
	<-changes
	rec.fail.Store(true)
	if _, err := j.Approve(p.ID, p.Digest, "person", ""); !errors.Is(err, ErrAudit) {
		t.Fatalf("Approve with a failing recorder = %v", err)
	}
	if got, _ := j.Get(p.ID); got.State != proposal.Pending || got.Version != 1 {
		t.Fatalf("unrecorded approval took effect: %s v%d", got.State, got.Version)
	}
	select {
	case c := <-changes:
		t.Fatalf("an aborted transition was announced: %+v", c)
	default:
	}
}

func TestJournal_Recover_AtStartUp(t *testing.T) {
	rec, clk := &memRecorder{}, newClock()
	j, path := testJournal(t, Options{Recorder: rec, Now: clk.Now})
	executing := newProposal(t, clk.Now(), "a")
	stillGood := newProposal(t, clk.Now(), "a")
	gone := newProposal(t, clk.Now(), "a")
	waiting := newProposal(t, clk.Now(), "a")
	for _, p := range []proposal.Proposal{executing, stillGood, gone, waiting} {
		if _, _, err := j.Submit(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []proposal.Proposal{executing, stillGood, gone} {
		j.Approve(p.ID, p.Digest, "person", "")
	}
	j.MarkExecuting(executing.ID, executing.Digest)
	j.Close()

	clk.Advance(time.Hour)
	j, err := Open(path, Options{Recorder: rec, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	r, err := j.Recover(func(rec Record) error {
		if rec.Proposal.ID == gone.ID {
			return &errcode.Error{Code: errcode.StaleBase, Msg: "pins moved"}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.NeedsReconciliation, []string{executing.ID}) || !slices.Equal(r.Expired, []string{waiting.ID}) ||
		!slices.Equal(r.Revalidated, []string{stillGood.ID}) || !slices.Equal(r.Invalidated, []string{gone.ID}) {
		t.Fatalf("Recover = %+v", r)
	}
	want := map[string]proposal.State{executing.ID: proposal.NeedsReconciliation, stillGood.ID: proposal.Approved,
		gone.ID: proposal.Failed, waiting.ID: proposal.Expired}
	for id, st := range want {
		if got, _ := j.Get(id); got.State != st {
			t.Errorf("%s is %s, want %s", id, got.State, st)
		}
	}
	if got, _ := j.Get(gone.ID); got.Outcome == nil || got.Outcome.Code != "stale_base" {
		t.Errorf("invalidated outcome = %+v", got.Outcome)
	}
	// A second start-up finds nothing to do.
	r, err = j.Recover(nil)
	if err != nil || len(r.NeedsReconciliation)+len(r.Expired)+len(r.Invalidated) != 0 {
		t.Fatalf("second Recover = %+v, %v", r, err)
	}
}

func TestJournal_ExpireDue(t *testing.T) {
	j, _, clk, _ := setup(t)
	early := newProposal(t, clk.Now(), "a")
	j.Submit(early)
	clk.Advance(10 * time.Minute)
	late := newProposal(t, clk.Now(), "a")
	j.Submit(late)
	clk.Advance(6 * time.Minute)
	ids, err := j.ExpireDue()
	if err != nil || !slices.Equal(ids, []string{early.ID}) {
		t.Fatalf("ExpireDue = %v, %v", ids, err)
	}
	if got, _ := j.Get(late.ID); got.State != proposal.Pending {
		t.Fatalf("the later proposal is %s", got.State)
	}
}

func TestJournal_Prune_Retention(t *testing.T) {
	rec, clk := &memRecorder{}, newClock()
	j, _ := testJournal(t, Options{Recorder: rec, Now: clk.Now, Retention: 24 * time.Hour})
	old := newProposal(t, clk.Now(), "a")
	old.IdempotencyKey = "k"
	reseal(t, &old)
	j.Submit(old)
	j.Reject(old.ID, "person", "")
	open := newProposal(t, clk.Now(), "a")
	j.Submit(open)
	j.Approve(open.ID, open.Digest, "person", "")
	clk.Advance(25 * time.Hour)
	recent := newProposal(t, clk.Now(), "a")
	j.Submit(recent)
	j.Reject(recent.ID, "person", "")

	n, err := j.Prune()
	if err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want 1", n, err)
	}
	if _, err := j.Get(old.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("old terminal record survived: %v", err)
	}
	for _, id := range []string{open.ID, recent.ID} {
		if _, err := j.Get(id); err != nil {
			t.Fatalf("%s was pruned: %v", id, err)
		}
	}
	// The idempotency key went with the record: it now means a new intent.
	again := newProposal(t, clk.Now(), "a")
	again.IdempotencyKey = "k"
	reseal(t, &again)
	if _, replayed, err := j.Submit(again); err != nil || replayed {
		t.Fatalf("Submit after prune = %v, replayed %v", err, replayed)
	}
}

func TestJournal_Subscribe_SeesCommittedChanges(t *testing.T) {
	j, _, clk, _ := setup(t)
	ch, cancel := j.Subscribe()
	p := newProposal(t, clk.Now(), "a")
	j.Submit(p)
	j.Reject(p.ID, "person", "")
	first, second := <-ch, <-ch
	if first.ID != p.ID || first.To != proposal.Pending || first.From != "" || first.Seq+1 != second.Seq ||
		second.From != proposal.Pending || second.To != proposal.Rejected || second.Version != 2 {
		t.Fatalf("changes = %+v, %+v", first, second)
	}
	cancel()
	if _, ok := <-ch; ok {
		t.Fatalf("channel still open after cancel")
	}
	cancel() // idempotent
}

func TestJournal_WaitSettled(t *testing.T) {
	j, _, clk, _ := setup(t)

	t.Run("wakes on a decision", func(t *testing.T) {
		p := newProposal(t, clk.Now(), "a")
		j.Submit(p)
		go func() {
			time.Sleep(20 * time.Millisecond)
			j.Reject(p.ID, "person", "no")
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, err := j.WaitSettled(ctx, p.ID)
		if err != nil || got.State != proposal.Rejected {
			t.Fatalf("WaitSettled = %s, %v", got.State, err)
		}
	})
	t.Run("approval is not settled", func(t *testing.T) {
		p := newProposal(t, clk.Now(), "a")
		j.Submit(p)
		j.Approve(p.ID, p.Digest, "person", "")
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		got, err := j.WaitSettled(ctx, p.ID)
		if err != nil || got.State != proposal.Approved {
			t.Fatalf("WaitSettled = %s, %v; want the current state at the deadline", got.State, err)
		}
	})
	t.Run("expires an overdue proposal", func(t *testing.T) {
		p := newProposal(t, clk.Now().Add(-15*time.Minute+30*time.Millisecond), "a")
		p.ExpiresAt = proposal.At(clk.Now().Add(30 * time.Millisecond))
		reseal(t, &p)
		if _, _, err := j.Submit(p); err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(10 * time.Millisecond)
			clk.Advance(time.Second)
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, err := j.WaitSettled(ctx, p.ID)
		if err != nil || got.State != proposal.Expired {
			t.Fatalf("WaitSettled = %s, %v", got.State, err)
		}
	})
	t.Run("unknown id", func(t *testing.T) {
		if _, err := j.WaitSettled(context.Background(), "nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("WaitSettled = %v", err)
		}
	})
}

func TestJournal_Collisions(t *testing.T) {
	j, _, clk, _ := setup(t)
	a := newProposal(t, clk.Now(), "a", "src/x.go", "docs")
	j.Submit(a)
	decided := newProposal(t, clk.Now(), "a", "src/x.go")
	j.Submit(decided)
	j.Reject(decided.ID, "person", "")

	b := newProposal(t, clk.Now(), "b", "docs/guide.md", "src/y.go")
	got, err := j.Collisions(b)
	if err != nil || len(got) != 1 || got[0].ProposalID != a.ID || !slices.Equal(got[0].Files, []string{"docs/guide.md"}) {
		t.Fatalf("Collisions = %+v, %v", got, err)
	}
	c := newProposal(t, clk.Now(), "b", "src/y.go")
	if got, _ := j.Collisions(c); len(got) != 0 {
		t.Fatalf("Collisions for disjoint files = %+v", got)
	}
}

func TestJournal_List_Filters(t *testing.T) {
	j, _, clk, _ := setup(t)
	var ids []string
	for i := range 4 {
		agent := "a"
		if i%2 == 1 {
			agent = "b"
		}
		p := newProposal(t, clk.Now(), agent)
		j.Submit(p)
		ids = append(ids, p.ID)
		clk.Advance(time.Second)
	}
	j.Reject(ids[0], "person", "")
	all, _ := j.List(Filter{})
	if len(all) != 4 || all[0].Proposal.ID != ids[3] {
		t.Fatalf("List = %d records, first %s; want newest first", len(all), all[0].Proposal.ID)
	}
	pendingA, _ := j.List(Filter{Agent: "a", States: []proposal.State{proposal.Pending}})
	if len(pendingA) != 1 || pendingA[0].Proposal.ID != ids[2] {
		t.Fatalf("pending of a = %+v", pendingA)
	}
	if two, _ := j.List(Filter{Limit: 2}); len(two) != 2 {
		t.Fatalf("Limit ignored")
	}
}

func TestJournal_Closed_Refuses(t *testing.T) {
	j, _, clk, _ := setup(t)
	j.Close()
	if _, _, err := j.Submit(newProposal(t, clk.Now(), "a")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Submit after Close = %v", err)
	}
	if _, err := j.Get("x"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close = %v", err)
	}
}

// Prune reads the records created before its cutoff and no other: a
// record made since is never decoded, however many there are (here one
// that would not even decode).
func TestJournal_Prune_ReadsOnlyTheOld(t *testing.T) {
	clk := newClock()
	j, _ := testJournal(t, Options{Recorder: &memRecorder{}, Now: clk.Now, Retention: 24 * time.Hour})
	old := newProposal(t, clk.Now(), "a")
	j.Submit(old)
	j.Reject(old.ID, "person", "")
	oldOpen := newProposal(t, clk.Now(), "a")
	j.Submit(oldOpen)
	clk.Advance(25 * time.Hour)
	recent := newProposal(t, clk.Now(), "a")
	j.Submit(recent)
	j.Reject(recent.ID, "person", "")
	var saved []byte
	put := func(v []byte) {
		t.Helper()
		if err := j.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketProposals)
			saved = bytes.Clone(b.Get([]byte(recent.ID)))
			return b.Put([]byte(recent.ID), v)
		}); err != nil {
			t.Fatal(err)
		}
	}
	put([]byte("{not a record"))
	n, err := j.Prune()
	put(saved) // the indexes' check at cleanup reads every record
	if err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want 1 and no read of the record made since the cutoff", n, err)
	}
	if _, err := j.Get(old.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the old decided record survived: %v", err)
	}
	if _, err := j.Get(oldOpen.ID); err != nil {
		t.Fatalf("an old record still open was pruned: %v", err)
	}
}
