package sidecar

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// gitToolNames are the read-only git tools every client must see.
var gitToolNames = []string{"repo_brief", "repo_scope", "repo_status", "repo_refs", "repo_branch_stack", "repo_history",
	"repo_reflog", "repo_conflict_preflight", "conflict_read", "commit_details", "worktree_changes", "worktree_list",
	"submodule_status", "diff_text", "diff_semantic", "fleet_radar", "fleet_digest"}

// inspectorCLI finds the MCP Inspector CLI: SLUICE_INSPECTOR_DIR (or the
// tools folder SLUICE_TOOLS_DIR) holds node_modules with it, and
// SLUICE_NODE_BIN, when set, is a directory with a Node 22+ binary to put
// first on PATH. Without it the test skips, or fails under
// SLUICE_REQUIRE_E2E=1.
func inspectorCLI(t *testing.T) (bin, path string) {
	t.Helper()
	dir := os.Getenv("SLUICE_INSPECTOR_DIR")
	if dir == "" {
		dir = os.Getenv("SLUICE_TOOLS_DIR")
	}
	if dir == "" {
		if requireE2E() {
			t.Fatal("SLUICE_INSPECTOR_DIR is not set: the MCP Inspector CLI is required (make test installs it)")
		}
		t.Skip("SLUICE_INSPECTOR_DIR is not set: skipping the MCP Inspector CLI test (make test runs it)")
	}
	path = os.Getenv("PATH")
	if nb := os.Getenv("SLUICE_NODE_BIN"); nb != "" {
		path = nb + string(os.PathListSeparator) + path
	}
	bin = filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(bin); err != nil {
		// Fall back to npx from the install folder (it resolves the local
		// package and never downloads with --no-install).
		bin = ""
	}
	path = filepath.Join(dir, "node_modules", ".bin") + string(os.PathListSeparator) + path
	return bin, path
}

// runInspectorCLI runs the Inspector in CLI mode against the sidecar
// binary over stdio and returns its JSON output.
func runInspectorCLI(t *testing.T, env []string, sidecarEnv []string, sidecar string, args ...string) []byte {
	t.Helper()
	bin, path := inspectorCLI(t)
	dir := os.Getenv("SLUICE_INSPECTOR_DIR")
	if dir == "" {
		dir = os.Getenv("SLUICE_TOOLS_DIR")
	}
	// The Inspector passes only a few variables to the server it starts;
	// the sidecar's roots and XDG directories go with -e.
	full := []string{"--cli"}
	for _, kv := range sidecarEnv {
		full = append(full, "-e", kv)
	}
	full = append(append(full, sidecar, "--toolsets", "git,fleet"), args...)
	name := bin
	if name == "" {
		name = "npx"
		full = append([]string{"--no-install", "@modelcontextprotocol/inspector"}, full...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, full...)
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, env...), "PATH="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcp-inspector %v: %v\nstdout: %s\nstderr: %s", args, err, out, stderr.String())
	}
	return out
}

// TestInspectorGitTools uses the official MCP Inspector CLI as the client
// of the real sidecar binary: it must list every git tool with an output
// schema and call repo_brief, repo_status, diff_text and commit_details
// on a real repository.
func TestInspectorGitTools(t *testing.T) {
	inspectorCLI(t) // skip early when the Inspector is not installed
	r := gitxtest.Basic(t, 6)
	r.Write("src/file1.txt", "changed by the test\n")
	env, _ := testEnv(t, filepath.Dir(r.Dir))
	var sidecarEnv []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "SLUICE_") || strings.HasPrefix(kv, "XDG_") {
			sidecarEnv = append(sidecarEnv, kv)
		}
	}
	bin := sidecarBinary(t)

	out := runInspectorCLI(t, env, sidecarEnv, bin, "--method", "tools/list")
	var list struct {
		Tools []struct {
			Name         string          `json:"name"`
			OutputSchema json.RawMessage `json:"outputSchema"`
			Annotations  struct {
				ReadOnlyHint bool `json:"readOnlyHint"`
			} `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("tools/list: %v\n%s", err, out)
	}
	listed := map[string]bool{}
	for _, tl := range list.Tools {
		listed[tl.Name] = len(tl.OutputSchema) > 0 && tl.Annotations.ReadOnlyHint
	}
	for _, n := range gitToolNames {
		if !listed[n] {
			t.Errorf("tools/list: %s missing, or without output schema or readOnlyHint", n)
		}
	}

	type callResult struct {
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
	}
	call := func(tool string, args ...string) map[string]any {
		t.Helper()
		a := []string{"--method", "tools/call", "--tool-name", tool, "--tool-arg", "repoPath=" + r.Dir}
		for _, kv := range args {
			a = append(a, "--tool-arg", kv)
		}
		out := runInspectorCLI(t, env, sidecarEnv, bin, a...)
		var res callResult
		if err := json.Unmarshal(out, &res); err != nil || res.IsError {
			t.Fatalf("tools/call %s: %v\n%s", tool, err, out)
		}
		return res.StructuredContent
	}
	brief := call("repo_brief")
	if brief["branch"] != "main" || brief["root"] != r.Dir {
		t.Errorf("repo_brief: %v", brief)
	}
	if wt, _ := brief["worktree"].(map[string]any); wt["unstaged"] != float64(1) {
		t.Errorf("repo_brief worktree: %v", brief["worktree"])
	}
	if st := call("repo_status"); st["branch"] != "main" {
		t.Errorf("repo_status: %v", st)
	}
	if d := call("diff_text"); !strings.Contains(d["diff"].(string), "+changed by the test") {
		t.Errorf("diff_text: %v", d)
	}
	if c := call("commit_details", "rev=HEAD"); c["subject"] == "" {
		t.Errorf("commit_details: %v", c)
	}
}
