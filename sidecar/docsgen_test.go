package sidecar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/config"
)

// toolsDocPath is the generated tools reference.
var toolsDocPath = filepath.Join("..", "docs", "tools.md")

// TestToolsDoc regenerates docs/tools.md from the running server's
// tools/list and fails when the committed file differs: the reference can
// never drift from what clients are told. go test ./sidecar -run TestToolsDoc
// -update rewrites it.
func TestToolsDoc(t *testing.T) {
	got := renderToolsDoc(t, allTools(t))
	if *updateGolden {
		if err := os.WriteFile(toolsDocPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(toolsDocPath)
	if err != nil {
		t.Fatalf("docs/tools.md is missing: run go test ./sidecar -run TestToolsDoc -update (%v)", err)
	}
	if !bytes.Equal(old, got) {
		t.Fatalf("docs/tools.md is stale: the tools changed; run go test ./sidecar -run TestToolsDoc -update and review the diff")
	}
}

func renderToolsDoc(t *testing.T, tools []listedTool) []byte {
	t.Helper()
	var b bytes.Buffer
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Tools reference\n\n")
	w("<!-- Generated from the server's tools/list by `go test ./sidecar -run TestToolsDoc -update`. Do not edit by hand. -->\n\n")
	w("Every tool returns `structuredContent` described by its output schema, and the same JSON as text. ")
	w("A failure the model can act on is a result with `isError: true` and `{\"error\": {\"code\", \"message\", \"data\"}}`; ")
	w("protocol faults stay JSON-RPC errors. Repository paths are absolute, canonicalised (symlinks resolved) and confined to the ")
	w("allowed roots; a path outside them fails with `path_outside_roots` and is not echoed back. Revisions, refs and paths ")
	w("that begin with `-` are refused with `invalid_argument` before git runs.\n\n")
	w("Toolsets are switched on with `--toolsets` (default: %s; `workspace` only when a workspace image is configured). ", strings.Join(config.DefaultToolsets, ","))
	w("`sluice_capabilities` and `toolset_enable` are always present: the first lists every toolset and how many tools it brings, ")
	w("the second adds one to the session while it runs (the client is sent `notifications/tools/list_changed` and lists the new tools; no restart).\n\n")
	w("## Context budget\n\n")
	w("An agent pays for every tool definition on every turn, whether it calls the tool or not, so the definitions are written to a budget ")
	w("that `TestContextBudget` (sidecar/budget_test.go) holds with a real o200k tokenizer (the `gpt-tokenizer` package pinned in build/tools) ")
	w("and prints per tool (`go test ./sidecar -run TestContextBudget -v`; figures in docs/benchmarks.md):\n\n")
	w("| what | budget |\n|---|---|\n")
	w("| what a client sends its model for the default toolsets (name, description, input schema of each tool) | %d tokens |\n", modelVisibleBudget)
	w("| the whole default `tools/list` on the wire, output schemas included | %d tokens |\n", wireBudget)
	w("| `repo_brief` on an ordinary repository | %d tokens |\n\n", repoBriefBudget)
	w("Both installations are held to the same budgets. Measured when they were last changed (docs/benchmarks.md has every figure, per toolset and per tool):\n\n")
	w("| installation | tools | model-visible | wire |\n|---|---|---|---|\n")
	w("| before the budget: git, propose, workspace | 50 | 10,445 | 37,413 |\n")
	w("| no workspace image configured (git, propose) | 30 | 4,526 | 11,132 |\n")
	w("| a workspace image configured (git, propose, workspace) | 39 | 5,732 | 13,840 |\n\n")
	w("How the definitions keep to it:\n\n")
	w("- **Said once, not per tool.** What every tool shares is in the server instructions (sent once, at `initialize`): start with `repo_brief`; ")
	w("`repoPath` is absolute and inside the allowed roots; `propose_*` tools are asynchronous, need a reason, return a `proposalId` at once, and ")
	w("`proposal_wait` gives the outcome; an `idempotencyKey` makes a retry return the first proposal; a failure is `error {code, message}` whose ")
	w("message names the next step; more tools are one `toolset_enable` away. A `propose_plan` step is `op` plus the arguments `propose_<op>` takes, ")
	w("which that tool describes: the plan's schema does not carry five copies of them. A step that carries another op's field is refused with the ")
	w("fields its op takes.\n")
	w("- **Descriptions for a model.** One or two sentences: what the tool does, then a sentence of its own saying when to reach for it (\"Use it …\"). ")
	w("`TestToolSchemas_Invariants` fails a tool whose description does not say when to use it. Argument descriptions say only what the name and type do not ")
	w("(a default and a maximum, an accepted form); every argument still has one.\n")
	w("- **Bounds where a client can act on them.** Input schemas bound free text (a reason, a message, a patch), list enums and the proposal id's form. ")
	w("Names, refs, paths, list sizes and the idempotency key are held to their limits by validation before anything is submitted, with an ")
	w("`invalid_argument` that states the limit, rather than by a `maxLength` every model reads on every turn.\n")
	w("- **Compact output schemas.** Output schemas describe `structuredContent` for clients that validate it; few show them to a model, yet they were two ")
	w("thirds of `tools/list` (the proposal result alone was 2.9 KB, repeated on 16 tools). On the wire each keeps the top level of the result exactly (every field, ")
	w("its type, whether it is required) and names only the type of what is nested; the SDK still validates every result against it. A result several tools ")
	w("return is described once: the proposal result on `proposal_wait`, the workspace on `workspace_status`; the others carry the same fields and types and ")
	w("point there. A field omitted when empty is not typed as null. The full schemas, nested fields and descriptions, are what this reference shows under each tool.\n")
	w("- **Default toolsets that fit the installation.** `workspace` is served only when a workspace image is configured (without one its tools can only fail), ")
	w("and then as the loop a workspace session needs: create, status (the repository's conventions), read, write, edit, run, diff, seal, destroy. ")
	w("`workspace_search` (list, glob, grep) is off: a run does the same with ls, find and grep, and the model reads three fewer definitions every turn. ")
	w("`propose_more` (a plan approved as one unit, a linked worktree, a submodule pointer) holds proposals a session needs now and then; ")
	w("`worktree_list` and `submodule_status`, which come before two of them, stay in `git` and name the toolset. `fleet` (many repositories) and ")
	w("`safety` (restore points and reflog movements) are read-only tools a session needs now and then. All four are off by default. Nothing is lost: ")
	w("every tool is one `toolset_enable` away, and `sluice_capabilities` says which toolsets exist and how many tools each brings.\n")
	w("- **A small first read.** `repo_brief` carries the last three commits dated to the day; `repo_history` has the rest.\n\n")

	groups := map[string][]listedTool{}
	for _, lt := range tools {
		groups[lt.Toolset] = append(groups[lt.Toolset], lt)
	}
	order := append([]string{""}, config.KnownToolsets...)
	w("| toolset | tools |\n|---|---|\n")
	for _, g := range order {
		if len(groups[g]) == 0 {
			continue
		}
		var names []string
		for _, lt := range groups[g] {
			names = append(names, "[`"+lt.Tool.Name+"`](#"+lt.Tool.Name+")")
		}
		w("| %s | %s |\n", toolsetLabel(g), strings.Join(names, ", "))
	}
	w("\n")
	for _, g := range order {
		if len(groups[g]) == 0 {
			continue
		}
		w("## %s\n\n", toolsetLabel(g))
		for _, lt := range groups[g] {
			renderTool(t, w, lt)
		}
	}
	return b.Bytes()
}

func toolsetLabel(g string) string {
	if g == "" {
		return "Always present"
	}
	return "Toolset `" + g + "`"
}

func renderTool(t *testing.T, w func(string, ...any), lt listedTool) {
	tl := lt.Tool
	w("### %s\n\n", tl.Name)
	w("**%s**", tl.Title)
	if a := tl.Annotations; a != nil {
		var hints []string
		if a.ReadOnlyHint {
			hints = append(hints, "read-only")
		}
		if a.DestructiveHint != nil && *a.DestructiveHint {
			hints = append(hints, "destructive")
		}
		if a.IdempotentHint {
			hints = append(hints, "idempotent")
		}
		if a.OpenWorldHint != nil && !*a.OpenWorldHint {
			hints = append(hints, "closed world")
		}
		if len(hints) > 0 {
			w(" · %s", strings.Join(hints, ", "))
		}
	}
	w("\n\n%s\n\n", tl.Description)
	in := schemaMap(t, tl.InputSchema)
	w("Arguments:\n\n")
	rows := schemaRows(in, "", 0, 1)
	if len(rows) == 0 {
		w("none.\n\n")
	} else {
		w("| name | type | required | description |\n|---|---|---|---|\n")
		for _, r := range rows {
			req := ""
			if r.required {
				req = "yes"
			}
			w("| `%s` | %s | %s | %s |\n", r.name, r.typ, req, cell(r.desc))
		}
		w("\n")
	}
	if tl.OutputSchema != nil {
		// The reference shows the full result; the wire carries its
		// compact form (see "Context budget").
		var out map[string]any
		if full := fullOutputSchema(tl.Name); full != nil {
			out = schemaMap(t, full)
		} else {
			out = schemaMap(t, tl.OutputSchema)
		}
		w("Result (`structuredContent`):\n\n| field | type | description |\n|---|---|---|\n")
		for _, r := range schemaRows(out, "", 0, 3) {
			if r.name == "error" || strings.HasPrefix(r.name, "error.") {
				continue
			}
			w("| `%s` | %s | %s |\n", r.name, r.typ, cell(r.desc))
		}
		w("\n")
	}
}

type schemaRow struct {
	name, typ, desc string
	required        bool
}

// schemaRows flattens an object schema into dotted field rows in
// declaration order, down to maxDepth levels (arrays of objects appear as
// name[].field).
func schemaRows(s map[string]any, prefix string, depth, maxDepth int) []schemaRow {
	raw, _ := json.Marshal(s)
	return schemaRowsRaw(raw, prefix, depth, maxDepth)
}

func schemaRowsRaw(raw []byte, prefix string, depth, maxDepth int) []schemaRow {
	var s map[string]json.RawMessage
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	var required []string
	_ = json.Unmarshal(s["required"], &required)
	var props map[string]json.RawMessage
	_ = json.Unmarshal(s["properties"], &props)
	var rows []schemaRow
	for _, n := range objectKeys(s["properties"]) {
		var p map[string]any
		_ = json.Unmarshal(props[n], &p)
		full := prefix + n
		rows = append(rows, schemaRow{name: full, typ: schemaType(p), desc: fmt.Sprint(orEmpty(p["description"])), required: slices.Contains(required, n)})
		if depth+1 >= maxDepth {
			continue
		}
		switch {
		case hasType(p, "object") && p["properties"] != nil:
			rows = append(rows, schemaRowsRaw(props[n], full+".", depth+1, maxDepth)...)
		case hasType(p, "array"):
			var pr map[string]json.RawMessage
			_ = json.Unmarshal(props[n], &pr)
			var items map[string]any
			if json.Unmarshal(pr["items"], &items) == nil && items["properties"] != nil {
				rows = append(rows, schemaRowsRaw(pr["items"], full+"[].", depth+1, maxDepth)...)
			}
		}
	}
	return rows
}

// objectKeys lists the keys of a JSON object in the order written (the
// SDK writes properties in struct field order).
func objectKeys(raw []byte) []string {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		keys = append(keys, fmt.Sprint(tok))
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}

func hasType(p map[string]any, t string) bool {
	switch v := p["type"].(type) {
	case string:
		return v == t
	case []any:
		for _, x := range v {
			if x == t {
				return true
			}
		}
	}
	return false
}

func schemaType(p map[string]any) string {
	var types []string
	switch v := p["type"].(type) {
	case string:
		types = []string{v}
	case []any:
		for _, x := range v {
			if x != "null" {
				types = append(types, fmt.Sprint(x))
			}
		}
	default:
		return "any"
	}
	t := strings.Join(types, "|")
	if t == "array" {
		if items, ok := p["items"].(map[string]any); ok {
			return schemaType(items) + "[]"
		}
	}
	return t
}

func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// The generator must produce valid JSON-free Markdown tables for any
// schema shape the SDK emits; this guards the helpers against a panic on
// an unusual schema.
func TestToolsDoc_SchemaRowsOnOddShapes(t *testing.T) {
	var s map[string]any
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{"a":{},"b":{"type":["null","array"],"items":{"type":"object","properties":{"c":{"type":"integer"}}}}}}`), &s)
	rows := schemaRows(s, "", 0, 3)
	if len(rows) != 3 || rows[0].typ != "any" || rows[1].typ != "object[]" || rows[2].name != "b[].c" {
		t.Fatalf("%+v", rows)
	}
}
