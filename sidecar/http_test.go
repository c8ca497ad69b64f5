package sidecar

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/intake"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/presence"
	"github.com/sluicehq/sluice/core/tokens"
)

// httpEnv is a running HTTP transport with its config, tokens, ledger and
// presence file, all in temp dirs.
type httpEnv struct {
	srv    *HTTPServer
	cfg    *config.Config
	store  *tokens.Store
	repo   string
	ledger *audit.Ledger
	pres   *presence.File
	once   sync.Once
}

// whoamiOut is the answer of the test-only whoami tool.
type whoamiOut struct {
	Agent string `json:"agent"`
	ErrorField
}

// startHTTP runs ListenHTTP in this process with tokens for names. Each
// identity's server also gets a test-only "test_whoami" tool that reports
// agentName, the attribution every tool (and the ledger) uses.
func startHTTP(t *testing.T, mutate func(*HTTPOptions), names ...string) (*httpEnv, map[string]string) {
	t.Helper()
	canon, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, cfg := testEnv(t, canon)
	store := tokens.Open(tokens.DefaultPath(cfg))
	secrets := map[string]string{}
	for _, n := range names {
		s, err := store.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		secrets[n] = s
	}
	ledger, err := OpenLedger(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pres, err := presence.Open(cfg.PresenceDir(), os.Getpid(), presence.ClientInfo{})
	if err != nil {
		t.Fatal(err)
	}
	opts := HTTPOptions{
		Config: cfg, Addr: "127.0.0.1:0", Tokens: store, Ledger: ledger, Presence: pres,
		onSidecar: func(s *Sidecar) {
			addTool(s.Server(), &mcp.Tool{Name: "test_whoami", Description: "test only: the caller's attribution"},
				func(_ context.Context, req *mcp.CallToolRequest, _ noArgs) (whoamiOut, error) {
					return whoamiOut{Agent: s.agentName(req)}, nil
				})
		},
	}
	if mutate != nil {
		mutate(&opts)
	}
	srv, err := ListenHTTP(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	env := &httpEnv{srv: srv, cfg: cfg, store: store, repo: canon, ledger: ledger, pres: pres}
	t.Cleanup(env.stop)
	return env, secrets
}

func (e *httpEnv) stop() {
	e.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.srv.Shutdown(ctx)
		e.ledger.Close()
		e.pres.Close()
	})
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connectHTTP connects the go-sdk streamable client with a bearer token at
// MCP 2025-11-25, the protocol with sessions.
func connectHTTP(t *testing.T, url, token, clientName string) (*mcp.ClientSession, error) {
	t.Helper()
	return connectHTTPAt(t, url, token, clientName, "2025-11-25", nil)
}

// connectHTTPAt connects the go-sdk streamable client with a bearer token
// at one protocol version.
func connectHTTPAt(t *testing.T, url, token, clientName, version string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: clientName, Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token}}, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// post sends one raw JSON-RPC POST and returns the status and body.
func post(t *testing.T, url string, header map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, resp.Header, string(b)
}

func TestHTTP_NoToken_401(t *testing.T) {
	env, _ := startHTTP(t, nil, "agent")
	for name, h := range map[string]map[string]string{
		"no header":      nil,
		"unknown token":  {"Authorization": "Bearer sluice_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
		"wrong scheme":   {"Authorization": "Basic YWdlbnQ6eA=="},
		"empty bearer":   {"Authorization": "Bearer "},
		"token in query": nil,
	} {
		url := env.srv.URL()
		if name == "token in query" {
			url += "?token=sluice_x"
		}
		code, hdr, body := post(t, url, h, initializeBody)
		if code != http.StatusUnauthorized || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: %d %q %s", name, code, hdr.Get("WWW-Authenticate"), body)
		}
	}
	if _, err := connectHTTP(t, env.srv.URL(), "", "no-token"); err == nil {
		t.Error("the go-sdk client connected without a token")
	}
}

