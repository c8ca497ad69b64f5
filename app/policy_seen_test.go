package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/proposal"
)

// ledgerEvents returns the ledger's entries of event, oldest first.
func ledgerEvents(t *testing.T, a *App, event string) []map[string]any {
	t.Helper()
	entries, err := audit.Tail(a.cfg.AuditLog(), audit.MaxTail)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, e := range entries {
		if e["event_type"] == event {
			out = append(out, e)
		}
	}
	return out
}

func entryData(e map[string]any) map[string]any {
	d, _ := e["data"].(map[string]any)
	return d
}

// TestRules_PolicyFileChangesAudited: a rule is created in Sluice by the
// person (rule_created with its source); a rule that appears in the
// policy file any other way is never taken silently: the app audits the
// file with its digest at start-up and whenever it finds it changed, naming
// the rules that appeared, before it applies it. Sluice's own save is not
// reported as a change from outside.
func TestRules_PolicyFileChangesAudited(t *testing.T) {
	home := t.TempDir()
	pol := filepath.Join(home, "policy.json")
	if err := os.WriteFile(pol, []byte(`{"version": 1, "rules": [{"name": "docs", "agent": "*", "ops": ["commit"], "paths": ["docs/"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_POLICY_FILE", pol)
	a, repo, _ := flowEnv(t)
	api := &API{app: a, kind: "web"}

	loaded := ledgerEvents(t, a, "policy_loaded")
	if len(loaded) != 1 || entryData(loaded[0])["rulesAdded"] != "*/docs" || entryData(loaded[0])["digest"] == "" {
		t.Fatalf("policy_loaded: %v", loaded)
	}
	// Reading it again, unchanged, audits nothing more.
	if _, err := api.Rules(); err != nil {
		t.Fatal(err)
	}
	if n := len(ledgerEvents(t, a, "policy_file_changed")); n != 0 {
		t.Fatalf("an unchanged file was audited %d times", n)
	}
	// A rule written into the file by another path.
	if err := os.WriteFile(pol, []byte(`{"version": 1, "rules": [{"name": "docs", "agent": "*", "ops": ["commit"], "paths": ["docs/"]}, {"name": "sneaky", "agent": "claude-code", "ops": ["merge"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Rules(); err != nil {
		t.Fatal(err)
	}
	changed := ledgerEvents(t, a, "policy_file_changed")
	if len(changed) != 1 {
		t.Fatalf("policy_file_changed: %v", changed)
	}
	d := entryData(changed[0])
	if d["rulesAdded"] != "claude-code/sneaky" || d["source"] != "file" || d["digest"] == entryData(loaded[0])["digest"] || d["previousDigest"] != entryData(loaded[0])["digest"] {
		t.Fatalf("policy_file_changed data: %v", d)
	}
	if s, _ := changed[0]["summary"].(string); !strings.Contains(s, "without being created in Sluice") {
		t.Errorf("summary %q", s)
	}

	// The person creates a rule from a card: audited with its source, and
	// the app's own save is not a change from outside.
	gw, err := gateway.NewClientFromEndpoint(a.cfg.GatewayFile())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	p := proposal.Proposal{ID: fmt.Sprintf("rule-src-%d", now.UnixNano()), Op: proposal.OpCommit, Repo: repo,
		Pinned: proposal.Pinned{Refs: map[string]string{"HEAD": strings.TrimSpace(gitIn(t, repo, "rev-parse", "HEAD"))}},
		Args:   &proposal.CommitArgs{Message: "readme", Paths: []string{"README.md"}}, Reason: "r", Agent: "codex",
		CreatedAt: proposal.At(now), ExpiresAt: proposal.At(now.Add(10 * time.Minute))}
	if err := p.Seal(); err != nil {
		t.Fatal(err)
	}
	st, err := gw.SubmitProposal(context.Background(), "codex", p)
	if err != nil {
		t.Fatal(err)
	}
	draft, err := api.SuggestRule(st.ProposalID)
	if err != nil {
		t.Fatal(err)
	}
	draft.TrustDeclaredName = true // codex only declared its name
	if _, err := api.TrustSimilar(TrustRequest{Decision: Decision{ID: st.ProposalID, Digest: st.Digest}, Rule: draft.RuleInput}); err != nil {
		t.Fatal(err)
	}
	created := ledgerEvents(t, a, "rule_created")
	if len(created) != 1 || entryData(created[0])["source"] != "ui" || created[0]["approval"] != "owner:web" {
		t.Fatalf("rule_created: %v", created)
	}
	if _, err := api.Rules(); err != nil {
		t.Fatal(err)
	}
	if n := len(ledgerEvents(t, a, "policy_file_changed")); n != 1 {
		t.Fatalf("Sluice's own save was audited as a change from outside (%d entries)", n)
	}
}
