package app

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/core/apply"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// Retry runs again a proposal that failed without changing anything,
// once the person fixed what stopped it (a dirty checkout, a lock of
// git's, a missing identity): the same sealed change, bound to the digest
// on the card, which must still be the proposal's and verify. It is
// refused, as Approve is, while the preflight finds the card stale or
// anything in the way. The journal records it as the person's decision
// (proposal_retried in the ledger) and the executor runs it.
func (api *API) Retry(d Decision) (Card, error) {
	a := api.app
	if len(d.Note) > 2000 {
		return Card{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: "the note is longer than 2000 bytes"}
	}
	if len(d.Comments) > 0 {
		return Card{}, errCommentsNotRejecting
	}
	rec, err := a.record(d.ID)
	if err != nil {
		return Card{}, err
	}
	if !journal.Retryable(rec) {
		return Card{}, notRetryable(rec)
	}
	if d.Digest != rec.Proposal.Digest {
		return Card{}, ErrStaleCard
	}
	if rec.Proposal.Destructive() && d.Confirm != confirmWord(rec.Proposal) {
		return Card{}, ErrConfirmation
	}
	if a.executor == nil {
		return Card{}, errNoRoots
	}
	if err := a.approvable(rec); err != nil {
		return Card{}, err
	}
	rec, err = a.journal.Retry(d.ID, d.Digest, "owner:"+api.kind, d.Note)
	if err != nil {
		switch {
		case errors.Is(err, journal.ErrNotRetryable), errors.Is(err, proposal.ErrInvalidTransition):
			cur, gerr := a.record(d.ID)
			if gerr != nil {
				return Card{}, gerr
			}
			return Card{}, notRetryable(cur)
		}
		return Card{}, decisionError(err)
	}
	return a.cardFor(rec, false), nil
}

// notRetryable says why rec cannot be retried.
func notRetryable(rec journal.Record) error {
	if rec.State != proposal.Failed {
		return &errcode.Error{Code: errcode.ProposalTerminal, Msg: fmt.Sprintf("this proposal is %s; only a failed one can be retried", rec.State)}
	}
	if rec.Outcome == nil || rec.Outcome.RestorePoint == "" {
		return &errcode.Error{Code: errcode.ProposalTerminal, Msg: "this failure was not of an approved execution, so it is not run again: ask the agent to propose again"}
	}
	return &errcode.Error{Code: errcode.ProposalTerminal,
		Msg: "this proposal failed after it may have changed the repository (it kept restore point " + rec.Outcome.RestorePoint + "), so it is not run again: look at the repository, restore it if needed, and ask the agent to propose again"}
}

// blockedError refuses a decision the executor would refuse or fail now,
// with the preflight's sentences: the card stays as it is, and can be
// approved once they are fixed.
func blockedError(pf *apply.Preflight) error {
	return &errcode.Error{Code: errcode.ProposalRefused, Data: map[string]any{"blockers": pf.Blockers},
		Msg: "this cannot land now, so nothing was decided: " + strings.Join(pf.Blockers, "; ")}
}
