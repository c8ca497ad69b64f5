package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/proposal"
)

// waitCard waits until the card of id satisfies ok, and returns it. It
// waits for a condition (the app's watch looks once a second), bounded
// only so that a broken build fails instead of hanging.
func waitCard(t *testing.T, api *API, id string, what string, ok func(Card) bool) Card {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		c, err := api.Proposal(id)
		if err == nil && ok(c) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: card %+v, err %v", what, c, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReseal_AgentCommits_OneLandsOtherResealed: an agent proposes two
// commits on main through the real sidecar (CHANGELOG.md, then LICENSE).
// The person approves the first; it lands. The second is not sent back:
// the app re-seals it on the new main by itself, the card says so, the
// agent's status still reads pending under the same id, and approving the
// re-sealed card lands the license on top of the changelog. A third,
// which changes the file the person then commits, is marked stale in the
// list with the file named, and Approve refuses it.
func TestReseal_AgentCommits_OneLandsOtherResealed(t *testing.T) {
	a, repo, env := flowEnv(t)
	api := &API{app: a, kind: "web"}
	cs := agentSession(t, env, "claude-code")
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	propose := func(msg string, paths ...string) string {
		t.Helper()
		out, isErr := callTool(t, cs, "propose_commit", map[string]any{
			"repoPath": repo, "reason": msg, "message": msg, "paths": paths,
		})
		if isErr || out["status"] != "pending" {
			t.Fatalf("propose_commit %s: %v", msg, out)
		}
		return out["proposalId"].(string)
	}
	write("CHANGELOG.md", "# Changes\n- a license\n")
	write("LICENSE", "MIT\n")
	write("NOTES.md", "agent's notes\n")
	changelog := propose("Changelog", "CHANGELOG.md")
	license := propose("License", "LICENSE")
	notes := propose("Notes", "NOTES.md")
	licenseCard, err := api.Proposal(license)
	if err != nil {
		t.Fatal(err)
	}

	first, err := api.Proposal(changelog)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.Approve(Decision{ID: changelog, Digest: first.Digest}); err != nil {
		t.Fatal(err)
	}
	waitCard(t, api, changelog, "the changelog to land", func(c Card) bool { return c.State == proposal.Completed })
	landed := gitxtest.Git(t, repo, "rev-parse", "HEAD")

	resealed := waitCard(t, api, license, "the license card re-sealed", func(c Card) bool { return c.Resealed != nil })
	if resealed.State != proposal.Pending || resealed.Stale || resealed.Digest == licenseCard.Digest {
		t.Fatalf("re-sealed card: state %s stale %v digest %s (was %s)", resealed.State, resealed.Stale, resealed.Digest, licenseCard.Digest)
	}
	if r := resealed.Resealed; r.Branch != "main" || r.Base != landed || r.From != licenseCard.Digest || r.To != resealed.Digest {
		t.Fatalf("reseal record %+v; want main at %s", r, landed)
	}
	if len(resealed.Sealed.Files) != 1 || resealed.Sealed.Files[0] != licenseCard.Sealed.Files[0] {
		t.Fatalf("re-sealed files %+v, want %+v", resealed.Sealed.Files, licenseCard.Sealed.Files)
	}
	if n := resealed.History[len(resealed.History)-1].Note; !strings.Contains(n, "re-sealed on main at "+landed[:7]+": same changes") {
		t.Fatalf("history note %q", n)
	}
	out, isErr := callTool(t, cs, "proposal_status", map[string]any{"proposalId": license})
	if isErr || out["status"] != "pending" {
		t.Fatalf("the agent's status after the re-seal: %v", out)
	}
	// The card the person had before is not what would run.
	if _, err := api.Approve(Decision{ID: license, Digest: licenseCard.Digest}); err == nil {
		t.Fatal("an approval of the card before the re-seal was taken")
	}

	// The person commits their own change to the notes file: the notes
	// card conflicts with it and is marked stale before it is opened.
	write("NOTES.md", "the person's notes\n")
	gitxtest.Git(t, repo, "add", "NOTES.md")
	gitxtest.Git(t, repo, "commit", "-q", "-m", "my notes")
	write("NOTES.md", "agent's notes\n")
	stale := waitCard(t, api, notes, "the notes card marked stale", func(c Card) bool { return c.Stale })
	if !strings.Contains(stale.StaleWhy, "NOTES.md") {
		t.Fatalf("stale why %q does not name the file", stale.StaleWhy)
	}
	if _, err := api.Approve(Decision{ID: notes, Digest: stale.Digest}); !errcode.IsCode(err, errcode.StaleBase) {
		t.Fatalf("approving the stale card: %v", err)
	}
	// The license card, re-sealed on the changelog, moved again with the
	// person's commit: re-sealed once more, then approved, it lands on
	// top of both.
	again := waitCard(t, api, license, "the license card re-sealed on the person's commit", func(c Card) bool {
		return c.Resealed != nil && c.Resealed.Base == gitxtest.Git(t, repo, "rev-parse", "HEAD")
	})
	mine := gitxtest.Git(t, repo, "rev-parse", "HEAD")
	if _, err := api.Approve(Decision{ID: license, Digest: again.Digest}); err != nil {
		t.Fatal(err)
	}
	waitCard(t, api, license, "the license to land", func(c Card) bool { return c.State == proposal.Completed })
	if parent := gitxtest.Git(t, repo, "rev-parse", "HEAD^"); parent != mine {
		t.Fatalf("the license commit's parent is %s, want %s", parent, mine)
	}
	if got := gitxtest.Git(t, repo, "diff-tree", "--no-commit-id", "--name-only", "-r", "HEAD"); got != "LICENSE" {
		t.Fatalf("the license commit changed %q", got)
	}
	out, isErr = callTool(t, cs, "proposal_wait", map[string]any{"proposalId": license, "timeoutSeconds": 30})
	if isErr || out["status"] != "completed" {
		t.Fatalf("the agent's wait: %v", out)
	}
	trail, err := api.ProposalAudit(license)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range trail {
		kinds = append(kinds, e["event_type"].(string))
	}
	if got := strings.Join(kinds, ","); got != "proposal_submitted,proposal_resealed,proposal_resealed,proposal_approved,proposal_executing,proposal_completed" {
		t.Fatalf("audit trail: %s", got)
	}
	if rep, err := api.VerifyAudit(); err != nil || !rep.OK {
		t.Fatalf("ledger: %+v %v", rep, err)
	}
}

// TestStack_AgentStacksCommits: through the real sidecar, an agent
// commits README.md, edits it again and stacks a second commit on the
// first (stackOn). The second card is sealed on the first's outcome,
// shows only the second edit, names the proposal below, and cannot be
// approved first. The person approves the first; the second is re-sealed
// on the commit it made and lands on top. Another agent cannot stack on
// it.
func TestStack_AgentStacksCommits(t *testing.T) {
	a, repo, env := flowEnv(t)
	api := &API{app: a, kind: "web"}
	cs := agentSession(t, env, "claude-code")
	first := proposeFirstOfStack(t, cs, repo)
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{"repoPath": repo, "reason": "Second", "message": "Second", "paths": []string{"README.md"}, "stackOn": first})
	if isErr || out["status"] != "pending" {
		t.Fatalf("stacked: %v", out)
	}
	second := out["proposalId"].(string)

	other := agentSession(t, env, "gemini-cli")
	out, isErr = callTool(t, other, "propose_commit", map[string]any{"repoPath": repo, "reason": "Not mine", "message": "x", "paths": []string{"README.md"}, "stackOn": first})
	if !isErr || !strings.Contains(fmt.Sprint(out), "same agent") {
		t.Fatalf("another agent stacked on it: %v", out)
	}

	card, err := api.Proposal(second)
	if err != nil {
		t.Fatal(err)
	}
	firstCard, _ := api.Proposal(first)
	if card.Below != first || card.Sealed.Before != firstCard.Sealed.After {
		t.Fatalf("stacked card: below %q, before %s; want on %s's outcome %s", card.Below, card.Sealed.Before, first, firstCard.Sealed.After)
	}
	diff := wholeDiff(t, api, second)
	if !strings.Contains(diff, "+second") || strings.Contains(diff, "+first") {
		t.Fatalf("the stacked card's diff is not only the second edit:\n%s", diff)
	}
	if _, err := api.Approve(Decision{ID: second, Digest: card.Digest}); err == nil || !strings.Contains(err.Error(), "stacked on proposal "+first) {
		t.Fatalf("approving the stacked card first: %v", err)
	}
	if _, err := api.Approve(Decision{ID: first, Digest: firstCard.Digest}); err != nil {
		t.Fatal(err)
	}
	waitCard(t, api, first, "the first to land", func(c Card) bool { return c.State == proposal.Completed })
	firstCommit := gitxtest.Git(t, repo, "rev-parse", "HEAD")
	resealed := waitCard(t, api, second, "the stacked card re-sealed on the first's commit", func(c Card) bool {
		return c.Resealed != nil && c.Below == ""
	})
	if resealed.Sealed.Base != firstCommit || resealed.Stale {
		t.Fatalf("re-sealed stacked card: base %s stale %v (%s)", resealed.Sealed.Base, resealed.Stale, resealed.StaleWhy)
	}
	if _, err := api.Approve(Decision{ID: second, Digest: resealed.Digest}); err != nil {
		t.Fatal(err)
	}
	waitCard(t, api, second, "the second to land", func(c Card) bool { return c.State == proposal.Completed })
	if parent := gitxtest.Git(t, repo, "rev-parse", "HEAD^"); parent != firstCommit {
		t.Fatalf("the second commit's parent is %s, want %s", parent, firstCommit)
	}
	if got := gitxtest.Git(t, repo, "log", "--format=%s", "-3"); got != "Second\nFirst\nfirst" {
		t.Fatalf("log %q", got)
	}
}

