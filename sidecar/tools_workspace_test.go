package sidecar

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/workspace"
	"github.com/sluicehq/sluice/core/workspace/dockerrt"
	"github.com/sluicehq/sluice/core/workspace/workspacetest"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func callJSON(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	var out map[string]any
	if res.StructuredContent != nil {
		out = decode[map[string]any](t, res)
	}
	return res, out
}

func errCode(out map[string]any) errcode.Code {
	e, _ := out["error"].(map[string]any)
	c, _ := e["code"].(string)
	return errcode.Code(c)
}

func TestWorkspaceTools_NoImage_Unsupported(t *testing.T) {
	_, cfg := testEnv(t, t.TempDir())
	cfg.WorkspaceImage = ""
	s, err := New(Options{Config: cfg, Toolsets: []string{"workspace", "workspace_search"}, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectInMemory(t, s)
	for tool, args := range map[string]map[string]any{
		"workspace_create": {"kind": "fresh"},
		"workspace_status": {"workspaceId": "x"},
		"workspace_run":    {"workspaceId": "x", "argv": []string{"true"}},
		"workspace_seal":   {"workspaceId": "x", "reason": "r"},
	} {
		res, out := callJSON(t, cs, tool, args)
		e, _ := out["error"].(map[string]any)
		if msg, _ := e["message"].(string); !res.IsError || errCode(out) != errcode.Unsupported || !strings.Contains(msg, "SLUICE_WORKSPACE_IMAGE") || !strings.Contains(msg, "sluice workspace image use") {
			t.Errorf("%s without an image = %v (isError %v)", tool, out, res.IsError)
		}
	}
}

func TestWorkspaceTools_Annotations(t *testing.T) {
	_, cfg := testEnv(t)
	s, err := New(Options{Config: cfg, Toolsets: []string{"workspace", "workspace_search"}, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := connectInMemory(t, s).ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	reads := map[string]bool{"workspace_status": true, "workspace_file_read": true, "workspace_file_list": true,
		"workspace_file_glob": true, "workspace_file_grep": true, "workspace_diff": true}
	seen := 0
	for _, tl := range res.Tools {
		if !strings.HasPrefix(tl.Name, "workspace_") {
			continue
		}
		seen++
		a := tl.Annotations
		destructive := a.DestructiveHint != nil && *a.DestructiveHint
		switch {
		case reads[tl.Name]:
			if !a.ReadOnlyHint || destructive {
				t.Errorf("%s: want read-only, got %+v", tl.Name, a)
			}
		case tl.Name == "workspace_destroy":
			if a.ReadOnlyHint || !destructive || a.IdempotentHint {
				t.Errorf("%s: want destructive, got %+v", tl.Name, a)
			}
		default:
			if a.ReadOnlyHint || a.DestructiveHint == nil || destructive || a.IdempotentHint {
				t.Errorf("%s: want a non-destructive write, got %+v", tl.Name, a)
			}
		}
		if strings.Contains(tl.Name, "grant") || strings.Contains(tl.Name, "egress") || strings.Contains(tl.Name, "secret") {
			t.Errorf("%s: granting egress or secrets is a human action, never a tool", tl.Name)
		}
	}
	if seen != 12 {
		t.Fatalf("%d workspace tools, want 12", seen)
	}
}

// needWorkspaceImage returns the test image's ID, skipping when the Docker
// Engine is unreachable unless SLUICE_REQUIRE_E2E=1.
func needWorkspaceImage(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	d, err := dockerrt.New(ctx)
	if err != nil {
		needOrSkip(t, false, "Docker Engine reachable: "+err.Error())
	}
	defer d.Close()
	id, err := workspacetest.EnsureImage(t.Context(), d.Client())
	if err != nil {
		t.Fatalf("test image: %v", err)
	}
	return id
}

// serveWorkspaceRuntime stands in for the app's side of workspace runs:
// a gateway on cfg's endpoint file whose runtime routes run containers in
// the Docker Engine, checked against the store the sidecar shares, under
// cfg's image and OCI runtime, as the app serves them.
func serveWorkspaceRuntime(t *testing.T, cfg *config.Config) *workspace.Manager {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	d, err := dockerrt.New(ctx)
	if err != nil {
		needOrSkip(t, false, "Docker Engine reachable: "+err.Error())
	}
	t.Cleanup(func() { d.Close() })
	m, err := workspace.Open(workspace.Options{StateDir: cfg.StateDir, ConfigDir: cfg.ConfigDir, Runtime: d,
		Image: cfg.WorkspaceImage, RuntimeName: cfg.WorkspaceRuntime, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	tok, err := gateway.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.Listen(gateway.Options{Token: tok, Logger: quietLog(), Runtime: &gateway.RuntimeHost{Runtime: d, Store: m,
		Policy: func() workspace.RunPolicy {
			return workspace.RunPolicy{Image: cfg.WorkspaceImage, RuntimeName: cfg.WorkspaceRuntime}
		}}})
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve()
	t.Cleanup(func() { g.Shutdown(context.Background()) })
	if err := gateway.WriteEndpoint(cfg.GatewayFile(), gateway.Endpoint{Addr: g.Addr(), Token: tok, PID: os.Getpid(), AppVersion: "test"}); err != nil {
		t.Fatal(err)
	}
	return m
}

// workspaceRepo is a configuration with the workspace test image and an
// allowed root holding a repository of one commit (file with content).
func workspaceRepo(t *testing.T, file, content string) (cfg *config.Config, repo, image string) {
	t.Helper()
	image = needWorkspaceImage(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, cfg = testEnv(t, root)
	cfg.WorkspaceImage = image
	serveWorkspaceRuntime(t, cfg)
	repo = filepath.Join(root, "repo")
	g := git(t)
	os.Mkdir(repo, 0o755)
	g(repo, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(repo, file), content)
	g(repo, "add", ".")
	g(repo, "commit", "-q", "-m", "init")
	return cfg, repo, image
}

func TestWorkspaceTools_FilesRunDestroy(t *testing.T) {
	cfg, repo, image := workspaceRepo(t, "AGENTS.md", "Run ./test.sh before sealing.\n")
	g := git(t)

	s, err := New(Options{Config: cfg, Toolsets: []string{"workspace", "workspace_search"}, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var progress []string
	cs := connectClient(t, s, "ws-agent", &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, req.Params.Message)
		},
	})

	res, out := callJSON(t, cs, "workspace_create", map[string]any{"kind": "repo", "repoPath": repo})
	if res.IsError {
		t.Fatalf("workspace_create: %v", out)
	}
	id, _ := out["workspaceId"].(string)
	if out["state"] != "ready" || out["commit"] != "refs/heads/main" || out["base"] != g(repo, "rev-parse", "HEAD") {
		t.Fatalf("workspace_create = %v", out)
	}
	t.Cleanup(func() {
		cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "workspace_destroy", Arguments: map[string]any{"workspaceId": id}})
	})

	_, out = callJSON(t, cs, "workspace_status", map[string]any{"workspaceId": id})
	ai, _ := out["agentInstructions"].(map[string]any)
	files, _ := ai["files"].([]any)
	if len(files) != 1 || !strings.Contains(files[0].(map[string]any)["content"].(string), "Run ./test.sh") || ai["notice"] == "" {
		t.Fatalf("workspace_status agentInstructions = %v", out["agentInstructions"])
	}

	if res, out = callJSON(t, cs, "workspace_file_write", map[string]any{"workspaceId": id, "path": "test.sh",
		"content": "#!/bin/sh\necho line-one\necho line-two >&2\nexit 3\n", "executable": true}); res.IsError {
		t.Fatalf("workspace_file_write: %v", out)
	}
	if res, out = callJSON(t, cs, "workspace_file_edit", map[string]any{"workspaceId": id, "path": "test.sh", "old": "exit 3", "new": "exit 0"}); res.IsError {
		t.Fatalf("workspace_file_edit: %v", out)
	}
	if _, out = callJSON(t, cs, "workspace_file_grep", map[string]any{"workspaceId": id, "pattern": "line-(one|two)"}); len(out["matches"].([]any)) != 2 {
		t.Fatalf("workspace_file_grep = %v", out)
	}
	if _, out = callJSON(t, cs, "workspace_file_glob", map[string]any{"workspaceId": id, "pattern": "*.sh"}); len(out["entries"].([]any)) != 1 {
		t.Fatalf("workspace_file_glob = %v", out)
	}
	if _, out = callJSON(t, cs, "workspace_file_read", map[string]any{"workspaceId": id, "path": "../outside"}); errCode(out) != errcode.PathOutsideRoots {
		t.Fatalf("read outside = %v", out)
	}

	params := &mcp.CallToolParams{Name: "workspace_run", Arguments: map[string]any{"workspaceId": id, "argv": []string{"./test.sh"}, "timeoutSeconds": 30}}
	params.SetProgressToken("run-1")
	res, err = cs.CallTool(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	run := decode[WorkspaceRunOut](t, res)
	if res.IsError || run.ExitCode != 0 || !strings.Contains(run.Stdout, "line-one") || !strings.Contains(run.Stderr, "line-two") || run.ImageID != image || run.OCIRuntime != "runc" {
		t.Fatalf("workspace_run = %+v", run)
	}
	mu.Lock()
	streamed := strings.Join(progress, "")
	mu.Unlock()
	if !strings.Contains(streamed, "line-one") {
		t.Errorf("run output was not streamed as progress: %q", streamed)
	}
	// A call can lower a limit, never raise it past the configured one.
	if _, out = callJSON(t, cs, "workspace_run", map[string]any{"workspaceId": id, "argv": []string{"true"}, "timeoutSeconds": 100000}); errCode(out) != errcode.InvalidArgument {
		t.Fatalf("raised limit = %v", out)
	}

	if _, out = callJSON(t, cs, "workspace_diff", map[string]any{"workspaceId": id}); !strings.Contains(out["patch"].(string), "test.sh") {
		t.Fatalf("workspace_diff = %v", out)
	}
	if res, out = callJSON(t, cs, "workspace_destroy", map[string]any{"workspaceId": id}); res.IsError || out["containersGone"] != true || out["treeRemoved"] != true {
		t.Fatalf("workspace_destroy = %v", out)
	}
	if _, out = callJSON(t, cs, "workspace_status", map[string]any{"workspaceId": id}); errCode(out) != errcode.WorkspaceNotFound {
		t.Fatalf("status after destroy = %v", out)
	}
}

// TestWorkspaceTools_RunStreamsProgress: a run that waits for a file the
// test creates only after the agent has seen, in a progress notification,
// the output so far and the time elapsed. Then a run that hits its time
// limit says so.
func TestWorkspaceTools_RunStreamsProgress(t *testing.T) {
	image := needWorkspaceImage(t)
	_, cfg := testEnv(t, t.TempDir())
	cfg.WorkspaceImage = image
	serveWorkspaceRuntime(t, cfg)
	s, err := New(Options{Config: cfg, Toolsets: []string{"workspace", "workspace_search"}, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var progress []*mcp.ProgressNotificationParams
	cs := connectClient(t, s, "ws-agent", &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, req.Params)
		},
	})
	_, out := callJSON(t, cs, "workspace_create", map[string]any{"kind": "fresh"})
	id, _ := out["workspaceId"].(string)
	if id == "" {
		t.Fatalf("workspace_create = %v", out)
	}
	t.Cleanup(func() {
		cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "workspace_destroy", Arguments: map[string]any{"workspaceId": id}})
	})

	params := &mcp.CallToolParams{Name: "workspace_run", Arguments: map[string]any{"workspaceId": id,
		"argv": []string{"sh", "-c", "echo first; while [ ! -f stop ]; do sleep 0.1; done; echo second"}}}
	params.SetProgressToken("live-1")
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), params)
		done <- result{res, err}
	}()
	deadline := time.Now().Add(60 * time.Second)
	var seen *mcp.ProgressNotificationParams
	for seen == nil {
		mu.Lock()
		for _, p := range progress {
			if strings.Contains(p.Message, "first") && strings.Contains(p.Message, "running for") && p.ProgressToken == "live-1" {
				seen = p
			}
		}
		mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no progress notification with the output so far: %v", progress)
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case r := <-done:
		t.Fatalf("the run ended before it was told to: %+v %v", r.res, r.err)
	default:
	}
	if strings.Contains(seen.Message, "second") {
		t.Fatalf("a progress notification before the stop file holds later output: %q", seen.Message)
	}
	writeFile(t, filepath.Join(cfg.StateDir, "workspaces", id, "tree", "stop"), "")
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	run := decode[WorkspaceRunOut](t, r.res)
	if r.res.IsError || run.Stdout != "first\nsecond\n" || !strings.HasPrefix(run.Verdict, "exited 0") {
		t.Fatalf("workspace_run = %+v", run)
	}
	mu.Lock()
	for i := 1; i < len(progress); i++ {
		if progress[i].Progress < progress[i-1].Progress {
			t.Errorf("progress went down: %v then %v", progress[i-1].Progress, progress[i].Progress)
		}
	}
	t.Logf("%d progress notifications; one seen mid-run: %q", len(progress), seen.Message)
	mu.Unlock()

	res, out := callJSON(t, cs, "workspace_run", map[string]any{"workspaceId": id, "argv": []string{"sleep", "30"}, "timeoutSeconds": 1})
	if res.IsError || out["timedOut"] != true || !strings.Contains(toStr(out["verdict"]), "time limit") {
		t.Fatalf("a run past its time limit = %v", out)
	}
	res, out = callJSON(t, cs, "workspace_run", map[string]any{"workspaceId": id, "argv": []string{"sh", "-c", "yes | head -c 5000"}, "outputBytes": 100})
	if res.IsError || out["truncated"] != true || !strings.Contains(toStr(out["verdict"]), "100-byte cap: 5000 bytes in all") {
		t.Fatalf("a run past its output cap = %v", out)
	}
}

