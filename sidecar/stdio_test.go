package sidecar

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawStdin lets a test put its own lines between the client's messages.
type rawStdin struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (r *rawStdin) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.w.Write(p)
}

func (r *rawStdin) Close() error { return r.w.Close() }

type refusal struct {
	ID    json.RawMessage `json:"id"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// startRaw starts the real binary with pipes to its stdin and stdout, for
// a test that writes lines no client would; stderr, when not nil, gets its
// log. Stopping it is the caller's.
func startRaw(t *testing.T, stderr io.Writer) (*exec.Cmd, io.WriteCloser, io.ReadCloser) {
	t.Helper()
	env, _ := testEnv(t)
	cmd := exec.Command(sidecarBinary(t))
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdin, stdout
}

// TestStdio_MalformedLine_AnsweredAndSessionGoesOn sends the real binary
// one bad line after another between a go-sdk client's calls: each gets a
// JSON-RPC error answer, and the session (and the process) go on.
func TestStdio_MalformedLine_AnsweredAndSessionGoesOn(t *testing.T) {
	var stderr strings.Builder
	cmd, stdin, stdout := startRaw(t, &stderr)
	exited := make(chan error, 1)
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})

	// Answers to the bad lines go to the test; everything else to the
	// client (go-sdk's client cannot decode a response whose id is null).
	refusals := make(chan refusal, 1)
	toClient, fromServer := io.Pipe()
	stdoutDone := make(chan struct{})
	go func() {
		defer close(stdoutDone)
		defer fromServer.Close()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			var r refusal
			if json.Unmarshal(sc.Bytes(), &r) == nil && r.Error != nil && (r.Error.Code == -32700 || r.Error.Code == -32600) {
				refusals <- r
				continue
			}
			if _, err := fromServer.Write(append(sc.Bytes(), '\n')); err != nil {
				return
			}
		}
	}()
	go func() {
		<-stdoutDone
		exited <- cmd.Wait()
	}()

	in := &rawStdin{w: stdin}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-bad-lines", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: toClient, Writer: in}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}

	cases := []struct {
		name, line string
		code       int
		id         string
	}{
		{"not JSON", "this is not json", -32700, "null"},
		{"truncated object", `{"jsonrpc":"2.0","id":1,"method":"tools/list"`, -32700, "null"},
		{"trailing data", `{"jsonrpc":"2.0","method":"notifications/x"} x`, -32700, "null"},
		{"two values", `{} {}`, -32700, "null"},
		{"invalid UTF-8 outside a string", "{\"jsonrpc\":\"2.0\"}\xff", -32700, "null"},
		{"not JSON-RPC", `{"hello":"world"}`, -32600, "null"},
		{"wrong version tag keeps its id", `{"jsonrpc":"1.0","id":"bad-7","method":"ping"}`, -32600, `"bad-7"`},
		{"object as id", `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, -32600, "null"},
		{"number", `42`, -32600, "null"},
		{"empty batch", `[]`, -32600, "null"},
		{"line over the cap", `"` + strings.Repeat("a", MaxStdioLine) + `"`, -32700, "null"},
	}
	for _, c := range cases {
		if _, err := in.Write([]byte(c.line + "\n")); err != nil {
			t.Fatalf("%s: write: %v", c.name, err)
		}
		var r refusal
		select {
		case r = <-refusals:
		case <-stdoutDone:
			t.Fatalf("%s: the sidecar closed stdout instead of answering (stderr: %s)", c.name, stderr.String())
		case <-ctx.Done():
			t.Fatalf("%s: no answer", c.name)
		}
		if r.Error.Code != c.code || string(r.ID) != c.id {
			t.Errorf("%s: answered code %d id %s (%q), want code %d id %s", c.name, r.Error.Code, r.ID, r.Error.Message, c.code, c.id)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sluice_capabilities"})
		if err != nil || res.IsError {
			t.Fatalf("%s: the session did not go on: %v %+v (stderr: %s)", c.name, err, res, stderr.String())
		}
	}

	// A blank line is not a message and gets no answer; the client's next
	// call is the next thing on stdout.
	in.Write([]byte("\n  \r\n"))
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("after blank lines: %v", err)
	}
	select {
	case r := <-refusals:
		t.Errorf("a blank line was answered: %+v", r)
	default:
	}

	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("sidecar exit after the client closed: %v (stderr: %s)", err, stderr.String())
		}
		exited <- err
	case <-ctx.Done():
		t.Fatal("the sidecar did not exit after its client closed")
	}
}

// TestStdio_BatchUnderNewProtocol_AnsweredAndSessionGoesOn: JSON-RPC
// batches left MCP in 2025-06-18, and go-sdk ends the session on one after
// such an initialize. The line is refused instead and the session goes on.
func TestStdio_BatchUnderNewProtocol_AnsweredAndSessionGoesOn(t *testing.T) {
	cmd, stdin, stdout := startRaw(t, nil)
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	// As a client does: initialize, wait for its answer, then go on.
	if _, err := stdin.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if !sc.Scan() || !strings.Contains(sc.Text(), `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize answer: %q %v", sc.Text(), sc.Err())
	}
	lines := []string{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":"b1","method":"ping"}]`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
	}
	if _, err := stdin.Write([]byte(strings.Join(lines, "\n") + "\n")); err != nil {
		t.Fatal(err)
	}
	var refused bool
	for sc.Scan() {
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("stdout line %q: %v", sc.Text(), err)
		}
		if r.Error != nil && r.Error.Code == -32600 && string(r.ID) == "null" {
			refused = true
		}
		if string(r.ID) == "2" {
			if !refused || r.Error != nil {
				t.Fatalf("ping after the batch answered %s, refused batch seen: %v", sc.Text(), refused)
			}
			stdin.Close()
			return
		}
	}
	t.Fatalf("stdout ended before the ping after the batch was answered (refused batch seen: %v)", refused)
}

// TestStdioTransport_InProcess_BadLinesBetweenCalls runs the transport in
// this process (so the race detector sees the filter and the writer) with
// a go-sdk client writing through the same stdin as the bad lines.
func TestStdioTransport_InProcess_BadLinesBetweenCalls(t *testing.T) {
	_, cfg := testEnv(t)
	s, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.Server().Run(ctx, &StdioTransport{In: inR, Out: outW}) }()

	refusals := make(chan refusal, 4)
	toClient, fromServer := io.Pipe()
	go func() {
		defer fromServer.Close()
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var r refusal
			if json.Unmarshal(sc.Bytes(), &r) == nil && r.Error != nil && r.Error.Code == -32700 {
				refusals <- r
				continue
			}
			if _, err := fromServer.Write(append(sc.Bytes(), '\n')); err != nil {
				return
			}
		}
	}()
	in := &rawStdin{w: inW}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "in-process", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: toClient, Writer: in}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		in.Write([]byte("{not json\n"))
		select {
		case <-refusals:
		case <-ctx.Done():
			t.Fatalf("bad line %d: no answer", i)
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sluice_capabilities"}); err != nil {
			t.Fatalf("after bad line %d: %v", i, err)
		}
	}
	cs.Close()
	inW.Close()
	if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("server after the client left: %v", err)
	}
	outW.Close()
}
