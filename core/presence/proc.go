package presence

import (
	"path/filepath"
	"strings"
)

// proc is a process as the /proc scan sees it.
type proc struct {
	pid, ppid int
	// agent is the canonical agent name, or "" for any other process.
	agent string
	cwd   string
}

// knownAgents maps an executable's base name to the agent it is.
var knownAgents = map[string]string{
	"claude":       "claude",
	"codex":        "codex",
	"cursor-agent": "cursor-agent",
	"gemini":       "gemini",
	"aider":        "aider",
	"opencode":     "opencode",
	"goose":        "goose",
	"amp":          "amp",
	"qwen":         "qwen",
	"crush":        "crush",
	"copilot":      "copilot",
}

// knownPackages are npm packages whose entry script is run by node.
var knownPackages = map[string]string{
	"@anthropic-ai/claude-code": "claude",
	"@openai/codex":             "codex",
	"@google/gemini-cli":        "gemini",
	"@qwen-code/qwen-code":      "qwen",
	"@github/copilot":           "copilot",
}

// interpreters run an agent's script: then the script's name counts.
var interpreters = map[string]bool{
	"node": true, "bun": true, "deno": true, "python": true, "python3": true, "uv": true,
}

// agentOf names the agent a process is, from its comm and argv.
func agentOf(comm string, argv []string) string {
	if a := knownAgents[comm]; a != "" {
		return a
	}
	if len(argv) == 0 {
		return ""
	}
	if a := knownAgents[baseName(argv[0])]; a != "" {
		return a
	}
	first := baseName(argv[0])
	if !interpreters[first] && !strings.HasPrefix(first, "python3.") {
		return ""
	}
	for _, arg := range argv[1:min(len(argv), 4)] {
		for pkg, a := range knownPackages {
			if strings.Contains(filepath.ToSlash(arg), "/node_modules/"+pkg+"/") {
				return a
			}
		}
		if a := knownAgents[baseName(arg)]; a != "" {
			return a
		}
	}
	return ""
}

func baseName(p string) string {
	b := filepath.Base(p)
	for _, ext := range []string{".js", ".mjs", ".cjs", ".py", ".exe"} {
		b = strings.TrimSuffix(b, ext)
	}
	return b
}