func TestHTTP_RevokedToken_401(t *testing.T) {
	env, secrets := startHTTP(t, nil, "agent", "other")
	cs, err := connectHTTP(t, env.srv.URL(), secrets["agent"], "c")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sluice_capabilities"}); err != nil || res.IsError {
		t.Fatalf("call with a valid token: %v %+v", err, res)
	}
	// The CLI revokes with its own Store on the same file.
	if err := tokens.Open(tokens.DefaultPath(env.cfg)).Revoke("agent"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sluice_capabilities"}); err == nil {
		t.Error("an open session kept working after its token was revoked")
	}
	code, _, body := post(t, env.srv.URL(), map[string]string{"Authorization": "Bearer " + secrets["agent"]}, initializeBody)
	if code != http.StatusUnauthorized {
		t.Errorf("revoked token: %d %s", code, body)
	}
	code, _, _ = post(t, env.srv.URL(), map[string]string{"Authorization": "Bearer " + secrets["other"]}, initializeBody)
	if code != http.StatusOK {
		t.Errorf("another token stopped working: %d", code)
	}
}

func TestHTTP_ForeignHost_Refused(t *testing.T) {
	env, secrets := startHTTP(t, func(o *HTTPOptions) { o.AllowHosts = []string{"tunnel.example.com"} }, "agent")
	auth := "Bearer " + secrets["agent"]
	port := env.srv.Addr()[strings.LastIndex(env.srv.Addr(), ":"):]
	for _, c := range []struct {
		host, origin string
		want         int
	}{
		{"evil.example.com", "", http.StatusMisdirectedRequest},
		{"evil.example.com" + port, "", http.StatusMisdirectedRequest},
		{"localhost:1", "", http.StatusMisdirectedRequest},
		{"127.0.0.1:1", "", http.StatusMisdirectedRequest},
		{"10.0.0.1" + port, "", http.StatusMisdirectedRequest},
		{env.srv.Addr(), "http://evil.example.com", http.StatusForbidden},
		{env.srv.Addr(), "null", http.StatusForbidden},
		{env.srv.Addr(), "", http.StatusOK},
		{env.srv.Addr(), "http://" + env.srv.Addr(), http.StatusOK},
		{"tunnel.example.com", "https://tunnel.example.com", http.StatusOK},
	} {
		h := map[string]string{"Host": c.host, "Authorization": auth}
		if c.origin != "" {
			h["Origin"] = c.origin
		}
		if code, _, body := post(t, env.srv.URL(), h, initializeBody); code != c.want {
			t.Errorf("Host %q Origin %q: %d, want %d (%s)", c.host, c.origin, code, c.want, body)
		}
	}
	// The Host check comes first: a foreign host learns nothing, not even
	// that a token is needed.
	if code, hdr, _ := post(t, env.srv.URL(), map[string]string{"Host": "evil.example.com"}, initializeBody); code != http.StatusMisdirectedRequest || hdr.Get("WWW-Authenticate") != "" {
		t.Errorf("foreign host without token: %d %v", code, hdr)
	}
}

func TestListenHTTP_Refusals(t *testing.T) {
	_, cfg := testEnv(t)
	store := tokens.Open(tokens.DefaultPath(cfg))
	if _, err := ListenHTTP(HTTPOptions{Config: cfg, Addr: "127.0.0.1:0", Tokens: store}); !errors.Is(err, ErrNoTokens) {
		t.Errorf("no tokens: %v", err)
	}
	store.Create("a")
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "example.com:80"} {
		if _, err := ListenHTTP(HTTPOptions{Config: cfg, Addr: addr, Tokens: store}); !errors.Is(err, ErrRemoteNotAllowed) {
			t.Errorf("%s without --allow-remote: %v", addr, err)
		}
	}
	if _, err := ListenHTTP(HTTPOptions{Config: cfg, Addr: "127.0.0.1:0", Tokens: store, AllowHosts: []string{"https://x"}}); err == nil {
		t.Error("a URL as --allow-host accepted")
	}
	if _, err := ListenHTTP(HTTPOptions{Config: cfg, Addr: "127.0.0.1:0", Tokens: store, Toolsets: []string{"shell"}}); err == nil {
		t.Error("unknown toolset accepted")
	}
	srv, err := ListenHTTP(HTTPOptions{Config: cfg, Addr: "0.0.0.0:0", Tokens: store, AllowRemote: true})
	if err != nil {
		t.Fatalf("--allow-remote with a token: %v", err)
	}
	srv.Shutdown(context.Background())
}

