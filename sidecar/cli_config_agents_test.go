package sidecar

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/sidecar/fakemodel"
)

// The agents people use, as the real programs from npm (pinned in
// build/tools): `sluice-sidecar config --client X --write` in an isolated
// HOME, then the agent's own listing command must show Sluice (connected,
// where the agent checks), and a real tool call through the agent, driven
// by a fake model on 127.0.0.1, must reach the sidecar for a pre-allowed
// tool without a prompt and be held for one that is not pre-allowed.

// agentBinDir is build/tools' node_modules/.bin and the PATH to run its
// programs with (Node 22 first).
func agentBinDir(t *testing.T) (string, string) {
	t.Helper()
	dir := os.Getenv("SLUICE_TOOLS_DIR")
	bin := filepath.Join(dir, "node_modules", ".bin")
	_, err := os.Stat(filepath.Join(bin, "claude"))
	needOrSkip(t, dir != "" && err == nil, "the agent CLIs in SLUICE_TOOLS_DIR (make test installs them from build/tools)")
	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	if nb := os.Getenv("SLUICE_NODE_BIN"); nb != "" {
		path = nb + string(os.PathListSeparator) + path
	}
	return bin, path
}

// agentHome is one isolated person: a HOME with an allowed root holding a
// repository, and nothing else.
type agentHome struct {
	home, root, repo string
	bin, path        string
	sidecar          string
}

func newAgentHome(t *testing.T) *agentHome {
	t.Helper()
	bin, path := agentBinDir(t)
	home := t.TempDir()
	h := &agentHome{home: home, root: filepath.Join(home, "src"), bin: bin, path: path, sidecar: sidecarBinary(t)}
	h.repo = filepath.Join(h.root, "widgets")
	if err := os.MkdirAll(h.repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gitRepo(t, h.repo)
	// The roots go where the app keeps them; the agents pass the sidecar
	// no SLUICE_* variable.
	c := &config.Config{ConfigDir: filepath.Join(home, ".config", "sluice")}
	if _, err := c.AddRoot(h.root); err != nil {
		t.Fatal(err)
	}
	// Workspaces are configured, so that their tools are listed and the
	// agents must hold one for permission; no workspace is ever started.
	if err := c.SaveWorkspaceImage("sha256:" + strings.Repeat("0", 64)); err != nil {
		t.Fatal(err)
	}
	if canon, err := filepath.EvalSymlinks(h.repo); err == nil {
		h.repo = canon
	}
	return h
}

// env is what every agent runs with: HOME, PATH and no XDG or SLUICE_*
// variables, so that all files are found from HOME as on a person's
// machine.
func (h *agentHome) env(extra ...string) []string {
	// No update checks or usage reports: this machine reaches no service
	// of the agents' makers, and the tests must not try.
	return append([]string{"HOME=" + h.home, "PATH=" + h.path, "TERM=dumb", "NO_COLOR=1", "LANG=C.UTF-8",
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "CI=1"}, extra...)
}

// run runs an agent program in dir. The deadline only guards against a
// hang; nothing is asserted on how long it takes.
func (h *agentHome) run(t *testing.T, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(h.bin, name), args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = nil
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %v did not finish (hang guard):\n%s", name, args, out.String())
	}
	return out.String(), err
}

// connect writes the client's configuration with the real sidecar binary.
func (h *agentHome) connect(t *testing.T, client string, extra ...string) string {
	t.Helper()
	args := append([]string{"config", "--client", client, "--write", "--command", h.sidecar}, extra...)
	cmd := exec.Command(h.sidecar, args...)
	cmd.Dir = h.repo
	cmd.Env = h.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("config --client %s --write: %v\n%s", client, err, out)
	}
	again := exec.Command(h.sidecar, args...)
	again.Dir = h.repo
	again.Env = h.env()
	out2, err := again.CombinedOutput()
	if err != nil || !strings.Contains(string(out2), "Nothing to change") {
		t.Fatalf("a second --write for %s changed something (%v):\n%s", client, err, out2)
	}
	return string(out)
}

