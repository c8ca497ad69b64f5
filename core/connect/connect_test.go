package connect

import (
	"github.com/sluicehq/sluice/core/jsonc"

	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// clientCase says where a client's main file is and what an existing one
// with other servers and settings looks like.
type clientCase struct {
	client string
	scope  Scope
	// file is the main file, relative to the home (user) or project dir.
	file      string
	format    string
	key       []string // where Sluice's entry is (JSON)
	existing  string
	keep      []string // substrings of existing that must survive verbatim
	malformed string
	// extra files written next to the main one, relative like file.
	extra []string
	// commandArray: the entry's "command" is [program, args...] (opencode).
	commandArray bool
}

var clientCases = []clientCase{
	{
		client: "claude-code", scope: ScopeUser, file: ".claude.json", format: "json", key: []string{"mcpServers", "sluice"},
		existing:  "{\n  \"numStartups\": 42,\n  \"mcpServers\": {\n    \"github\": {\n      \"command\": \"gh-mcp\"\n    }\n  },\n  \"projects\": {}\n}\n",
		keep:      []string{"\"numStartups\": 42,", "\"github\": {\n      \"command\": \"gh-mcp\"\n    }", "\"projects\": {}"},
		malformed: "{\"mcpServers\": {\"github\": }\n",
		extra:     []string{".claude/settings.json"},
	},
	{
		client: "claude-code", scope: ScopeProject, file: ".mcp.json", format: "json", key: []string{"mcpServers", "sluice"},
		existing:  "{\"mcpServers\": {\"db\": {\"command\": \"db-mcp\", \"args\": [\"--ro\"]}}}\n",
		keep:      []string{"\"db\": {\"command\": \"db-mcp\", \"args\": [\"--ro\"]}"},
		malformed: "{\"mcpServers\": [\n",
		extra:     []string{".claude/settings.json"},
	},
	{
		client: "claude-desktop", scope: ScopeUser, file: ".config/Claude/claude_desktop_config.json", format: "json", key: []string{"mcpServers", "sluice"},
		existing:  "{\n\t\"globalShortcut\": \"Ctrl+Space\",\n\t\"mcpServers\": {\n\t\t\"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"fs\"]}\n\t}\n}",
		keep:      []string{"\"globalShortcut\": \"Ctrl+Space\",", "\"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"fs\"]}"},
		malformed: "{,}",
	},
	{
		client: "cursor", scope: ScopeUser, file: ".cursor/mcp.json", format: "json", key: []string{"mcpServers", "sluice"},
		existing:  "{\n  \"mcpServers\": {\n    \"linear\": {\"url\": \"https://mcp.linear.app/sse\"}\n  }\n}\n",
		keep:      []string{"\"linear\": {\"url\": \"https://mcp.linear.app/sse\"}"},
		malformed: "{\"mcpServers\": {\"a\": 1,}}",
	},
	{
		client: "cursor", scope: ScopeProject, file: ".cursor/mcp.json", format: "json", key: []string{"mcpServers", "sluice"},
		existing:  "{\"mcpServers\": {}}",
		keep:      nil,
		malformed: "not json",
	},
	{
		client: "codex", scope: ScopeUser, file: ".codex/config.toml", format: "toml",
		existing:  "# my codex settings\nmodel = \"gpt-5\"\napproval_policy = \"on-request\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\nargs = [\"--port\", \"0\"] # inline comment\n\n[profiles.fast]\nmodel = \"o4-mini\"\n",
		keep:      []string{"# my codex settings\nmodel = \"gpt-5\"\napproval_policy = \"on-request\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\nargs = [\"--port\", \"0\"] # inline comment\n\n[profiles.fast]\nmodel = \"o4-mini\"\n"},
		malformed: "model = \"gpt-5\n[mcp_servers.docs\n",
	},
	{
		client: "vscode", scope: ScopeProject, file: ".vscode/mcp.json", format: "jsonc", key: []string{"servers", "sluice"},
		existing:  "{\n  // Team servers: keep this comment\n  \"servers\": {\n    \"playwright\": {\n      \"command\": \"npx\",\n      \"args\": [\"@playwright/mcp\"], // pinned\n    },\n  },\n  \"inputs\": [],\n}\n",
		keep:      []string{"// Team servers: keep this comment", "\"args\": [\"@playwright/mcp\"], // pinned", "\"inputs\": [],"},
		malformed: "{\n  \"servers\": { /* unterminated\n}\n",
	},
	{
		client: "vscode", scope: ScopeUser, file: ".config/Code/User/mcp.json", format: "jsonc", key: []string{"servers", "sluice"},
		existing:  "// user servers\n{\"servers\": {\"a\": {\"type\": \"http\", \"url\": \"http://x\"}}}\n",
		keep:      []string{"// user servers", "\"a\": {\"type\": \"http\", \"url\": \"http://x\"}"},
		malformed: "{\"servers\": {\"a\" {}}}",
	},
	{
		client: "windsurf", scope: ScopeUser, file: ".codeium/windsurf/mcp_config.json", format: "json", key: []string{"mcpServers", "sluice"},
		existing:  "{\"mcpServers\": {\"git\": {\"command\": \"uvx\", \"args\": [\"mcp-server-git\"], \"disabled\": true}}}",
		keep:      []string{"\"git\": {\"command\": \"uvx\", \"args\": [\"mcp-server-git\"], \"disabled\": true}"},
		malformed: "{\"mcpServers\": {\"git\": {\"command\": \"uvx\"}}",
	},
	{
		client: "gemini-cli", scope: ScopeUser, file: ".gemini/settings.json", format: "jsonc", key: []string{"mcpServers", "sluice"},
		existing:  "{\n  \"theme\": \"Dracula\", // my theme\n  \"mcpServers\": {\n    \"github\": {\"httpUrl\": \"https://api.githubcopilot.com/mcp/\"}\n  }\n}\n",
		keep:      []string{"\"theme\": \"Dracula\", // my theme", "\"github\": {\"httpUrl\": \"https://api.githubcopilot.com/mcp/\"}"},
		malformed: "{\"theme\": Dracula}",
		extra:     []string{".gemini/policies/sluice.toml"},
	},
	{
		client: "gemini-cli", scope: ScopeProject, file: ".gemini/settings.json", format: "jsonc", key: []string{"mcpServers", "sluice"},
		existing:  "{}",
		malformed: "{\"mcpServers\": {\"x\": {}}} trailing",
		extra:     []string{".gemini/policies/sluice.toml"},
	},
	{
		client: "copilot-cli", scope: ScopeUser, file: ".copilot/mcp-config.json", format: "json", key: []string{"mcpServers", "sluice"},
		existing:  "{\n  \"mcpServers\": {\n    \"playwright\": {\n      \"type\": \"local\",\n      \"command\": \"npx\",\n      \"args\": [\"@playwright/mcp\"],\n      \"tools\": [\"*\"]\n    }\n  }\n}\n",
		keep:      []string{"\"playwright\": {\n      \"type\": \"local\",\n      \"command\": \"npx\",\n      \"args\": [\"@playwright/mcp\"],\n      \"tools\": [\"*\"]\n    }"},
		malformed: "{\"mcpServers\": {\"a\": {\"tools\": [\"*\",]}}}",
	},
	{
		client: "opencode", scope: ScopeUser, file: ".config/opencode/opencode.json", format: "jsonc", key: []string{"mcp", "sluice"}, commandArray: true,
		existing:  "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  // my model\n  \"model\": \"anthropic/claude-sonnet-4-5\",\n  \"mcp\": {\n    \"context7\": {\"type\": \"remote\", \"url\": \"https://mcp.context7.com/mcp\"},\n  },\n}\n",
		keep:      []string{"// my model\n  \"model\": \"anthropic/claude-sonnet-4-5\",", "\"context7\": {\"type\": \"remote\", \"url\": \"https://mcp.context7.com/mcp\"},"},
		malformed: "{\n  \"mcp\": {\n    \"x\": {\"type\": \"local\" \"command\": []}\n  }\n}\n",
	},
	{
		client: "opencode", scope: ScopeProject, file: "opencode.json", format: "jsonc", key: []string{"mcp", "sluice"}, commandArray: true,
		existing:  "{\"$schema\": \"https://opencode.ai/config.json\"}",
		keep:      []string{"\"$schema\": \"https://opencode.ai/config.json\""},
		malformed: "{\"mcp\": }",
	},
	{
		client: "qwen-code", scope: ScopeUser, file: ".qwen/settings.json", format: "jsonc", key: []string{"mcpServers", "sluice"},
		existing:  "{\n  \"security\": {\"auth\": {\"selectedType\": \"openai\"}},\n  \"permissions\": {\"allow\": [\"Bash(git status)\"]}\n}\n",
		keep:      []string{"\"security\": {\"auth\": {\"selectedType\": \"openai\"}},", "\"Bash(git status)\""},
		malformed: "{\"permissions\": {\"allow\": [\"Bash\"}}",
	},
	{
		client: "qwen-code", scope: ScopeProject, file: ".qwen/settings.json", format: "jsonc", key: []string{"mcpServers", "sluice"},
		existing:  "{}\n",
		malformed: "{\n\n  \"mcpServers\": {{}}\n}",
	},
}

const testCommand = "/opt/sluice/bin/sluice-sidecar"

func (c clientCase) name() string { return c.client + "/" + string(c.scope) }

// setup returns options pointing at temp home and project dirs.
func (c clientCase) setup(t *testing.T) (Options, string) {
	t.Helper()
	home, project := t.TempDir(), t.TempDir()
	opts := Options{
		Client: c.client, Scope: c.scope, Command: testCommand, Toolsets: []string{"git", "propose", "workspace"},
		Home: home, GOOS: "linux", Getenv: func(string) string { return "" },
	}
	base := home
	if c.scope == ScopeProject {
		opts.ProjectDir = project
		base = project
	}
	return opts, base
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// makeAndApply makes the plan for opts and applies it, failing the test on
// any error.
func makeAndApply(t *testing.T, opts Options) *Plan {
	t.Helper()
	p, err := Make(opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Apply(time.Time{}); err != nil {
		t.Fatal(err)
	}
	return p
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkEntry asserts that the main file has Sluice's entry pointing at the
// sidecar with the chosen toolsets.
func checkEntry(t *testing.T, c clientCase, content string) {
	t.Helper()
	if c.format == "toml" {
		for _, want := range []string{
			"[mcp_servers.sluice]\n",
			"command = \"" + testCommand + "\"\n",
			"args = [\"stdio\", \"--toolsets\", \"git,propose,workspace\"]\n",
			"tools.repo_brief = { approval_mode = \"approve\" }\n",
			"tools.propose_merge = { approval_mode = \"approve\" }\n",
		} {
			if !strings.Contains(content, want) {
				t.Fatalf("%s lacks %q:\n%s", c.file, want, content)
			}
		}
		if strings.Contains(content, "workspace_") {
			t.Fatalf("a workspace tool was pre-allowed:\n%s", content)
		}
		if _, err := parseTOML([]byte(content)); err != nil {
			t.Fatalf("written TOML does not parse: %v", err)
		}
		return
	}
	root, err := jsonc.Parse([]byte(content), c.format == "jsonc")
	if err != nil {
		t.Fatalf("written file does not parse: %v\n%s", err, content)
	}
	entry, _ := jsonc.ValueAt(root, c.key).(map[string]any)
	if c.commandArray {
		cmd, _ := json.Marshal(entry["command"])
		if string(cmd) != `["`+testCommand+`","stdio","--toolsets","git,propose,workspace"]` {
			t.Fatalf("%s: command %s:\n%s", c.file, cmd, content)
		}
		return
	}
	if entry == nil || entry["command"] != testCommand {
		t.Fatalf("%s: no sluice entry at %v:\n%s", c.file, c.key, content)
	}
	args, _ := json.Marshal(entry["args"])
	if string(args) != `["stdio","--toolsets","git,propose,workspace"]` {
		t.Fatalf("args: %s", args)
	}
	if _, ok := entry["trust"]; ok {
		t.Fatalf("trust must never be set: %v", entry)
	}
}

func TestMake_EmptyLocation_Table(t *testing.T) {
	for _, c := range clientCases {
		t.Run(c.name(), func(t *testing.T) {
			opts, base := c.setup(t)
			p, err := Make(opts)
			if err != nil {
				t.Fatal(err)
			}
			if !p.Changed() {
				t.Fatal("nothing to write into an empty location")
			}
			if _, err := os.Stat(filepath.Join(base, c.file)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Make wrote %s before Apply", c.file)
			}
			res, err := p.Apply(time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Backups) != 0 {
				t.Errorf("backups of files that did not exist: %v", res.Backups)
			}
			checkEntry(t, c, read(t, filepath.Join(base, c.file)))
			for _, e := range c.extra {
				if _, err := os.Stat(filepath.Join(base, e)); err != nil {
					t.Errorf("extra file %s: %v", e, err)
				}
			}
			st, _ := os.Stat(filepath.Join(base, c.file))
			if want := os.FileMode(0o600); c.scope == ScopeUser && st.Mode().Perm() != want {
				t.Errorf("mode %v, want %v", st.Mode().Perm(), want)
			}
		})
	}
}

func TestMake_ExistingFile_PreservesOthers_Table(t *testing.T) {
	for _, c := range clientCases {
		t.Run(c.name(), func(t *testing.T) {
			opts, base := c.setup(t)
			path := filepath.Join(base, c.file)
			write(t, path, c.existing, 0o640)
			p, err := Make(opts)
			if err != nil {
				t.Fatal(err)
			}
			res, err := p.Apply(time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			got := read(t, path)
			checkEntry(t, c, got)
			for _, k := range c.keep {
				if !strings.Contains(got, k) {
					t.Errorf("lost %q:\n%s", k, got)
				}
			}
			if len(res.Backups) == 0 || read(t, res.Backups[0]) != c.existing {
				t.Errorf("no backup with the old content: %v", res.Backups)
			}
			if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
				t.Errorf("mode changed to %v", st.Mode().Perm())
			}
		})
	}
}

func TestMake_SecondRun_NoChange_Table(t *testing.T) {
	for _, c := range clientCases {
		t.Run(c.name(), func(t *testing.T) {
			opts, base := c.setup(t)
			write(t, filepath.Join(base, c.file), c.existing, 0o600)
			makeAndApply(t, opts)
			snapshot := map[string]string{}
			for _, f := range append([]string{c.file}, c.extra...) {
				snapshot[f] = read(t, filepath.Join(base, f))
			}
			p2, err := Make(opts)
			if err != nil {
				t.Fatal(err)
			}
			if p2.Changed() {
				for _, f := range p2.Files {
					if f.Changed {
						t.Errorf("second run would change %s:\n%s", f.Path, f.after)
					}
				}
			}
			res, err := p2.Apply(time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Written) != 0 || len(res.Backups) != 0 {
				t.Fatalf("second run wrote %v, backups %v", res.Written, res.Backups)
			}
			for f, want := range snapshot {
				if got := read(t, filepath.Join(base, f)); got != want {
					t.Errorf("%s changed on the second run", f)
				}
			}
		})
	}
}

func TestMake_Malformed_RefusedUntouched_Table(t *testing.T) {
	for _, c := range clientCases {
		t.Run(c.name(), func(t *testing.T) {
			opts, base := c.setup(t)
			path := filepath.Join(base, c.file)
			write(t, path, c.malformed, 0o600)
			_, err := Make(opts)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("want ErrMalformed, got %v", err)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line ") {
				t.Errorf("message should name the file and the position: %v", err)
			}
			if got := read(t, path); got != c.malformed {
				t.Fatal("malformed file was changed")
			}
			entries, _ := os.ReadDir(filepath.Dir(path))
			for _, e := range entries {
				if strings.Contains(e.Name(), "sluice-backup") {
					t.Errorf("backup written for a refused file: %s", e.Name())
				}
			}
		})
	}
}

func TestApply_ReadOnlyFile_Refused_Table(t *testing.T) {
	for _, c := range clientCases {
		t.Run(c.name(), func(t *testing.T) {
			opts, base := c.setup(t)
			path := filepath.Join(base, c.file)
			write(t, path, c.existing, 0o444)
			p, err := Make(opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Apply(time.Time{})
			if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), path) {
				t.Fatalf("want ErrReadOnly naming %s, got %v", path, err)
			}
			if got := read(t, path); got != c.existing {
				t.Fatal("read-only file was changed")
			}
			for _, e := range c.extra {
				if _, err := os.Stat(filepath.Join(base, e)); err == nil {
					t.Errorf("%s written although the plan was refused", e)
				}
			}
		})
	}
}

func TestMake_ClaudeCode_PreAllowsReadAndProposeOnly(t *testing.T) {
	home := t.TempDir()
	settings := filepath.Join(home, ".claude", "settings.json")
	write(t, settings, "{\n  \"permissions\": {\n    \"allow\": [\"Bash(npm test)\"],\n    \"deny\": [\"Read(.env)\"]\n  },\n  \"model\": \"opus\"\n}\n", 0o600)
	p := makeAndApply(t, Options{Client: "claude-code", Command: testCommand, Toolsets: []string{"git", "propose", "workspace"}, Home: home, GOOS: "linux", Getenv: func(string) string { return "" }})
	var s struct {
		Permissions struct{ Allow, Deny []string }
		Model       string
	}
	if err := json.Unmarshal([]byte(read(t, settings)), &s); err != nil {
		t.Fatal(err)
	}
	if s.Model != "opus" || !slices.Equal(s.Permissions.Deny, []string{"Read(.env)"}) || s.Permissions.Allow[0] != "Bash(npm test)" {
		t.Fatalf("other settings changed: %+v", s)
	}
	want := len(ReadTools) + len(ProposeTools) + 1
	if len(s.Permissions.Allow) != want {
		t.Fatalf("allow has %d entries, want %d: %v", len(s.Permissions.Allow), want, s.Permissions.Allow)
	}
	for _, a := range s.Permissions.Allow[1:] {
		tool, ok := strings.CutPrefix(a, "mcp__sluice__")
		if !ok || strings.HasPrefix(tool, "workspace_") || (!slices.Contains(ReadTools, tool) && !slices.Contains(ProposeTools, tool)) {
			t.Errorf("pre-allowed %q", a)
		}
	}
	if len(p.PreAllowed) != want-1 || !strings.Contains(p.PreAllowNote, "workspace tools still ask") {
		t.Errorf("plan does not say what it pre-allowed: %v %q", p.PreAllowed, p.PreAllowNote)
	}
}

func TestMake_ToolsetsLimitPreAllow(t *testing.T) {
	home := t.TempDir()
	p, err := Make(Options{Client: "codex", Command: testCommand, Toolsets: []string{"git"}, Home: home, GOOS: "linux", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	out := string(p.Files[0].Content())
	if strings.Contains(out, "propose_") || !strings.Contains(out, "repo_brief") || !strings.Contains(out, `"--toolsets", "git"]`) {
		t.Fatalf("git-only plan:\n%s", out)
	}
}

func TestMake_CodexHome_And_ClaudeConfigDir(t *testing.T) {
	home, codexHome, claudeDir := t.TempDir(), t.TempDir(), t.TempDir()
	env := map[string]string{"CODEX_HOME": codexHome, "CLAUDE_CONFIG_DIR": claudeDir}
	for client, want := range map[string]string{
		"codex":       filepath.Join(codexHome, "config.toml"),
		"claude-code": filepath.Join(claudeDir, ".claude.json"),
	} {
		p, err := Make(Options{Client: client, Command: testCommand, Home: home, GOOS: "linux", Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatal(err)
		}
		if p.Files[0].Path != want {
			t.Errorf("%s writes %s, want %s", client, p.Files[0].Path, want)
		}
	}
}

func TestMake_PathsPerOS(t *testing.T) {
	home := "/h"
	for _, c := range []struct{ client, goos, want string }{
		{"claude-desktop", "darwin", "/h/Library/Application Support/Claude/claude_desktop_config.json"},
		{"vscode", "darwin", "/h/Library/Application Support/Code/User/mcp.json"},
		{"claude-desktop", "linux", "/h/.config/Claude/claude_desktop_config.json"},
	} {
		p, err := Make(Options{Client: c.client, Command: testCommand, Home: home, GOOS: c.goos, Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatal(err)
		}
		if p.Files[0].Path != c.want {
			t.Errorf("%s on %s: %s, want %s", c.client, c.goos, p.Files[0].Path, c.want)
		}
	}
}

func TestMake_SymlinkedConfig_WritesTarget(t *testing.T) {
	home, dots := t.TempDir(), t.TempDir()
	real := filepath.Join(dots, "mcp.json")
	write(t, real, "{}", 0o600)
	if err := os.MkdirAll(filepath.Join(home, ".cursor"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(home, ".cursor", "mcp.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	makeAndApply(t, Options{Client: "cursor", Command: testCommand, Home: home, GOOS: "linux", Getenv: func(string) string { return "" }})
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced by a file")
	}
	if !strings.Contains(read(t, real), testCommand) {
		t.Fatal("the link's target was not updated")
	}
}

// In a confined home the same link is the agent's: Sluice, running as
// the person, neither reads the file it names nor writes it, and the
// link, at the file or on the way to it, is replaced by the home's own.
func TestMake_Confined_LinkNeverFollowed(t *testing.T) {
	home, dots := t.TempDir(), t.TempDir()
	pkg := filepath.Join(dots, "package.json")
	write(t, pkg, `{"name": "shop", "secret": "OUTSIDE"}`, 0o600)
	settings := filepath.Join(dots, "claude", "settings.json")
	write(t, settings, `{"secret": "OUTSIDE"}`, 0o600)
	if err := os.Symlink(pkg, filepath.Join(home, ".claude.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dots, "claude"), filepath.Join(home, ".claude")); err != nil {
		t.Fatal(err)
	}
	p, err := Make(Options{Client: "claude-code", Command: testCommand, Home: home, GOOS: "linux",
		Getenv: func(string) string { return "" }, Confined: true, TrustDir: "/home/p/src/shop"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range p.Files {
		if f.Exists || strings.Contains(string(f.Content()), "OUTSIDE") {
			t.Errorf("%s was read through the agent's link:\n%s", f.Path, f.Content())
		}
	}
	if _, err := p.Apply(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if read(t, pkg) != `{"name": "shop", "secret": "OUTSIDE"}` || read(t, settings) != `{"secret": "OUTSIDE"}` {
		t.Fatal("a file outside the confined home was written")
	}
	if entries, _ := os.ReadDir(filepath.Join(dots, "claude")); len(entries) != 1 {
		t.Fatalf("files were created beside the link's target: %v", entries)
	}
	for _, rel := range []string{".claude.json", ".claude", ".claude/settings.json"} {
		fi, err := os.Lstat(filepath.Join(home, rel))
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			t.Errorf("%s: %v, %v; want the home's own", rel, fi, err)
		}
	}
	if c := read(t, filepath.Join(home, ".claude.json")); !strings.Contains(c, testCommand) || strings.Contains(c, "OUTSIDE") {
		t.Fatalf(".claude.json:\n%s", c)
	}
}

// A confined plan names only files inside the home: one outside (a
// variable pointing elsewhere) is refused, and an absolute link that
// appears between the plan and its writing is not followed either (the
// home is opened as an os.Root).
func TestConfinedHome_RefusesTheOutside(t *testing.T) {
	home, dots := t.TempDir(), t.TempDir()
	_, err := Make(Options{Client: "codex", Command: testCommand, Home: home, GOOS: "linux", Confined: true,
		Getenv: func(k string) string { return map[string]string{"CODEX_HOME": dots}[k] }})
	if !errors.Is(err, ErrOutsideHome) {
		t.Fatalf("a file outside the home: %v, want ErrOutsideHome", err)
	}
	h, err := OpenConfinedHome(home)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := os.Symlink(dots, filepath.Join(home, "d")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.root.OpenFile("d/x", os.O_WRONLY|os.O_CREATE, 0o600); err == nil {
		t.Fatal("the home's root followed an absolute link out")
	}
	if err := h.WriteFile("d/x", []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dots); len(entries) != 0 {
		t.Fatalf("written outside the home: %v", entries)
	}
	if read(t, filepath.Join(home, "d", "x")) != "mine" {
		t.Fatal("the home's file was not written")
	}
	if err := h.WriteFile("../escape", nil, 0o600); !errors.Is(err, ErrOutsideHome) {
		t.Fatalf("a name that climbs out: %v", err)
	}
}

func TestApply_FileChangedSincePlan_Refused(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, ".cursor", "mcp.json")
	write(t, path, "{}", 0o600)
	p, err := Make(Options{Client: "cursor", Command: testCommand, Home: home, GOOS: "linux", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, `{"mcpServers": {"new": {}}}`, 0o600)
	if _, err := p.Apply(time.Time{}); !errors.Is(err, ErrChanged) {
		t.Fatalf("want ErrChanged, got %v", err)
	}
	if read(t, path) != `{"mcpServers": {"new": {}}}` {
		t.Fatal("file overwritten")
	}
}

func TestMake_BadOptions(t *testing.T) {
	for _, c := range []struct {
		opts Options
		err  error
	}{
		{Options{Client: "notepad", Command: testCommand}, ErrUnknownClient},
		{Options{Client: "windsurf", Scope: ScopeProject, ProjectDir: "/tmp", Command: testCommand}, ErrScope},
		{Options{Client: "cursor", Scope: ScopeProject, Command: testCommand}, ErrScope},
		{Options{Client: "cursor", Command: "sluice-sidecar"}, ErrBadOptions},
		{Options{Client: "cursor", Command: testCommand, Toolsets: []string{"shell"}}, ErrBadOptions},
	} {
		c.opts.Home = t.TempDir()
		if _, err := Make(c.opts); !errors.Is(err, c.err) {
			t.Errorf("%+v: want %v, got %v", c.opts, c.err, err)
		}
	}
}

func TestMake_ChatGPT_StepsAndToken(t *testing.T) {
	p, err := Make(Options{Client: "chatgpt", Command: testCommand, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Files) != 0 || p.TokenName != "chatgpt" || len(p.Steps) < 4 {
		t.Fatalf("chatgpt plan: %+v", p)
	}
	all := strings.Join(p.Steps, "\n")
	for _, want := range []string{"token create --name chatgpt", "http --addr 127.0.0.1:", "/mcp/TOKEN", "--allow-path-token"} {
		if !strings.Contains(all, want) {
			t.Errorf("steps lack %q:\n%s", want, all)
		}
	}
}

func TestPreAllowTools_NeverWorkspace(t *testing.T) {
	for _, sets := range [][]string{{"git", "propose", "workspace"}, {"workspace"}, {"propose"}} {
		for _, tool := range PreAllowTools(sets) {
			if strings.HasPrefix(tool, "workspace_") {
				t.Errorf("%v pre-allows %s", sets, tool)
			}
		}
	}
	if got := PreAllowTools([]string{"workspace"}); !slices.Equal(got, []string{"sluice_capabilities"}) {
		t.Errorf("workspace only: %v", got)
	}
	if bytes.Contains([]byte(strings.Join(ReadTools, ",")), []byte("propose")) {
		t.Error("a propose tool in the read list")
	}
}
