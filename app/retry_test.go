package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// TestRetry_DirtyTarget_BlockedThenRetriedLands: a fast-forward merge into
// the checked-out main while main's checkout has an uncommitted change.
// The card says so before anyone decides and Approve refuses it; approved
// anyway (as a rule would), it fails having changed nothing; the agent's
// retry of the same request is answered with that proposal, not refused;
// Retry is refused while the change is there, and once it is put away the
// same card lands, audited as the person's retry.
func TestRetry_DirtyTarget_BlockedThenRetriedLands(t *testing.T) {
	a, repo, _ := flowEnv(t)
	api := &API{app: a, kind: "web"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	gitxtest.Git(t, repo, "switch", "-q", "-c", "fix")
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("hello\nfixed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitxtest.Git(t, repo, "commit", "-q", "-am", "fix the readme")
	gitxtest.Git(t, repo, "switch", "-q", "main")
	fix := gitxtest.Git(t, repo, "rev-parse", "fix")

	gw, err := gateway.NewClientFromEndpoint(a.cfg.GatewayFile())
	if err != nil {
		t.Fatal(err)
	}
	submit := func(id, reason string) gateway.ProposalStatus {
		t.Helper()
		args := &proposal.MergeArgs{Source: "fix", Target: "main", Strategy: proposal.MergeCommit}
		pins := map[string]string{}
		for _, ref := range args.Pins() {
			pins[ref] = gitxtest.Git(t, repo, "rev-parse", "--verify", ref+"^{commit}")
		}
		now := time.Now()
		p := proposal.Proposal{ID: id, Op: proposal.OpMerge, Repo: repo, Pinned: proposal.Pinned{Refs: pins}, Args: args,
			Reason: reason, Agent: "claude-code", IdempotencyKey: "workspace-ws1",
			CreatedAt: proposal.At(now), ExpiresAt: proposal.At(now.Add(10 * time.Minute))}
		if err := p.Seal(); err != nil {
			t.Fatal(err)
		}
		st, err := gw.SubmitProposal(ctx, "claude-code", p)
		if err != nil {
			t.Fatalf("submit %s: %v", id, err)
		}
		return st
	}
	st := submit("retry-ff-1", "Merge the readme fix")
	id := st.ProposalID
	if pf, err := api.Preflight(id); err != nil || len(pf.Blockers) > 0 {
		t.Fatalf("clean checkout: preflight %+v, %v", pf, err)
	}

	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("hello\nmy draft\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pf, err := api.Preflight(id)
	if err != nil || pf.Stale || len(pf.Blockers) != 1 || !strings.Contains(pf.Blockers[0], "README.md") {
		t.Fatalf("dirty checkout: preflight %+v, %v; want one blocker naming README.md", pf, err)
	}
	_, err = api.Approve(Decision{ID: id, Digest: st.Digest})
	if e, ok := errcode.As(err); !ok || e.Code != errcode.ProposalRefused || !strings.Contains(e.Msg, "README.md") {
		t.Fatalf("approve with a dirty target: %v; want it refused naming README.md", err)
	}
	if rec, _ := a.journal.Get(id); rec.State != proposal.Pending {
		t.Fatalf("a refused approval left the card %s", rec.State)
	}

	// Approved without the card (as a rule approves), it fails before
	// anything is written.
	if _, err := a.journal.Approve(id, st.Digest, "owner:web", ""); err != nil {
		t.Fatal(err)
	}
	rec, err := a.journal.WaitSettled(ctx, id)
	if err != nil || rec.State != proposal.Failed || rec.Outcome.Code != errcode.DirtyWorktree || !journal.Retryable(rec) {
		t.Fatalf("execution with a dirty target: %s %+v, %v; want a retryable dirty_worktree failure", rec.State, rec.Outcome, err)
	}
	if card, err := api.Proposal(id); err != nil || !card.Retryable {
		t.Fatalf("card retryable = %v, %v", card.Retryable, err)
	}

	// The agent asks again with the same key, in other words: the same
	// proposal, as it is.
	again := submit("retry-ff-2", "Retrying: merge the readme fix")
	if again.ProposalID != id || !again.Replayed || again.Status != proposal.Failed {
		t.Fatalf("the agent's retry: %+v; want proposal %s replayed as failed", again, id)
	}

	if _, err := api.Retry(Decision{ID: id, Digest: st.Digest}); err == nil || !strings.Contains(err.Error(), "README.md") {
		t.Fatalf("retry while the checkout is dirty: %v; want it refused naming README.md", err)
	}
	gitxtest.Git(t, repo, "restore", "README.md")
	card, err := api.Retry(Decision{ID: id, Digest: st.Digest, Note: "put my draft away"})
	if err != nil {
		t.Fatal(err)
	}
	if card.State != proposal.Approved && card.State != proposal.Executing && card.State != proposal.Completed {
		t.Fatalf("retried card is %s", card.State)
	}
	rec, err = a.journal.WaitSettled(ctx, id)
	if err != nil || rec.State != proposal.Completed {
		t.Fatalf("after the retry: %s %+v, %v", rec.State, rec.Outcome, err)
	}
	if got := gitxtest.Git(t, repo, "rev-parse", "main"); got != fix {
		t.Fatalf("main at %s, want the fast-forward to %s", got, fix)
	}
	retried := ledgerEvents(t, a, "proposal_retried")
	if len(retried) != 1 || retried[0]["approval"] != "owner:web" || retried[0]["proposal_id"] != id {
		t.Fatalf("ledger proposal_retried: %v", retried)
	}
	if _, err := api.Retry(Decision{ID: id, Digest: st.Digest}); err == nil {
		t.Fatal("a completed proposal was retried")
	}
}