func toStr(v any) string { s, _ := v.(string); return s }

// TestWorkspaceTools_OwnerOnly: every workspace tool refuses a caller that
// is not the agent that created the workspace (another client name over
// stdio, another bearer identity over HTTP) and changes nothing; the
// creator goes on working.
func TestWorkspaceTools_OwnerOnly(t *testing.T) {
	cfg, repo, _ := workspaceRepo(t, "a.txt", "a\n")

	session := func(identity, client string) *mcp.ClientSession {
		s, err := New(Options{Config: cfg, Toolsets: []string{"workspace", "workspace_search"}, Logger: quietLog(), Identity: identity})
		if err != nil {
			t.Fatal(err)
		}
		return connectClient(t, s, client, nil)
	}
	owner := session("", "owner-agent")
	res, out := callJSON(t, owner, "workspace_create", map[string]any{"kind": "repo", "repoPath": repo})
	if res.IsError {
		t.Fatalf("workspace_create: %v", out)
	}
	id, _ := out["workspaceId"].(string)
	t.Cleanup(func() {
		owner.CallTool(context.Background(), &mcp.CallToolParams{Name: "workspace_destroy", Arguments: map[string]any{"workspaceId": id}})
	})

	calls := map[string]map[string]any{
		"workspace_status":     {"workspaceId": id},
		"workspace_file_read":  {"workspaceId": id, "path": "a.txt"},
		"workspace_file_write": {"workspaceId": id, "path": "a.txt", "content": "stolen\n"},
		"workspace_file_edit":  {"workspaceId": id, "path": "a.txt", "old": "a", "new": "b"},
		"workspace_file_list":  {"workspaceId": id},
		"workspace_file_glob":  {"workspaceId": id, "pattern": "*"},
		"workspace_file_grep":  {"workspaceId": id, "pattern": "a"},
		"workspace_run":        {"workspaceId": id, "argv": []string{"true"}},
		"workspace_diff":       {"workspaceId": id},
		"workspace_seal":       {"workspaceId": id, "reason": "take it over"},
		"workspace_destroy":    {"workspaceId": id},
	}
	for _, other := range []struct{ name, identity, client string }{
		{"another client name", "", "other-agent"},
		{"another bearer identity", "http-bob", "owner-agent"},
	} {
		cs := session(other.identity, other.client)
		for tool, args := range calls {
			res, out := callJSON(t, cs, tool, args)
			if !res.IsError || errCode(out) != errcode.WorkspaceNotFound || !strings.Contains(resultText(res), "agent that created it") {
				t.Errorf("%s: %s = %v", other.name, tool, out)
			}
		}
	}
	// Nothing changed, and the owner still works.
	res, out = callJSON(t, owner, "workspace_file_read", map[string]any{"workspaceId": id, "path": "a.txt"})
	if res.IsError || out["content"] != "a\n" {
		t.Fatalf("owner read after refusals = %v", out)
	}
	if _, out = callJSON(t, owner, "workspace_status", map[string]any{"workspaceId": id}); out["state"] != "ready" {
		t.Fatalf("owner status = %v", out)
	}
}
