package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// interruptedWithLocks is the app after a crash in the middle of an
// approved commit: an agent proposed through the real sidecar, the person
// approved, the execution began, and the app died with its git, which left
// .git/index.lock and .git/HEAD.lock (made here, dated as the execution
// began; core/apply's crash tests make them with a real SIGKILL).
// The app is started again on the same files and recovers.
func interruptedWithLocks(t *testing.T) (*App, string, []string, string) {
	t.Helper()
	a, repo, env := flowEnv(t)
	cfg := a.cfg
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("hello\nworld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, isErr := callTool(t, agentSession(t, env, "claude-code"), "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Greet the world", "message": "Greet the world", "paths": []string{"README.md"},
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	id := out["proposalId"].(string)
	a.Close()

	// What the app did before it died: approved, began executing.
	ledger, _, err := audit.SetupFor(cfg).Open()
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(cfg.JournalFile(), journal.Options{Recorder: journalRecorder{ledger}})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := j.Approve(id, out["digest"].(string), "owner:web", "")
	if err != nil {
		t.Fatal(err)
	}
	if rec, err = j.MarkExecuting(id, rec.Proposal.Digest); err != nil {
		t.Fatal(err)
	}
	began := rec.History[len(rec.History)-1].At.Time
	j.Close()
	ledger.Close()
	// Stamped 1.5 s before the execution began, inside the allowance the
	// window makes for clocks: the restarted app's own gits (it looks at
	// the sealed objects of every repository as it starts) then start more
	// than a second after the locks, so they cannot be holding them.
	at := began.Add(-1500 * time.Millisecond)
	for _, name := range []string{"index.lock", "HEAD.lock"} {
		p := filepath.Join(repo, ".git", name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}

	b, err := Start(cfg, newLogger(&bytes.Buffer{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if got, _ := b.journal.Get(id); got.State != proposal.NeedsReconciliation {
		t.Fatalf("after the restart the proposal is %s, want needs_reconciliation", got.State)
	}
	return b, repo, env, id
}

// TestLocks_App_NamedRefusedRemoved: the card of the interrupted execution
// names the locks; while they are there a new approval is refused with
// repo_locked naming them (its card stays pending); removal refuses
// another card and a changed lock, removes the rest, and is in the ledger;
// then the approval goes through.
func TestLocks_App_NamedRefusedRemoved(t *testing.T) {
	a, repo, env, id := interruptedWithLocks(t)
	api := &API{app: a, kind: "web"}
	card, err := api.Proposal(id)
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, l := range card.Locks {
		shown = append(shown, l.Shown)
		if !l.Leftover || l.InUse || l.What == "" || l.Repo != repo {
			t.Errorf("lock %+v: want a leftover of the execution", l)
		}
	}
	if !slices.Equal(shown, []string{".git/HEAD.lock", ".git/index.lock"}) {
		t.Fatalf("the card names %q", shown)
	}

	// A new proposal cannot be approved while git's locks are there.
	out, isErr := callTool(t, agentSession(t, env, "claude-code"), "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Greet again", "message": "Greet the world", "paths": []string{"README.md"},
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	next := out["proposalId"].(string)
	_, err = api.Approve(Decision{ID: next, Digest: out["digest"].(string)})
	if ue := FormatError(err).(UIError); ue.Code != errcode.RepoLocked || !strings.Contains(ue.Message, ".git/index.lock") {
		t.Fatalf("approve with locks: %+v, want repo_locked naming .git/index.lock", ue)
	}
	if rec, _ := a.journal.Get(next); rec.State != proposal.Pending {
		t.Fatalf("the refused card is %s, want still pending", rec.State)
	}

	// Only an interrupted execution's card removes locks.
	if _, err := api.RemoveLocks(RemoveLocksRequest{ID: next, Locks: card.Locks}); errcode.Of(err) != "invalid_argument" {
		t.Errorf("removal from a pending card: %v", err)
	}
	// index.lock changes after the card showed it: it is kept. Its size
	// changes; its time stays the one shown, so that a git the restarted
	// app is still running (it started after that time) cannot look like
	// its holder, and the reason is the change itself.
	index := filepath.Join(repo, ".git", "index.lock")
	if err := os.WriteFile(index, []byte("a newer git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range card.Locks {
		if l.Path == "index.lock" {
			if err := os.Chtimes(index, l.ModTime, l.ModTime); err != nil {
				t.Fatal(err)
			}
		}
	}
	res, err := api.RemoveLocks(RemoveLocksRequest{ID: id, Locks: card.Locks})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Removed) != 1 || res.Removed[0].Path != "HEAD.lock" || len(res.Kept) != 1 || !strings.Contains(res.Kept[0].Reason, "changed") {
		t.Fatalf("removal %+v", res)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "index.lock")); err != nil {
		t.Fatalf("the changed lock was removed: %v", err)
	}
	entries, err := api.Audit()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range entries.Entries {
		if k, _ := e["event_type"].(string); strings.HasPrefix(k, "locks_") && e["proposal_id"] == id {
			kinds = append(kinds, k)
		}
	}
	if !slices.Contains(kinds, "locks_removal_requested") || !slices.Contains(kinds, "locks_removed") {
		t.Errorf("ledger entries %q: want the request and the removal", kinds)
	}

	// The person's own cleanup of the changed one (the app would not);
	// then the approval goes through.
	os.Remove(filepath.Join(repo, ".git", "index.lock"))
	if _, err := api.Approve(Decision{ID: next, Digest: out["digest"].(string)}); err != nil {
		t.Fatalf("approve without locks: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec, err := a.journal.WaitSettled(ctx, next)
	if err != nil || rec.State != proposal.Completed {
		t.Fatalf("the approval ended %s (%v): %+v", rec.State, err, rec.Outcome)
	}
	if msg := gitxtest.Git(t, repo, "log", "-1", "--format=%s"); msg != "Greet the world" {
		t.Errorf("HEAD is %q, not the approved commit", msg)
	}
}

// TestLocks_App_TrustSimilarRefusedBeforeTheRuleIsSaved: while git's
// locks are in the repository, "Approve and trust similar" is refused
// with repo_locked as Approve is, and no rule is saved: a rule in force
// for a card that stayed pending is not what the person asked for.
func TestLocks_App_TrustSimilarRefusedBeforeTheRuleIsSaved(t *testing.T) {
	a, repo, env, _ := interruptedWithLocks(t)
	api := &API{app: a, kind: "web"}
	out, isErr := callTool(t, agentSession(t, env, "claude-code"), "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Greet again", "message": "Greet the world", "paths": []string{"README.md"},
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	next := out["proposalId"].(string)
	_, err := api.TrustSimilar(TrustRequest{Decision: Decision{ID: next, Digest: out["digest"].(string)},
		Rule: RuleInput{Name: "greetings", Expiry: "always", TrustDeclaredName: true}})
	if ue := FormatError(err).(UIError); ue.Code != errcode.RepoLocked {
		t.Fatalf("trust similar with locks: %+v, want repo_locked", ue)
	}
	if rec, _ := a.journal.Get(next); rec.State != proposal.Pending {
		t.Fatalf("the refused card is %s, want still pending", rec.State)
	}
	rules, err := api.Rules()
	if err != nil {
		t.Fatal(err)
	}
	if len(rules.Rules) != 0 {
		t.Fatalf("a rule was saved for a card that was not approved: %+v", rules.Rules)
	}
	entries, err := api.Audit()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries.Entries {
		if e["event_type"] == "rule_created" {
			t.Fatalf("rule_created was audited for a card that was not approved: %+v", e)
		}
	}
}
