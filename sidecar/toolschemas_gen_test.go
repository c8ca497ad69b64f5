package sidecar

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/format"
	"io"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/config"
)

// toolSchemasGenPath is the generated table of the tools' wire schemas.
const toolSchemasGenPath = "toolschemas_gen.go"

// TestToolSchemas_Generated derives every tool's schemas from its types,
// as a sidecar without toolschemas_gen.go would, and fails when the
// committed table differs from them, or when tools/list from the table is
// not byte for byte tools/list from the derivation. go generate ./sidecar
// (or go test ./sidecar -run TestToolSchemas_Generated -update) rewrites
// the table.
func TestToolSchemas_Generated(t *testing.T) {
	_, cfg := testEnv(t)
	useSchemaTable = false
	derivedWire := wireToolsList(t, cfg)
	useSchemaTable = true
	got := renderSchemaTable(t, derivedWire)
	if *updateGolden {
		if err := os.WriteFile(toolSchemasGenPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(toolSchemasGenPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(old, got) {
		t.Fatalf("%s is stale: a tool's schema changed; run go generate ./sidecar and review the diff", toolSchemasGenPath)
	}
	if tableWire := wireToolsList(t, cfg); !bytes.Equal(tableWire, derivedWire) {
		t.Fatalf("tools/list from the table differs from the derived one:\ntable:   %.400s\nderived: %.400s", tableWire, derivedWire)
	}
	// Every schema in the table resolves, as go-sdk's AddTool would have
	// required when the server was built.
	var res struct {
		Tools []struct {
			Name         string          `json:"name"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(derivedWire, &res); err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if _, err := resolvedFor(tl.Name, tl.InputSchema, tl.OutputSchema); err != nil {
			t.Errorf("%s: %v", tl.Name, err)
		}
	}
}

// TestToolSchemas_TableCallsAsDerived sends the same tools/call requests
// to a sidecar whose tools take their schemas from the table (resolved on
// first call) and to one that derives them and registers them with
// go-sdk's typed AddTool, and wants the same answers byte for byte:
// arguments the schema refuses (missing, mistyped, unknown, differently
// cased, nested too deep, outside an enum), a handler's own error, and a
// success.
func TestToolSchemas_TableCallsAsDerived(t *testing.T) {
	_, cfg := testEnv(t, t.TempDir())
	deep := strings.Repeat("[", 1001) + strings.Repeat("]", 1001)
	call := func(id int, tool, args string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
	}
	lines := []string{
		call(2, "repo_brief", `{}`),
		call(3, "repo_brief", `{"repoPath":5}`),
		call(4, "repo_brief", `{"repoPath":"/nowhere","extra":1}`),
		call(5, "repo_brief", `{"RepoPath":"/nowhere"}`),
		call(6, "commit_details", `{"repoPath":"/nowhere","rev":`+deep+`}`),
		call(7, "toolset_enable", `{"toolset":"nope"}`),
		call(8, "repo_brief", `{"repoPath":"/definitely/outside/the/roots"}`),
		call(9, "repo_history", `{"repoPath":"/nowhere","limit":"ten"}`),
		call(10, "propose_commit", `{"repoPath":"/nowhere"}`),
		call(11, "toolset_enable", `{"toolset":"fleet"}`),
		call(12, "sluice_capabilities", `null`),
	}
	useSchemaTable = false
	derived := wireSession(t, cfg, lines...)
	useSchemaTable = true
	table := wireSession(t, cfg, lines...)
	for id := 2; id < 2+len(lines); id++ {
		if id == 12 {
			// sluice_capabilities reports the process's state; compare
			// that it answered from both.
			if len(derived[id]) == 0 || len(table[id]) == 0 {
				t.Errorf("sluice_capabilities: no answer")
			}
			continue
		}
		if !bytes.Equal(derived[id], table[id]) {
			t.Errorf("%s\nderived: %s\ntable:   %s", lines[id-2], derived[id], table[id])
		}
	}
}

// wireToolsList is the result of tools/list with every known toolset on,
// as the bytes a stdio client reads.
func wireToolsList(t *testing.T, cfg *config.Config) []byte {
	t.Helper()
	var resp struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(wireSession(t, cfg, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)[2], &resp); err != nil {
		t.Fatal(err)
	}
	return resp.Result
}

// wireSession runs a sidecar with every known toolset over the stdio
// transport, initialises it, sends lines (requests with ids above 1) and
// returns each answer as the line a client reads, by id.
func wireSession(t *testing.T, cfg *config.Config, lines ...string) map[int][]byte {
	t.Helper()
	s, err := New(Options{Config: cfg, Toolsets: config.KnownToolsets, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- s.Server().Run(context.Background(), &StdioTransport{In: inR, Out: outW})
		outW.Close()
	}()
	r := bufio.NewReaderSize(outR, 1<<20)
	answers := map[int][]byte{}
	// One request at a time: the answers' order is then the requests'.
	for i, line := range append([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"gen","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	}, lines...) {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			continue // a notification has no answer
		}
		for {
			answer, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatalf("reading the answer to %s: %v", line, err)
			}
			var msg struct {
				ID *int `json:"id"`
			}
			if json.Unmarshal(answer, &msg) == nil && msg.ID != nil {
				answers[*msg.ID] = answer
				break
			}
		}
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return answers
}

// renderSchemaTable is toolschemas_gen.go for a tools/list result.
func renderSchemaTable(t *testing.T, list []byte) []byte {
	t.Helper()
	var res struct {
		Tools []struct {
			Name         string          `json:"name"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(list, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) < 10 {
		t.Fatalf("tools/list has %d tools", len(res.Tools))
	}
	sort.Slice(res.Tools, func(i, j int) bool { return res.Tools[i].Name < res.Tools[j].Name })
	var b strings.Builder
	b.WriteString("// Code generated by go test ./sidecar -run TestToolSchemas_Generated -update; DO NOT EDIT.\n\n")
	b.WriteString("package sidecar\n\n")
	b.WriteString("// generatedSchemas are tool's input and output schemas as tools/list sends\n")
	b.WriteString("// them (see tableSchemas).\n")
	b.WriteString("func generatedSchemas(tool string) (in, out string, ok bool) {\n\tswitch tool {\n")
	for _, tl := range res.Tools {
		if len(tl.InputSchema) == 0 || len(tl.OutputSchema) == 0 {
			t.Fatalf("%s: no input or output schema on the wire", tl.Name)
		}
		fmt.Fprintf(&b, "\tcase %q:\n\t\treturn %s,\n\t\t\t%s, true\n", tl.Name, goString(tl.InputSchema), goString(tl.OutputSchema))
	}
	b.WriteString("\t}\n\treturn \"\", \"\", false\n}\n")
	src, err := format.Source([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// goString is a Go literal of s: a raw string unless s holds a backquote.
func goString(s []byte) string {
	if bytes.ContainsRune(s, '`') {
		return fmt.Sprintf("%q", s)
	}
	return "`" + string(s) + "`"
}
