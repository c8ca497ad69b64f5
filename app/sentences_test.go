package app

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/proposal"
)

// proposeCard has the agent call tool and returns the card it made.
func proposeCard(t *testing.T, api *API, env []string, tool string, args map[string]any) Card {
	t.Helper()
	cs := agentSession(t, env, "codex")
	out, isErr := callTool(t, cs, tool, args)
	if isErr {
		t.Fatalf("%s: %v", tool, out)
	}
	card, err := api.Proposal(out["proposalId"].(string))
	if err != nil {
		t.Fatal(err)
	}
	return card
}

// approveAndWait approves a card with the word typed and waits until it
// landed.
func approveAndWait(t *testing.T, api *API, card Card, word string) {
	t.Helper()
	if _, err := api.Approve(Decision{ID: card.ID, Digest: card.Digest, Confirm: word}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	waitFor(t, desktopWait, "the proposal to complete", func() bool {
		c, _ := api.Proposal(card.ID)
		return c.State == proposal.Completed
	})
}

// historyCard is id's row in History.
func historyCard(t *testing.T, api *API, id string) Card {
	t.Helper()
	cards, err := api.History(HistoryQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cards {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("%s is not in History", id)
	return Card{}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCard_HardReset_OneFile_CountsAndTenses: a hard reset that throws
// away the work in one file, and drops a commit of five files, says one
// modified file and one commit on the pending card, asks for the branch's
// name, and once it ran says in History what it threw away, in the past.
func TestCard_HardReset_OneFile_CountsAndTenses(t *testing.T) {
	a, repo, env := flowEnv(t)
	api := &API{app: a, kind: "web"}
	gitxtest.Git(t, repo, "branch", "base")
	for i := 1; i <= 5; i++ {
		writeFile(t, filepath.Join(repo, fmt.Sprintf("c%d.txt", i)), fmt.Sprintf("file %d\n", i))
	}
	gitxtest.Git(t, repo, "add", "-A")
	gitxtest.Git(t, repo, "commit", "-q", "-m", "five files")
	writeFile(t, filepath.Join(repo, "README.md"), "hello\nmy uncommitted line\n")

	card := proposeCard(t, api, env, "propose_reset", map[string]any{
		"repoPath": repo, "reason": "Start over", "mode": "hard", "target": "base", "branch": "main",
	})
	const future = "throws away uncommitted work in 1 modified file and makes 1 commit unreachable"
	if card.Tense != proposal.Future || card.RiskWhy != future || card.LossWhy != future {
		t.Fatalf("pending card: tense %s, risk why %q, loss %q", card.Tense, card.RiskWhy, card.LossWhy)
	}
	if card.Losses == nil || *card.Losses != (proposal.Losses{Modified: 1, Commits: 1}) {
		t.Fatalf("losses %+v", card.Losses)
	}
	if card.ConfirmWord != "main" || card.ConfirmWhat != "the name of the branch this rewrites" {
		t.Fatalf("confirmation %q (%q)", card.ConfirmWord, card.ConfirmWhat)
	}
	approveAndWait(t, api, card, "main")
	const past = "threw away uncommitted work in 1 modified file and made 1 commit unreachable"
	if h := historyCard(t, api, card.ID); h.Tense != proposal.Past || h.RiskWhy != past || h.LossWhy != past {
		t.Fatalf("History: tense %s, risk why %q, loss %q", h.Tense, h.RiskWhy, h.LossWhy)
	}
}

// TestCard_MergedBranchDelete_NoConfirmation: deleting branches whose
// commits are all on main is not destructive: no word to type, and the
// card says nothing is lost; History says nothing was.
func TestCard_MergedBranchDelete_NoConfirmation(t *testing.T) {
	a, repo, env := flowEnv(t)
	api := &API{app: a, kind: "web"}
	for _, b := range []string{"done-1", "done-2", "done-3"} {
		gitxtest.Git(t, repo, "branch", b)
	}
	writeFile(t, filepath.Join(repo, "more.txt"), "more\n")
	gitxtest.Git(t, repo, "add", "more.txt")
	gitxtest.Git(t, repo, "commit", "-q", "-m", "main moves on")

	card := proposeCard(t, api, env, "propose_branch_delete", map[string]any{
		"repoPath": repo, "reason": "Clean up merged branches", "branches": []string{"done-1", "done-2", "done-3"},
	})
	if card.Destructive || card.ConfirmWord != "" || card.Risk != proposal.RiskMedium || card.LossWhy != "" {
		t.Fatalf("card: destructive %v, word %q, risk %s, loss %q", card.Destructive, card.ConfirmWord, card.Risk, card.LossWhy)
	}
	const future = "deletes 3 branches (done-1, done-2 and done-3); every commit on them is in the checked-out branch or in an upstream, so nothing is lost"
	if card.RiskWhy != future {
		t.Fatalf("risk why %q", card.RiskWhy)
	}
	approveAndWait(t, api, card, "")
	const past = "deleted 3 branches (done-1, done-2 and done-3); every commit on them was in the checked-out branch or in an upstream, so nothing was lost"
	if h := historyCard(t, api, card.ID); h.RiskWhy != past {
		t.Fatalf("History: %q", h.RiskWhy)
	}
}

// TestCard_Discard_ConfirmWordIsTheBranch: a discard names no branch, and
// the word to type is the checked-out branch's name, never "discard".
func TestCard_Discard_ConfirmWordIsTheBranch(t *testing.T) {
	a, repo, env := flowEnv(t)
	api := &API{app: a, kind: "web"}
	writeFile(t, filepath.Join(repo, "README.md"), "hello\nmine\n")
	card := proposeCard(t, api, env, "propose_discard", map[string]any{
		"repoPath": repo, "reason": "Drop my draft", "paths": []string{"."},
	})
	if !card.Destructive || card.ConfirmWord != "main" || card.ConfirmWhat != "the name of the branch whose checkout this changes" {
		t.Fatalf("confirmation: destructive %v, %q (%q)", card.Destructive, card.ConfirmWord, card.ConfirmWhat)
	}
	if card.RiskWhy != "throws away uncommitted work in 1 modified file" {
		t.Errorf("risk why %q", card.RiskWhy)
	}
}

// TestConfirmation_NeverAnOperationName: an unsealed deletion of several
// branches asks for the repository's name, not "branch_delete".
func TestConfirmation_NeverAnOperationName(t *testing.T) {
	p := proposal.Proposal{Op: proposal.OpBranchDelete, Repo: "/src/docs-site",
		Args: &proposal.BranchDeleteArgs{Branches: []string{"a", "b", "c"}}}
	if w, what := confirmation(p); w != "docs-site" || what != "the name of the repository" {
		t.Fatalf("%q (%q)", w, what)
	}
	p = proposal.Proposal{Op: proposal.OpPush, Repo: "/src/shop",
		Args: &proposal.PushArgs{Remote: "origin", Branch: "agent/x", ForceWithLease: true}}
	if w, _ := confirmation(p); w != "agent/x" {
		t.Fatalf("forced push: %q", w)
	}
}
