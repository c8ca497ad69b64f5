package app

import (
	"bytes"
	"encoding/json"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/policy"
)

// cardJSON is the part of a card's JSON these tests read (Card itself does
// not decode: its arguments are an interface).
type cardJSON struct {
	ID             string            `json:"id"`
	State          string            `json:"state"`
	Digest         string            `json:"digest"`
	ApprovedByRule string            `json:"approvedByRule"`
	Decision       *journal.Decision `json:"decision"`
}

// webAPI is a logged-in browser session on the headless server's JSON API.
type webAPI struct {
	t    *testing.T
	c    *http.Client
	base string
	csrf string
}

func loginAPI(t *testing.T, a *App) *webAPI {
	t.Helper()
	w, token, err := NewWeb(a, testAssets, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go w.Serve()
	t.Cleanup(func() { w.Shutdown(t.Context()) })
	c := newBrowserClient(t)
	get(t, c, w.LoginURL(token), nil)
	_, body := get(t, c, "http://"+w.Addr()+"/api/session", nil)
	var s struct{ CSRF string }
	if err := json.Unmarshal([]byte(body), &s); err != nil || s.CSRF == "" {
		t.Fatalf("session: %q %v", body, err)
	}
	return &webAPI{t: t, c: c, base: "http://" + w.Addr(), csrf: s.CSRF}
}

// call sends body (nil for GET) and decodes the answer into out; it
// returns the HTTP status and the error code, if any.
func (w *webAPI) call(method, path string, body, out any) (int, errcode.Code) {
	w.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, w.base+path, rd)
	if method == http.MethodPost {
		req.Header.Set(csrfHeader, w.csrf)
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := w.c.Do(req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error UIError }
		json.Unmarshal(raw, &e)
		return resp.StatusCode, e.Error.Code
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			w.t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
	return resp.StatusCode, ""
}

func (w *webAPI) must(method, path string, body, out any) {
	w.t.Helper()
	if st, code := w.call(method, path, body, out); st != http.StatusOK {
		w.t.Fatalf("%s %s: %d %s", method, path, st, code)
	}
}

// TestRules_TrustSimilar_WebAPI: "Approve and trust similar" through the
// web API, with real sidecars: the first card is approved and its rule is
// saved in a policy file created at the default path (and configured);
// the next similar proposal is approved by the rule without a card and
// History names the rule; the Rules screen counts it; after revoking, a
// similar proposal waits for a person again. A destructive card has no
// rule. Every step is in the signed ledger.
func TestRules_TrustSimilar_WebAPI(t *testing.T) {
	a, repo, env := flowEnv(t)
	w := loginAPI(t, a)
	cs := agentSession(t, env, "claude-code")
	propose := func(content string) string {
		t.Helper()
		os.WriteFile(filepath.Join(repo, "README.md"), []byte(content), 0o644)
		out, isErr := callTool(t, cs, "propose_commit", map[string]any{
			"repoPath": repo, "reason": "Update the greeting", "message": "Update the greeting", "paths": []string{"README.md"},
		})
		if isErr {
			t.Fatalf("propose_commit: %v", out)
		}
		return out["proposalId"].(string)
	}
	wait := func(id string) map[string]any {
		t.Helper()
		out, _ := callTool(t, cs, "proposal_wait", map[string]any{"proposalId": id, "timeoutSeconds": 30})
		return out
	}

	var rules RulesView
	w.must("GET", "/api/rules", nil, &rules)
	if rules.Configured || len(rules.Rules) != 0 || rules.PolicyFile != a.cfg.DefaultPolicyFile() {
		t.Fatalf("rules before any: %+v", rules)
	}

	first := propose("hello\nworld\n")
	var draft RuleDraft
	w.must("GET", "/api/proposals/"+first+"/rule", nil, &draft)
	if draft.Agent != "claude-code" || draft.Identity != "declared" || strings.Join(draft.Repos, ",") != canonical(t, repo) || len(draft.Ops) != 1 || draft.Ops[0] != "commit" || strings.Join(draft.Paths, ",") != "README.md" ||
		draft.MaxRisk != "low" || draft.Expiry != "today" || !draft.CreatesFile || draft.PolicyFile != a.cfg.DefaultPolicyFile() || draft.Name == "" {
		t.Fatalf("draft: %+v", draft)
	}
	var card cardJSON
	w.must("GET", "/api/proposals/"+first, nil, &card)
	// The agent only declared its name: the person opts in to trusting it.
	draft.TrustDeclaredName = true

	// Bad input is refused with a code and changes nothing.
	bad := []struct {
		name string
		edit func(*RuleInput)
		code errcode.Code
	}{
		{"bad name", func(r *RuleInput) { r.Name = "two words" }, "invalid_argument"},
		{"escaping path", func(r *RuleInput) { r.Paths = []string{"../x"} }, "invalid_argument"},
		{"destructive", func(r *RuleInput) { r.MaxRisk = "destructive" }, "destructive_not_trusted"},
		{"expiry", func(r *RuleInput) { r.Expiry = "forever" }, "invalid_argument"},
		{"a declared name without opting in", func(r *RuleInput) { r.TrustDeclaredName = false }, "invalid_argument"},
	}
	for _, b := range bad {
		in := draft.RuleInput
		b.edit(&in)
		if st, code := w.call("POST", "/api/proposals/"+first+"/trust", TrustRequest{Decision: Decision{Digest: card.Digest}, Rule: in}, nil); st != http.StatusBadRequest || code != b.code {
			t.Errorf("%s: %d %q, want 400 %s", b.name, st, code, b.code)
		}
	}
	if _, err := os.Stat(a.cfg.DefaultPolicyFile()); !os.IsNotExist(err) {
		t.Fatalf("a refused rule created the policy file: %v", err)
	}
	if c, _ := (&API{app: a}).Proposal(first); c.State != "pending" {
		t.Fatalf("a refused rule decided the card: %s", c.State)
	}

	// The person edits the name and the expiry, and confirms.
	in := draft.RuleInput
	in.Name, in.Expiry = "readme-greetings", "always"
	var res struct {
		Card cardJSON
		Rule RuleView
	}
	w.must("POST", "/api/proposals/"+first+"/trust", TrustRequest{Decision: Decision{Digest: card.Digest, Note: "fine"}, Rule: in}, &res)
	if res.Card.Decision == nil || !res.Card.Decision.Approved || res.Card.Decision.Auto || res.Rule.Name != "readme-greetings" || res.Rule.FromProposal != first {
		t.Fatalf("trust: %+v", res)
	}
	if out := wait(first); out["status"] != "completed" {
		t.Fatalf("first: %v", out)
	}
	saved, err := policy.Load(a.cfg.DefaultPolicyFile())
	if err != nil || len(saved.Rules) != 1 || saved.Rules[0].Agent != "claude-code" || saved.Rules[0].FromProposal != first || !saved.Rules[0].ExpiresAt.IsZero() ||
		saved.Rules[0].Identity != "declared" || strings.Join(saved.Rules[0].Repos, ",") != canonical(t, repo) {
		t.Fatalf("policy file: %+v %v", saved, err)
	}
	if st, _ := os.Stat(a.cfg.DefaultPolicyFile()); st.Mode().Perm() != 0o600 {
		t.Fatalf("policy file mode %v", st.Mode().Perm())
	}
	if cfg, err := config.Load(); err != nil || cfg.PolicyFile != a.cfg.DefaultPolicyFile() {
		t.Fatalf("config.json does not name the new policy file: %v %v", cfg.PolicyFile, err)
	}
	var settings SettingsView
	w.must("GET", "/api/settings", nil, &settings)
	if len(settings.RestartRequired) != 0 {
		t.Fatalf("settings after the rule: restart required for %v", settings.RestartRequired)
	}

	// A similar proposal: approved by the rule, no card, marked in History.
	second := propose("hello\nworld, again\n")
	if out := wait(second); out["status"] != "completed" || out["autoApproved"] != true {
		t.Fatalf("second: %v", out)
	}
	var hist []cardJSON
	w.must("GET", "/api/history", nil, &hist)
	marks := map[string]string{}
	for _, c := range hist {
		marks[c.ID] = c.ApprovedByRule
	}
	if marks[second] != "readme-greetings" || marks[first] != "" {
		t.Fatalf("history marks: %v", marks)
	}
	w.must("GET", "/api/rules", nil, &rules)
	if !rules.Configured || len(rules.Rules) != 1 || rules.Rules[0].Approved != 1 || rules.Rules[0].FromProposal != first || rules.Rules[0].CreatedAt == "" {
		t.Fatalf("rules: %+v", rules)
	}

	// Revoke; the next similar proposal waits for a person.
	if st, code := w.call("POST", "/api/rules/revoke", RevokeRequest{Agent: "claude-code", Name: "nope"}, nil); st != http.StatusNotFound || code != "rule_not_found" {
		t.Fatalf("revoke unknown: %d %s", st, code)
	}
	w.must("POST", "/api/rules/revoke", RevokeRequest{Agent: "claude-code", Name: "readme-greetings"}, &rules)
	if len(rules.Rules) != 0 {
		t.Fatalf("rules after revoke: %+v", rules)
	}
	third := propose("hello\nworld, once more\n")
	var pending []cardJSON
	w.must("GET", "/api/proposals", nil, &pending)
	if len(pending) != 1 || pending[0].ID != third {
		t.Fatalf("after revoke the proposal should wait for a person: %+v", pending)
	}

	// A destructive card has no rule, and the trust route refuses it.
	out, isErr := callTool(t, cs, "propose_reset", map[string]any{"repoPath": repo, "reason": "Start over", "mode": "hard", "target": "HEAD", "branch": "main"})
	if isErr {
		t.Fatalf("propose_reset: %v", out)
	}
	reset := out["proposalId"].(string)
	if st, code := w.call("GET", "/api/proposals/"+reset+"/rule", nil, nil); st != http.StatusBadRequest || code != "destructive_not_trusted" {
		t.Fatalf("rule for a destructive card: %d %s", st, code)
	}
	var rc cardJSON
	w.must("GET", "/api/proposals/"+reset, nil, &rc)
	before, _ := os.ReadFile(a.cfg.DefaultPolicyFile())
	if st, code := w.call("POST", "/api/proposals/"+reset+"/trust", TrustRequest{Decision: Decision{Digest: rc.Digest, Confirm: "main"}, Rule: RuleInput{Name: "resets", Expiry: "hour"}}, nil); code != "destructive_not_trusted" {
		t.Fatalf("trust a destructive card: %d %s", st, code)
	}
	if after, _ := os.ReadFile(a.cfg.DefaultPolicyFile()); !bytes.Equal(before, after) {
		t.Fatal("a refused destructive rule changed the policy file")
	}

	// The ledger: the rule's life, the automatic approval naming it, and a
	// chain that verifies.
	entries, err := audit.Tail(a.cfg.AuditLog(), audit.MaxTail)
	if err != nil {
		t.Fatal(err)
	}
	var created, revoked, auto bool
	for _, e := range entries {
		switch e["event_type"] {
		case "rule_created":
			created = e["proposal_id"] == first && e["session_id"] == "claude-code" && e["approval"] == "owner:web"
		case "rule_revoked":
			revoked = e["approval"] == "owner:web"
		case "proposal_auto_approved":
			auto = e["proposal_id"] == second && e["approval"] == "policy:readme-greetings"
		}
	}
	if !created || !revoked || !auto {
		t.Fatalf("ledger: rule_created %v, rule_revoked %v, auto-approval naming the rule %v", created, revoked, auto)
	}
	var rep AuditReport
	w.must("POST", "/api/audit/verify", nil, &rep)
	if !rep.OK || rep.Unsigned != 0 {
		t.Fatalf("verify: %+v", rep)
	}
}

// TestRules_KeepsThePersonsFile: a configured policy file with comments
// gets the rule added in place; a file the person broke is refused with a
// code, and the policy in force stays.
func TestRules_KeepsThePersonsFile(t *testing.T) {
	home := t.TempDir()
	pol := filepath.Join(home, "my-policy.json")
	const mine = "// mine\n{\n  \"version\": 1,\n  \"agents\": {\"*\": {\"ops\": [\"commit\", \"branch\"]}} // keep\n}\n"
	os.WriteFile(pol, []byte(mine), 0o640)
	t.Setenv("SLUICE_POLICY_FILE", pol)
	a, repo, env := flowEnv(t)
	w := loginAPI(t, a)
	cs := agentSession(t, env, "codex")
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("hi\n"), 0o644)
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{"repoPath": repo, "reason": "r", "message": "m", "paths": []string{"README.md"}})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	id := out["proposalId"].(string)
	var draft RuleDraft
	w.must("GET", "/api/proposals/"+id+"/rule", nil, &draft)
	if draft.CreatesFile || draft.PolicyFile != pol {
		t.Fatalf("draft: %+v", draft)
	}
	var card cardJSON
	w.must("GET", "/api/proposals/"+id, nil, &card)
	draft.TrustDeclaredName = true // codex only declared its name
	w.must("POST", "/api/proposals/"+id+"/trust", TrustRequest{Decision: Decision{Digest: card.Digest}, Rule: draft.RuleInput}, nil)
	if res, _ := callTool(t, cs, "proposal_wait", map[string]any{"proposalId": id, "timeoutSeconds": 30}); res["status"] != "completed" {
		t.Fatalf("the trusted card: %v", res)
	}
	got, _ := os.ReadFile(pol)
	if !strings.HasPrefix(string(got), "// mine\n{\n  \"version\": 1,\n  \"agents\": {\"*\": {\"ops\": [\"commit\", \"branch\"]}}, // keep\n  \"rules\": [\n") {
		t.Fatalf("the person's file was not kept:\n%s", got)
	}
	if st, _ := os.Stat(pol); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want 0640 kept", st.Mode().Perm())
	}
	if _, err := os.Stat(a.cfg.DefaultPolicyFile()); !os.IsNotExist(err) {
		t.Fatal("a default policy file was created beside the configured one")
	}

	os.WriteFile(pol, []byte("{ broken"), 0o640)
	if st, code := w.call("GET", "/api/rules", nil, nil); st != http.StatusBadRequest || code != "invalid_policy" {
		t.Fatalf("rules of a broken file: %d %s", st, code)
	}
	// The rule saved before is still in force.
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("hi again\n"), 0o644)
	out, isErr = callTool(t, cs, "propose_commit", map[string]any{"repoPath": repo, "reason": "r", "message": "m", "paths": []string{"README.md"}})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	res, _ := callTool(t, cs, "proposal_wait", map[string]any{"proposalId": out["proposalId"], "timeoutSeconds": 30})
	if res["autoApproved"] != true {
		t.Fatalf("after a broken edit the policy in force changed: %v", res)
	}
}

