package sidecar

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The two MCP protocols Sluice serves side by side: 2025-11-25 (initialize,
// sessions) and 2026-07-28 (server/discover, no sessions, per-request
// _meta).
var bothProtocols = []string{"2025-11-25", "2026-07-28"}

// toolsJSON is a session's tools/list as JSON, for comparing what two
// protocols list.
func toolsJSON(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res.Tools)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkSession holds what every session must show, whichever protocol
// it speaks: the version asked for is the version spoken, logging is not
// advertised (Sluice sends no log messages), and a tool call on a real
// repository works.
func checkSession(t *testing.T, cs *mcp.ClientSession, version, repo string) {
	t.Helper()
	init := cs.InitializeResult()
	if init.ProtocolVersion != version {
		t.Fatalf("asked for %s, speaking %s", version, init.ProtocolVersion)
	}
	caps := init.Capabilities
	if caps == nil || caps.Tools == nil {
		t.Fatalf("%s: no tools capability: %+v", version, caps)
	}
	//lint:ignore SA1019 the test checks that the deprecated logging capability is not claimed.
	if caps.Logging != nil {
		t.Errorf("%s: logging advertised, but Sluice sends no log messages", version)
	}
	if init.ServerInfo == nil || init.ServerInfo.Name != "sluice" {
		t.Errorf("%s: server info %+v", version, init.ServerInfo)
	}
	brief := gitCallOK[RepoBriefOut](t, cs, "repo_brief", map[string]any{"repoPath": repo})
	if brief.Branch != "main" {
		t.Errorf("%s: repo_brief branch %q", version, brief.Branch)
	}
}

// TestHTTP_BothProtocols_SameToolsAndCalls: a go-sdk client at 2025-11-25
// and one at 2026-07-28 connect to the same HTTP transport; each speaks the
// version it asked for (the 2026-07-28 one is answered, not refused with
// -32022 and pushed back to initialize), lists the same tools and calls
// one; the 2026-07-28 one has no session, and its calls carry the token's
// identity like a session's.
func TestHTTP_BothProtocols_SameToolsAndCalls(t *testing.T) {
	env, secrets := startHTTP(t, nil, "agent")
	gitRepo(t, env.repo)
	lists := map[string]string{}
	for _, v := range bothProtocols {
		cs, err := connectHTTPAt(t, env.srv.URL(), secrets["agent"], "client-"+v, v, nil)
		if err != nil {
			t.Fatalf("%s: connect: %v", v, err)
		}
		checkSession(t, cs, v, env.repo)
		if hasSession := cs.ID() != ""; hasSession != (v == "2025-11-25") {
			t.Errorf("%s: session id %q", v, cs.ID())
		}
		if who := gitCallOK[whoamiOut](t, cs, "test_whoami", map[string]any{}); who.Agent != "agent" {
			t.Errorf("%s: attributed to %q, want the token's name", v, who.Agent)
		}
		lists[v] = toolsJSON(t, cs)
	}
	if lists["2025-11-25"] != lists["2026-07-28"] {
		t.Errorf("tools/list differs between protocols:\n2025-11-25: %s\n2026-07-28: %s", lists["2025-11-25"], lists["2026-07-28"])
	}
}

// TestHTTP_Discover_Answered: a raw server/discover at 2026-07-28, as
// Claude Code opens with, gets the server's versions (both protocols) and
// capabilities; before, the stateful transport answered with -32022 or a
// list without 2026-07-28, and the client fell back to initialize.
func TestHTTP_Discover_Answered(t *testing.T) {
	env, secrets := startHTTP(t, nil, "agent")
	body := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`
	code, hdr, out := post(t, env.srv.URL(), map[string]string{
		"Authorization": "Bearer " + secrets["agent"], "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover",
	}, body)
	if code != http.StatusOK {
		t.Fatalf("server/discover: %d %s", code, out)
	}
	if hdr.Get("Mcp-Session-Id") != "" {
		t.Errorf("server/discover opened a session: %q", hdr.Get("Mcp-Session-Id"))
	}
	data := out
	if i := strings.Index(out, "data: "); i >= 0 {
		data = strings.TrimSpace(strings.SplitN(out[i+len("data: "):], "\n", 2)[0])
	}
	var resp struct {
		Error  *struct{ Code int } `json:"error"`
		Result struct {
			SupportedVersions []string `json:"supportedVersions"`
			Capabilities      map[string]json.RawMessage
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(data), &resp); err != nil {
		t.Fatalf("server/discover answer %q: %v", out, err)
	}
	if resp.Error != nil {
		t.Fatalf("server/discover refused with %d: %s", resp.Error.Code, out)
	}
	for _, v := range bothProtocols {
		if !slices.Contains(resp.Result.SupportedVersions, v) {
			t.Errorf("supportedVersions %v lacks %s", resp.Result.SupportedVersions, v)
		}
	}
	if _, ok := resp.Result.Capabilities["tools"]; !ok {
		t.Errorf("capabilities %s: no tools", out)
	}
	if _, ok := resp.Result.Capabilities["logging"]; ok {
		t.Errorf("capabilities %s: logging advertised", out)
	}
}

// TestHTTP_StatelessProtocol_ToolsetEnableKeptByToken: 2026-07-28 has no
// sessions, so what toolset_enable adds is kept by the token: a later
// request of the same token (another client connection) lists and calls
// the tools, and a client of the token listening for changes
// (subscriptions/listen) is told the list changed. Another token, and a
// 2025-11-25 session of the same token, keep their own toolsets.
func TestHTTP_StatelessProtocol_ToolsetEnableKeptByToken(t *testing.T) {
	env, secrets := startHTTP(t, nil, "agent", "other")
	gitRepo(t, env.repo)
	changed := make(chan struct{}, 8)
	listener, err := connectHTTPAt(t, env.srv.URL(), secrets["agent"], "listener", "2026-07-28", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := connectHTTPAt(t, env.srv.URL(), secrets["agent"], "a", "2026-07-28", nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(toolNames(t, a), "fleet_radar") {
		t.Fatal("fleet_radar listed before toolset_enable")
	}
	if out := gitCallOK[ToolsetEnableOut](t, a, "toolset_enable", map[string]any{"toolset": "fleet"}); !slices.Contains(out.Added, "fleet_radar") {
		t.Fatalf("toolset_enable fleet: %+v", out)
	}
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("the token's listening client was not told the tool list changed")
	}
	if !slices.Contains(toolNames(t, listener), "fleet_radar") {
		t.Errorf("the token's other client does not list fleet_radar: %v", toolNames(t, listener))
	}
	b, err := connectHTTPAt(t, env.srv.URL(), secrets["agent"], "b", "2026-07-28", nil)
	if err != nil {
		t.Fatal(err)
	}
	gitCallOK[FleetRadarOut](t, b, "fleet_radar", map[string]any{"repoPaths": []string{env.repo}})

	other, err := connectHTTPAt(t, env.srv.URL(), secrets["other"], "other", "2026-07-28", nil)
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := connectHTTP(t, env.srv.URL(), secrets["agent"], "legacy")
	if err != nil {
		t.Fatal(err)
	}
	for name, cs := range map[string]*mcp.ClientSession{"another token": other, "a 2025-11-25 session": legacy} {
		if slices.Contains(toolNames(t, cs), "fleet_radar") {
			t.Errorf("%s lists fleet_radar enabled by the token's 2026-07-28 client", name)
		}
	}
}

// TestStdio_BothProtocols_SameTools: the real sluice-sidecar over stdio,
// with a go-sdk client at each protocol version: each speaks the version
// it asked for, logging is not advertised, the tools are the same and a
// tool call works.
func TestStdio_BothProtocols_SameTools(t *testing.T) {
	root := t.TempDir()
	env, _ := testEnv(t, root)
	gitRepo(t, root)
	bin := sidecarBinary(t)
	lists := map[string]string{}
	for _, v := range bothProtocols {
		cmd := exec.Command(bin)
		cmd.Env = env
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-" + v, Version: "1"}, nil).
			Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: v})
		cancel()
		if err != nil {
			t.Fatalf("%s: connect: %v", v, err)
		}
		t.Cleanup(func() { cs.Close() })
		checkSession(t, cs, v, root)
		lists[v] = toolsJSON(t, cs)
	}
	if lists["2025-11-25"] != lists["2026-07-28"] {
		t.Errorf("tools/list differs between protocols:\n2025-11-25: %s\n2026-07-28: %s", lists["2025-11-25"], lists["2026-07-28"])
	}
}

// TestHTTP_NoLogMessages: a 2025-11-25 client that sets a log level and
// calls tools receives no notifications/message (Sluice does not log
// through MCP, and does not say it does).
func TestHTTP_NoLogMessages(t *testing.T) {
	env, secrets := startHTTP(t, nil, "agent")
	gitRepo(t, env.repo)
	logged := make(chan string, 16)
	cs, err := connectHTTPAt(t, env.srv.URL(), secrets["agent"], "logger", "2025-11-25", &mcp.ClientOptions{
		//lint:ignore SA1019 the test listens for the deprecated log messages that must not come.
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			b, _ := json.Marshal(r.Params)
			logged <- string(b)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 the test checks that the deprecated logging capability is not claimed.
	if cs.InitializeResult().Capabilities.Logging != nil {
		t.Error("logging advertised")
	}
	//lint:ignore SA1019 a client may still set a level under 2025-11-25; the test checks that nothing is sent at it.
	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}
	gitCallOK[RepoBriefOut](t, cs, "repo_brief", map[string]any{"repoPath": env.repo})
	gitCallErr(t, cs, "repo_brief", map[string]any{"repoPath": "/nowhere"})
	// A notification made while a call runs is written before its answer
	// on the same stream, so by now any would have arrived.
	select {
	case m := <-logged:
		t.Errorf("log message sent: %s", m)
	default:
	}
}

// TestHTTP_Localhost_Accepted_ForeignHostSaysHow: localhost on the
// server's port is accepted like 127.0.0.1; a host the server does not
// answer to is refused with 421 (not 401 or 403, which clients report as
// a bad token) and a message naming the host and --allow-host.
func TestHTTP_Localhost_Accepted_ForeignHostSaysHow(t *testing.T) {
	env, secrets := startHTTP(t, nil, "agent")
	_, port, _ := strings.Cut(env.srv.Addr(), ":")
	auth := "Bearer " + secrets["agent"]
	for _, host := range []string{"localhost:" + port} {
		if code, _, body := post(t, env.srv.URL(), map[string]string{"Host": host, "Authorization": auth, "Origin": "http://" + host}, initializeBody); code != http.StatusOK {
			t.Errorf("Host %s: %d %s", host, code, body)
		}
	}
	cs, err := connectHTTP(t, "http://localhost:"+port+"/mcp", secrets["agent"], "by-name")
	if err != nil {
		t.Fatalf("connect by localhost: %v", err)
	}
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Fatalf("tools/list by localhost: %v", err)
	}

	code, hdr, body := post(t, env.srv.URL(), map[string]string{"Host": "tunnel.example.net:" + port, "Authorization": auth}, initializeBody)
	if code != http.StatusMisdirectedRequest || hdr.Get("WWW-Authenticate") != "" {
		t.Fatalf("foreign host: %d %v", code, hdr)
	}
	var refusal struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(body), &refusal); err != nil {
		t.Fatalf("refusal %q: %v", body, err)
	}
	if refusal.Error.Code != "host_not_allowed" || !strings.Contains(refusal.Error.Message, `"tunnel.example.net:`+port+`"`) ||
		!strings.Contains(refusal.Error.Message, "--allow-host tunnel.example.net") || strings.Contains(strings.ToLower(refusal.Error.Message), "token") {
		t.Errorf("refusal does not say which host and how to allow it: %s", body)
	}
}
