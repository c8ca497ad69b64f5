package proposal

import (
	"fmt"
	"slices"
)

// State is where a proposal is in its lifecycle.
type State string

// Lifecycle states.
const (
	Pending   State = "pending"
	Approved  State = "approved"
	Executing State = "executing"
	Completed State = "completed"
	Failed    State = "failed"
	Rejected  State = "rejected"
	Cancelled State = "cancelled"
	Expired   State = "expired"
	// NeedsReconciliation is an execution interrupted by a crash: a human
	// looks at what happened; it is never re-run blindly.
	NeedsReconciliation State = "needs_reconciliation"
)

// transitions is the whole state machine. Anything not listed is refused.
var transitions = map[State][]State{
	Pending: {Approved, Rejected, Cancelled, Expired},
	// An approved proposal whose pins no longer hold at start-up fails
	// instead of running.
	Approved:            {Executing, Failed},
	Executing:           {Completed, Failed, NeedsReconciliation},
	NeedsReconciliation: {Completed, Failed},
	// A person's Retry: a failed proposal whose outcome says nothing
	// changed (the executor refused before it wrote, so it kept no restore
	// point) is the same sealed change, still unmade, and once the cause
	// is fixed (a dirty checkout, a lock, a missing identity) it may run
	// as it was approved. The journal allows this move for such outcomes
	// only (journal.Retry): a failure that changed something is for the
	// person to look at and restore, never to run again.
	Failed: {Approved},
}

// States lists every state.
func States() []State {
	return []State{Pending, Approved, Executing, Completed, Failed, Rejected, Cancelled, Expired, NeedsReconciliation}
}

// Valid reports whether s is a known state.
func (s State) Valid() bool { return slices.Contains(States(), s) }

// Terminal reports whether s is final: nothing will happen to the proposal
// any more, unless a person retries a failure that changed nothing.
func (s State) Terminal() bool {
	switch s {
	case Completed, Failed, Rejected, Cancelled, Expired:
		return true
	}
	return false
}

// Settled reports whether s is worth reporting to a waiting agent as the
// outcome: terminal, or waiting for a human to reconcile.
func (s State) Settled() bool { return s.Terminal() || s == NeedsReconciliation }

// Next lists the states s may move to.
func (s State) Next() []State { return slices.Clone(transitions[s]) }

// CanTransition reports whether from → to is allowed.
func CanTransition(from, to State) bool { return slices.Contains(transitions[from], to) }

// CheckTransition returns a *TransitionError unless from → to is allowed.
func CheckTransition(from, to State) error {
	if !CanTransition(from, to) {
		return &TransitionError{From: from, To: to}
	}
	return nil
}

// TransitionError is a refused state change. errors.Is(err,
// ErrInvalidTransition) holds for it.
type TransitionError struct {
	From, To State
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("%v: %s → %s", ErrInvalidTransition, e.From, e.To)
}

// Unwrap makes errors.Is(err, ErrInvalidTransition) true.
func (e *TransitionError) Unwrap() error { return ErrInvalidTransition }
