package sidecar

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/proposal"
)

// A rejection's notes on files and lines are in the tool's output, and its
// error says that they are there.
func TestStatusOut_RejectionComments(t *testing.T) {
	st := gateway.ProposalStatus{ProposalID: "p-1", Status: proposal.Rejected, Terminal: true,
		Decision: &gateway.Decision{By: "owner:web", Note: "not yet", At: "2026-12-05T10:00:00Z", Comments: []gateway.Comment{
			{Path: "README.md", Note: "say why"},
			{Path: "main.go", Line: 7, Side: "old", Note: "keep this"},
		}}}
	out := statusOut(st)
	want := []CommentOut{{Path: "README.md", Note: "say why"}, {Path: "main.go", Line: 7, Side: "old", Note: "keep this"}}
	if out.Decision == nil || !slices.Equal(out.Decision.Comments, want) {
		t.Fatalf("statusOut decision = %+v", out.Decision)
	}
	te := outcomeError(out)
	if te == nil || te.Code != errcode.ProposalRefused || !strings.Contains(te.Message, "not yet (with 2 note(s) on files and lines in decision.comments)") {
		t.Fatalf("outcomeError = %+v", te)
	}
	st.Decision.Comments = nil
	if te := outcomeError(statusOut(st)); strings.Contains(te.Message, "decision.comments") {
		t.Fatalf("without comments, outcomeError = %+v", te)
	}
}
