package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/proposal"
)

// updateGolden rewrites golden files (tool schema snapshots, docs/tools.md)
// instead of comparing with them: go test ./sidecar -update.
var updateGolden = flag.Bool("update", false, "rewrite golden files (testdata/schemas, docs/tools.md) from the server")

// listedTool is a tool as a client sees it in tools/list, with the toolset
// that registers it.
type listedTool struct {
	Toolset string
	Tool    *mcp.Tool
}

// listTools lists the tools of a sidecar with the given toolsets through a
// real client session.
func listTools(t *testing.T, cfg *config.Config, toolsets []string) (*mcp.ListToolsResult, []byte) {
	t.Helper()
	s, err := New(Options{Config: cfg, Toolsets: toolsets})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectInMemory(t, s)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return res, raw
}

// allTools lists every tool of every known toolset, each with the toolset
// that registers it ("" for the always-present ones).
func allTools(t *testing.T) []listedTool {
	t.Helper()
	_, cfg := testEnv(t)
	base, _ := listTools(t, cfg, []string{})
	always := map[string]bool{}
	for _, tl := range base.Tools {
		always[tl.Name] = true
	}
	owner := map[string]string{}
	for _, ts := range config.KnownToolsets {
		res, _ := listTools(t, cfg, []string{ts})
		for _, tl := range res.Tools {
			if !always[tl.Name] {
				owner[tl.Name] = ts
			}
		}
	}
	all, _ := listTools(t, cfg, config.KnownToolsets)
	var out []listedTool
	for _, tl := range all.Tools {
		out = append(out, listedTool{Toolset: owner[tl.Name], Tool: tl})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tool.Name < out[j].Tool.Name })
	return out
}