// TestRetry_SameKeyAfterLanding_SameProposal: an agent's answer was lost
// and it sends the same propose_commit again, with the same key, after
// the commit landed. It gets the same proposal, completed, rather than a
// refusal: its files are no longer a change to commit, but the request
// was answered before anything was sealed again.
func TestRetry_SameKeyAfterLanding_SameProposal(t *testing.T) {
	a, repo, env := flowEnv(t)
	api := &API{app: a, kind: "web"}
	cs := agentSession(t, env, "claude-code")
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("hello\nagain\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"repoPath": repo, "reason": "Readme", "message": "Readme", "paths": []string{"README.md"}, "idempotencyKey": "readme-1"}
	out, isErr := callTool(t, cs, "propose_commit", args)
	if isErr {
		t.Fatalf("propose: %v", out)
	}
	id := out["proposalId"].(string)
	c, err := api.Proposal(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.Approve(Decision{ID: id, Digest: c.Digest}); err != nil {
		t.Fatal(err)
	}
	waitCard(t, api, id, "the commit to land", func(c Card) bool { return c.State == proposal.Completed })
	args["reason"] = "Readme (sent again)"
	out, isErr = callTool(t, cs, "propose_commit", args)
	if isErr || out["proposalId"] != id || out["status"] != "completed" {
		t.Fatalf("the retry after landing: isError=%v %v; want proposal %s, completed", isErr, out, id)
	}
	if n := gitxtest.Git(t, repo, "rev-list", "--count", "HEAD"); n != "2" {
		t.Fatalf("%s commits, want 2", n)
	}
}

// TestStack_BelowLandsBetweenTwoLooks: the watch looks at a stacked commit
// while the proposal below it executes and its commit is already on the
// branch (the journal does not say completed yet): the look finds the
// stacked card sealed on a base that is gone, and says it is stale. When
// the journal says completed, no ref moves; the next look re-seals the
// stacked commit on that commit all the same, rather than leaving it stale.
func TestStack_BelowLandsBetweenTwoLooks(t *testing.T) {
	ended, release, lockWait := make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
	var once sync.Once
	executorOnStep = func(step string) {
		switch step {
		case "ended":
			// The first's execution: its commit is on main, its end not
			// yet in the journal.
			once.Do(func() {
				close(ended)
				<-release
			})
		case "lock-wait":
			select {
			case lockWait <- struct{}{}:
			default:
			}
		}
	}
	t.Cleanup(func() { executorOnStep = nil })
	a, repo, env := flowEnv(t)
	api := &API{app: a, kind: "web"}
	cs := agentSession(t, env, "claude-code")
	first := proposeFirstOfStack(t, cs, repo)
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{"repoPath": repo, "reason": "Second", "message": "Second", "paths": []string{"README.md"}, "stackOn": first})
	if isErr {
		t.Fatalf("stacked: %v", out)
	}
	second := out["proposalId"].(string)

	firstCard, err := api.Proposal(first)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.Approve(Decision{ID: first, Digest: firstCard.Digest}); err != nil {
		t.Fatal(err)
	}
	<-ended
	// A look now reads the one below as executing, finds main moved, and
	// waits for the repository, which the execution holds.
	looked := make(chan struct{})
	go func() {
		a.recheckPending(context.Background())
		close(looked)
	}()
	<-lockWait
	close(release)
	<-looked
	waitCard(t, api, first, "the first to land", func(c Card) bool { return c.State == proposal.Completed })
	commit := gitxtest.Git(t, repo, "rev-parse", "HEAD")

	a.recheckPending(context.Background())
	c, err := api.Proposal(second)
	if err != nil {
		t.Fatal(err)
	}
	if c.Stale || c.Resealed == nil || c.Below != "" || c.Sealed.Base != commit {
		t.Fatalf("after the one below completed, the stacked card: stale %v (%s), resealed %+v, below %q, base %s; want re-sealed on %s",
			c.Stale, c.StaleWhy, c.Resealed, c.Below, c.Sealed.Base, commit)
	}
}

// proposeFirstOfStack has the agent commit README.md ("hello\nfirst\n")
// and edits it again ("…second\n") for a commit to stack on it; it
// returns the first proposal's id.
func proposeFirstOfStack(t *testing.T, cs *mcp.ClientSession, repo string) string {
	t.Helper()
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("hello\nfirst\n")
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{"repoPath": repo, "reason": "First", "message": "First", "paths": []string{"README.md"}})
	if isErr {
		t.Fatalf("first: %v", out)
	}
	write("hello\nfirst\nsecond\n")
	return out["proposalId"].(string)
}
