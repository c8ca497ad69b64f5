package sidecar

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/config"
)

// requireE2E is set by `make test`: then missing external tools fail tests
// instead of skipping them.
func requireE2E() bool { return os.Getenv("SLUICE_REQUIRE_E2E") == "1" }

func needOrSkip(t *testing.T, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if requireE2E() {
		t.Fatalf("missing prerequisite: %s", what)
	}
	t.Skipf("skipping: %s (run `make test` for the full suite)", what)
}

// testEnv isolates XDG paths and allowed roots in temp dirs and returns
// the environment for a sidecar subprocess plus the loaded config.
func testEnv(t *testing.T, roots ...string) ([]string, *config.Config) {
	t.Helper()
	dir := t.TempDir()
	env := map[string]string{
		"HOME":                 dir,
		"PATH":                 os.Getenv("PATH"),
		"XDG_CONFIG_HOME":      filepath.Join(dir, "config"),
		"XDG_STATE_HOME":       filepath.Join(dir, "state"),
		"SLUICE_ALLOWED_ROOTS": strings.Join(roots, string(os.PathListSeparator)),
	}
	var list []string
	for k, v := range env {
		t.Setenv(k, v)
		list = append(list, k+"="+v)
	}
	cfg, err := config.Load()
	if err != nil {
		t.Fatalf("load config: %v", err)
	}
	return list, cfg
}

// startEnv is the environment before tests change it (testEnv sets HOME).
var startEnv = os.Environ()

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// sidecarBinary is the real sluice-sidecar, with sluice-sidecar-stdio
// beside it as installed (serving stdio, the one execs the other): the
// pair `make build` made when SLUICE_BIN_DIR is set, else a fresh build of
// this tree, stamped with one build ID as make build stamps it.
func sidecarBinary(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv("SLUICE_BIN_DIR"); dir != "" {
		p := filepath.Join(dir, "sluice-sidecar")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-sidecar-test-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "sluice-sidecar")
		var out []byte
		if out, buildErr = buildPair(dir, newBuildID(), ""); buildErr != nil {
			builtBin = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build sidecar: %v\n%s", buildErr, builtBin)
	}
	return builtBin
}

// newBuildID draws a build ID as `make build` does: random, so that no two
// builds share one.
func newBuildID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// buildPair builds sluice-sidecar and sluice-sidecar-stdio into dir as
// `make build` does: both stamped with id (none when id is empty) and, when
// version is not empty, with that version.
func buildPair(dir, id, version string) ([]byte, error) {
	for _, b := range []string{"sluice-sidecar", ServingBinary} {
		out, err := buildOne(filepath.Join(dir, b), b, id, version)
		if err != nil {
			return out, err
		}
	}
	return nil, nil
}

// buildOne builds the command name (sidecar/cmd/NAME) into path.
func buildOne(path, name, id, version string) ([]byte, error) {
	var ldflags []string
	if id != "" {
		ldflags = append(ldflags, "-X", "github.com/sluicehq/sluice/sidecar.buildID="+id)
	}
	if version != "" {
		ldflags = append(ldflags, "-X", "github.com/sluicehq/sluice/core/config.Version="+version)
	}
	cmd := exec.Command("go", "build", "-ldflags", strings.Join(ldflags, " "), "-o", path, "./cmd/"+name)
	// The environment from before any test replaced HOME, so that the
	// build uses the real build cache.
	cmd.Env = append(slices.Clone(startEnv), "CGO_ENABLED=0")
	return cmd.CombinedOutput()
}

// connectInMemory runs a sidecar in this process behind an in-memory
// transport and returns a connected go-sdk client session.
func connectInMemory(t *testing.T, s *Sidecar) *mcp.ClientSession {
	t.Helper()
	return connectClient(t, s, "test-client", nil)
}

