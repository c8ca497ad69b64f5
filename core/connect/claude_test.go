package connect

import (
	"github.com/sluicehq/sluice/core/jsonc"

	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Claude Code lists a name defined in two scopes as "Conflicting scopes":
// writing one scope removes Sluice's entries from the others (and only
// Sluice's), and a second run changes nothing.
func TestClaudeCode_UserScope_RemovesOtherScopes(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	claudeJSON := filepath.Join(home, ".claude.json")
	write(t, claudeJSON, `{
  "numStartups": 3,
  "projects": {
    "`+project+`": {
      "mcpServers": {
        "sluice": {"type": "stdio", "command": "/old/sluice-sidecar", "args": []},
        "db": {"command": "db-mcp"}
      },
      "hasTrustDialogAccepted": true
    },
    "/elsewhere": {
      "mcpServers": {"sluice": {"command": "/old/sluice-sidecar"}}
    }
  }
}
`, 0o600)
	mcp := filepath.Join(project, ".mcp.json")
	write(t, mcp, "{\n  \"mcpServers\": {\n    \"team\": {\"command\": \"team-mcp\"},\n    \"sluice\": {\"command\": \"/old/sluice-sidecar\"}\n  }\n}\n", 0o644)
	opts := Options{Client: "claude-code", Scope: ScopeUser, ProjectDir: project, Command: testCommand, Toolsets: []string{"git", "propose"},
		Home: home, GOOS: "linux", Getenv: func(string) string { return "" }}
	makeAndApply(t, opts)
	root, err := jsonc.Parse([]byte(read(t, claudeJSON)), false)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := jsonc.ValueAt(root, []string{"mcpServers", "sluice"}).(map[string]any); e == nil || e["command"] != testCommand {
		t.Fatalf("no user-scope entry:\n%s", read(t, claudeJSON))
	}
	for _, dir := range []string{project, "/elsewhere"} {
		if v := jsonc.ValueAt(root, []string{"projects", dir, "mcpServers", "sluice"}); v != nil {
			t.Errorf("local-scope entry of %s kept: %v", dir, v)
		}
	}
	if jsonc.ValueAt(root, []string{"projects", project, "mcpServers", "db"}) == nil || jsonc.ValueAt(root, []string{"projects", project, "hasTrustDialogAccepted"}) != true || jsonc.ValueAt(root, []string{"numStartups"}) != 3.0 {
		t.Errorf("other members were lost:\n%s", read(t, claudeJSON))
	}
	got := read(t, mcp)
	if want := "{\n  \"mcpServers\": {\n    \"team\": {\"command\": \"team-mcp\"}\n  }\n}\n"; got != want {
		t.Errorf(".mcp.json = %q, want %q", got, want)
	}
	p2, err := Make(opts)
	if err != nil || p2.Changed() {
		t.Fatalf("second run: changed=%v err=%v", p2 != nil && p2.Changed(), err)
	}
}

// Project scope writes .mcp.json, approves it where Claude Code reads the
// approval (the person's settings.local.json, not the shared
// settings.json), and removes the user-scope and this project's
// local-scope entries.
func TestClaudeCode_ProjectScope_ApprovesAndRemovesOthers(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	claudeJSON := filepath.Join(home, ".claude.json")
	write(t, claudeJSON, `{"mcpServers": {"sluice": {"command": "/old"}, "gh": {"command": "gh-mcp"}}, "projects": {"`+project+`": {"mcpServers": {"sluice": {"command": "/old"}}}}}`, 0o600)
	opts := Options{Client: "claude-code", Scope: ScopeProject, ProjectDir: project, Command: testCommand, Toolsets: []string{"git"},
		Home: home, GOOS: "linux", Getenv: func(string) string { return "" }}
	p := makeAndApply(t, opts)
	if got := read(t, claudeJSON); got != `{"mcpServers": {"gh": {"command": "gh-mcp"}}, "projects": {"`+project+`": {"mcpServers": {}}}}` {
		t.Errorf("~/.claude.json = %s", got)
	}
	local, err := jsonc.Parse([]byte(read(t, filepath.Join(project, ".claude", "settings.local.json"))), false)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := jsonc.ValueAt(local, []string{"enabledMcpjsonServers"}).([]any); !slices.Contains(v, any("sluice")) {
		t.Errorf("enabledMcpjsonServers: %v", v)
	}
	shared := read(t, filepath.Join(project, ".claude", "settings.json"))
	if strings.Contains(shared, "enabledMcpjsonServers") || !strings.Contains(shared, "mcp__sluice__repo_brief") {
		t.Errorf("shared settings: %s", shared)
	}
	if len(p.Steps) == 0 || !strings.Contains(p.Steps[0], "trust") {
		t.Errorf("the folder-trust step is missing: %v", p.Steps)
	}
	if p2, err := Make(opts); err != nil || p2.Changed() {
		t.Fatalf("second run: %v", err)
	}
}

// A malformed file that Sluice would only edit on the side (Claude Code's
// settings.json) stops the whole plan: nothing is written anywhere.
func TestMake_MalformedSideFile_NothingWritten(t *testing.T) {
	home := t.TempDir()
	settings := filepath.Join(home, ".claude", "settings.json")
	bad := "{\n  \"permissions\": {\n    \"allow\": [\"Bash(ls)\" \"Read\"]\n  }\n}\n"
	write(t, settings, bad, 0o600)
	_, err := Make(Options{Client: "claude-code", Command: testCommand, Home: home, GOOS: "linux", Getenv: func(string) string { return "" }})
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), settings) || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("want ErrMalformed naming %s and line 3, got %v", settings, err)
	}
	if _, err := os.Stat(filepath.Join(home, ".claude.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("~/.claude.json was written although the plan failed")
	}
	if read(t, settings) != bad {
		t.Error("the malformed file changed")
	}
}

