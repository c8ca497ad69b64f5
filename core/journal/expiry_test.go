package journal

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/proposal"
)

// A proposal waits a day by default: one made in the evening is still
// there in the morning, and then it expires.
func TestJournal_DefaultPendingExpiry_ADay(t *testing.T) {
	j, _, clk, _ := setup(t)
	if DefaultPendingExpiry != 24*time.Hour {
		t.Fatalf("DefaultPendingExpiry = %s, want 24h", DefaultPendingExpiry)
	}
	p := newProposal(t, clk.Now(), "night-owl")
	p.ExpiresAt = proposal.At(clk.Now().Add(24 * time.Hour))
	reseal(t, &p)
	if _, _, err := j.Submit(p); err != nil {
		t.Fatalf("a day's expiry refused: %v", err)
	}
	tooLong := newProposal(t, clk.Now(), "night-owl")
	tooLong.ExpiresAt = proposal.At(clk.Now().Add(24*time.Hour + time.Second))
	reseal(t, &tooLong)
	if _, _, err := j.Submit(tooLong); !errors.Is(err, proposal.ErrInvalid) {
		t.Fatalf("more than a day by default = %v, want ErrInvalid", err)
	}

	clk.Advance(23*time.Hour + 59*time.Minute)
	if ids, err := j.ExpireDue(); err != nil || len(ids) != 0 {
		t.Fatalf("expired before its day was up: %v %v", ids, err)
	}
	if rec, err := j.Get(p.ID); err != nil || rec.State != proposal.Pending {
		t.Fatalf("after 23h59m: %v %v", rec.State, err)
	}
	clk.Advance(time.Minute)
	if ids, err := j.ExpireDue(); err != nil || len(ids) != 1 || ids[0] != p.ID {
		t.Fatalf("after a day: %v %v", ids, err)
	}
}

// The app allows up to a week (what Settings offers): a journal opened
// with that bound takes a proposal that waits seven days.
func TestJournal_PendingExpiry_AWeekWhenAllowed(t *testing.T) {
	rec, clk := &memRecorder{}, newClock()
	j, _ := testJournal(t, Options{Recorder: rec, Now: clk.Now, PendingExpiry: 7 * 24 * time.Hour})
	p := newProposal(t, clk.Now(), "patient")
	p.ExpiresAt = proposal.At(clk.Now().Add(7 * 24 * time.Hour))
	reseal(t, &p)
	if _, _, err := j.Submit(p); err != nil {
		t.Fatalf("a week's expiry refused: %v", err)
	}
	clk.Advance(6 * 24 * time.Hour)
	if ids, err := j.ExpireDue(); err != nil || len(ids) != 0 {
		t.Fatalf("expired after six days: %v %v", ids, err)
	}
}
