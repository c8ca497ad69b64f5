package podlink_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/session/podlink"
)

// sidecarBin is the real sluice-sidecar, built once for the package.
var sidecarBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "podlink-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sidecarBin = filepath.Join(dir, "sluice-sidecar")
	cmd := exec.Command("go", "build", "-o", sidecarBin, "github.com/sluicehq/sluice/sidecar/cmd/sluice-sidecar")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building sluice-sidecar: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// deadline is a backstop only: every wait below is for a condition.
const deadline = 30 * time.Second

// pipeLink is the host's end of the link: the pod-link process's stdout
// and stdin, as the Kubernetes exec stream would give them.
type pipeLink struct {
	io.ReadCloser
	w io.WriteCloser
}

func (l pipeLink) Write(p []byte) (int, error) { return l.w.Write(p) }
func (l pipeLink) Close() error {
	l.w.Close()
	return l.ReadCloser.Close()
}

type podLink struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	sockets map[string]string
	cancel  context.CancelFunc
	served  chan error
	exited  chan error
	stderr  *bytes.Buffer
}

// startLink runs `sluice-sidecar pod-link` with a socket per name and
// Serve on its pipes.
func startLink(t *testing.T, targets map[string]podlink.Target, names ...string) *podLink {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "pl") // short: a socket path is at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &podLink{sockets: map[string]string{}, served: make(chan error, 1), exited: make(chan error, 1), stderr: &bytes.Buffer{}}
	args := []string{"pod-link"}
	for _, n := range names {
		p.sockets[n] = filepath.Join(dir, n+".sock")
		args = append(args, "--socket", n+"="+p.sockets[n])
	}
	p.cmd = exec.Command(sidecarBin, args...)
	p.cmd.Stderr = p.stderr
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	serveDone := make(chan struct{})
	go func() {
		p.served <- podlink.Serve(ctx, pipeLink{ReadCloser: out, w: p.stdin}, targets)
		close(serveDone)
	}()
	t.Cleanup(func() {
		cancel()
		p.cmd.Process.Kill()
		<-serveDone
	})
	for _, n := range names {
		waitFor(t, "socket "+n, func() bool { _, err := os.Stat(p.sockets[n]); return err == nil })
	}
	return p
}

func (p *podLink) dial(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	c, err := net.Dial("unix", p.sockets[name])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.UnixConn)
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !ok() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// noLeaks fails the test when, once it is over, more goroutines run than
// before it (waiting for the ones that are ending).
func noLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		end := time.Now().Add(deadline)
		for runtime.NumGoroutine() > before {
			if time.Now().After(end) {
				buf := make([]byte, 1<<20)
				t.Errorf("%d goroutines left running (%d before):\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// target is a real Unix listener on the host side, what the launcher's
// sockets are.
type target struct {
	ln    net.Listener
	mu    sync.Mutex
	conns int
}

func newTarget(t *testing.T, handle func(*net.UnixConn)) *target {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "plt")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "t.sock"))
	if err != nil {
		t.Fatal(err)
	}
	tg := &target{ln: ln}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tg.mu.Lock()
			tg.conns++
			tg.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c.(*net.UnixConn))
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		os.RemoveAll(dir)
	})
	return tg
}

func (tg *target) accepted() int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.conns
}

func (tg *target) dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", tg.ln.Addr().String())
}

// echoAfterEOF reads everything, then answers with its length and an upper-cased copy and closes.
func echoAfterEOF(c *net.UnixConn) {
	b, err := io.ReadAll(c)
	if err != nil {
		return
	}
	fmt.Fprintf(c, "%d:%s", len(b), bytes.ToUpper(b))
}

func TestLink_HalfCloseBothWays(t *testing.T) {
	noLeaks(t)
	// The pod closes first: the host's endpoint sees EOF and still answers.
	up := newTarget(t, echoAfterEOF)
	// The host closes first: the pod reads EOF and still sends.
	got := make(chan string, 1)
	down := newTarget(t, func(c *net.UnixConn) {
		io.WriteString(c, "hello from the host")
		c.CloseWrite()
		b, _ := io.ReadAll(c)
		got <- string(b)
	})
	p := startLink(t, map[string]podlink.Target{"up": {Dial: up.dial}, "down": {Dial: down.dial}}, "up", "down")

	c := p.dial(t, "up")
	io.WriteString(c, "ping from the pod")
	c.CloseWrite()
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "17:PING FROM THE POD" {
		t.Fatalf("pod read %q, %v; want the answer sent after its EOF", b, err)
	}

	d := p.dial(t, "down")
	b, err = io.ReadAll(d)
	if err != nil || string(b) != "hello from the host" {
		t.Fatalf("pod read %q, %v", b, err)
	}
	io.WriteString(d, "sent after EOF")
	d.CloseWrite()
	if s := <-got; s != "sent after EOF" {
		t.Fatalf("host read %q", s)
	}
}