// writeJSON writes v as a person's settings file would be.
func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// ledgerTools lists the tools the sidecar recorded in its audit ledger:
// the proof that a call reached it.
func (h *agentHome) ledgerTools(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(h.home, ".local", "state", "sluice", "audit", "audit.jsonl"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var tools []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e struct {
			Tool string `json:"tool"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Tool != "" {
			tools = append(tools, e.Tool)
		}
	}
	return tools
}

// checkHeldAndRan asserts the outcome of the two-call script: the
// pre-allowed repo_brief reached the sidecar and answered with the real
// repository; the workspace tool, not pre-allowed, never reached it, and
// the agent told its model so (unless it stops the run there: opencode).
func (h *agentHome) checkHeldAndRan(t *testing.T, m *fakemodel.Model, out string) {
	t.Helper()
	h.checkRan(t, m, out)
	res := m.Results()
	if len(res) < 2 {
		t.Fatalf("the model got %d tool results, want 2: %q\nagent output:\n%s\nmodel log:\n%s", len(res), res, out, m.Log())
	}
	if strings.Contains(res[1], "workspace") && strings.Contains(res[1], `"error"`) && strings.Contains(res[1], "unsupported") {
		t.Errorf("workspace_status ran (its own error came back): %.400s", res[1])
	}
}

// checkRan asserts that repo_brief reached the sidecar and its real
// answer reached the model, and that workspace_status never reached the
// sidecar.
func (h *agentHome) checkRan(t *testing.T, m *fakemodel.Model, out string) {
	t.Helper()
	tools := h.ledgerTools(t)
	res := m.Results()
	for i, r := range res {
		t.Logf("tool result %d the agent sent its model: %.160q", i+1, r)
	}
	t.Logf("ledger: %v", tools)
	if !slices.Contains(tools, "repo_brief") {
		t.Errorf("repo_brief never reached the sidecar (ledger: %v)\nagent output:\n%s\nmodel log:\n%s", tools, out, m.Log())
	}
	if slices.Contains(tools, "workspace_status") {
		t.Errorf("workspace_status, which is not pre-allowed, ran without a person's approval (ledger: %v)", tools)
	}
	if len(res) == 0 {
		t.Fatalf("the model got no tool result\nagent output:\n%s\nmodel log:\n%s", out, m.Log())
	}
	if !strings.Contains(res[0], `"branch":"main"`) && !strings.Contains(res[0], `"branch": "main"`) {
		t.Errorf("repo_brief's result is not the repository's brief: %.400s", res[0])
	}
}

func TestAgents_ClaudeCode(t *testing.T) {
	t.Parallel()
	h := newAgentHome(t)
	// A local-scope entry left by `claude mcp add` (the old README) is
	// reconciled: one sluice.
	writeJSON(t, filepath.Join(h.home, ".claude.json"), map[string]any{
		"projects": map[string]any{h.repo: map[string]any{"mcpServers": map[string]any{"sluice": map[string]any{"type": "stdio", "command": h.sidecar, "args": []string{}}}}},
	})
	h.connect(t, "claude-code")
	out, err := h.run(t, h.repo, h.env(), "claude", "mcp", "list")
	if err != nil || !strings.Contains(out, "sluice: "+h.sidecar) || !strings.Contains(out, "Connected") || strings.Contains(out, "onflicting") {
		t.Fatalf("claude mcp list (%v):\n%s", err, out)
	}
	if n := strings.Count(out, "sluice:"); n != 1 {
		t.Errorf("claude mcp list shows %d sluice entries:\n%s", n, out)
	}

	m := &fakemodel.Model{Mark: "repo_brief", Calls: []fakemodel.Call{
		{Tool: "mcp__sluice__repo_brief", Args: map[string]any{"repoPath": h.repo}},
		{Tool: "mcp__sluice__workspace_status", Args: map[string]any{"workspaceId": "ws-1"}},
	}}
	url := fakemodel.Start(t, m, fakemodel.Anthropic)
	out, err = h.run(t, h.repo, h.env("ANTHROPIC_BASE_URL="+url, "ANTHROPIC_API_KEY=sk-ant-test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		// Every tool in the request, as the scripted model calls tools by
		// name without searching for them first.
		"ENABLE_TOOL_SEARCH=false"),
		"claude", "-p", "Brief me on this repository with Sluice.", "--model", "claude-sonnet-4-5")
	if err != nil || !strings.Contains(out, fakemodel.ClosingText) {
		t.Fatalf("claude -p (%v):\n%s\nmodel log:\n%s", err, out, m.Log())
	}
	h.checkHeldAndRan(t, m, out)
	if res := m.Results(); len(res) >= 2 && !strings.Contains(strings.ToLower(res[1]), "permission") {
		t.Errorf("workspace_status was not held for permission: %.400s", res[1])
	}

	// Project scope instead: .mcp.json, approved where Claude Code reads
	// the approval, the user-scope entry reconciled away. The person
	// answers the folder-trust question (recorded in ~/.claude.json).
	h.connect(t, "claude-code", "--scope", "project", "--project", h.repo)
	var cj map[string]any
	raw, err := os.ReadFile(filepath.Join(h.home, ".claude.json"))
	if err != nil || json.Unmarshal(raw, &cj) != nil {
		t.Fatalf("~/.claude.json: %v", err)
	}
	projects, _ := cj["projects"].(map[string]any)
	entry, _ := projects[h.repo].(map[string]any)
	if entry == nil {
		entry = map[string]any{}
		if projects == nil {
			projects = map[string]any{}
			cj["projects"] = projects
		}
		projects[h.repo] = entry
	}
	entry["hasTrustDialogAccepted"] = true
	writeJSON(t, filepath.Join(h.home, ".claude.json"), cj)
	out, err = h.run(t, h.repo, h.env(), "claude", "mcp", "list")
	if err != nil || strings.Count(out, "sluice:") != 1 || !strings.Contains(out, "Connected") || strings.Contains(out, "onflicting") || strings.Contains(out, "Pending") {
		t.Fatalf("claude mcp list with --scope project (%v):\n%s", err, out)
	}
}

// Gemini CLI adds wait_for_previous to every call (Sluice ignores it) and
// starts no MCP server in a folder the person has not trusted: the test
// trusts the repository's folder the way Gemini CLI records a person's
// answer.
func TestAgents_GeminiCLI(t *testing.T) {
	t.Parallel()
	h := newAgentHome(t)
	// The person chose API-key sign-in; the writer merges into that file.
	writeJSON(t, filepath.Join(h.home, ".gemini", "settings.json"), map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":  map[string]any{"usageStatisticsEnabled": false},
	})
	h.connect(t, "gemini-cli")
	writeJSON(t, filepath.Join(h.home, ".gemini", "trustedFolders.json"), map[string]string{h.repo: "TRUST_FOLDER"})
	out, err := h.run(t, h.repo, h.env(), "gemini", "mcp", "list")
	if err != nil || !strings.Contains(out, "sluice: "+h.sidecar) || !strings.Contains(out, "Connected") {
		t.Fatalf("gemini mcp list (%v):\n%s", err, out)
	}
	m := &fakemodel.Model{Mark: "repo_brief", Calls: []fakemodel.Call{
		{Tool: "mcp_sluice_repo_brief", Args: map[string]any{"repoPath": h.repo, "wait_for_previous": false}},
		{Tool: "mcp_sluice_workspace_status", Args: map[string]any{"workspaceId": "ws-1", "wait_for_previous": true}},
	}}
	url := fakemodel.Start(t, m, fakemodel.Gemini)
	env := h.env("GOOGLE_GEMINI_BASE_URL="+url, "GEMINI_API_KEY=test-key")
	out, err = h.run(t, h.repo, env, "gemini", "-p", "Brief me on this repository with Sluice.", "-m", "gemini-2.5-flash")
	if err != nil || !strings.Contains(out, fakemodel.ClosingText) {
		t.Fatalf("gemini -p (%v):\n%s\nmodel log:\n%s", err, out, m.Log())
	}
	h.checkHeldAndRan(t, m, out)
	// Gemini CLI itself added the argument to Sluice's schemas, and the call
	// that carried it ran.
	if !strings.Contains(m.Log(), "the tool declarations carry wait_for_previous") {
		t.Errorf("Gemini CLI no longer adds wait_for_previous; review sidecar.InjectedArguments")
	}
}

// Qwen Code, on an OpenAI-compatible provider that is the fake model.
func TestAgents_QwenCode(t *testing.T) {
	t.Parallel()
	h := newAgentHome(t)
	// The person's own settings: an OpenAI-compatible provider, and every
	// tool in the request (the scripted model calls tools by name, without
	// Qwen Code's tool_search bridge).
	writeJSON(t, filepath.Join(h.home, ".qwen", "settings.json"), map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "openai"}},
		"tools":    map[string]any{"toolSearch": map[string]any{"enabled": false}},
		"privacy":  map[string]any{"usageStatisticsEnabled": false},
	})
	h.connect(t, "qwen-code")
	// Qwen Code asks whether to trust a folder when its folder trust is
	// on; this is where it records a person's "Trust folder".
	writeJSON(t, filepath.Join(h.home, ".qwen", "trustedFolders.json"), map[string]string{h.repo: "TRUST_FOLDER"})
	out, err := h.run(t, h.repo, h.env(), "qwen", "mcp", "list")
	if err != nil || !strings.Contains(out, "sluice: "+h.sidecar) || !strings.Contains(out, "Connected") {
		t.Fatalf("qwen mcp list (%v):\n%s", err, out)
	}
	m := &fakemodel.Model{Mark: "repo_brief", Calls: []fakemodel.Call{
		{Tool: "mcp__sluice__repo_brief", Args: map[string]any{"repoPath": h.repo}},
		{Tool: "mcp__sluice__workspace_status", Args: map[string]any{"workspaceId": "ws-1"}},
	}}
	url := fakemodel.Start(t, m, fakemodel.OpenAIChat)
	env := h.env("OPENAI_BASE_URL="+url+"/v1", "OPENAI_API_KEY=sk-test", "OPENAI_MODEL=fake-model")
	out, err = h.run(t, h.repo, env, "qwen", "-p", "Brief me on this repository with Sluice.")
	if err != nil || !strings.Contains(out, fakemodel.ClosingText) {
		t.Fatalf("qwen -p (%v):\n%s\nmodel log:\n%s", err, out, m.Log())
	}
	h.checkHeldAndRan(t, m, out)
}

// opencode, with an OpenAI-compatible provider that is the fake model. It
// runs tools without asking unless told to ask: the writer tells it to ask
// for Sluice's workspace tools.
func TestAgents_Opencode(t *testing.T) {
	t.Parallel()
	h := newAgentHome(t)
	m := &fakemodel.Model{Mark: "repo_brief", Calls: []fakemodel.Call{
		{Tool: "sluice_repo_brief", Args: map[string]any{"repoPath": h.repo}},
		{Tool: "sluice_workspace_status", Args: map[string]any{"workspaceId": "ws-1"}},
	}}
	url := fakemodel.Start(t, m, fakemodel.OpenAIChat)
	writeJSON(t, filepath.Join(h.home, ".config", "opencode", "opencode.json"), map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"model":   "fake/fake-model",
		"provider": map[string]any{"fake": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "Fake",
			"options": map[string]any{"baseURL": url + "/v1", "apiKey": "sk-test"},
			"models":  map[string]any{"fake-model": map[string]any{"name": "Fake model", "tool_call": true}},
		}},
		"autoupdate": false, "share": "disabled",
	})
	h.connect(t, "opencode")
	out, err := h.run(t, h.repo, h.env(), "opencode", "mcp", "list")
	if err != nil || !strings.Contains(out, "sluice") || !strings.Contains(out, "connected") {
		t.Fatalf("opencode mcp list (%v):\n%s", err, out)
	}
	out, _ = h.run(t, h.repo, h.env(), "opencode", "run", "Brief me on this repository with Sluice.")
	h.checkRan(t, m, out)
	// `opencode run` cannot ask a person: it rejects the held call and
	// ends the run there, saying so.
	if !strings.Contains(out, "permission requested: sluice_workspace_status") || !strings.Contains(out, "auto-rejecting") {
		t.Errorf("opencode did not hold workspace_status for permission:\n%s", out)
	}
	if strings.Contains(out, "permission requested: sluice_repo_brief") {
		t.Errorf("opencode asked before repo_brief, which is pre-allowed:\n%s", out)
	}
}

// Codex starts the sidecar with a cleaned environment: the roots reach it
// through config.json alone. `codex exec` runs on a provider that is the
// fake model.
func TestAgents_Codex(t *testing.T) {
	t.Parallel()
	h := newAgentHome(t)
	h.connect(t, "codex")
	out, err := h.run(t, h.repo, h.env(), "codex", "mcp", "list")
	if err != nil || !strings.Contains(out, "sluice") || !strings.Contains(out, h.sidecar) || !strings.Contains(out, "enabled") {
		t.Fatalf("codex mcp list (%v):\n%s", err, out)
	}
	m := &fakemodel.Model{Mark: "repo_brief", Calls: []fakemodel.Call{
		{Tool: "mcp__sluice/repo_brief", Args: map[string]any{"repoPath": h.repo}},
		{Tool: "mcp__sluice/workspace_status", Args: map[string]any{"workspaceId": "ws-1"}},
	}}
	url := fakemodel.Start(t, m, fakemodel.OpenAIResponses)
	out, err = h.run(t, h.repo, h.env("FAKE_MODEL_KEY=sk-test"), "codex", "exec", "--skip-git-repo-check",
		"-c", "model_provider=fake",
		"-c", `model_providers.fake={name="fake",base_url="`+url+`/v1",wire_api="responses",env_key="FAKE_MODEL_KEY"}`,
		"-m", "fake-model", "Brief me on this repository with Sluice.")
	if err != nil || !strings.Contains(out, fakemodel.ClosingText) {
		t.Fatalf("codex exec (%v):\n%s\nmodel log:\n%s", err, out, m.Log())
	}
	h.checkHeldAndRan(t, m, out)
}

// Copilot CLI, on its bring-your-own-provider variables pointed at the
// fake model, in a folder trusted the way Copilot CLI records a person's
// answer (an interactive session asks; -p does not). It keeps no tool approvals in a file: the pre-allowed tools come
// from the --allow-tool flags the writer prints. It runs tools annotated
// read-only on its own (workspace_status among them, which the writer
// says), so the held tool here is workspace_create.
func TestAgents_CopilotCLI(t *testing.T) {
	t.Parallel()
	h := newAgentHome(t)
	out := h.connect(t, "copilot-cli")
	writeJSON(t, filepath.Join(h.home, ".copilot", "config.json"), map[string]any{"trusted_folders": []string{h.repo}})
	list, err := h.run(t, h.repo, h.env(), "copilot", "mcp", "list")
	if err != nil || !strings.Contains(list, "sluice") {
		t.Fatalf("copilot mcp list (%v):\n%s", err, list)
	}
	var allow []string
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "--allow-tool='"); ok {
			allow = append(allow, "--allow-tool="+strings.TrimSuffix(v, "'"))
		}
	}
	if len(allow) == 0 || slices.ContainsFunc(allow, func(a string) bool { return strings.Contains(a, "workspace_") }) {
		t.Fatalf("the writer's --allow-tool flags: %v\n%s", allow, out)
	}
	m := &fakemodel.Model{Mark: "repo_brief", Calls: []fakemodel.Call{
		{Tool: "sluice-repo_brief", Args: map[string]any{"repoPath": h.repo}},
		{Tool: "sluice-workspace_create", Args: map[string]any{"kind": "fresh"}},
	}}
	url := fakemodel.Start(t, m, fakemodel.OpenAIChat)
	env := h.env("COPILOT_PROVIDER_BASE_URL="+url+"/v1", "COPILOT_PROVIDER_TYPE=openai", "COPILOT_PROVIDER_API_KEY=sk-test", "COPILOT_MODEL=fake-model")
	out, err = h.run(t, h.repo, env, "copilot", append([]string{"-p", "Brief me on this repository with Sluice."}, allow...)...)
	if err != nil || !strings.Contains(out, fakemodel.ClosingText) {
		t.Fatalf("copilot -p (%v):\n%s\nmodel log:\n%s", err, out, m.Log())
	}
	h.checkHeldAndRan(t, m, out)
}

// TestAgents_ClaudeCode_ToolsetEnable: Claude Code, driven by the fake
// model, enables the fleet toolset at run time and then calls fleet_radar;
// in a second session it enables workspace_search (workspaces are
// configured here) and calls workspace_file_glob. Neither tool was listed
// when its session began. Each
// reaches the sidecar only if Claude Code acted on
// notifications/tools/list_changed and listed the tools again, without a
// restart.
func TestAgents_ClaudeCode_ToolsetEnable(t *testing.T) {
	t.Parallel()
	h := newAgentHome(t)
	h.connect(t, "claude-code")
	env := func(url string) []string {
		return h.env("ANTHROPIC_BASE_URL="+url, "ANTHROPIC_API_KEY=sk-ant-test", "ENABLE_TOOL_SEARCH=false")
	}

	// Without enabling, Claude Code refuses a tool the server did not
	// list: the second run below proves the list changed, not that any
	// name gets through.
	glob := map[string]any{"workspaceId": "ws-none", "pattern": "**/*.go"}
	direct := &fakemodel.Model{Mark: "repo_brief", Calls: []fakemodel.Call{
		{Tool: "mcp__sluice__fleet_radar", Args: map[string]any{"repoPaths": []string{h.repo}}},
		{Tool: "mcp__sluice__workspace_file_glob", Args: glob},
	}}
	out, err := h.run(t, h.repo, env(fakemodel.Start(t, direct, fakemodel.Anthropic)), "claude", "-p", "Which of my repositories need attention?", "--model", "claude-sonnet-4-5")
	if err != nil || !strings.Contains(out, fakemodel.ClosingText) {
		t.Fatalf("claude -p (%v):\n%s\nmodel log:\n%s", err, out, direct.Log())
	}
	if tools := h.ledgerTools(t); slices.Contains(tools, "fleet_radar") || slices.Contains(tools, "workspace_file_glob") {
		t.Fatalf("a tool reached the sidecar before its toolset was enabled (ledger %v)", tools)
	}

	// One toolset per session: Claude Code acts on a session's first
	// notifications/tools/list_changed, but does not always list the tools
	// again for a later one in the same session (the sidecar sends each:
	// TestToolsetEnable_InMemory_ListChanged).
	m := &fakemodel.Model{Mark: "repo_brief", Calls: []fakemodel.Call{
		{Tool: "mcp__sluice__toolset_enable", Args: map[string]any{"toolset": "fleet"}},
		{Tool: "mcp__sluice__fleet_radar", Args: map[string]any{"repoPaths": []string{h.repo}}, RetryWhile: "No such tool available"},
	}}
	// The person allows toolset_enable for this run; fleet_radar is a
	// pre-allowed read tool.
	out, err = h.run(t, h.repo, env(fakemodel.Start(t, m, fakemodel.Anthropic)),
		"claude", "-p", "Which of my repositories need attention?", "--model", "claude-sonnet-4-5",
		"--allowedTools", "mcp__sluice__toolset_enable")
	if err != nil || !strings.Contains(out, fakemodel.ClosingText) {
		t.Fatalf("claude -p (%v):\n%s\nmodel log:\n%s", err, out, m.Log())
	}
	ws := &fakemodel.Model{Mark: "repo_brief", Calls: []fakemodel.Call{
		{Tool: "mcp__sluice__toolset_enable", Args: map[string]any{"toolset": "workspace_search"}},
		{Tool: "mcp__sluice__workspace_file_glob", Args: glob, RetryWhile: "No such tool available"},
	}}
	// The person allows toolset_enable and the glob for this run;
	// workspace tools ask.
	out, err = h.run(t, h.repo, env(fakemodel.Start(t, ws, fakemodel.Anthropic)),
		"claude", "-p", "Which of my repositories need attention?", "--model", "claude-sonnet-4-5",
		"--allowedTools", "mcp__sluice__toolset_enable,mcp__sluice__workspace_file_glob")
	if err != nil || !strings.Contains(out, fakemodel.ClosingText) {
		t.Fatalf("claude -p (%v):\n%s\nmodel log:\n%s", err, out, ws.Log())
	}
	tools := h.ledgerTools(t)
	res, wsRes := m.Results(), ws.Results()
	t.Logf("ledger: %v; results: %.300q then %.300q", tools, res, wsRes)
	if !slices.Contains(tools, "toolset_enable") || !slices.Contains(tools, "fleet_radar") || !slices.Contains(tools, "workspace_file_glob") {
		t.Fatalf("ledger %v: want toolset_enable, fleet_radar, toolset_enable, workspace_file_glob\nagent output:\n%s\nmodel logs:\n%s\n%s", tools, out, m.Log(), ws.Log())
	}
	radar := slices.IndexFunc(res, func(r string) bool { return strings.Contains(r, `"scanned":1`) })
	if radar < 0 {
		t.Errorf("fleet_radar's answer did not reach the model: %q", res)
	}
	// No workspace ws-none exists (and none is started): the glob's answer
	// is Sluice's own structured error, which only the sidecar gives.
	if last := wsRes[len(wsRes)-1]; len(wsRes) < 2 || !strings.Contains(last, `"error"`) || !strings.Contains(last, `"code"`) {
		t.Errorf("workspace_file_glob's answer did not reach the model: %q", wsRes)
	}
}
