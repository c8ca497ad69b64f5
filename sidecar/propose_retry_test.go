package sidecar

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// An agent that proposes again under the same key after its proposal
// failed without changing anything gets that proposal back, failed, and is
// told the person can retry it from its card: not a refusal of the key.
func TestPropose_SameKeyAfterFailure_SameProposalAndRetryHint(t *testing.T) {
	e := newProposeEnv(t, envOpt{})
	args := withCommon(e, map[string]any{"name": "agent/retry", "idempotencyKey": "make-agent-retry"})
	p := e.mustPropose(t, "propose_branch", args)
	e.j.Approve(p.ProposalID, p.Digest, "person", "")
	e.j.MarkExecuting(p.ProposalID, p.Digest)
	if _, err := e.j.Fail(p.ProposalID, "executor", journal.Outcome{Code: errcode.RepoLocked, Message: "git's lock files are in the repository (.git/index.lock), so nothing was run"}); err != nil {
		t.Fatal(err)
	}
	args["reason"] = "retrying: the person asked for it"
	// The answer is the proposal as it is (failed, so an error result, as
	// proposal_wait gives it), never a refusal of the key.
	_, out := call(t, e.cs, "propose_branch", args)
	if out.Error != nil && out.Error.Code == errcode.Conflict {
		t.Fatalf("the agent's retry was refused: %+v", out.Error)
	}
	if out.ProposalID != p.ProposalID || !out.Replayed || out.Status != string(proposal.Failed) || out.Outcome == nil || out.Outcome.Code != errcode.RepoLocked {
		t.Fatalf("retry answer %+v: want proposal %s again, failed", out, p.ProposalID)
	}
	if !strings.Contains(out.Message, "retry it from its card") {
		t.Fatalf("message %q: want it to say the person can retry it", out.Message)
	}
}