// Clients with no Linux command-line program are checked against the
// entry their documentation shows, key for key: what Sluice writes must
// have exactly that shape, at that place.
func TestDesktopClients_DocumentedFormat(t *testing.T) {
	args := []any{"stdio", "--toolsets", "git,propose"}
	for _, c := range []struct {
		client, file string
		key          []string
		want         map[string]any
		doc          string
	}{
		{"cursor", ".cursor/mcp.json", []string{"mcpServers", "sluice"}, map[string]any{"command": testCommand, "args": args},
			"cursor.com/docs/context/mcp: {\"mcpServers\": {\"name\": {\"command\": …, \"args\": […]}}}"},
		{"vscode", ".config/Code/User/mcp.json", []string{"servers", "sluice"}, map[string]any{"type": "stdio", "command": testCommand, "args": args},
			"code.visualstudio.com/docs/copilot/customization/mcp-servers: {\"servers\": {\"name\": {\"type\": \"stdio\", \"command\": …, \"args\": […]}}}"},
		{"windsurf", ".codeium/windsurf/mcp_config.json", []string{"mcpServers", "sluice"}, map[string]any{"command": testCommand, "args": args},
			"docs.windsurf.com/windsurf/cascade/mcp: {\"mcpServers\": {\"name\": {\"command\": …, \"args\": […]}}}"},
		{"claude-desktop", ".config/Claude/claude_desktop_config.json", []string{"mcpServers", "sluice"}, map[string]any{"command": testCommand, "args": args},
			"modelcontextprotocol.io/docs/develop/connect-local-servers: {\"mcpServers\": {\"name\": {\"command\": …, \"args\": […]}}}"},
	} {
		t.Run(c.client, func(t *testing.T) {
			home := t.TempDir()
			p := makeAndApply(t, Options{Client: c.client, Command: testCommand, Toolsets: []string{"git", "propose"}, Home: home, GOOS: "linux", Getenv: func(string) string { return "" }})
			root, err := jsonc.Parse([]byte(read(t, filepath.Join(home, c.file))), true)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := jsonc.ValueAt(root, c.key).(map[string]any)
			if !reflectEqual(got, c.want) {
				t.Errorf("%s entry = %v, want %v (%s)", c.client, got, c.want, c.doc)
			}
			if len(p.PreAllowed) != 0 || !strings.HasPrefix(p.PreAllowNote, "nothing was pre-allowed: ") {
				t.Errorf("%s claims a pre-allow it has no file for: %v %q", c.client, p.PreAllowed, p.PreAllowNote)
			}
		})
	}
}

func reflectEqual(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
