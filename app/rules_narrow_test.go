package app

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// canonical is path with its symlinks resolved, as proposals name
// repositories.
func canonical(t testing.TB, path string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tokenBearer adds a bearer token to every request.
type tokenBearer struct{ token string }

func (b tokenBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// httpAgentSession connects an MCP client to the real sidecar binary's
// streamable HTTP transport with a new token named tokenName: the agent's
// identity is the token's name, which the sidecar authenticates.
func httpAgentSession(t testing.TB, env []string, tokenName string) *mcp.ClientSession {
	t.Helper()
	bin := filepath.Join(binDir(t), "sluice-sidecar")
	create := exec.Command(bin, "token", "create", "--name", tokenName)
	create.Env = env
	out, err := create.Output()
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	token := strings.TrimSpace(string(out))
	srv := exec.Command(bin, "http", "--addr", "127.0.0.1:0")
	srv.Env = env
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	_, url, ok := strings.Cut(strings.TrimSpace(line), "serving MCP at ")
	if err != nil || !ok {
		t.Fatalf("sidecar http: %q %v", line, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), desktopWait)
	t.Cleanup(cancel)
	// The client's own name is not the identity: the token's is.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "some-client", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: tokenBearer{token}}, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connect the HTTP sidecar: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// proposeReadme has cs propose a commit of README.md in repo with content.
func proposeReadme(t *testing.T, cs *mcp.ClientSession, repo, content string) string {
	t.Helper()
	os.WriteFile(filepath.Join(repo, "README.md"), []byte(content), 0o644)
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Update the readme", "message": "Update the readme", "paths": []string{"README.md"},
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	return out["proposalId"].(string)
}

func waitSettled(t *testing.T, cs *mcp.ClientSession, id string) map[string]any {
	t.Helper()
	out, _ := callTool(t, cs, "proposal_wait", map[string]any{"proposalId": id, "timeoutSeconds": 30})
	return out
}

// trustCard saves the drafted rule from pending card id (opting in to a
// declared name when optIn) and approves the card; it returns the draft.
func trustCard(t *testing.T, w *webAPI, id string, optIn bool) RuleDraft {
	t.Helper()
	var draft RuleDraft
	w.must("GET", "/api/proposals/"+id+"/rule", nil, &draft)
	var card cardJSON
	w.must("GET", "/api/proposals/"+id, nil, &card)
	in := draft.RuleInput
	in.TrustDeclaredName = optIn
	w.must("POST", "/api/proposals/"+id+"/trust", TrustRequest{Decision: Decision{Digest: card.Digest}, Rule: in}, nil)
	return draft
}

// stillPending reports whether proposal id waits for a person.
func stillPending(t *testing.T, w *webAPI, id string) bool {
	t.Helper()
	var c cardJSON
	w.must("GET", "/api/proposals/"+id, nil, &c)
	return c.State == "pending" && c.Decision == nil
}

// TestRules_FromACard_OnlyItsRepository: a rule made from a README commit
// in one repository names that repository, and the same commit in another
// repository waits for a person; in its own repository the rule approves
// it, the approval is in the feed with its rule and restore point, and
// restoring that point (the notice's Undo) puts the repository back.
func TestRules_FromACard_OnlyItsRepository(t *testing.T) {
	a, webshop, env := flowEnv(t)
	docs := gitRepo(t, filepath.Dir(webshop), "docs-site")
	w := loginAPI(t, a)
	cs := agentSession(t, env, "gemini-cli")

	first := proposeReadme(t, cs, webshop, "hello\nshop\n")
	draft := trustCard(t, w, first, true)
	if strings.Join(draft.Repos, ",") != canonical(t, webshop) {
		t.Fatalf("the draft names repositories %v, want the card's %s", draft.Repos, webshop)
	}
	if out := waitSettled(t, cs, first); out["status"] != "completed" {
		t.Fatalf("the trusted card: %v", out)
	}
	var rules RulesView
	w.must("GET", "/api/rules", nil, &rules)
	if len(rules.Rules) != 1 || strings.Join(rules.Rules[0].Repos, ",") != canonical(t, webshop) {
		t.Fatalf("rules: %+v", rules.Rules)
	}

	elsewhere := proposeReadme(t, cs, docs, "hello\ndocs\n")
	if !stillPending(t, w, elsewhere) {
		t.Fatal("a rule made in one repository approved a proposal in another")
	}

	again := proposeReadme(t, cs, webshop, "hello\nshop, again\n")
	if out := waitSettled(t, cs, again); out["status"] != "completed" || out["autoApproved"] != true {
		t.Fatalf("in its own repository the rule should approve: %v", out)
	}
	var feed []AutoApproval
	w.must("GET", "/api/rules/approvals", nil, &feed)
	if len(feed) != 1 || feed[0].ID != again || feed[0].Rule != draft.Name || feed[0].Repo != canonical(t, webshop) || feed[0].RestorePoint == "" || feed[0].State != "completed" {
		t.Fatalf("auto-approvals: %+v", feed)
	}
	var undone RestoreView
	w.must("POST", "/api/restore", RestoreRequest{Repo: feed[0].Repo, RestorePoint: feed[0].RestorePoint}, &undone)
	if b, _ := exec.Command("git", "-C", webshop, "show", "HEAD:README.md").Output(); string(b) != "hello\nshop\n" {
		t.Fatalf("after undo, README.md at HEAD is %q", b)
	}
}

// TestRules_VerifiedIdentity_NotASpoofedName: a rule made from the card of
// an agent known by its HTTP token trusts that token's holder: a program
// that merely calls itself by the token's name through a stdio sidecar is
// not approved by it. Trusting the declared name takes the person's
// opt-in, and then any program calling itself so is approved.
func TestRules_VerifiedIdentity_NotASpoofedName(t *testing.T) {
	a, repo, env := flowEnv(t)
	w := loginAPI(t, a)
	holder := httpAgentSession(t, env, "gemini-cli")

	first := proposeReadme(t, holder, repo, "hello\none\n")
	var draft RuleDraft
	w.must("GET", "/api/proposals/"+first+"/rule", nil, &draft)
	if draft.Agent != "gemini-cli" || draft.Identity != "token" || strings.Contains(strings.Join(draft.Notes, " "), "any program") {
		t.Fatalf("the draft for a token's card: %+v", draft)
	}
	trustCard(t, w, first, false)
	if out := waitSettled(t, holder, first); out["status"] != "completed" {
		t.Fatalf("the trusted card: %v", out)
	}
	if out := waitSettled(t, holder, proposeReadme(t, holder, repo, "hello\ntwo\n")); out["autoApproved"] != true {
		t.Fatalf("the token's holder should be approved by its rule: %v", out)
	}

	spoof := agentSession(t, env, "gemini-cli")
	fake := proposeReadme(t, spoof, repo, "hello\nthree\n")
	if !stillPending(t, w, fake) {
		t.Fatal("a program calling itself gemini-cli was approved by the rule made for the gemini-cli token")
	}

	// The declared name: the draft says what it trusts; without the opt-in
	// nothing is saved.
	w.must("GET", "/api/proposals/"+fake+"/rule", nil, &draft)
	if draft.Identity != "declared" || !strings.Contains(strings.Join(draft.Notes, " "), "any program calling itself gemini-cli") {
		t.Fatalf("the draft for a declared name: %+v", draft)
	}
	var card cardJSON
	w.must("GET", "/api/proposals/"+fake, nil, &card)
	if st, code := w.call("POST", "/api/proposals/"+fake+"/trust", TrustRequest{Decision: Decision{Digest: card.Digest}, Rule: draft.RuleInput}, nil); st != http.StatusBadRequest || code != "invalid_argument" {
		t.Fatalf("a declared-name rule without the opt-in: %d %s", st, code)
	}
	trustCard(t, w, fake, true)
	if out := waitSettled(t, spoof, fake); out["status"] != "completed" {
		t.Fatalf("the opted-in card: %v", out)
	}
	if out := waitSettled(t, spoof, proposeReadme(t, spoof, repo, "hello\nfour\n")); out["autoApproved"] != true {
		t.Fatalf("an opted-in declared-name rule approves any program calling itself so: %v", out)
	}
}
