package app

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freeLoopbackAddr is a 127.0.0.1 address with a port nothing listens on
// now, for a server the test wants on a known, stable port.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// serveProcess is one `sluice serve` of the built binary.
type serveProcess struct {
	cmd *exec.Cmd
	out *syncBuffer
}

func startServe(t *testing.T, bin string, env []string) *serveProcess {
	t.Helper()
	p := &serveProcess{cmd: exec.Command(bin, "serve"), out: &syncBuffer{}}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	waitFor(t, 30*time.Second, "sluice serve to print its login link", func() bool {
		return strings.Contains(p.out.String(), "Login: ")
	})
	return p
}

func (p *serveProcess) stop() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.cmd.Wait()
	}
}

// loginLine is the URL after "Login: " in out.
func loginLine(t *testing.T, out string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if u, ok := strings.CutPrefix(l, "Login: "); ok {
			return strings.TrimSpace(u)
		}
	}
	t.Fatalf("no login line in:\n%s", out)
	return ""
}

// TestServe_LoginCommand_RecoveryAndRestart drives the built binary as a
// person would: `sluice login` prints a fresh link for the running `sluice
// serve` that logs in once, and the second use shows the page naming
// `sluice login`; a second `sluice serve` on the same journal says which
// one runs; with the server stopped `sluice login` says Sluice isn't
// running; restarted, the server is on the same port and the browser's
// session still works.
func TestServe_LoginCommand_RecoveryAndRestart(t *testing.T) {
	bin := filepath.Join(binDir(t), "sluice-headless")
	home := t.TempDir()
	addr := freeLoopbackAddr(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"SLUICE_WEB_ADDR=" + addr}
	run := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}

	// The command as the person can type it: the binary's name when the
	// shell finds it on PATH, else its full path.
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Fatal(err)
	}
	loginCmd := real + " login"
	if found, err := exec.LookPath("sluice-headless"); err == nil {
		a, aerr := os.Stat(found)
		b, berr := os.Stat(real)
		if aerr == nil && berr == nil && os.SameFile(a, b) {
			loginCmd = "sluice-headless login"
		}
	}

	first := startServe(t, bin, env)
	waitFor(t, 10*time.Second, "sluice serve to say how to get a new link", func() bool {
		return strings.Contains(first.out.String(), "prints a new one")
	})
	if !strings.Contains(first.out.String(), "`"+loginCmd+"` prints a new one") {
		t.Fatalf("serve names the login command as %q? it printed:\n%s", loginCmd, first.out.String())
	}
	if got := loginLine(t, first.out.String()); !strings.HasPrefix(got, "http://"+addr+"/login?token=") {
		t.Fatalf("serve printed %q, want a link on the configured address %s", got, addr)
	}
	out, code := run("login")
	if code != 0 {
		t.Fatalf("sluice login: exit %d\n%s", code, out)
	}
	link := loginLine(t, out)
	if !strings.HasPrefix(link, "http://"+addr+"/login?token=") || strings.Contains(first.out.String(), link) {
		t.Fatalf("sluice login printed %q; want a fresh link on %s", link, addr)
	}
	browser := newBrowserClient(t)
	if resp, body := get(t, browser, link, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("the link from sluice login: %d %q", resp.StatusCode, body)
	}
	if resp, _ := get(t, browser, "http://"+addr+"/api/status", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("status after login: %d", resp.StatusCode)
	}
	resp, body := get(t, newBrowserClient(t), link, nil)
	if !recoveryPageNaming(resp, body, loginCmd) {
		t.Fatalf("the link used a second time: %d %q, want the page naming `%s`", resp.StatusCode, body, loginCmd)
	}

	// A second server on the same journal names the first and exits.
	out, code = run("serve")
	if code == 0 || !strings.Contains(out, "already running as `sluice serve`") || !strings.Contains(out, "http://"+addr) ||
		!strings.Contains(out, "`"+loginCmd+"`") || strings.Contains(out, "journal is open in another process") {
		t.Fatalf("a second sluice serve: exit %d\n%s", code, out)
	}

	first.stop()
	out, code = run("login")
	if code == 0 || !strings.Contains(out, "Sluice isn't running") || !strings.Contains(out, "sluice serve") {
		t.Fatalf("sluice login with nothing running: exit %d\n%s", code, out)
	}

	second := startServe(t, bin, env)
	if got := loginLine(t, second.out.String()); !strings.HasPrefix(got, "http://"+addr+"/") {
		t.Fatalf("restarted serve printed %q, want the same address %s", got, addr)
	}
	if resp, body := get(t, browser, "http://"+addr+"/api/status", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("the browser's session after a restart: %d %q", resp.StatusCode, body)
	}
}
