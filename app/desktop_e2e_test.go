package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/gateway"
)

// binDir holds the binaries that `make build` produced.
func binDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SLUICE_BIN_DIR")
	ok := dir != ""
	if ok {
		for _, b := range []string{"sluice", "sluice-sidecar"} {
			if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
				ok = false
			}
		}
	}
	needOrSkip(t, ok, "SLUICE_BIN_DIR with sluice and sluice-sidecar (make build)")
	return dir
}

// startXvfb starts a private X server and returns its DISPLAY value.
func startXvfb(t *testing.T) string {
	t.Helper()
	xvfb, err := exec.LookPath("Xvfb")
	needOrSkip(t, err == nil, "Xvfb (apt install xvfb)")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(xvfb, "-displayfd", "3", "-screen", "0", "1280x800x24", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start Xvfb: %v", err)
	}
	w.Close()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(r).ReadString('\n')
	r.Close()
	if err != nil {
		t.Fatalf("Xvfb display: %v", err)
	}
	return ":" + strings.TrimSpace(line)
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestBinaries_Version_Stamped(t *testing.T) {
	dir := binDir(t)
	for _, b := range []string{"sluice", "sluice-sidecar"} {
		out, err := exec.Command(filepath.Join(dir, b), "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --version: %v\n%s", b, err, out)
		}
		f := strings.Fields(string(out))
		if len(f) != 2 || f[0] != b || f[1] == "dev" || f[1] == "" {
			t.Errorf("%s --version = %q; want %q and a version stamped at build time", b, out, b+" <version>")
		}
	}
}

// TestDesktop_Window_StartsAndServes runs the real desktop binary under Xvfb
// and a private D-Bus session: the window loads the front end, which calls
// a bound method (logged as "frontend ready"); a screenshot is kept; the
// gateway answers; and a real sidecar sees the app as reachable.
func TestDesktop_Window_StartsAndServes(t *testing.T) {
	dir := binDir(t)
	dbusRun, err := exec.LookPath("dbus-run-session")
	needOrSkip(t, err == nil, "dbus-run-session (apt install dbus)")
	importBin, err := exec.LookPath("import")
	needOrSkip(t, err == nil, "import (apt install imagemagick)")
	display := startXvfb(t)

	home := t.TempDir()
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"DISPLAY=" + display,
		"NO_AT_BRIDGE=1",
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"XDG_RUNTIME_DIR=" + t.TempDir(),
	}
	var out syncBuffer
	cmd := exec.Command(dbusRun, "--", filepath.Join(dir, "sluice"))
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &out, &out
	// Its own process group: dbus-run-session does not take the app down
	// with it, so the whole group is ended together.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start desktop app: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		}
		if t.Failed() {
			t.Logf("app output:\n%s", out.String())
		}
	})

	waitFor(t, 60*time.Second, "the front end to call Ready", func() bool {
		return strings.Contains(out.String(), `msg="frontend ready" ui=desktop`)
	})

	// Give WebKit a moment to paint after the ready call, then keep a
	// screenshot of the whole screen.
	time.Sleep(700 * time.Millisecond)
	shot := filepath.Join(artifactDir(t), "desktop-empty-state.png")
	if b, err := exec.Command(importBin, "-display", display, "-window", "root", shot).CombinedOutput(); err != nil {
		t.Fatalf("screenshot: %v\n%s", err, b)
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Fatalf("screenshot %s is missing or blank: %v", shot, err)
	}

	gwFile := filepath.Join(home, "config", "sluice", "gateway.json")
	c, err := gateway.NewClientFromEndpoint(gwFile)
	if err != nil {
		t.Fatalf("gateway.json: %v", err)
	}
	if h, err := c.Health(context.Background()); err != nil || h.Status != "ok" {
		t.Fatalf("gateway health: %+v %v", h, err)
	}

	// A real sidecar process finds the app through gateway.json.
	sc := exec.Command(filepath.Join(dir, "sluice-sidecar"))
	sc.Env = env
	client := mcp.NewClient(&mcp.Implementation{Name: "desktop-e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: sc}, nil)
	if err != nil {
		t.Fatalf("connect sidecar: %v", err)
	}
	defer sess.Close()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "sluice_capabilities"})
	if err != nil || res.IsError {
		t.Fatalf("sluice_capabilities: %v %+v", err, res)
	}
	var caps struct {
		Gateway struct {
			Reachable  bool   `json:"reachable"`
			AppVersion string `json:"appVersion"`
		} `json:"gateway"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &caps); err != nil {
		t.Fatal(err)
	}
	if !caps.Gateway.Reachable || caps.Gateway.AppVersion == "" {
		t.Fatalf("sidecar does not see the desktop app: %s", b)
	}

	// SIGTERM ends the app cleanly and withdraws gateway.json.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		stopped = true
	case <-time.After(15 * time.Second):
		t.Fatal("desktop app did not exit on SIGTERM")
	}
	if _, err := os.Stat(gwFile); !os.IsNotExist(err) {
		t.Errorf("gateway.json left behind after exit: %v", err)
	}
	fmt.Fprintf(os.Stderr, "desktop screenshot: %s\n", shot)
}