// TestHTTP_TokenIdentity_LedgerAndPresence: the token's name, not the
// client's self-declared name, is the agent: in every tool's attribution,
// in the audit ledger and in the presence file.
func TestHTTP_TokenIdentity_LedgerAndPresence(t *testing.T) {
	env, secrets := startHTTP(t, nil, "build-bot")
	cs, err := connectHTTP(t, env.srv.URL(), secrets["build-bot"], "claims-to-be-claude")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_whoami"})
	if err != nil || res.IsError {
		t.Fatalf("whoami: %v %+v", err, res)
	}
	if got := decode[whoamiOut](t, res).Agent; got != "build-bot" {
		t.Fatalf("agent over HTTP = %q, want the token's name", got)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "agents_presence", Arguments: map[string]any{"repoPath": env.repo}})
	if err != nil || res.IsError {
		t.Fatalf("agents_presence: %v %+v", err, res)
	}
	if err := env.pres.Flush(); err != nil {
		t.Fatal(err)
	}
	rec := env.pres.Snapshot()
	if len(rec.Repos) != 1 || rec.Repos[0].Path != env.repo || rec.Repos[0].Agent != "build-bot" || rec.Repos[0].LastTool != "agents_presence" {
		t.Fatalf("presence: %+v", rec.Repos)
	}
	cs.Close()
	env.stop()
	entries, err := audit.Tail(env.cfg.AuditLog(), 10)
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, e := range entries {
		if e["session_id"] != "build-bot" {
			t.Errorf("ledger entry attributed to %v, want build-bot: %v", e["session_id"], e)
		}
		tools = append(tools, e["tool"].(string))
	}
	if !slices.Contains(tools, "test_whoami") || !slices.Contains(tools, "agents_presence") {
		t.Fatalf("ledger entries: %v", tools)
	}
}

// TestHTTP_TokenIdentity_OnProposal: a proposal made over HTTP reaches the
// app (a real gateway and journal, found through gateway.json as in
// production) attributed to the token's name, and so does its ledger entry.
func TestHTTP_TokenIdentity_OnProposal(t *testing.T) {
	env, secrets := startHTTP(t, nil, "build-bot")
	repo := makeRepo(t, env.repo)
	j, err := journal.Open(filepath.Join(t.TempDir(), "journal.db"), journal.Options{Recorder: &recorder{}, PendingExpiry: env.cfg.PendingExpiry})
	if err != nil {
		t.Fatal(err)
	}
	token, _ := gateway.NewToken()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	gw, err := gateway.Listen(gateway.Options{Token: token, AppVersion: "test", Logger: quiet,
		Backend: intake.New(j, intake.Options{Roots: gitx.Roots(env.cfg.AllowedRoots), Logger: quiet})})
	if err != nil {
		t.Fatal(err)
	}
	go gw.Serve()
	t.Cleanup(func() { gw.Shutdown(context.Background()); j.Close() })
	if err := gateway.WriteEndpoint(env.cfg.GatewayFile(), gateway.Endpoint{Addr: gw.Addr(), Token: token, PID: os.Getpid(), AppVersion: "test"}); err != nil {
		t.Fatal(err)
	}

	cs, err := connectHTTP(t, env.srv.URL(), secrets["build-bot"], "claims-to-be-claude")
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "propose_branch", Arguments: map[string]any{
		"repoPath": repo, "reason": "a branch for the build", "name": "agent/build",
	}})
	if err != nil || res.IsError {
		t.Fatalf("propose_branch over HTTP: %v %+v", err, res)
	}
	out := decode[ProposalOut](t, res)
	rec, err := j.Get(out.ProposalID)
	if err != nil || rec.Proposal.Agent != "build-bot" {
		t.Fatalf("proposal agent = %q (%v), want the token's name", rec.Proposal.Agent, err)
	}
	cs.Close()
	env.stop()
	entries, err := audit.Tail(env.cfg.AuditLog(), 5)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		if e["tool"] == "propose_branch" {
			found = e["session_id"] == "build-bot"
		}
	}
	if !found {
		t.Fatalf("no ledger entry for propose_branch attributed to build-bot: %v", entries)
	}
}

// A session belongs to the token that opened it.
func TestHTTP_SessionBoundToToken(t *testing.T) {
	env, secrets := startHTTP(t, nil, "a", "b")
	code, hdr, _ := post(t, env.srv.URL(), map[string]string{"Authorization": "Bearer " + secrets["a"]}, initializeBody)
	sid := hdr.Get("Mcp-Session-Id")
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %q", code, sid)
	}
	code, _, body := post(t, env.srv.URL(), map[string]string{"Authorization": "Bearer " + secrets["b"], "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"},
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if code != http.StatusForbidden {
		t.Fatalf("token b used a's session: %d %s", code, body)
	}
}