// A rule never approves by itself a proposal whose content holds
// invisible characters: the card flags it for a person, and the proposal
// waits for one, though the rule matches it. The same rule still approves
// the next proposal without them.
func TestRules_InvisibleContent_WaitsForAPerson(t *testing.T) {
	a, repo, env := flowEnv(t)
	w := loginAPI(t, a)
	cs := agentSession(t, env, "codex")
	propose := readmeProposer(t, cs, repo)
	trustReadme(t, w, cs, propose("hi\n"))

	hidden := propose("access = \"user\u202e \u2066// admin\u2069 \u2066\"\n")
	var held struct {
		cardJSON
		Risk             string          `json:"risk"`
		InvisibleContent []InvisibleLine `json:"invisibleContent"`
	}
	w.must("GET", "/api/proposals/"+hidden, nil, &held)
	if held.State != "pending" || held.ApprovedByRule != "" || held.Decision != nil {
		t.Fatalf("a proposal with invisible characters in its content was decided without a person: %+v", held)
	}
	if len(held.InvisibleContent) == 0 || held.InvisibleContent[0].File != "README.md" {
		t.Fatalf("the card does not flag the line: %+v", held.InvisibleContent)
	}
	w.must("POST", "/api/proposals/"+hidden+"/reject", Decision{Digest: held.Digest}, nil)

	if res, _ := callTool(t, cs, "proposal_wait", map[string]any{"proposalId": propose("hi again\n"), "timeoutSeconds": 30}); res["autoApproved"] != true {
		t.Fatalf("the rule no longer approves what it matches: %v", res)
	}
}

