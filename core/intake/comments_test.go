package intake

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// A rejection's notes on files and lines reach the agent in the status and
// wait answers, as the wire spells them.
func TestProposals_RejectionComments_InStatusAndWait(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := t.Context()
	p := e.commitProposal(t, "agent-a", "README.md", "src/main.go")
	if _, err := e.client.SubmitProposal(ctx, "agent-a", p); err != nil {
		t.Fatal(err)
	}
	cs := []journal.Comment{
		{Path: "README.md", Note: "say what the flag is for"},
		{Path: "src/main.go", Line: 12, Side: journal.SideNew, Note: "this never ends"},
		{Path: "src/main.go", Line: 3, Side: journal.SideOld, Note: "keep this check"},
	}
	if _, err := e.j.RejectWith(p.ID, "owner:web", "not like this", cs); err != nil {
		t.Fatal(err)
	}
	want := []gateway.Comment{
		{Path: "README.md", Note: "say what the flag is for"},
		{Path: "src/main.go", Line: 12, Side: "new", Note: "this never ends"},
		{Path: "src/main.go", Line: 3, Side: "old", Note: "keep this check"},
	}
	st, err := e.client.WaitProposal(ctx, "agent-a", p.ID, 5*time.Second)
	if err != nil || st.Status != proposal.Rejected || st.Decision == nil || !slices.Equal(st.Decision.Comments, want) {
		t.Fatalf("WaitProposal = %+v, %v", st.Decision, err)
	}
	st, err = e.client.GetProposal(ctx, "agent-a", p.ID)
	if err != nil || st.Decision == nil || !slices.Equal(st.Decision.Comments, want) {
		t.Fatalf("GetProposal = %+v, %v", st.Decision, err)
	}
	status, body := raw(t, e.srv.Addr(), e.req("GET", "/v1/proposals/"+p.ID))
	if status != 200 || !strings.Contains(body, `"comments":[{"path":"README.md","line":0,"note":"say what the flag is for"},{"path":"src/main.go","line":12,"side":"new","note":"this never ends"}`) {
		t.Fatalf("GET = %d %s", status, body)
	}
}
