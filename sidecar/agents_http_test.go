package sidecar

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/sidecar/fakemodel"
)

// mcpExchange is one MCP request as it crossed the wire.
type mcpExchange struct {
	Method, Version, Session string
}

// recordingProxy forwards to an MCP endpoint and records each POST's
// JSON-RPC method with its MCP-Protocol-Version and Mcp-Session-Id
// headers: which protocol a real client spoke is seen on the wire.
type recordingProxy struct {
	mu  sync.Mutex
	log []mcpExchange
}

func (p *recordingProxy) start(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: u.Scheme, Host: u.Host})
			r.Out.URL.Path = u.Path
		},
		// Event streams pass through as they are written.
		FlushInterval: -1,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal(body, &msg)
			p.mu.Lock()
			p.log = append(p.log, mcpExchange{msg.Method, r.Header.Get("Mcp-Protocol-Version"), r.Header.Get("Mcp-Session-Id")})
			p.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func (p *recordingProxy) exchanges() []mcpExchange {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.log)
}

// TestAgents_ClaudeCode_HTTP_CurrentProtocol: Claude Code (pinned in
// build/tools) as an HTTP client of `sluice-sidecar http`, added the way
// the docs say (`claude mcp add --transport http` with a bearer header),
// opens with server/discover and speaks MCP 2026-07-28 with no session; a
// tool call the fake model asks for reaches the sidecar under that
// protocol and its real answer reaches the model.
func TestAgents_ClaudeCode_HTTP_CurrentProtocol(t *testing.T) {
	t.Parallel()
	h := newAgentHome(t)
	create := exec.Command(h.sidecar, "token", "create", "--name", "claude-http")
	create.Env = h.env()
	out, err := create.CombinedOutput()
	token := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	if err != nil || !strings.HasPrefix(token, "sluice_") {
		t.Fatalf("token create (%v):\n%s", err, out)
	}
	sidecarURL := startHTTPProcess(t, h.sidecar, h.env())
	proxy := &recordingProxy{}
	endpoint := proxy.start(t, sidecarURL)

	if out, err := h.run(t, h.repo, h.env(), "claude", "mcp", "add", "--transport", "http", "sluice", endpoint,
		"--header", "Authorization: Bearer "+token); err != nil {
		t.Fatalf("claude mcp add (%v):\n%s", err, out)
	}
	if out, err := h.run(t, h.repo, h.env(), "claude", "mcp", "list"); err != nil || !strings.Contains(out, "sluice: "+endpoint) || !strings.Contains(out, "Connected") {
		t.Fatalf("claude mcp list (%v):\n%s", err, out)
	}

	m := &fakemodel.Model{Mark: "repo_brief", Calls: []fakemodel.Call{
		{Tool: "mcp__sluice__repo_brief", Args: map[string]any{"repoPath": h.repo}},
	}}
	modelURL := fakemodel.Start(t, m, fakemodel.Anthropic)
	out2, err := h.run(t, h.repo, h.env("ANTHROPIC_BASE_URL="+modelURL, "ANTHROPIC_API_KEY=sk-ant-test", "ENABLE_TOOL_SEARCH=false"),
		"claude", "-p", "Brief me on this repository with Sluice.", "--model", "claude-sonnet-4-5",
		"--allowedTools", "mcp__sluice__repo_brief")
	if err != nil || !strings.Contains(out2, fakemodel.ClosingText) {
		t.Fatalf("claude -p (%v):\n%s\nmodel log:\n%s", err, out2, m.Log())
	}
	if tools := h.ledgerTools(t); !slices.Contains(tools, "repo_brief") {
		t.Errorf("repo_brief never reached the sidecar (ledger: %v)", tools)
	}
	if res := m.Results(); len(res) == 0 || !strings.Contains(res[0], `"branch":"main"`) && !strings.Contains(res[0], `"branch": "main"`) {
		t.Errorf("the model did not get repo_brief's real answer: %q", res)
	}

	ex := proxy.exchanges()
	t.Logf("MCP requests: %+v", ex)
	if len(ex) == 0 || ex[0].Method != "server/discover" {
		t.Fatalf("Claude Code did not open with server/discover: %+v", ex)
	}
	calls, fellBack := 0, false
	for _, e := range ex {
		if e.Method == "initialize" && !fellBack {
			fellBack = true
			t.Errorf("Claude Code fell back to initialize: %+v", ex)
		}
		if e.Method == "tools/call" {
			calls++
			if e.Version != "2026-07-28" || e.Session != "" {
				t.Errorf("tools/call at protocol %q, session %q; want 2026-07-28 with no session", e.Version, e.Session)
			}
		}
	}
	if calls == 0 {
		t.Errorf("no tools/call crossed the wire: %+v", ex)
	}
}
