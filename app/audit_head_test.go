package app

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/audit"
)

// TestVerifyAudit_TruncatedTail_EntriesMissing: the last whole records of
// the ledger deleted still form a valid chain; the app's Verify knows its
// own last entry from the journal and reports what is missing, in the API
// and over the web UI's /api/audit/verify.
func TestVerifyAudit_TruncatedTail_EntriesMissing(t *testing.T) {
	a, repo, env := flowEnv(t)
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("hello\nworld\n"), 0o644)
	cs := agentSession(t, env, "claude-code")
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Say hello", "message": "Greet", "paths": []string{"README.md"},
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	id := out["proposalId"].(string)
	api := &API{app: a, kind: "web"}
	card, err := api.Proposal(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.Reject(Decision{ID: id, Digest: card.Digest, Note: "not now"}); err != nil {
		t.Fatal(err)
	}
	cs.Close()

	// The app's last own entry is the rejection.
	lines, err := os.ReadFile(a.cfg.AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	all := strings.SplitAfter(strings.TrimSuffix(string(lines), "\n"), "\n")
	cut := -1
	var rejected map[string]any
	for i, l := range all {
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		if e["event_type"] == "proposal_rejected" {
			cut, rejected = i, e
		}
	}
	if cut < 1 {
		t.Fatalf("no rejection in the ledger")
	}
	want := audit.Head{Sequence: uint64(rejected["sequence"].(float64)), Hash: rejected["entryHash"].(string)}

	rep, err := api.VerifyAudit()
	if err != nil || !rep.OK || rep.ExpectedHead != want.String() || rep.Head == "" {
		t.Fatalf("intact ledger: %+v %v, want expected head %s", rep, err, want)
	}

	// Delete the rejection and everything after it: whole records, so the
	// chain that is left verifies by itself.
	if err := os.WriteFile(a.cfg.AuditLog(), []byte(strings.Join(all[:cut], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.Verify(a.cfg.AuditLog(), a.auditPub, audit.VerifyOptions{RequireSigned: true}); err != nil {
		t.Fatalf("the truncated chain alone: %v", err)
	}
	wantProblem := "entries missing after sequence " + strings.TrimSpace(jsonNum(want.Sequence-1))
	rep, err = api.VerifyAudit()
	if err != nil || rep.OK || !strings.Contains(rep.Problem, wantProblem) {
		t.Fatalf("truncated ledger: %+v %v, want %q", rep, err, wantProblem)
	}

	w, token, err := NewWeb(a, testAssets, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go w.Serve()
	t.Cleanup(func() { w.Shutdown(t.Context()) })
	c := newBrowserClient(t)
	csrf := loggedIn(t, w, token, c)
	resp, body := postJSON(t, c, "http://"+w.Addr()+"/api/audit/verify", "", map[string]string{csrfHeader: csrf})
	var got AuditReport
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil || got.OK || !strings.Contains(got.Problem, wantProblem) {
		t.Fatalf("POST /api/audit/verify: %d %s, want %q", resp.StatusCode, body, wantProblem)
	}
}

func jsonNum(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