func TestLink_ManyConcurrentConnections(t *testing.T) {
	noLeaks(t)
	echo := newTarget(t, func(c *net.UnixConn) { io.Copy(c, c); c.CloseWrite() })
	p := startLink(t, map[string]podlink.Target{"echo": {Dial: echo.dial}}, "echo")
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("unix", p.sockets["echo"])
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			data := make([]byte, 256<<10+i)
			rand.Read(data)
			go func() { c.Write(data); c.(*net.UnixConn).CloseWrite() }()
			back, err := io.ReadAll(c)
			if err != nil || !bytes.Equal(back, data) {
				errs <- fmt.Errorf("connection %d: %d bytes back of %d, %v", i, len(back), len(data), err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if echo.accepted() != n {
		t.Fatalf("target accepted %d connections, want %d", echo.accepted(), n)
	}
}

func TestLink_UnknownNameIsClosed(t *testing.T) {
	noLeaks(t)
	known := newTarget(t, echoAfterEOF)
	p := startLink(t, map[string]podlink.Target{"known": {Dial: known.dial}}, "known", "ghost")
	g := p.dial(t, "ghost")
	io.WriteString(g, strings.Repeat("x", 1<<20)) // more than a stream's window: dropped, never stuck
	g.CloseWrite()
	if b, err := io.ReadAll(g); err != nil || len(b) != 0 {
		t.Fatalf("a stream of an unknown name read %q, %v; want EOF", b, err)
	}
	// The link goes on serving the names it knows.
	c := p.dial(t, "known")
	io.WriteString(c, "a")
	c.CloseWrite()
	if b, _ := io.ReadAll(c); string(b) != "1:A" {
		t.Fatalf("read %q after an unknown name", b)
	}
	if known.accepted() != 1 {
		t.Fatalf("the known target accepted %d connections, want 1", known.accepted())
	}
}

// mcpServer is a line server standing for the session sidecar: it records
// every line it receives and answers each request with a result.
type mcpServer struct {
	mu    sync.Mutex
	lines []string
}

func (s *mcpServer) handle(c *net.UnixConn) {
	br := bufio.NewReaderSize(c, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			s.mu.Lock()
			s.lines = append(s.lines, string(line))
			s.mu.Unlock()
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(line, &req) == nil && len(req.ID) > 0 {
				fmt.Fprintf(c, `{"jsonrpc":"2.0","id":%s,"result":{"n":%d}}`+"\n", req.ID, len(line))
			}
		}
		if err != nil {
			return
		}
	}
}

func (s *mcpServer) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

type response struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		N int `json:"n"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func readResponse(t *testing.T, br *bufio.Reader) response {
	t.Helper()
	line, err := br.ReadBytes('\n')
	if err != nil {
		t.Fatalf("reading a response: %v (%q)", err, line)
	}
	var r response
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatalf("response %q: %v", line, err)
	}
	return r
}

// gatekeeper is a BeforeCall the test answers call by call.
type gatekeeper struct {
	entered chan struct{}
	answer  chan error
	mu      sync.Mutex
	calls   int
}

func newGatekeeper() *gatekeeper {
	return &gatekeeper{entered: make(chan struct{}, 16), answer: make(chan error, 16)}
}

func (g *gatekeeper) before(ctx context.Context) error {
	g.mu.Lock()
	g.calls++
	g.mu.Unlock()
	g.entered <- struct{}{}
	select {
	case err := <-g.answer:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wait returns once BeforeCall was entered.
func (g *gatekeeper) wait(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(deadline):
		t.Fatal("BeforeCall was not called")
	}
}

func (g *gatekeeper) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

// TestLink_BeforeCallGatesToolCalls: a tools/call, and every message that
// names any method but the handshake's, the tool list's, a ping's or a
// cancellation's (or names one of those in a way another decoder could
// read otherwise), waits for BeforeCall and passes only when it allows; a
// refused request gets an error response with its id; the rest, and the
// agent's own responses, pass ungated.
func TestLink_BeforeCallGatesToolCalls(t *testing.T) {
	noLeaks(t)
	srv := &mcpServer{}
	mcp := newTarget(t, srv.handle)
	gk := newGatekeeper()
	p := startLink(t, map[string]podlink.Target{"mcp": {Dial: mcp.dial, BeforeCall: gk.before}}, "mcp")
	c := p.dial(t, "mcp")
	br := bufio.NewReaderSize(c, 1<<20)
	sent := 0
	pass := func(line string) {
		t.Helper()
		sent++
		io.WriteString(c, line)
		waitFor(t, "the line at the server", func() bool { return len(srv.received()) == sent })
		if got := srv.received(); got[sent-1] != line {
			t.Fatalf("the server received %q, want %q unchanged", got[sent-1], line)
		}
	}
	allow := func(line string) {
		t.Helper()
		io.WriteString(c, line)
		gk.wait(t)
		if got := srv.received(); len(got) != sent {
			t.Fatalf("%q reached the server before BeforeCall returned: %q", line, got)
		}
		gk.answer <- nil
		sent++
		waitFor(t, "the line at the server", func() bool { return len(srv.received()) == sent })
		if got := srv.received(); got[sent-1] != line {
			t.Fatalf("the server received %q, want %q unchanged", got[sent-1], line)
		}
	}
	answered := func(id string) {
		t.Helper()
		if r := readResponse(t, br); string(r.ID) != id || r.Result == nil {
			t.Fatalf("answered %+v, want a result for %s", r, id)
		}
	}

	// The handshake, the tool list and notifications of them pass.
	pass(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n")
	answered("1")
	pass(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	pass(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n")
	answered("2")
	// A response of the agent's (to a request of the sidecar's) passes.
	pass(`{"jsonrpc":"2.0","id":"s1","result":{}}` + "\n")
	answered(`"s1"`) // this test's server answers every id

	// A tools/call however it is spelled, any other method, and a harmless
	// method named in a way another decoder could read otherwise.
	for i, call := range []string{
		`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"write_file"}}`,
		`{"jsonrpc":"2.0","id":"c2","method":"tools\/call","params":{}}`,
		`{"jsonrpc":"2.0","id":"c3","METHOD":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","id":"c4","Method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"c5","method":"tools/list","method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","id":"c6","method":"resources/read","params":{}}`,
	} {
		allow(call + "\n")
		answered(fmt.Sprintf(`"c%d"`, i+1))
	}

	// Refused: an error response with the call's id, and the server never sees it.
	refused := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run"}}` + "\n"
	io.WriteString(c, refused)
	gk.wait(t)
	gk.answer <- errors.New("the session is sealing: try again")
	r := readResponse(t, br)
	if string(r.ID) != "7" || r.Error == nil || r.Error.Code != -32603 || r.Error.Message != "the session is sealing: try again" {
		t.Fatalf("refused call answered %+v (error %+v)", r, r.Error)
	}
	// Calls are handled in order: the next line reaches the server next.
	pass(`{"jsonrpc":"2.0","id":8,"method":"ping"}` + "\n")
	answered("8")

	// A batch holding a call is gated whole; refused, each request is answered.
	io.WriteString(c, `[{"jsonrpc":"2.0","id":9,"method":"tools/list"},{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{}}]`+"\n")
	gk.wait(t)
	gk.answer <- errors.New("no")
	line, err := br.ReadBytes('\n')
	var batch []response
	if err != nil || json.Unmarshal(line, &batch) != nil || len(batch) != 2 || string(batch[0].ID) != "9" || string(batch[1].ID) != "10" || batch[1].Error == nil {
		t.Fatalf("refused batch answered %q, %v", line, err)
	}
	if n := len(srv.received()); n != sent {
		t.Fatalf("the server received %d lines, want %d (the refused call and batch not among them)", n, sent)
	}
	if gk.count() != 8 {
		t.Fatalf("BeforeCall ran %d times, want 8 (the six calls, the refused one, the batch)", gk.count())
	}
}

