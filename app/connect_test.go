package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConnect_ClaudeCode_WritesOnceAndPreAllows(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	os.Unsetenv("CLAUDE_CONFIG_DIR")
	sidecar := filepath.Join(t.TempDir(), "sluice-sidecar")
	os.WriteFile(sidecar, []byte("#!/bin/sh\n"), 0o755)
	t.Setenv("SLUICE_SIDECAR", sidecar)
	a := startApp(t)
	api := &API{app: a, kind: "web"}

	clients, err := api.Clients()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range clients {
		names = append(names, c.Client)
		if c.Problem != "" {
			t.Errorf("%s: %s", c.Client, c.Problem)
		}
	}
	for _, want := range []string{"claude-code", "claude-desktop", "cursor", "codex", "vscode", "windsurf", "gemini-cli", "copilot-cli", "opencode", "qwen-code", "chatgpt"} {
		if !strings.Contains(strings.Join(names, ","), want) {
			t.Errorf("client %s missing from %v", want, names)
		}
	}

	res, err := api.Connect(ConnectRequest{Client: "claude-code", Scope: "user"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || res.Path != filepath.Join(home, ".claude.json") || len(res.PreAllowed) == 0 ||
		res.Message != "Configuration written. Restart Claude Code (or reload its MCP servers) to pick up Sluice." {
		t.Fatalf("first connect: %+v", res)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string `json:"command"`
		} `json:"mcpServers"`
	}
	b, err := os.ReadFile(res.Path)
	if err != nil || json.Unmarshal(b, &cfg) != nil || cfg.MCPServers["sluice"].Command != sidecar {
		t.Fatalf("written config %s: %v", b, err)
	}
	for _, p := range res.PreAllowed {
		if !strings.HasPrefix(p, "mcp__sluice__") || strings.Contains(p, "workspace") {
			t.Errorf("pre-allowed %q", p)
		}
	}
	again, err := api.Connect(ConnectRequest{Client: "claude-code", Scope: "user"})
	if err != nil || again.Changed || again.Message != "Already configured; nothing changed." {
		t.Fatalf("second connect changed something: %+v %v", again, err)
	}
	if _, err := api.Connect(ConnectRequest{Client: "notepad"}); err == nil {
		t.Fatal("an unknown client was accepted")
	}
}
