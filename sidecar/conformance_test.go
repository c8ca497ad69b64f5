package sidecar

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The official MCP conformance suite (@modelcontextprotocol/conformance) is
// a client no one here wrote. It runs against the real HTTP transport
// (ListenHTTP: Host and Origin checks, the SDK's streamable handler, the
// audit and presence middleware, Sluice's own tools), with two test-only
// differences, both unexported and set only here:
//
//   - insecureNoAuthForTests: the suite's client cannot send an
//     Authorization header, so bearer-token checking is off. Token
//     handling is tested in http_test.go with real requests.
//   - onSidecar adds the reference fixture tools (test_simple_text, …) that
//     the suite's tool scenarios call, so that those scenarios exercise
//     Sluice's transport: streamed logging and progress notifications,
//     and server-to-client sampling and elicitation requests.
//
// The suite runs twice: every scenario (`--suite all`, each at its own
// protocol version) and what MCP 2026-07-28 requires (`--requirements
// 2026-07-28`, spoken statelessly). Scenarios and checks that need server
// features Sluice does not offer (resources, prompts, completion, Tasks,
// input-required results, x-mcp-header parameters) are listed in
// testdata/conformance-baseline.yml with the reason per entry; the suite
// fails when a listed one starts to pass, so the list cannot go stale.

func conformanceBin(t *testing.T) (string, string) {
	t.Helper()
	dir := os.Getenv("SLUICE_TOOLS_DIR")
	bin := filepath.Join(dir, "node_modules", ".bin", "conformance")
	_, err := os.Stat(bin)
	needOrSkip(t, dir != "" && err == nil, "the MCP conformance suite in SLUICE_TOOLS_DIR (make test installs it)")
	return bin, filepath.Join(dir, "node_modules", ".bin") + string(os.PathListSeparator) + os.Getenv("PATH")
}

