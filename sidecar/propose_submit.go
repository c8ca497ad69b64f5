package sidecar

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/proposal"
)

// submitRetryFor bounds how long one propose call keeps sending its
// proposal again after the app's answer was lost.
var submitRetryFor = 20 * time.Second

// callKey is the idempotency key of a propose call the agent gave none:
// its own, used by every send of this call and by nothing else, so that
// a resend after a lost answer finds what the app stored, while two calls
// with the same arguments stay two proposals.
func callKey() string { return "call-" + uuid.NewString() }

// submit sends p, which carries an idempotency key (the agent's or the
// call's own). When the app may have stored p but its answer was lost (it
// stopped or restarted mid-request), the same sealed proposal is sent
// again under the same key until the app answers or submitRetryFor runs
// out: an answer then is the stored proposal (replayed), never a second
// one. The app's address is read again for each send, since a restarted
// app listens on a new port. A submit the app does not answer in time
// (a very large change is still being sealed) is answered by the
// proposal's status instead: "sealing", and proposal_wait follows it. If
// no answer comes at all, the agent is told that the proposal may have
// been stored, and how to find out and retry safely.
func (s *Sidecar) submit(ctx context.Context, p proposal.Proposal) (gateway.ProposalStatus, error) {
	deadline := time.Now().Add(submitRetryFor)
	pause := 100 * time.Millisecond
	lost := false
	for {
		c, err := s.gateway()
		if err == nil {
			var st gateway.ProposalStatus
			if st, err = c.SubmitProposal(ctx, p.Agent, p); err == nil {
				return st, nil
			}
			// No answer in time from an app that is up: it may be sealing
			// a large change still (or hold the proposal already). Ask it,
			// by id, rather than tell the agent it stopped answering.
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				if st, gerr := c.GetProposal(ctx, p.Agent, p.ID); gerr == nil {
					return st, nil
				}
			}
		}
		lost = lost || errors.Is(err, gateway.ErrAnswerLost)
		switch {
		case !lost:
			return gateway.ProposalStatus{}, gatewayToolError(err)
		case !errors.Is(err, gateway.ErrUnavailable):
			// The app answered a resend with a refusal: that is its answer.
			return gateway.ProposalStatus{}, gatewayToolError(err)
		case ctx.Err() != nil || time.Now().Add(pause).After(deadline):
			return gateway.ProposalStatus{}, answerLost(p)
		}
		select {
		case <-ctx.Done():
			return gateway.ProposalStatus{}, answerLost(p)
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// answerLost is the error of a submit whose answer never came: not
// "failed", since the app may hold the proposal.
func answerLost(p proposal.Proposal) error {
	return &errcode.Error{Code: errcode.GatewayUnavailable,
		Msg: fmt.Sprintf("the Sluice app stopped answering after this proposal was sent, so it may have been stored as proposal %s. "+
			"Once Sluice answers, check with proposal_status or proposal_wait (proposalId %q). To try again, call this tool with "+
			"the same arguments and idempotencyKey %q: that returns the stored proposal instead of making a second one", p.ID, p.ID, p.IdempotencyKey),
		Data: map[string]any{"proposalId": p.ID, "idempotencyKey": p.IdempotencyKey, "mayBeStored": true}}
}
