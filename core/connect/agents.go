package connect

import (
	"net"
	"net/url"
	"path/filepath"
	"strings"
)

// Agent is what `sluice run` knows of a client with a program of its own:
// how to start it, where it keeps its own settings and sessions (the only
// part of a HOME it gets in a confined session), which variables carry its
// model key and its other settings, and the hosts of its model provider
// (the only network it gets).
type Agent struct {
	// Client is the client's name in Clients (Agents fills it in).
	Client string
	// Program is the command that starts it.
	Program string
	// ConfigPaths are its own files and directories, relative to HOME.
	ConfigPaths []string
	// KeyEnv are the variables of its model key, passed the way the client
	// expects: in its environment, never on a command line.
	KeyEnv []string
	// Env are further variables of its own that pass into the sandbox: exact
	// names, or prefixes ending in "_".
	Env []string
	// BaseURLEnv are the variables that point it at another model endpoint;
	// when one is set, that endpoint's host is the session's model host.
	BaseURLEnv []string
	// ModelHosts are its model provider's hosts (host or host:port).
	ModelHosts []string
	// trust records a folder as trusted the way the client records a
	// person's answer to its folder-trust question; nil when it asks none
	// that stops it.
	trust func(p *planner, dir string) error
}

// How `sluice run` starts each client. Each client's variables are from
// its own documentation: Claude Code's "Environment variables"
// (code.claude.com/docs/en/settings), Codex's config reference
// (developers.openai.com/codex), Gemini CLI's
// docs/get-started/authentication.md, Copilot CLI's `copilot help
// environment`, opencode.ai/docs/providers and Qwen Code's
// docs/cli/authentication.md.
var (
	runClaudeCode = Agent{
		Program:     "claude",
		ConfigPaths: []string{".claude", ".claude.json"},
		KeyEnv:      []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"},
		Env:         []string{"ANTHROPIC_", "CLAUDE_CODE_", "DISABLE_AUTOUPDATER", "DISABLE_TELEMETRY", "DISABLE_ERROR_REPORTING", "MAX_THINKING_TOKENS", "BASH_DEFAULT_TIMEOUT_MS"},
		BaseURLEnv:  []string{"ANTHROPIC_BASE_URL"},
		ModelHosts:  []string{"api.anthropic.com", "console.anthropic.com", "claude.ai"},
		// ~/.claude.json, projects.<dir>.hasTrustDialogAccepted.
		trust: func(p *planner, dir string) error {
			return p.jsonSet(filepath.Join(p.opts.Home, ".claude.json"), "json", []string{"projects", dir, "hasTrustDialogAccepted"}, true)
		},
	}
	runCodex = Agent{
		Program:     "codex",
		ConfigPaths: []string{".codex"},
		KeyEnv:      []string{"OPENAI_API_KEY", "CODEX_API_KEY"},
		Env:         []string{"OPENAI_", "CODEX_"},
		BaseURLEnv:  []string{"OPENAI_BASE_URL"},
		ModelHosts:  []string{"api.openai.com", "chatgpt.com", "auth.openai.com"},
	}
	runGemini = Agent{
		Program:     "gemini",
		ConfigPaths: []string{".gemini"},
		KeyEnv:      []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"},
		Env:         []string{"GEMINI_", "GOOGLE_GEMINI_", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"},
		BaseURLEnv:  []string{"GOOGLE_GEMINI_BASE_URL"},
		ModelHosts:  []string{"generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "oauth2.googleapis.com", "accounts.google.com"},
		trust:       trustedFoldersFile(".gemini"),
	}
	runCopilot = Agent{
		Program:     "copilot",
		ConfigPaths: []string{".copilot"},
		// GH_TOKEN and GITHUB_TOKEN are the account's GitHub credentials
		// and never pass; Copilot CLI takes its own token first.
		KeyEnv:     []string{"COPILOT_GITHUB_TOKEN", "COPILOT_PROVIDER_API_KEY"},
		Env:        []string{"COPILOT_"},
		BaseURLEnv: []string{"COPILOT_PROVIDER_BASE_URL"},
		ModelHosts: []string{"api.githubcopilot.com", "api.individual.githubcopilot.com", "api.github.com", "github.com"},
		// config.json, "trusted_folders".
		trust: func(p *planner, dir string) error {
			return p.jsonAppend(filepath.Join(p.opts.Home, ".copilot", "config.json"), "json", []string{"trusted_folders"}, []string{dir})
		},
	}
	runOpencode = Agent{
		Program:     "opencode",
		ConfigPaths: []string{".config/opencode", ".local/share/opencode", ".local/state/opencode", ".cache/opencode"},
		KeyEnv:      []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY"},
		Env:         []string{"OPENCODE_", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"},
		BaseURLEnv:  []string{"ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"},
		ModelHosts:  []string{"api.anthropic.com", "api.openai.com", "openrouter.ai", "opencode.ai", "models.dev"},
	}
	runQwen = Agent{
		Program:     "qwen",
		ConfigPaths: []string{".qwen"},
		KeyEnv:      []string{"OPENAI_API_KEY", "DASHSCOPE_API_KEY"},
		Env:         []string{"OPENAI_BASE_URL", "OPENAI_MODEL", "QWEN_"},
		BaseURLEnv:  []string{"OPENAI_BASE_URL"},
		ModelHosts:  []string{"dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com", "chat.qwen.ai", "portal.qwen.ai"},
		trust:       trustedFoldersFile(".qwen"),
	}
)

// trustedFoldersFile: Gemini CLI and Qwen Code keep a person's answers in
// <dir>/trustedFolders.json, {"<folder>": "TRUST_FOLDER"}.
func trustedFoldersFile(dir string) func(p *planner, folder string) error {
	return func(p *planner, folder string) error {
		return p.jsonSet(filepath.Join(p.opts.Home, dir, "trustedFolders.json"), "json", []string{folder}, "TRUST_FOLDER")
	}
}

// Agents are the clients `sluice run` starts by name, in the client
// table's order.
func Agents() []Agent {
	var out []Agent
	for _, c := range clients {
		if c.Run != nil {
			a := *c.Run
			a.Client = c.Name
			out = append(out, a)
		}
	}
	return out
}

// AgentByName finds an agent by its program (claude) or client name
// (claude-code).
func AgentByName(name string) (Agent, bool) {
	for _, a := range Agents() {
		if a.Client == name || a.Program == name {
			return a, true
		}
	}
	return Agent{}, false
}

// AgentNames lists the programs `sluice run` starts by name.
func AgentNames() []string {
	var out []string
	for _, a := range Agents() {
		out = append(out, a.Program)
	}
	return out
}

// PassesEnv reports whether the variable name is one of the agent's own.
func (a Agent) PassesEnv(name string) bool {
	for _, k := range a.KeyEnv {
		if k == name {
			return true
		}
	}
	for _, e := range a.Env {
		if e == name || (strings.HasSuffix(e, "_") && strings.HasPrefix(name, e)) {
			return true
		}
	}
	return false
}

// ModelEndpoints are the host:port entries of the model endpoints that
// getenv's BaseURLEnv variables name, in that order.
func (a Agent) ModelEndpoints(getenv func(string) string) []string {
	var out []string
	for _, k := range a.BaseURLEnv {
		v := getenv(k)
		if v == "" {
			continue
		}
		if hp, ok := EndpointHost(v); ok {
			out = append(out, hp)
		}
	}
	return out
}

// EndpointHost is the lower-case host:port of an http(s) URL.
func EndpointHost(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return "", false
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port), true
}
