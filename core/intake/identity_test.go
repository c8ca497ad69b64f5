package intake

import (
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/policy"
	"github.com/sluicehq/sluice/core/proposal"
)

// TestSubmit_TokenIdentity: a sidecar that authenticated the agent's HTTP
// token says so, and the stored proposal records it under its digest; a
// rule for the token approves that proposal and not one whose agent only
// declared the same name; no client sets agentToken itself; and a confined
// session is known by its own token, whatever header it sends.
func TestSubmit_TokenIdentity(t *testing.T) {
	e, sc, _ := sessionEnv(t)
	p, err := policy.Parse(fmt.Appendf(nil, `{"version": 1, "rules": [{"name": "tok", "agent": "claude-code", "identity": "token", "repos": [%q], "ops": ["branch"]}]}`, e.repo))
	if err != nil {
		t.Fatal(err)
	}
	e.backend.SetPolicy(p)

	stored := func(c *gateway.Client) (proposal.Proposal, bool) {
		t.Helper()
		st, err := c.SubmitProposal(t.Context(), "claude-code", e.branchProposal(t, "claude-code"))
		if err != nil {
			t.Fatal(err)
		}
		rec, err := e.j.Get(st.ProposalID)
		if err != nil {
			t.Fatal(err)
		}
		if err := rec.Proposal.Validate(); err != nil {
			t.Fatalf("the digest does not cover the proposal as stored: %v", err)
		}
		return rec.Proposal, rec.Decision != nil && rec.Decision.Auto
	}

	declared, auto := stored(e.client)
	if declared.AgentToken || declared.Identity() != proposal.IdentityDeclared || auto {
		t.Fatalf("a declared name: identity %s, approved by the token's rule %v", declared.Identity(), auto)
	}
	token, auto := stored(e.client.WithTokenIdentity())
	if !token.AgentToken || token.Identity() != proposal.IdentityToken || !auto {
		t.Fatalf("the token's holder: identity %s, approved by its rule %v", token.Identity(), auto)
	}
	session, auto := stored(sc.WithTokenIdentity())
	if session.AgentToken || session.Identity() != proposal.IdentitySession || auto {
		t.Fatalf("a confined session: identity %s, approved by the token's rule %v", session.Identity(), auto)
	}

	forged := e.branchProposal(t, "claude-code")
	forged.AgentToken = true
	reseal(t, &forged)
	if _, err := e.client.SubmitProposal(t.Context(), "claude-code", forged); !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Fatalf("a proposal that came with agentToken: %v", err)
	}
}