// TestToolSchemas_Snapshots keeps one snapshot per tool of what clients
// see (name, title, description, annotations, input and output schema).
// A missing, stale or orphaned snapshot fails; -update rewrites them.
func TestToolSchemas_Snapshots(t *testing.T) {
	dir := filepath.Join("testdata", "schemas")
	tools := allTools(t)
	want := map[string]bool{}
	for _, lt := range tools {
		name := lt.Tool.Name + ".json"
		want[name] = true
		got, err := json.MarshalIndent(lt.Tool, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join(dir, name)
		if *updateGolden {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(path)
		switch {
		case os.IsNotExist(err):
			t.Errorf("%s: no schema snapshot; review the tool and run go test ./sidecar -run TestToolSchemas -update", lt.Tool.Name)
		case err != nil:
			t.Fatal(err)
		case !bytes.Equal(old, got):
			t.Errorf("%s: schema snapshot is stale (the tool changed); review the change and run go test ./sidecar -run TestToolSchemas -update", lt.Tool.Name)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !want[e.Name()] {
			if *updateGolden {
				_ = os.Remove(filepath.Join(dir, e.Name()))
				continue
			}
			t.Errorf("%s: snapshot of a tool that no longer exists; run with -update", e.Name())
		}
	}
}

var (
	toolNameRe = regexp.MustCompile(`^[a-z][a-z0-9_]{2,63}$`)
	whenToUse  = regexp.MustCompile(`^Start here|[.;:] Use it\b`)
)

// TestToolSchemas_Invariants checks every registered tool for what every
// client and model relies on.
func TestToolSchemas_Invariants(t *testing.T) {
	seen := map[string]bool{}
	for _, lt := range allTools(t) {
		tl := lt.Tool
		name := tl.Name
		if seen[name] {
			t.Errorf("%s: registered twice", name)
		}
		seen[name] = true
		if !toolNameRe.MatchString(name) {
			t.Errorf("%s: name is not snake_case (some clients reject dots and dashes)", name)
		}
		if strings.TrimSpace(tl.Title) == "" {
			t.Errorf("%s: no title", name)
		}
		if n := len(tl.Description); n < 60 || n > 1200 {
			t.Errorf("%s: description of %d bytes; write one for a model, 60 to 1200 bytes", name, n)
		}
		// A model picks a tool from its description alone, so each says
		// what the tool does and, in a sentence of its own, when to reach
		// for it ("Use it …"; repo_brief: "Start here …").
		if i := whenToUse.FindStringIndex(tl.Description); i == nil || (i[0] == 0 && !strings.HasPrefix(tl.Description, "Start here")) {
			t.Errorf("%s: the description does not say when to use the tool (a sentence with \"Use it\" after what it does): %q", name, tl.Description)
		}
		a := tl.Annotations
		if a == nil {
			t.Errorf("%s: no annotations", name)
			continue
		}
		if a.Title == "" {
			t.Errorf("%s: annotations have no title", name)
		}
		if a.ReadOnlyHint && a.DestructiveHint != nil && *a.DestructiveHint {
			t.Errorf("%s: read-only and destructive at once", name)
		}
		readSet := slices.Contains(readToolsets, lt.Toolset)
		if readSet && (!a.ReadOnlyHint || !a.IdempotentHint) {
			t.Errorf("%s: %s tools are read-only and idempotent and must say so", name, lt.Toolset)
		}
		in := schemaMap(t, tl.InputSchema)
		if in["type"] != "object" {
			t.Errorf("%s: input schema type %v, want object", name, in["type"])
		}
		for _, k := range []string{"anyOf", "oneOf", "allOf", "not"} {
			if _, ok := in[k]; ok {
				t.Errorf("%s: top-level %s in the input schema (clients reject it)", name, k)
			}
		}
		props, _ := in["properties"].(map[string]any)
		for p, v := range props {
			if d, _ := v.(map[string]any)["description"].(string); strings.TrimSpace(d) == "" {
				t.Errorf("%s: argument %s has no description", name, p)
			}
		}
		if readSet && lt.Toolset != "fleet" {
			req, _ := in["required"].([]any)
			if _, ok := props["repoPath"]; !ok || !slices.Contains(req, any("repoPath")) {
				t.Errorf("%s: a single-repository tool must require repoPath", name)
			}
		}
		if tl.OutputSchema == nil {
			t.Errorf("%s: no output schema (structuredContent must be described)", name)
			continue
		}
		out := schemaMap(t, tl.OutputSchema)
		oprops, _ := out["properties"].(map[string]any)
		if out["type"] != "object" || oprops["error"] == nil {
			t.Errorf("%s: output schema must be an object with the structured error field", name)
		}
	}
	if !seen["repo_brief"] || !seen["sluice_capabilities"] {
		t.Fatalf("expected tools missing: %v", seen)
	}
}

func schemaMap(t *testing.T, s any) map[string]any {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Byte budgets of tools/list (bytes/4, the JSON a client receives): a
// guard that runs everywhere, without the tokenizer that TestContextBudget
// (budget_test.go) counts real o200k tokens with. Before the context
// budget the git toolset measured ≈ 16.5k and git, propose and
// workspace ≈ 40.7k; after it ≈ 6.6k (git: 18 tools) and ≈ 20.3k (45
// tools). The budgets are those measurements rounded up, with no
// headroom: a tool that grows has to shrink another or make its case.
const (
	gitToolsetTokenBudget     = 6700
	defaultToolsetTokenBudget = 20400
)

func TestToolsList_TokenBudget(t *testing.T) {
	_, cfg := testEnv(t)
	_, gitRaw := listTools(t, cfg, []string{"git"})
	res, defRaw := listTools(t, cfg, config.DefaultToolsets)
	gitTokens, defTokens := len(gitRaw)/4, len(defRaw)/4
	t.Logf("tools/list: git toolset %d tools ≈ %d tokens; default toolsets %v %d tools ≈ %d tokens",
		countGit(t, cfg), gitTokens, config.DefaultToolsets, len(res.Tools), defTokens)
	if gitTokens > gitToolsetTokenBudget {
		t.Errorf("git toolset tools/list ≈ %d tokens, budget %d", gitTokens, gitToolsetTokenBudget)
	}
	if defTokens > defaultToolsetTokenBudget {
		t.Errorf("default tools/list ≈ %d tokens, budget %d", defTokens, defaultToolsetTokenBudget)
	}
}

func countGit(t *testing.T, cfg *config.Config) int {
	res, _ := listTools(t, cfg, []string{"git"})
	return len(res.Tools)
}

// TestToolSchemas_EnumsAreCoreProposals: every enum a client sees in any
// tool's input schema is one of core/proposal's lists for that property
// (or, for a toolset, the configuration's list), in its order, so that a
// value added there is offered everywhere and no schema offers one the
// app would refuse.
func TestToolSchemas_EnumsAreCoreProposals(t *testing.T) {
	lists := map[string][]any{
		"strategy": enumOf(proposal.MergeStrategies()),
		"mode":     enumOf(proposal.ResetModes()),
		"applyTo":  enumOf(proposal.PatchTargets()),
		"action":   enumOf(proposal.SubmoduleActions()),
		"op":       enumOf(proposal.PlanStepOps()),
		"toolset":  enumOf(config.KnownToolsets),
	}
	seen := map[string]bool{}
	var walk func(tool, prop string, v any)
	walk = func(tool, prop string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if e, ok := x["enum"]; ok {
				want, known := lists[prop]
				if !known {
					t.Errorf("%s: %q has an enum %v that core/proposal does not list", tool, prop, e)
				} else if !reflect.DeepEqual(e, want) {
					t.Errorf("%s: %q offers %v, core/proposal lists %v", tool, prop, e, want)
				}
				seen[prop] = true
			}
			for k, c := range x {
				if k == "properties" {
					for name, ps := range c.(map[string]any) {
						walk(tool, name, ps)
					}
				} else {
					walk(tool, prop, c)
				}
			}
		case []any:
			for _, c := range x {
				walk(tool, prop, c)
			}
		}
	}
	for _, tl := range allTools(t) {
		walk(tl.Tool.Name, "", schemaMap(t, tl.Tool.InputSchema))
	}
	for prop := range lists {
		if !seen[prop] {
			t.Errorf("no tool offers %q as an enum", prop)
		}
	}
}
