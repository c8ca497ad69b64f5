package app

import (
	"testing"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/proposal"
)

// TestCard_CarriesTheOperationsWords: the card, the pending list and
// History carry what the UI says of the operation, from its definition:
// its label, the branch its row is called by and its outcome's facts.
func TestCard_CarriesTheOperationsWords(t *testing.T) {
	a, repo, env := flowEnv(t)
	api := &API{app: a, kind: "web"}
	for _, b := range []string{"done-1", "done-2"} {
		gitxtest.Git(t, repo, "branch", b)
	}
	card := proposeCard(t, api, env, "propose_branch_delete", map[string]any{
		"repoPath": repo, "reason": "Clean up merged branches", "branches": []string{"done-1", "done-2"},
	})
	check := func(where string, c Card) {
		t.Helper()
		if c.Label != "branch delete" || c.SubjectBranch != "done-1, done-2" ||
			c.OpFacts != (proposal.OutcomeFacts{DeletesBranches: true}) || c.StepLabels != nil {
			t.Fatalf("%s: label %q, subject branch %q, facts %+v, step labels %v", where, c.Label, c.SubjectBranch, c.OpFacts, c.StepLabels)
		}
	}
	check("card", card)
	pending, err := api.Pending()
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 {
		t.Fatalf("%d pending", len(pending))
	}
	check("pending", pending[0])
	approveAndWait(t, api, card, "")
	check("History", historyCard(t, api, card.ID))
}