func TestConformance_OfficialSuite_HTTP(t *testing.T) {
	bin, path := conformanceBin(t)
	repo := t.TempDir()
	_, cfg := testEnv(t, repo)
	ledger, err := OpenLedger(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ledger.Close() })
	srv, err := ListenHTTP(HTTPOptions{
		Config: cfg, Addr: "127.0.0.1:0", Ledger: ledger,
		insecureNoAuthForTests: true,
		onSidecar:              addConformanceFixtures,
	})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})

	outDir := t.TempDir()
	if a := os.Getenv("SLUICE_ARTIFACTS"); a != "" {
		outDir = filepath.Join(a, "conformance")
	}
	baseline, err := filepath.Abs(filepath.Join("testdata", "conformance-baseline.yml"))
	if err != nil {
		t.Fatal(err)
	}
	// Every scenario, each at its own protocol version (2025-11-25's
	// sessions and 2026-07-28's stateless requests side by side on one
	// endpoint), then what 2026-07-28 requires, at 2026-07-28.
	for _, run := range []struct {
		name string
		args []string
		// must name scenarios the run has to pass, against a vacuous
		// pass.
		must []string
	}{
		{"all", []string{"--suite", "all"}, []string{"server-initialize", "server-sse-polling", "tools-call-with-progress"}},
		{"2026-07-28", []string{"--requirements", "2026-07-28"}, []string{"tools-list", "tools-call-with-progress", "caching", "http-header-validation"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
		args := append([]string{"server", "--url", srv.URL(), "--expected-failures", baseline, "-o", filepath.Join(outDir, run.name)}, run.args...)
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "PATH="+path)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Run()
		cancel()
		report := out.String()
		if err != nil {
			t.Fatalf("conformance suite (%s) failed (%v); a scenario failed that is not in the baseline, or a baseline entry now passes:\n%s", run.name, err, report)
		}
		for _, s := range run.must {
			if !strings.Contains(report, "✓ "+s+":") {
				t.Fatalf("the suite (%s) did not pass %s:\n%s", run.name, s, report)
			}
		}
		t.Logf("conformance suite (%s):\n%s", run.name, lastLines(report, 40))
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// redPixelPNG is a 1×1 red PNG.
const redPixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

// silentWAV is a 44-byte WAV header with no samples.
func silentWAV() []byte {
	b := []byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00\x80\x3e\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00")
	return b
}

type noArgs struct{}

// addConformanceFixtures registers the reference fixture tools of the
// conformance suite's tool scenarios. Test-only: no toolset name reaches it.
func addConformanceFixtures(s *Sidecar) {
	srv := s.Server()
	text := func(t string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: t}} }
	png, _ := base64.StdEncoding.DecodeString(redPixelPNG)
	add := func(name string, h func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error)) {
		mcp.AddTool(srv, &mcp.Tool{Name: name, Description: "conformance fixture " + name}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			r, err := h(ctx, req)
			return r, nil, err
		})
	}
	add("test_simple_text", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text("This is a simple text response for testing.")}, nil
	})
	add("test_image_content", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: png, MIMEType: "image/png"}}}, nil
	})
	add("test_audio_content", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: silentWAV(), MIMEType: "audio/wav"}}}, nil
	})
	add("test_embedded_resource", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content.",
		}}}}, nil
	})
	add("test_multiple_content_types", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "Multiple content types test:"},
			&mcp.ImageContent{Data: png, MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`}},
		}}, nil
	})
	add("test_tool_with_logging", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if i > 0 {
				time.Sleep(50 * time.Millisecond)
			}
			//lint:ignore SA1019 the conformance suite's test_tool_with_logging checks exactly this deprecated protocol feature, which clients still call during its deprecation window.
			req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: msg})
		}
		return &mcp.CallToolResult{Content: text("Tool with logging executed successfully")}, nil
	})
	add("test_error_handling", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: text("This tool intentionally returns an error for testing")}, nil
	})
	add("test_tool_with_progress", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		token := req.Params.GetProgressToken()
		for i, p := range []float64{0, 50, 100} {
			if i > 0 {
				time.Sleep(50 * time.Millisecond)
			}
			if token != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p, Total: 100})
			}
		}
		return &mcp.CallToolResult{Content: text("Tool with progress executed successfully")}, nil
	})
	add("test_reconnection", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// The server ends the response stream mid-call with a retry
		// interval (SEP-1699); the client comes back with Last-Event-ID and
		// gets the result from the transport's event store.
		if req.Extra != nil && req.Extra.CloseSSEStream != nil {
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 200 * time.Millisecond})
		}
		return &mcp.CallToolResult{Content: text("Reconnection test completed successfully.")}, nil
	})
	// The 2026-07-28 diagnostics of server-stateless: a tool list that
	// changes (so that a subscriptions/listen stream is told), a log
	// message sent only at the level a request's _meta asks for, and a
	// call refused for a client capability the request did not declare.
	var added atomic.Int32
	add("test_trigger_tool_change", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := added.Add(1)
		srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("test_added_tool_%d", n), Description: "conformance fixture: a tool added by test_trigger_tool_change", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: text("ok")}, nil
			})
		return &mcp.CallToolResult{Content: text("tool list changed")}, nil
	})
	add("test_logging_tool", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		//lint:ignore SA1019 the suite's test_logging_tool checks exactly this deprecated protocol feature.
		req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "logged at the request's level"})
		return &mcp.CallToolResult{Content: text("logging tool done")}, nil
	})
	add("test_missing_capability", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		//lint:ignore SA1019 the suite's test_missing_capability requires exactly the deprecated sampling capability.
		if caps := req.ClientCapabilities(); caps == nil || caps.Sampling == nil {
			//lint:ignore SA1019 the same deprecated sampling capability, named in the refusal.
			data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}})
			return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "this tool needs the sampling capability", Data: data}
		}
		return &mcp.CallToolResult{Content: text("sampling declared")}, nil
	})
	type promptIn struct {
		Prompt string `json:"prompt"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "test_sampling", Description: "conformance fixture test_sampling"}, func(ctx context.Context, req *mcp.CallToolRequest, in promptIn) (*mcp.CallToolResult, any, error) {
		//lint:ignore SA1019 the conformance suite's test_sampling checks exactly this deprecated protocol feature, which clients still call during its deprecation window.
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
			//lint:ignore SA1019 the same deprecated sampling feature test_sampling checks.
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}},
			MaxTokens: 100,
		})
		if err != nil {
			return nil, nil, err
		}
		answer := ""
		if tc, ok := res.Content.(*mcp.TextContent); ok {
			answer = tc.Text
		}
		return &mcp.CallToolResult{Content: text("LLM response: " + answer)}, nil, nil
	})
	type messageIn struct {
		Message string `json:"message"`
	}
	elicit := func(ctx context.Context, req *mcp.CallToolRequest, msg string, schema string, prefix string) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: msg, RequestedSchema: json.RawMessage(schema)})
		if err != nil {
			return nil, err
		}
		content, _ := json.Marshal(res.Content)
		return &mcp.CallToolResult{Content: text(fmt.Sprintf("%saction=%s, content=%s", prefix, res.Action, content))}, nil
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "test_elicitation", Description: "conformance fixture test_elicitation"}, func(ctx context.Context, req *mcp.CallToolRequest, in messageIn) (*mcp.CallToolResult, any, error) {
		r, err := elicit(ctx, req, in.Message, `{"type":"object","properties":{"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}`, "User response: ")
		return r, nil, err
	})
	add("test_elicitation_sep1034_defaults", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return elicit(ctx, req, "Please review and update the form fields with defaults", `{"type":"object","properties":{
			"name":{"type":"string","description":"User name","default":"John Doe"},
			"age":{"type":"integer","description":"User age","default":30},
			"score":{"type":"number","description":"User score","default":95.5},
			"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
			"verified":{"type":"boolean","description":"Verification status","default":true}},"required":[]}`, "Elicitation completed: ")
	})
	add("test_elicitation_sep1330_enums", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return elicit(ctx, req, "Please select options from the enum fields", `{"type":"object","properties":{
			"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},
			"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
			"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
			"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},
			"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}},"required":[]}`, "Elicitation completed: ")
	})
	srv.AddTool(&mcp.Tool{
		Name:        "json_schema_2020_12_tool",
		Description: "Tool with JSON Schema 2020-12 features",
		InputSchema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
			"$defs":{"address":{"$anchor":"address","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},
			"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},"additionalProperties":false,
			"allOf":[{"anyOf":[{"required":["name"]},{"required":["address"]}]}],
			"if":{"required":["address"]},"then":{"properties":{"name":{"minLength":1}}},"else":{"properties":{"name":{"type":"string"}}}}`),
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text("ok")}, nil
	})
}