// connectClient is connectInMemory for a client with its own name, which
// is the agent's name to the sidecar, and options (notification
// handlers); both sessions close when the test ends.
func connectClient(t *testing.T, s *Sidecar, name string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func decode[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var v T
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

func TestCapabilities_InMemory_GatewayDown(t *testing.T) {
	_, cfg := testEnv(t)
	s, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectInMemory(t, s)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sluice_capabilities"})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("capabilities failed: %+v", res.Content)
	}
	out := decode[CapabilitiesOut](t, res)
	if out.Version != config.Version || out.Gateway.Reachable || out.Gateway.Problem == "" {
		t.Fatalf("capabilities with no app running: %+v", out)
	}
	if out.Limits.MaxProposalWaitSeconds != 50 || out.Limits.PendingExpirySeconds != 24*3600 {
		t.Errorf("limits: %+v", out.Limits)
	}
}

func TestNew_UnknownToolset_Refused(t *testing.T) {
	_, cfg := testEnv(t)
	if _, err := New(Options{Config: cfg, Toolsets: []string{"git", "shell"}}); err == nil {
		t.Fatal("New with an unknown toolset: want an error")
	}
}

func TestSanitizeAgentName_Table(t *testing.T) {
	long := strings.Repeat("a", 300)
	for in, want := range map[string]string{
		"claude-code":        "claude-code",
		"Cursor 1.2 (beta)":  "Cursor-1.2-beta",
		"codex/cli;rm -rf /": "codex-cli-rm--rf",
		"a\nb\x00c":          "a-b-c",
		"ünïcode":            "n-code",
		long:                 long[:128],
		"":                   "",
	} {
		if got := SanitizeAgentName(in); got != want {
			t.Errorf("SanitizeAgentName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStdio_Subprocess_Capabilities drives the real binary over stdio with
// the go-sdk client.
func TestStdio_Subprocess_Capabilities(t *testing.T) {
	env, _ := testEnv(t)
	bin := sidecarBinary(t)
	cmd := exec.Command(bin)
	cmd.Env = env
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ServerInfo.Name; got != "sluice" {
		t.Errorf("server name %q", got)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tool := range tools.Tools {
		if tool.Name == "sluice_capabilities" {
			found = true
			if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint || tool.OutputSchema == nil {
				t.Errorf("sluice_capabilities annotations/schema: %+v", tool)
			}
		}
	}
	if !found {
		t.Fatal("sluice_capabilities not listed")
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sluice_capabilities"})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	out := decode[CapabilitiesOut](t, res)
	if out.Gateway.Reachable {
		t.Errorf("gateway reachable with no app: %+v", out.Gateway)
	}
	// An unknown tool is a protocol error, not a fake result.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"}); err == nil {
		t.Error("calling an unknown tool: want a JSON-RPC error")
	}
}

// inspector returns the MCP Inspector CLI and a PATH whose node is 22+.
func inspector(t *testing.T) (string, string) {
	t.Helper()
	dir := os.Getenv("SLUICE_TOOLS_DIR")
	bin := filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	_, err := os.Stat(bin)
	needOrSkip(t, dir != "" && err == nil, "the MCP Inspector CLI in SLUICE_TOOLS_DIR (make test installs it)")
	path := filepath.Join(dir, "node_modules", ".bin") + string(os.PathListSeparator) + os.Getenv("PATH")
	return bin, path
}

func runInspector(t *testing.T, env []string, args ...string) []byte {
	t.Helper()
	bin, path := inspector(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(env, "PATH="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("inspector %v: %v\nstdout: %s\nstderr: %s", args, err, out, stderr.String())
	}
	return out
}

// inspectorTools lists the tools of the server target names with the
// Inspector: their names, and its output to show when one is missing.
func inspectorTools(t *testing.T, env []string, target ...string) (map[string]bool, []byte) {
	t.Helper()
	out := runInspector(t, env, append(target, "--method", "tools/list")...)
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("tools/list output: %v\n%s", err, out)
	}
	names := map[string]bool{}
	for _, tl := range list.Tools {
		names[tl.Name] = true
	}
	return names, out
}

// TestInspector_ToolsListAndCapabilities uses the official MCP Inspector CLI
// as the client.
func TestInspector_ToolsListAndCapabilities(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the Inspector is installed for Linux only")
	}
	env, _ := testEnv(t)
	bin := sidecarBinary(t)

	names, out := inspectorTools(t, env, "--cli", bin)
	if !names["sluice_capabilities"] {
		t.Fatalf("tools/list lacks sluice_capabilities: %s", out)
	}

	out = runInspector(t, env, "--cli", bin, "--method", "tools/call", "--tool-name", "sluice_capabilities")
	var call struct {
		IsError           bool            `json:"isError"`
		StructuredContent CapabilitiesOut `json:"structuredContent"`
	}
	if err := json.Unmarshal(out, &call); err != nil {
		t.Fatalf("tools/call output: %v\n%s", err, out)
	}
	if call.IsError || call.StructuredContent.Version == "" {
		t.Fatalf("tools/call sluice_capabilities: %s", out)
	}
	if call.StructuredContent.Gateway.Reachable {
		t.Errorf("gateway reachable with no app: %s", out)
	}
}
