package proposal

import (
	"errors"
	"testing"
)

func TestState_Transitions(t *testing.T) {
	allowed := map[[2]State]bool{
		{Pending, Approved}: true, {Pending, Rejected}: true, {Pending, Cancelled}: true, {Pending, Expired}: true,
		{Approved, Executing}: true, {Approved, Failed}: true,
		{Executing, Completed}: true, {Executing, Failed}: true, {Executing, NeedsReconciliation}: true,
		{NeedsReconciliation, Completed}: true, {NeedsReconciliation, Failed}: true,
		{Failed, Approved}: true,
	}
	for _, from := range States() {
		for _, to := range States() {
			err := CheckTransition(from, to)
			if allowed[[2]State{from, to}] {
				if err != nil {
					t.Errorf("%s → %s refused: %v", from, to, err)
				}
				continue
			}
			var te *TransitionError
			if !errors.Is(err, ErrInvalidTransition) || !errors.As(err, &te) || te.From != from || te.To != to {
				t.Errorf("%s → %s = %v, want a *TransitionError", from, to, err)
			}
		}
	}
}

func TestState_TerminalHasNoWayOut(t *testing.T) {
	for _, s := range States() {
		// The one way out of a terminal state: a person retries a failure
		// that changed nothing (the journal checks the outcome).
		if s == Failed {
			if next := s.Next(); len(next) != 1 || next[0] != Approved {
				t.Errorf("failed can move to %v, want only approved (a retry)", next)
			}
			continue
		}
		if s.Terminal() && len(s.Next()) != 0 {
			t.Errorf("terminal state %s can move to %v", s, s.Next())
		}
		if !s.Terminal() && len(s.Next()) == 0 {
			t.Errorf("non-terminal state %s is a dead end", s)
		}
	}
	if Approved.Settled() || Executing.Settled() || !NeedsReconciliation.Settled() || !Expired.Settled() {
		t.Fatalf("Settled is wrong")
	}
}