func TestLink_LargeLinesPassUnchanged(t *testing.T) {
	noLeaks(t)
	srv := &mcpServer{}
	mcp := newTarget(t, srv.handle)
	gk := newGatekeeper()
	p := startLink(t, map[string]podlink.Target{"mcp": {Dial: mcp.dial, BeforeCall: gk.before}}, "mcp")
	c := p.dial(t, "mcp")
	br := bufio.NewReaderSize(c, 1<<20)

	content := strings.Repeat("0123456789abcdef", 6<<20/16) // 6 MiB
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"content":"` + content + `"}}}` + "\n"
	notJSON := strings.Repeat("not json ", 3<<20/9) + "\n"
	go func() {
		io.WriteString(c, call)
		io.WriteString(c, notJSON)
	}()
	gk.wait(t)
	gk.answer <- nil
	if r := readResponse(t, br); string(r.ID) != "1" || r.Result == nil || r.Result.N != len(call) {
		t.Fatalf("large call answered %+v", r)
	}
	waitFor(t, "the line that is not JSON", func() bool { return len(srv.received()) == 2 })
	got := srv.received()
	if got[0] != call || got[1] != notJSON {
		t.Fatalf("lines changed on the way: %d and %d bytes, want %d and %d", len(got[0]), len(got[1]), len(call), len(notJSON))
	}
}

func TestLink_LinkEndEndsBothSides(t *testing.T) {
	for _, how := range []string{"host cancels", "exec stream ends"} {
		t.Run(how, func(t *testing.T) {
			noLeaks(t)
			hostSide := make(chan error, 1)
			idle := newTarget(t, func(c *net.UnixConn) {
				_, err := io.ReadAll(c)
				hostSide <- err
			})
			p := startLink(t, map[string]podlink.Target{"idle": {Dial: idle.dial}}, "idle")
			c := p.dial(t, "idle")
			io.WriteString(c, "x")
			waitFor(t, "the connection to reach the host", func() bool { return idle.accepted() == 1 })
			if how == "host cancels" {
				p.cancel()
			} else {
				p.stdin.Close() // what the API server does when the exec ends
			}
			if err := <-p.exited; err != nil {
				t.Fatalf("pod-link exited with %v, want 0; stderr:\n%s", err, p.stderr)
			}
			err := <-p.served
			if how == "host cancels" && !errors.Is(err, context.Canceled) {
				t.Fatalf("Serve returned %v, want context.Canceled", err)
			}
			if how != "host cancels" && err != nil {
				t.Fatalf("Serve returned %v, want nil at the link's end", err)
			}
			if b, _ := io.ReadAll(c); len(b) != 0 {
				t.Fatalf("the pod's connection read %q", b)
			}
			<-hostSide // the host's connection was closed too
			if _, err := os.Lstat(p.sockets["idle"]); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the socket is still there: %v", err)
			}
		})
	}
}

func TestPodLink_StaleSocketReplacedOtherFileRefused(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "pls")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	stale := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	cmd := exec.Command(sidecarBin, "pod-link", "--socket", "s="+stale)
	in, _ := cmd.StdinPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the socket to be served", func() bool {
		c, err := net.Dial("unix", stale)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	if st, err := os.Stat(stale); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, %v; want 0600", st.Mode(), err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("pod-link: %v\n%s", err, stderr.String())
	}

	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("keep"), 0o600)
	out, err := exec.Command(sidecarBin, "pod-link", "--socket", "f="+file).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not a socket") {
		t.Fatalf("pod-link over a regular file: %v, %s", err, out)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Fatal("the file was changed")
	}
}

// TestLink_GatedStreamsBounded: at most MaxGated gated streams are served
// at once (each may hold a line of up to MaxLine); one more is closed at
// once without reaching the target, and once one ends a new one is served.
func TestLink_GatedStreamsBounded(t *testing.T) {
	noLeaks(t)
	srv := &mcpServer{}
	mcp := newTarget(t, srv.handle)
	p := startLink(t, map[string]podlink.Target{"mcp": {Dial: mcp.dial, BeforeCall: func(context.Context) error { return nil }}}, "mcp")
	var open []*net.UnixConn
	for range podlink.MaxGated {
		c := p.dial(t, "mcp")
		io.WriteString(c, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
		if r := readResponse(t, bufio.NewReader(c)); string(r.ID) != "1" {
			t.Fatalf("a gated stream within the bound was not served: %+v", r)
		}
		open = append(open, c)
	}
	extra := p.dial(t, "mcp")
	io.WriteString(extra, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
	extra.CloseWrite()
	if b, err := io.ReadAll(extra); err != nil || len(b) != 0 {
		t.Fatalf("a gated stream beyond the bound read %q, %v; want EOF", b, err)
	}
	if got := mcp.accepted(); got != podlink.MaxGated {
		t.Fatalf("the target accepted %d connections, want %d", got, podlink.MaxGated)
	}
	open[0].Close()
	waitFor(t, "a gated stream's slot to come free", func() bool {
		c := p.dial(t, "mcp")
		defer c.Close()
		io.WriteString(c, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`+"\n")
		c.CloseWrite()
		b, _ := io.ReadAll(c)
		return strings.Contains(string(b), `"id":3`)
	})
	for _, c := range open[1:] {
		c.Close()
	}
}
