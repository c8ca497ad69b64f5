package sidecar

import (
	"strings"
	"testing"
	"time"
)

// A proposal waits a day by default. proposal_wait answers in bounded
// slices all along: each call comes back pending, says until when the
// proposal waits and that the agent may call again or come back later,
// and the next call still reaches the decision.
func TestProposalWait_DayLongExpiry_AnswersInSlices(t *testing.T) {
	e := newProposeEnv(t, envOpt{})
	before := time.Now()
	p := e.mustPropose(t, "propose_branch", withCommon(e, map[string]any{"name": "agent/overnight"}))
	expires, err := time.Parse(time.RFC3339Nano, p.ExpiresAt)
	if err != nil {
		t.Fatalf("expiresAt %q: %v", p.ExpiresAt, err)
	}
	if d := expires.Sub(before); d < 24*time.Hour-time.Minute || d > 24*time.Hour+time.Minute {
		t.Fatalf("a proposal waits %s by default, want a day", d)
	}
	for i := 0; i < 2; i++ {
		res, out := call(t, e.cs, "proposal_wait", map[string]any{"proposalId": p.ProposalID, "timeoutSeconds": 1})
		if res.IsError || out.Status != "pending" || out.Done || out.NextAction != "proposal_wait" {
			t.Fatalf("wait %d: %+v (isError %v)", i+1, out, res.IsError)
		}
		if !strings.Contains(out.Message, "it waits until "+p.ExpiresAt) || !strings.Contains(out.Message, "call proposal_wait again") {
			t.Fatalf("wait %d says %q", i+1, out.Message)
		}
	}
	if _, err := e.j.Approve(p.ProposalID, p.Digest, "person", ""); err != nil {
		t.Fatal(err)
	}
	res, out := call(t, e.cs, "proposal_wait", map[string]any{"proposalId": p.ProposalID, "timeoutSeconds": 1})
	if res.IsError || out.Status != "approved" || out.Decision == nil || !out.Decision.Approved {
		t.Fatalf("after the decision: %+v (isError %v)", out, res.IsError)
	}
}