// TestRules_BlockedCard_WaitsForAPerson: a rule matches a commit, but the
// repository holds git's index.lock (a git of the person's is running, or
// crashed). The rule does not approve what would fail after the approval:
// the card waits, pending, saying why; once the lock is gone the same rule
// approves the next one.
func TestRules_BlockedCard_WaitsForAPerson(t *testing.T) {
	a, repo, env := flowEnv(t)
	w := loginAPI(t, a)
	cs := agentSession(t, env, "codex")
	propose := readmeProposer(t, cs, repo)
	trustReadme(t, w, cs, propose("hi\n"))

	lock := filepath.Join(repo, ".git", "index.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	blocked := propose("hi, while git is busy\n")
	var held cardJSON
	w.must("GET", "/api/proposals/"+blocked, nil, &held)
	if held.State != "pending" || held.ApprovedByRule != "" || held.Decision != nil {
		t.Fatalf("a card that cannot land was approved by the rule: %+v", held)
	}
	var pf struct {
		Blockers []string `json:"blockers"`
	}
	w.must("GET", "/api/proposals/"+blocked+"/preflight", nil, &pf)
	if len(pf.Blockers) == 0 || !strings.Contains(pf.Blockers[0], "index.lock") {
		t.Fatalf("the held card does not say why: %+v", pf)
	}
	w.must("POST", "/api/proposals/"+blocked+"/reject", Decision{Digest: held.Digest}, nil)

	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if res, _ := callTool(t, cs, "proposal_wait", map[string]any{"proposalId": propose("hi again\n"), "timeoutSeconds": 30}); res["autoApproved"] != true {
		t.Fatalf("the rule no longer approves what it matches: %v", res)
	}
}

// readmeProposer has cs propose commits of README.md in repo with the
// content given.
func readmeProposer(t *testing.T, cs *mcp.ClientSession, repo string) func(content string) string {
	return func(content string) string {
		t.Helper()
		os.WriteFile(filepath.Join(repo, "README.md"), []byte(content), 0o644)
		out, isErr := callTool(t, cs, "propose_commit", map[string]any{"repoPath": repo, "reason": "r", "message": "m", "paths": []string{"README.md"}})
		if isErr {
			t.Fatalf("propose_commit: %v", out)
		}
		return out["proposalId"].(string)
	}
}

// trustReadme approves card id and trusts what is like it with the rule
// the card drafts (opting in to the name the agent only declared), and
// waits until it landed.
func trustReadme(t *testing.T, w *webAPI, cs *mcp.ClientSession, id string) {
	t.Helper()
	var draft RuleDraft
	w.must("GET", "/api/proposals/"+id+"/rule", nil, &draft)
	var card cardJSON
	w.must("GET", "/api/proposals/"+id, nil, &card)
	draft.TrustDeclaredName = true
	w.must("POST", "/api/proposals/"+id+"/trust", TrustRequest{Decision: Decision{Digest: card.Digest}, Rule: draft.RuleInput}, nil)
	if res, _ := callTool(t, cs, "proposal_wait", map[string]any{"proposalId": id, "timeoutSeconds": 30}); res["status"] != "completed" {
		t.Fatalf("the trusted card: %v", res)
	}
}
