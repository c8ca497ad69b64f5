package journal

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// errExpiredOnArrival is ErrExpired for a proposal whose expiry passed
// before Submit stored it: the sender's mistake, not a proposal that ended.
var errExpiredOnArrival = fmt.Errorf("%w before it arrived", ErrExpired)

// codes maps each sentinel of the journal to the code and message every
// boundary answers with, in the order they are tried (the more precise
// first).
var codes = []struct {
	err  error
	code errcode.Code
	msg  string
}{
	{ErrNotFound, errcode.ProposalNotFound, "no proposal with this id"},
	{ErrNotOwner, errcode.Forbidden, "the proposal belongs to another agent"},
	{errExpiredOnArrival, errcode.InvalidArgument, "the proposal expired before it arrived"},
	{ErrNotPending, errcode.ProposalTerminal, "the proposal is no longer pending"},
	{ErrExpired, errcode.ProposalTerminal, "the proposal is no longer pending"},
	{ErrPendingCap, errcode.TooManyPending, "this agent has too many pending proposals; wait for decisions or cancel some"},
	{ErrDuplicateID, errcode.Conflict, "a proposal with this id already exists"},
	{ErrIdempotencyConflict, errcode.Conflict, "this idempotency key was already used for a different request"},
	{ErrDigestMismatch, errcode.DigestMismatch, "the proposal is not the one shown on the card; reload and decide again"},
	{ErrAudit, errcode.AuditFailed, "the audit ledger cannot be written, so nothing was changed"},
	{ErrClosed, errcode.Unavailable, "the app is shutting down"},
}

// Coded is err as the *errcode.Error that every boundary answers with (the
// gateway to a sidecar, the UI to the person): the one place the journal's
// sentinels, and core/proposal's that it passes on (proposal.Coded),
// become codes. The sentinel stays in the chain, so errors.Is still finds
// it. Any other error is returned as it is.
func Coded(err error) error {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return &errcode.Error{Code: c.code, Msg: c.msg, Err: err}
		}
	}
	return proposal.Coded(err)
}