func TestHTTP_PathToken(t *testing.T) {
	env, secrets := startHTTP(t, func(o *HTTPOptions) { o.AllowPathToken = true }, "chatgpt")
	cs, err := connectHTTP(t, env.srv.URL()+"/"+secrets["chatgpt"], "", "openai-mcp")
	if err != nil {
		t.Fatalf("connect with the token in the path: %v", err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_whoami"})
	if err != nil || decode[whoamiOut](t, res).Agent != "chatgpt" {
		t.Fatalf("whoami: %v %+v", err, res)
	}
	if code, _, _ := post(t, env.srv.URL()+"/sluice_wrong", nil, initializeBody); code != http.StatusUnauthorized {
		t.Errorf("wrong path token: %d", code)
	}
	plain, secrets2 := startHTTP(t, nil, "chatgpt")
	if code, _, _ := post(t, plain.srv.URL()+"/"+secrets2["chatgpt"], nil, initializeBody); code != http.StatusNotFound {
		t.Errorf("path token accepted without --allow-path-token: %d", code)
	}
}

// gitRepo makes a small real repository.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "first"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// inspectorRepoBrief lists the tools with the Inspector and calls
// repo_brief on repo. While repo_brief is not built into this sidecar it
// calls sluice_capabilities instead and then fails under
// SLUICE_REQUIRE_E2E=1 (skips otherwise): the missing tool is reported,
// never passed over.
func inspectorRepoBrief(t *testing.T, env []string, target []string, repo string) {
	t.Helper()
	names, out := inspectorTools(t, env, target...)
	if !names["sluice_capabilities"] || !names["agents_presence"] || !names["repo_brief"] {
		t.Fatalf("tools/list: %s", out)
	}
	// agents_presence proves that the repository (and so the allowed
	// roots) reached the server.
	out = runInspector(t, env, append(target, "--method", "tools/call", "--tool-name", "agents_presence", "--tool-arg", "repoPath="+repo)...)
	var pres struct {
		IsError           bool        `json:"isError"`
		StructuredContent PresenceOut `json:"structuredContent"`
	}
	if err := json.Unmarshal(out, &pres); err != nil || pres.IsError || pres.StructuredContent.Repo != repo {
		t.Fatalf("tools/call agents_presence: %v\n%s", err, out)
	}
	out = runInspector(t, env, append(target, "--method", "tools/call", "--tool-name", "repo_brief", "--tool-arg", "repoPath="+repo)...)
	var call struct {
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
	}
	if err := json.Unmarshal(out, &call); err != nil || call.IsError || len(call.StructuredContent) == 0 {
		t.Fatalf("tools/call repo_brief: %v\n%s", err, out)
	}
}

func TestInspector_Stdio_RepoBrief(t *testing.T) {
	repo := t.TempDir()
	gitRepo(t, repo)
	env, _ := testEnv(t, repo)
	canon, _ := filepath.EvalSymlinks(repo)
	// The Inspector starts a stdio server with only a few inherited
	// variables (HOME, PATH, …); the sidecar's must be passed with -e.
	target := []string{"--cli"}
	for _, kv := range env {
		if strings.HasPrefix(kv, "SLUICE_") || strings.HasPrefix(kv, "XDG_") {
			target = append(target, "-e", kv)
		}
	}
	inspectorRepoBrief(t, env, append(target, sidecarBinary(t)), canon)
}

// TestInspector_HTTP_WithToken_RepoBrief runs the real binary's HTTP
// transport with a token made by its own `token create`, and the MCP
// Inspector CLI as the client.
func TestInspector_HTTP_WithToken_RepoBrief(t *testing.T) {
	if _, _, err := inspectorAvailable(); err != nil {
		needOrSkip(t, false, err.Error())
	}
	repo := t.TempDir()
	gitRepo(t, repo)
	env, _ := testEnv(t, repo)
	canon, _ := filepath.EvalSymlinks(repo)
	bin := sidecarBinary(t)
	create := exec.Command(bin, "token", "create", "--name", "inspector")
	create.Env = env
	tok, err := create.Output()
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	url := startHTTPProcess(t, bin, env)

	// Without the token the Inspector is refused.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ibin, path := inspector(t)
	noauth := exec.CommandContext(ctx, ibin, "--cli", url, "--transport", "http", "--method", "tools/list")
	noauth.Env = append(env, "PATH="+path)
	if out, err := noauth.CombinedOutput(); err == nil {
		t.Fatalf("the Inspector listed tools without a token:\n%s", out)
	}
	target := []string{"--cli", url, "--transport", "http", "--header", "Authorization: Bearer " + strings.TrimSpace(string(tok))}
	inspectorRepoBrief(t, env, target, canon)
}

func inspectorAvailable() (string, string, error) {
	dir := os.Getenv("SLUICE_TOOLS_DIR")
	bin := filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(bin); dir == "" || err != nil {
		return "", "", errors.New("the MCP Inspector CLI in SLUICE_TOOLS_DIR (make test installs it)")
	}
	return bin, dir, nil
}

// startHTTPProcess runs `sluice-sidecar http` on a random loopback port and
// returns its MCP URL; the process is stopped with SIGTERM at cleanup.
func startHTTPProcess(t *testing.T, bin string, env []string) string {
	t.Helper()
	cmd := exec.Command(bin, "http", "--addr", "127.0.0.1:0")
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		s, _ := r.ReadString('\n')
		line <- s
		io.Copy(io.Discard, r)
	}()
	select {
	case s := <-line:
		_, url, ok := strings.Cut(strings.TrimSpace(s), "serving MCP at ")
		if !ok {
			t.Fatalf("http did not start: %q\n%s", s, stderr.String())
		}
		return url
	case <-time.After(15 * time.Second):
		t.Fatalf("http did not start in time:\n%s", stderr.String())
	}
	return ""
}

// TestHTTP_ToolsetEnable_StaysInItsSession: two MCP sessions over HTTP with
// the same token (two agents given one token, or one agent's two windows)
// are separate: fleet enabled in one is listed and callable there only;
// the other session, and a session opened afterwards, see the defaults.
// The workspace tools' shared state stays one per token.
func TestHTTP_ToolsetEnable_StaysInItsSession(t *testing.T) {
	env, secrets := startHTTP(t, nil, "shared")
	a, err := connectHTTP(t, env.srv.URL(), secrets["shared"], "window-a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := connectHTTP(t, env.srv.URL(), secrets["shared"], "window-b")
	if err != nil {
		t.Fatal(err)
	}
	if a.ID() == "" || a.ID() == b.ID() {
		t.Fatalf("session ids %q and %q: want two sessions", a.ID(), b.ID())
	}
	out := gitCallOK[ToolsetEnableOut](t, a, "toolset_enable", map[string]any{"toolset": "fleet"})
	if !slices.Contains(out.Added, "fleet_radar") {
		t.Fatalf("toolset_enable fleet in session a: %+v", out)
	}
	if !slices.Contains(toolNames(t, a), "fleet_radar") {
		t.Fatalf("session a does not list fleet_radar after enabling it: %v", toolNames(t, a))
	}
	c, err := connectHTTP(t, env.srv.URL(), secrets["shared"], "window-c")
	if err != nil {
		t.Fatal(err)
	}
	for name, cs := range map[string]*mcp.ClientSession{"b (open before)": b, "c (opened after)": c} {
		if got := toolNames(t, cs); slices.Contains(got, "fleet_radar") {
			t.Errorf("session %s lists fleet_radar enabled in session a: %v", name, got)
		}
		caps := gitCallOK[CapabilitiesOut](t, cs, "sluice_capabilities", map[string]any{})
		if slices.Contains(caps.Toolsets, "fleet") {
			t.Errorf("session %s reports fleet enabled: %v", name, caps.Toolsets)
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "fleet_radar", Arguments: map[string]any{"repoPaths": []string{env.repo}}})
		if err == nil && !res.IsError {
			t.Errorf("session %s called fleet_radar enabled in session a: %s", name, gitResultText(res))
		}
	}
	// Session b enabling fleet itself still works, and a still has it.
	if out := gitCallOK[ToolsetEnableOut](t, b, "toolset_enable", map[string]any{"toolset": "fleet"}); !slices.Contains(out.Added, "fleet_radar") {
		t.Errorf("toolset_enable fleet in session b added %v", out.Added)
	}
	gitCallOK[FleetRadarOut](t, a, "fleet_radar", map[string]any{"repoPaths": []string{env.repo}})
	env.srv.mu.Lock()
	shared := len(env.srv.ws)
	env.srv.mu.Unlock()
	if shared != 1 {
		t.Errorf("workspace state kept for %d identities, want 1 (the token's)", shared)
	}
}
