package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The context budget (docs/tools.md "Context budget"): what the
// tools cost an agent, counted in o200k tokens, the tokenizer of OpenAI's
// current models and a fair stand-in for the others.
const (
	// modelVisibleBudget bounds name + description + input schema of every
	// tool of the default toolsets: what clients put in the model's
	// context on every turn.
	modelVisibleBudget = 6000
	// wireBudget bounds the whole tools/list result of the default
	// toolsets, output schemas included.
	wireBudget = 15000
	// repoBriefBudget bounds repo_brief's answer on an ordinary repository.
	repoBriefBudget = 300
)

// o200kCounter counts tokens with the gpt-tokenizer package pinned in
// build/tools (SLUICE_TOOLS_DIR), run by Node. It is a real tokenizer,
// not an estimate: bytes/4 undercounts JSON punctuation and overcounts
// English prose.
type o200kCounter struct{ node, dir string }

func o200k(t *testing.T) o200kCounter {
	t.Helper()
	dir := os.Getenv("SLUICE_TOOLS_DIR")
	_, err := os.Stat(filepath.Join(dir, "node_modules", "gpt-tokenizer", "package.json"))
	needOrSkip(t, dir != "" && err == nil, "the gpt-tokenizer package in SLUICE_TOOLS_DIR (make test installs it from build/tools)")
	node := "node"
	if nb := os.Getenv("SLUICE_NODE_BIN"); nb != "" {
		node = filepath.Join(nb, "node")
	}
	return o200kCounter{node: node, dir: dir}
}

// counterScript reads a JSON array of strings and prints their o200k
// token counts. It runs with -e in the tools folder, so require resolves
// the pinned package there.
const counterScript = `const {countTokens} = require("gpt-tokenizer/encoding/o200k_base");
let input = ""; process.stdin.on("data", d => input += d);
process.stdin.on("end", () => process.stdout.write(JSON.stringify(JSON.parse(input).map(s => countTokens(s)))));`

func (c o200kCounter) count(t *testing.T, texts ...string) []int {
	t.Helper()
	in, _ := json.Marshal(texts)
	cmd := exec.Command(c.node, "-e", counterScript)
	cmd.Dir = c.dir
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("o200k counter: %v", err)
	}
	var n []int
	if err := json.Unmarshal(out, &n); err != nil || len(n) != len(texts) {
		t.Fatalf("o200k counter answered %q (%v)", out, err)
	}
	return n
}

// modelVisible is what a client sends its model for one tool: name,
// description and input schema (captured from Claude Code, Codex and
// Gemini CLI requests; each wraps them a little differently).
func modelVisible(tl *mcp.Tool) string {
	b, _ := json.Marshal(map[string]any{"name": tl.Name, "description": tl.Description, "input_schema": tl.InputSchema})
	return string(b)
}

// TestContextBudget measures, with the o200k tokenizer, what Sluice's
// tools cost an agent and holds the targets: the default toolsets'
// model-visible definitions, the whole default tools/list on the wire, and
// repo_brief on an ordinary repository. It prints every figure (go test
// -v) so that docs/benchmarks.md can record them.
func TestContextBudget(t *testing.T) {
	tok := o200k(t)
	_, cfg := testEnv(t)
	installs := []struct {
		name      string
		workspace bool
	}{{"default", false}, {"default with workspaces configured", true}}
	for _, inst := range installs {
		c := *cfg
		if inst.workspace {
			c.WorkspaceImage = "sha256:" + strings.Repeat("ab", 32)
		}
		sets := fitToolsets(&c, c.Toolsets)
		res, raw := listTools(t, &c, nil)
		texts := []string{string(raw), serverInstructions}
		for _, tl := range res.Tools {
			w, _ := json.Marshal(tl)
			texts = append(texts, modelVisible(tl), string(w))
		}
		n := tok.count(t, texts...)
		wire, instr := n[0], n[1]
		type row struct {
			name        string
			model, wire int
		}
		var rows []row
		model := 0
		for i, tl := range res.Tools {
			r := row{tl.Name, n[2+2*i], n[3+2*i]}
			model += r.model
			rows = append(rows, r)
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].model > rows[j].model })
		var b strings.Builder
		fmt.Fprintf(&b, "%s (toolsets %v): %d tools; model-visible %d tokens (budget %d); tools/list on the wire %d tokens (budget %d); instructions %d tokens\n",
			inst.name, sets, len(res.Tools), model, modelVisibleBudget, wire, wireBudget, instr)
		for _, r := range rows {
			fmt.Fprintf(&b, "  %-28s model %4d  wire %4d\n", r.name, r.model, r.wire)
		}
		t.Log(b.String())
		// Both installations are held to the same budgets: configuring
		// workspaces adds their toolset, and the defaults leave room for it.
		if model > modelVisibleBudget {
			t.Errorf("%s: model-visible definitions cost %d tokens, budget %d", inst.name, model, modelVisibleBudget)
		}
		if wire > wireBudget {
			t.Errorf("%s: tools/list costs %d tokens on the wire, budget %d", inst.name, wire, wireBudget)
		}
	}

	// What each toolset adds, on its own, so that the cost of enabling
	// one is known (printed only: the budgets above are what is held).
	_, cfg2 := testEnv(t)
	type span struct {
		name       string
		start, end int // this toolset's model, wire pairs in texts
	}
	var spans []span
	var texts []string
	for _, ts := range availableToolsets() {
		res, _ := listTools(t, cfg2, []string{ts})
		sp := span{start: len(texts)}
		for _, tl := range res.Tools {
			if tl.Name == "sluice_capabilities" || tl.Name == "toolset_enable" {
				continue
			}
			w, _ := json.Marshal(tl)
			texts = append(texts, modelVisible(tl), string(w))
		}
		sp.end = len(texts)
		sp.name = fmt.Sprintf("%s (%d tools)", ts, (sp.end-sp.start)/2)
		spans = append(spans, sp)
	}
	n := tok.count(t, texts...)
	var b strings.Builder
	b.WriteString("each toolset on its own (always-present tools left out):\n")
	for _, sp := range spans {
		model, wire := 0, 0
		for i := sp.start; i < sp.end; i += 2 {
			model, wire = model+n[i], wire+n[i+1]
		}
		fmt.Fprintf(&b, "  %-28s model %5d  wire %5d\n", sp.name, model, wire)
	}
	t.Log(b.String())

	t.Run("repo_brief", func(t *testing.T) {
		r := briefRepo(t)
		cs := gitSession(t, filepath.Dir(r.Dir))
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "repo_brief", Arguments: map[string]any{"repoPath": r.Dir}})
		if err != nil || res.IsError {
			t.Fatalf("repo_brief: %v %s", err, gitResultText(res))
		}
		n := tok.count(t, gitResultText(res))[0]
		t.Logf("repo_brief on a 30-commit repository with two branches, an upstream and two changes: %d tokens (budget %d)", n, repoBriefBudget)
		if n > repoBriefBudget {
			t.Errorf("repo_brief costs %d tokens, budget %d: %s", n, repoBriefBudget, gitResultText(res))
		}
	})
}
