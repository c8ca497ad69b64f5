package app

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freeLoopbackAddr is a 127.0.0.1 address with a port nothing listens on
// now, for a server the test wants on a known, stable port. The port is
// drawn below the kernel's ephemeral range (and below Kubernetes'
// NodePorts), so no outgoing connection on the machine is handed it while
// the test holds it free: only a server that binds that very port can
// take it first, and the callers meet that too (onFreeAddr, onSameAddr).
func freeLoopbackAddr(t testing.TB) string {
	t.Helper()
	lo, hi := 20000, 30000
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > lo+1000 && n < hi {
				hi = n
			}
		}
	}
	for range 100 {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(lo+rand.IntN(hi-lo))))
		if err != nil {
			continue
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// errAddrTaken marks a server's start that failed because something else
// had bound its address.
var errAddrTaken = errors.New("the address is taken")

func addrTaken(err error) bool {
	return errors.Is(err, errAddrTaken) || errors.Is(err, syscall.EADDRINUSE)
}

// onFreeAddr starts a server with start on a free loopback address and
// returns the address. A port picked free can be taken before the server
// binds it: a start that fails with the address taken is tried again on
// a new one (three tries); any other failure fails the test.
func onFreeAddr(t testing.TB, start func(addr string) error) string {
	t.Helper()
	for attempt := 1; ; attempt++ {
		addr := freeLoopbackAddr(t)
		err := start(addr)
		if err == nil {
			return addr
		}
		if !addrTaken(err) || attempt == 3 {
			t.Fatalf("starting on %s: %v", addr, err)
		}
		t.Logf("%s was taken before the server bound it; trying a new port: %v", addr, err)
	}
}

// onSameAddr starts a server again with start on the address it had:
// something else can bind the port while it is free, so a start that fails
// with the address taken is tried again until the port is released
// (desktopWait is a backstop); any other failure fails the test.
func onSameAddr(t testing.TB, what string, start func() error) {
	t.Helper()
	deadline := time.Now().Add(desktopWait)
	for {
		err := start()
		if err == nil {
			return
		}
		if !addrTaken(err) || time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// serveProcess is one `sluice serve` of the built binary.
type serveProcess struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{} // closed once the process has exited
}

// tryServe starts `sluice serve` and waits for its login link; a serve
// that exits first is an error, wrapping errAddrTaken when its address
// was taken.
func tryServe(t *testing.T, bin string, env []string) (*serveProcess, error) {
	t.Helper()
	p := &serveProcess{cmd: exec.Command(bin, "serve"), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.stop)
	deadline := time.Now().Add(desktopWait)
	for !strings.Contains(p.out.String(), "Login: ") {
		select {
		case <-p.done:
			out := p.out.String()
			if strings.Contains(out, "address already in use") {
				return nil, fmt.Errorf("%w: sluice serve exited:\n%s", errAddrTaken, out)
			}
			return nil, fmt.Errorf("sluice serve exited (%v) before printing its login link:\n%s", p.cmd.ProcessState, out)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("timed out after %s waiting for sluice serve to print its login link; it printed:\n%s", desktopWait, p.out.String())
		}
	}
	return p, nil
}

func (p *serveProcess) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
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
	var env []string
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

	var first *serveProcess
	addr := onFreeAddr(t, func(addr string) (err error) {
		env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home,
			"XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "XDG_STATE_HOME=" + filepath.Join(home, "state"),
			"SLUICE_WEB_ADDR=" + addr}
		first, err = tryServe(t, bin, env)
		return err
	})
	waitFor(t, desktopWait, "sluice serve to say how to get a new link", func() bool {
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

	var second *serveProcess
	onSameAddr(t, "restarting sluice serve on "+addr, func() (err error) {
		second, err = tryServe(t, bin, env)
		return err
	})
	if got := loginLine(t, second.out.String()); !strings.HasPrefix(got, "http://"+addr+"/") {
		t.Fatalf("restarted serve printed %q, want the same address %s", got, addr)
	}
	if resp, body := get(t, browser, "http://"+addr+"/api/status", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("the browser's session after a restart: %d %q", resp.StatusCode, body)
	}
}
