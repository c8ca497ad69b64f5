package connect

import (
	"github.com/sluicehq/sluice/core/jsonc"

	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Client describes one supported MCP client.
type Client struct {
	Name   string
	Title  string
	Scopes []Scope
	plan   func(*planner) error
	// Run is how `sluice run` starts the client confined; nil for clients
	// that are not a program of their own (editors, desktop apps, ChatGPT).
	Run *Agent
}

// clients, in the order `sluice-sidecar config` lists them. Each function's
// comment cites where the client documents its file.
var clients = []Client{
	{"claude-code", "Claude Code", []Scope{ScopeUser, ScopeProject}, planClaudeCode, &runClaudeCode},
	{"claude-desktop", "Claude Desktop", []Scope{ScopeUser}, planClaudeDesktop, nil},
	{"cursor", "Cursor", []Scope{ScopeUser, ScopeProject}, planCursor, nil},
	{"codex", "Codex", []Scope{ScopeUser}, planCodex, &runCodex},
	{"vscode", "VS Code", []Scope{ScopeUser, ScopeProject}, planVSCode, nil},
	{"windsurf", "Windsurf", []Scope{ScopeUser}, planWindsurf, nil},
	{"gemini-cli", "Gemini CLI", []Scope{ScopeUser, ScopeProject}, planGemini, &runGemini},
	{"copilot-cli", "Copilot CLI", []Scope{ScopeUser}, planCopilot, &runCopilot},
	{"opencode", "opencode", []Scope{ScopeUser, ScopeProject}, planOpencode, &runOpencode},
	{"qwen-code", "Qwen Code", []Scope{ScopeUser, ScopeProject}, planQwen, &runQwen},
	{"chatgpt", "ChatGPT", []Scope{ScopeUser}, planChatGPT, nil},
}

// Clients lists the supported clients.
func Clients() []Client { return append([]Client(nil), clients...) }

// ClientNames lists the supported clients' names.
func ClientNames() []string {
	var out []string
	for _, c := range clients {
		out = append(out, c.Name)
	}
	return out
}

func clientByName(name string) (Client, bool) {
	for _, c := range clients {
		if c.Name == name {
			return c, true
		}
	}
	return Client{}, false
}

// stdioEntry is the usual {"command", "args"} server entry; extra keys come
// first (for example "type").
func (p *planner) stdioEntry(extra ...jsonc.KV) jsonc.Ordered {
	e := jsonc.Ordered(extra)
	return append(e, jsonc.KV{K: "command", V: p.opts.Command}, jsonc.KV{K: "args", V: p.plan.Args})
}

// configHome is $XDG_CONFIG_HOME, or ~/.config, on Linux and the BSDs.
func (p *planner) configHome() string {
	if v := p.opts.Getenv("XDG_CONFIG_HOME"); v != "" && filepath.IsAbs(v) {
		return v
	}
	return filepath.Join(p.opts.Home, ".config")
}

// appData is where desktop applications keep per-user settings.
func (p *planner) appData(app string) string {
	switch p.opts.GOOS {
	case "darwin":
		return filepath.Join(p.opts.Home, "Library", "Application Support", app)
	case "windows":
		if v := p.opts.Getenv("APPDATA"); v != "" {
			return filepath.Join(v, app)
		}
		return filepath.Join(p.opts.Home, "AppData", "Roaming", app)
	}
	return filepath.Join(p.configHome(), app)
}

func (p *planner) noPreAllow(why string) {
	p.plan.PreAllowNote = "nothing was pre-allowed: " + why
}

// planClaudeCode: Claude Code keeps user-scope servers in ~/.claude.json
// under "mcpServers", local-scope ones (its default for `claude mcp add`)
// in the same file under "projects.<dir>.mcpServers", and project-scope
// ones in <project>/.mcp.json (code.claude.com/docs/en/mcp, "MCP
// installation scopes"); ~/.claude.json and ~/.claude move with
// CLAUDE_CONFIG_DIR. A name defined in more than one scope is reported by
// `claude mcp list` as "Conflicting scopes", so Sluice's entry is removed
// from every scope but the chosen one. Permissions are in
// ~/.claude/settings.json or <project>/.claude/settings.json under
// "permissions.allow", where an MCP tool is "mcp__<server>__<tool>"
// (code.claude.com/docs/en/settings, docs/en/iam). A server from .mcp.json
// waits for approval ("Pending approval") until "enabledMcpjsonServers"
// names it, and Claude Code reads that key from a project's settings only
// once the person has trusted the folder. Sluice writes it to the person's
// own <project>/.claude/settings.local.json, never to the shared
// settings.json, which would approve the server for everyone who clones the
// repository (checked against the real binary:
// sidecar/cli_config_agents_test.go).
func planClaudeCode(p *planner) error {
	claudeJSON := filepath.Join(p.opts.Home, ".claude.json")
	settingsDir := filepath.Join(p.opts.Home, ".claude")
	if dir := p.opts.Getenv("CLAUDE_CONFIG_DIR"); dir != "" && filepath.IsAbs(dir) {
		claudeJSON = filepath.Join(dir, ".claude.json")
		settingsDir = dir
	}
	entry := p.stdioEntry(jsonc.KV{K: "type", V: "stdio"})
	// The file that gets the entry is planned first: it is the one a
	// person (and the Connect screen) is shown first.
	mainPath := claudeJSON
	if p.opts.Scope == ScopeProject {
		mainPath = filepath.Join(p.opts.ProjectDir, ".mcp.json")
	}
	if err := p.jsonSet(mainPath, "json", []string{"mcpServers", ServerName}, entry); err != nil {
		return err
	}
	projects, err := p.jsonKeys(claudeJSON, "json", []string{"projects"})
	if err != nil {
		return err
	}
	var settingsPath string
	if p.opts.Scope == ScopeProject {
		mcpPath := mainPath
		settingsPath = filepath.Join(p.opts.ProjectDir, ".claude", "settings.json")
		if err := p.jsonAppend(filepath.Join(p.opts.ProjectDir, ".claude", "settings.local.json"), "json", []string{"enabledMcpjsonServers"}, []string{ServerName}); err != nil {
			return err
		}
		if err := p.jsonDelete(claudeJSON, "json", []string{"mcpServers", ServerName}, "user scope: Sluice now comes from "+mcpPath+" here (one entry; `--scope user` brings it back everywhere)"); err != nil {
			return err
		}
		for _, dir := range projects {
			if filepath.Clean(dir) == filepath.Clean(p.opts.ProjectDir) {
				if err := p.jsonDelete(claudeJSON, "json", []string{"projects", dir, "mcpServers", ServerName}, "local scope: replaced by "+mcpPath); err != nil {
					return err
				}
			}
		}
	} else {
		settingsPath = filepath.Join(settingsDir, "settings.json")
		for _, dir := range projects {
			if err := p.jsonDelete(claudeJSON, "json", []string{"projects", dir, "mcpServers", ServerName}, "local scope of "+dir+": replaced by the user-scope entry"); err != nil {
				return err
			}
		}
		if p.opts.ProjectDir != "" {
			mcpPath := filepath.Join(p.opts.ProjectDir, ".mcp.json")
			if err := p.jsonDelete(mcpPath, "json", []string{"mcpServers", ServerName}, "project scope: replaced by the user-scope entry"); err != nil {
				return err
			}
		}
	}
	if err := p.allowInPermissions(settingsPath, "json"); err != nil {
		return err
	}
	if p.opts.Scope == ScopeProject {
		p.plan.Steps = append(p.plan.Steps, "Start `claude` once in "+p.opts.ProjectDir+" and answer its folder-trust question: until the folder is trusted, Claude Code keeps project servers waiting (\"Pending approval\").")
	}
	return nil
}

// planClaudeDesktop: claude_desktop_config.json under "mcpServers", in
// ~/Library/Application Support/Claude on macOS, %APPDATA%\Claude on
// Windows (modelcontextprotocol.io/docs/develop/connect-local-servers), and
// ~/.config/Claude where unofficial Linux builds keep it.
func planClaudeDesktop(p *planner) error {
	path := filepath.Join(p.appData("Claude"), "claude_desktop_config.json")
	if err := p.jsonSet(path, "json", []string{"mcpServers", ServerName}, p.stdioEntry()); err != nil {
		return err
	}
	p.noPreAllow("Claude Desktop keeps tool approvals in the app (\"Allow always\" per tool), not in a file")
	return nil
}

// planCursor: ~/.cursor/mcp.json or <project>/.cursor/mcp.json under
// "mcpServers" (cursor.com/docs/context/mcp, "Configuration locations").
func planCursor(p *planner) error {
	path := filepath.Join(p.opts.Home, ".cursor", "mcp.json")
	if p.opts.Scope == ScopeProject {
		path = filepath.Join(p.opts.ProjectDir, ".cursor", "mcp.json")
	}
	if err := p.jsonSet(path, "json", []string{"mcpServers", ServerName}, p.stdioEntry()); err != nil {
		return err
	}
	p.noPreAllow("Cursor's only file for this, ~/.cursor/permissions.json (\"mcpAllowlist\"), replaces the allow-list you keep in Cursor's settings rather than adding to it, so Sluice leaves it to you (cursor.com/docs/reference/permissions)")
	return nil
}

// codexEnvVars are passed through Codex's cleaned environment: where the
// app keeps config.json, the ledger and presence files when they are not
// in the default places under HOME (which Codex keeps).
var codexEnvVars = []string{"XDG_CONFIG_HOME", "XDG_STATE_HOME"}

// planCodex: $CODEX_HOME/config.toml (default ~/.codex/config.toml), table
// [mcp_servers.<name>] with command and args, and per-tool
// tools.<tool>.approval_mode, where "approve" runs the tool without asking
// and default_tools_approval_mode = "prompt" makes every other tool ask
// (developers.openai.com/codex/mcp; codex-rs/config mcp_types.rs), and
// env_vars, the variables Codex lets through to the server.
func planCodex(p *planner) error {
	home := filepath.Join(p.opts.Home, ".codex")
	if v := p.opts.Getenv("CODEX_HOME"); v != "" && filepath.IsAbs(v) {
		home = v
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[mcp_servers.%s]\n", ServerName)
	fmt.Fprintf(&b, "command = %s\n", tomlString(p.opts.Command))
	var args []string
	for _, a := range p.plan.Args {
		args = append(args, tomlString(a))
	}
	fmt.Fprintf(&b, "args = [%s]\n", strings.Join(args, ", "))
	b.WriteString("# Codex starts MCP servers with a cleaned environment; these let the sidecar\n")
	b.WriteString("# find the same Sluice configuration as the app when they are set.\n")
	var names []string
	for _, v := range codexEnvVars {
		names = append(names, tomlString(v))
	}
	fmt.Fprintf(&b, "env_vars = [%s]\n", strings.Join(names, ", "))
	b.WriteString("# Every Sluice tool not approved below asks first, whatever approval_policy\n")
	b.WriteString("# says (Codex's own default, \"auto\", can run them without asking).\n")
	b.WriteString("default_tools_approval_mode = \"prompt\"\n")
	tools := PreAllowTools(p.opts.Toolsets)
	b.WriteString("# Read tools change nothing; propose tools only propose, and every change\n")
	b.WriteString("# waits for a person's approval in Sluice. Workspace tools still ask.\n")
	for _, t := range tools {
		fmt.Fprintf(&b, "tools.%s = { approval_mode = \"approve\" }\n", tomlKey(t))
	}
	if err := p.tomlTables(filepath.Join(home, "config.toml"), []string{"mcp_servers", ServerName}, b.String()); err != nil {
		return err
	}
	for _, t := range tools {
		p.plan.PreAllowed = append(p.plan.PreAllowed, "mcp_servers."+ServerName+".tools."+t)
	}
	p.plan.PreAllowNote = fmt.Sprintf("pre-allowed %d Sluice tools (approval_mode = \"approve\"): %s", len(tools), preAllowWords(p.opts.Toolsets))
	return nil
}

// planVSCode: <project>/.vscode/mcp.json, or mcp.json in the user settings
// directory (~/.config/Code/User, ~/Library/Application Support/Code/User,
// %APPDATA%\Code\User), under "servers", JSON with comments
// (code.visualstudio.com/docs/copilot/customization/mcp-servers).
func planVSCode(p *planner) error {
	path := filepath.Join(p.appData("Code"), "User", "mcp.json")
	if p.opts.Scope == ScopeProject {
		path = filepath.Join(p.opts.ProjectDir, ".vscode", "mcp.json")
	}
	if err := p.jsonSet(path, "jsonc", []string{"servers", ServerName}, p.stdioEntry(jsonc.KV{K: "type", V: "stdio"})); err != nil {
		return err
	}
	p.noPreAllow("VS Code asks once per tool and remembers \"Always allow\" in its own storage; its only file setting approves every tool of every server, which Sluice never sets")
	return nil
}

// planWindsurf: ~/.codeium/windsurf/mcp_config.json under "mcpServers"
// (docs.windsurf.com/windsurf/cascade/mcp).
func planWindsurf(p *planner) error {
	path := filepath.Join(p.opts.Home, ".codeium", "windsurf", "mcp_config.json")
	if err := p.jsonSet(path, "json", []string{"mcpServers", ServerName}, p.stdioEntry()); err != nil {
		return err
	}
	p.noPreAllow("Windsurf has no per-tool allow-list in its configuration file")
	return nil
}

// planGemini: ~/.gemini/settings.json or <project>/.gemini/settings.json
// under "mcpServers" (geminicli.com/docs/tools/mcp-server); comments are
// allowed there. Pre-allowing uses the policy engine: a Sluice-owned
// policies/sluice.toml beside settings.json with an "allow" rule for the
// named tools of this server only (docs/reference/policy-engine.md). The
// per-server "trust" option is never set: it bypasses confirmation for
// every tool, including workspace tools.
func planGemini(p *planner) error {
	dir := filepath.Join(p.opts.Home, ".gemini")
	if p.opts.Scope == ScopeProject {
		dir = filepath.Join(p.opts.ProjectDir, ".gemini")
	}
	if err := p.jsonSet(filepath.Join(dir, "settings.json"), "jsonc", []string{"mcpServers", ServerName}, p.stdioEntry()); err != nil {
		return err
	}
	tools := PreAllowTools(p.opts.Toolsets)
	var names []string
	for _, t := range tools {
		names = append(names, tomlString(t))
	}
	var b strings.Builder
	b.WriteString("# Written by `sluice-sidecar config --client gemini-cli`; rewritten on every run.\n")
	b.WriteString("# Read tools change nothing; propose tools only propose, and every change\n")
	b.WriteString("# waits for a person's approval in Sluice. Workspace tools still ask.\n")
	b.WriteString("[[rule]]\n")
	fmt.Fprintf(&b, "mcpName = %s\n", tomlString(ServerName))
	fmt.Fprintf(&b, "toolName = [%s]\n", strings.Join(names, ", "))
	b.WriteString("decision = \"allow\"\n")
	b.WriteString("priority = 100\n")
	policy := filepath.Join(dir, "policies", "sluice.toml")
	if err := p.ownFile(policy, "toml", b.String()); err != nil {
		return err
	}
	for _, t := range tools {
		p.plan.PreAllowed = append(p.plan.PreAllowed, ServerName+"/"+t)
	}
	p.plan.PreAllowNote = fmt.Sprintf("pre-allowed %d Sluice tools with a policy rule in %s (Gemini CLI's policy engine; \"trust\" is never set): %s", len(tools), policy, preAllowWords(p.opts.Toolsets))
	p.plan.Steps = append(p.plan.Steps, "Gemini CLI asks once whether you trust the folder you start it in (saved in ~/.gemini/trustedFolders.json); in an untrusted folder it starts no MCP server at all.")
	return nil
}

// planChatGPT: ChatGPT reaches MCP servers only over HTTPS from OpenAI's
// side (Settings → Apps & Connectors → Advanced → Developer mode), so there
// is no file to write: the person runs the HTTP transport and a tunnel.
// Its connector form offers OAuth or no authentication, not a bearer
// header, so the token goes in the connector URL's path.
func planChatGPT(p *planner) error {
	p.plan.TokenName = "chatgpt"
	sets := strings.Join(p.opts.Toolsets, ",")
	p.plan.Steps = []string{
		"Create ChatGPT's token (shown once; `--write` does this for you):\n    " + p.opts.Command + " token create --name chatgpt",
		"Start Sluice's HTTP transport on loopback, accepting your tunnel's host name and a token in the URL path:\n    " +
			p.opts.Command + " http --addr 127.0.0.1:8765 --toolsets " + sets + " --allow-host YOUR-TUNNEL-HOST --allow-path-token",
		"Run a tunnel you control from https://YOUR-TUNNEL-HOST to http://127.0.0.1:8765, for example:\n    cloudflared tunnel --url http://127.0.0.1:8765\n    ngrok http 127.0.0.1:8765",
		"In ChatGPT: Settings → Apps & Connectors → Advanced → turn on Developer mode; then Create a connector with\n    URL: https://YOUR-TUNNEL-HOST/mcp/TOKEN   (TOKEN is the token from step 1)\n    Authentication: No authentication (the token in the URL is the authentication)",
		"Keep that URL secret: anyone who has it can read your allowed repositories and propose changes as \"chatgpt\". Revoke it with:\n    " + p.opts.Command + " token revoke --name chatgpt",
	}
	p.noPreAllow("ChatGPT asks in the conversation and can remember a decision for the chat; it has no allow-list Sluice can set")
	return nil
}

// planCopilot: GitHub Copilot CLI keeps its servers in
// $COPILOT_HOME/mcp-config.json (default ~/.copilot) under "mcpServers",
// each {"type": "local", "command", "args", "tools"} where "tools" lists
// the tools it may offer ("*": all), exactly what `copilot mcp add`
// writes (docs.github.com/copilot, "Configure Copilot CLI"; checked against
// the real binary). Tool approvals are given per session, at the prompt or
// with --allow-tool; there is no file for them, and Copilot CLI runs tools
// annotated read-only without asking (checked: cli_config_agents_test.go).
func planCopilot(p *planner) error {
	dir := filepath.Join(p.opts.Home, ".copilot")
	if v := p.opts.Getenv("COPILOT_HOME"); v != "" && filepath.IsAbs(v) {
		dir = v
	}
	entry := jsonc.Ordered{{K: "type", V: "local"}, {K: "command", V: p.opts.Command}, {K: "args", V: p.plan.Args}, {K: "tools", V: []string{"*"}}}
	if err := p.jsonSet(filepath.Join(dir, "mcp-config.json"), "json", []string{"mcpServers", ServerName}, entry); err != nil {
		return err
	}
	var allow []string
	for _, t := range PreAllowTools(p.opts.Toolsets) {
		allow = append(allow, "--allow-tool='"+ServerName+"("+t+")'")
	}
	p.noPreAllow("Copilot CLI takes tool approvals at its prompt or as --allow-tool flags for one session, never from a file. " +
		"It runs every tool that Sluice annotates read-only without asking (the read tools, and the workspace tools that only read); " +
		"it asks before every other one. To skip its prompts for Sluice's propose tools too, start it with:\n    copilot " + strings.Join(allow, " "))
	p.plan.Steps = append(p.plan.Steps, "Before an interactive session, Copilot CLI asks once whether you trust the folder you start it in (it remembers the answer in "+filepath.Join(dir, "config.json")+", \"trusted_folders\").")
	return nil
}

// planOpencode: opencode reads $XDG_CONFIG_HOME/opencode/opencode.json (or
// <project>/opencode.json), JSON with comments, with servers under "mcp":
// {"type": "local", "command": [program, args...], "enabled": true}
// (opencode.ai/docs/mcp-servers). Its tools are named <server>_<tool>, and
// opencode runs tools without asking unless "permission" says "ask"
// (opencode.ai/docs/permissions): Sluice sets "ask" for its workspace
// tools, which leaves exactly the read and propose tools pre-allowed.
func planOpencode(p *planner) error {
	path := filepath.Join(p.configHome(), "opencode", "opencode.json")
	if p.opts.Scope == ScopeProject {
		path = filepath.Join(p.opts.ProjectDir, "opencode.json")
	}
	cmd := append([]string{p.opts.Command}, p.plan.Args...)
	entry := jsonc.Ordered{{K: "type", V: "local"}, {K: "command", V: cmd}, {K: "enabled", V: true}}
	if err := p.jsonSet(path, "jsonc", []string{"mcp", ServerName}, entry); err != nil {
		return err
	}
	if slices.Contains(p.opts.Toolsets, "workspace") {
		if err := p.jsonSet(path, "jsonc", []string{"permission", ServerName + "_workspace_*"}, "ask"); err != nil {
			return err
		}
	}
	for _, t := range PreAllowTools(p.opts.Toolsets) {
		p.plan.PreAllowed = append(p.plan.PreAllowed, ServerName+"_"+t)
	}
	p.plan.PreAllowNote = fmt.Sprintf("opencode runs tools without asking unless told to ask; %d Sluice tools run so: %s", len(p.plan.PreAllowed), preAllowWords(p.opts.Toolsets))
	if slices.Contains(p.opts.Toolsets, "workspace") {
		p.plan.PreAllowNote += " (\"permission\": {\"" + ServerName + "_workspace_*\": \"ask\"})"
	}
	return nil
}

// allowInPermissions pre-allows Sluice's tools in the "permissions.allow"
// list of the settings file at path, where Claude Code and Qwen Code both
// name an MCP tool "mcp__<server>__<tool>".
func (p *planner) allowInPermissions(path, format string) error {
	var allow []string
	for _, t := range PreAllowTools(p.opts.Toolsets) {
		allow = append(allow, "mcp__"+ServerName+"__"+t)
	}
	if err := p.jsonAppend(path, format, []string{"permissions", "allow"}, allow); err != nil {
		return err
	}
	p.plan.PreAllowed = allow
	p.plan.PreAllowNote = fmt.Sprintf("pre-allowed %d Sluice tools in %s (permissions.allow): %s", len(allow), path, preAllowWords(p.opts.Toolsets))
	return nil
}

// planQwen: Qwen Code keeps servers in ~/.qwen/settings.json or
// <project>/.qwen/settings.json under "mcpServers" ({"command", "args"}, as
// `qwen mcp add` writes), and auto-approved tools in the same file under
// "permissions.allow", where an MCP tool is "mcp__<server>__<tool>"
// (Qwen Code's docs/configuration/settings.md, "permissions"). The
// per-server "trust" option is never set: it would approve every tool.
func planQwen(p *planner) error {
	dir := filepath.Join(p.opts.Home, ".qwen")
	if p.opts.Scope == ScopeProject {
		dir = filepath.Join(p.opts.ProjectDir, ".qwen")
	}
	path := filepath.Join(dir, "settings.json")
	if err := p.jsonSet(path, "jsonc", []string{"mcpServers", ServerName}, p.stdioEntry()); err != nil {
		return err
	}
	if err := p.allowInPermissions(path, "jsonc"); err != nil {
		return err
	}
	p.plan.Steps = append(p.plan.Steps, "When Qwen Code's folder trust is on, it asks once whether you trust the folder you start it in (saved in ~/.qwen/trustedFolders.json); in an untrusted folder it asks before every tool, pre-allowed or not.")
	return nil
}
