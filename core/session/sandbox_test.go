package session

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

var (
	sidecarOnce sync.Once
	sidecarBin  string
	sidecarErr  error
)

// realSidecar is the real sluice-sidecar, whose sandbox-init is every
// sandbox's first process: the one `make build` made when SLUICE_BIN_DIR
// is set, else a fresh build of this tree.
func realSidecar(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("SLUICE_BIN_DIR"); dir != "" {
		if p := filepath.Join(dir, "sluice-sidecar"); fileExists(p) {
			return p
		}
	}
	sidecarOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-session-test-")
		if err != nil {
			sidecarErr = err
			return
		}
		sidecarBin = filepath.Join(dir, "sluice-sidecar")
		cmd := exec.Command("go", "build", "-o", sidecarBin, "github.com/sluicehq/sluice/sidecar/cmd/sluice-sidecar")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			sidecarErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if sidecarErr != nil {
		t.Fatalf("build sluice-sidecar: %v", sidecarErr)
	}
	return sidecarBin
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// needBubblewrap skips (or, with SLUICE_REQUIRE_E2E=1, fails) where
// bubblewrap cannot make a sandbox.
func needBubblewrap(t *testing.T) {
	t.Helper()
	bwrap, err := FindBubblewrap()
	if err == nil {
		var out []byte
		out, err = ProbeBubblewrap(context.Background(), bwrap)
		if err != nil {
			err = fmt.Errorf("%v: %s", err, out)
		}
	}
	if err != nil {
		if os.Getenv("SLUICE_REQUIRE_E2E") == "1" {
			t.Fatalf("bubblewrap is required (SLUICE_REQUIRE_E2E=1): %v", err)
		}
		t.Skipf("no usable bubblewrap here: %v", err)
	}
}

// outsideDir is a directory that no sandbox empties or hides (t.TempDir
// is under /tmp, which every sandbox empties): what is there is what a
// sandbox would show of the host.
func outsideDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "sluice-test-")
	if err != nil {
		t.Skipf("no /var/tmp to stand for the rest of the host: %v", err)
	}
	t.Cleanup(func() { removeAll(d) })
	return d
}

// sandbox is one session's pieces on the host: the person's HOME with a
// root and a repository in it, the copy, the confined HOME, the sidecar
// and the two sockets.
type sandbox struct {
	t                 *testing.T
	person, root      string
	spec              *Spec
	egress, mcp       net.Listener
	homeDir, stateDir string
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	needBubblewrap(t)
	base := t.TempDir()
	person := filepath.Join(base, "person")
	root := filepath.Join(person, "src")
	repo := filepath.Join(root, "shop")
	state := filepath.Join(base, "state")
	copyDir := filepath.Join(state, "sessions", "s1", "copy")
	home := filepath.Join(state, "sessions", "homes", "agent")
	objects := filepath.Join(repo, ".git", "objects")
	for _, d := range []string{objects, filepath.Join(copyDir, ".git", OriginAlternate), home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	socks, err := os.MkdirTemp("", "sl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(socks) })
	egress, err := net.Listen("unix", filepath.Join(socks, "egress.sock"))
	if err != nil {
		t.Fatal(err)
	}
	mcp, err := net.Listen("unix", filepath.Join(socks, "mcp.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { egress.Close(); mcp.Close() })
	places := PlanPlaces(person, func(string) string { return "" }, []string{state}, []string{root}, nil)
	return &sandbox{t: t, person: person, root: root, egress: egress, mcp: mcp, homeDir: home, stateDir: state, spec: &Spec{
		Session: &Session{ID: "s1", Repo: repo, Objects: objects},
		Copy:    copyDir, Home: home, HomePath: person,
		Hide: places.Hide, Expose: places.Expose, Secret: places.Secret,
		Sidecar: realSidecar(t), EgressSocket: egress.Addr().String(), MCPSocket: mcp.Addr().String(),
		Dir: repo, Env: []string{"PATH=/usr/bin:/bin", "HOME=" + person},
	}}
}

// run runs script with sh in the sandbox and returns what it wrote and its
// exit code.
func (sb *sandbox) run(script string) (string, int) {
	sb.t.Helper()
	sb.spec.Argv = []string{"/bin/sh", "-c", script}
	var out bytes.Buffer
	p, err := Bubblewrap{}.Start(sb.spec, Stdio{Out: &out, Err: &out})
	if err != nil {
		sb.t.Fatal(err)
	}
	code, err := p.Wait()
	if err != nil {
		sb.t.Fatal(err)
	}
	return out.String(), code
}

// A link an earlier session's agent planted in the confined HOME, on the
// way to a mount point of the next session's sandbox (an allowed root
// inside HOME, ~/code/proj), is never followed: bubblewrap, as the
// person, would make the mount point wherever it leads on the host. The
// first run, with the command line alone, shows that it would here;
// Start removes the link and makes the directory in the home.
func TestBubblewrap_PlantedHomeLink_NothingMadeOutside(t *testing.T) {
	sb := newSandbox(t)
	proj := filepath.Join(sb.person, "code", "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	sb.spec.Expose = append(sb.spec.Expose, proj)
	target := outsideDir(t)
	// In bubblewrap's setup the new root is /newroot and the host is at
	// /oldroot: the link climbs from HomePath to / and goes down there.
	up := strings.Repeat("../", strings.Count(sb.person, "/")+1)
	plant := func() {
		if err := os.Symlink(up+"oldroot"+target, filepath.Join(sb.homeDir, "code")); err != nil {
			t.Fatal(err)
		}
	}
	plant()
	sb.spec.Argv = []string{"/bin/true"}
	args, err := AgentArgs(sb.spec)
	if err != nil {
		t.Fatal(err)
	}
	bwrap, _ := FindBubblewrap()
	for range bwrapAttempts {
		// bwrap makes the mount point after its bind of "/", which a
		// container the Engine removes meanwhile can make it lose.
		if out, _ := exec.Command(bwrap, args...).CombinedOutput(); !LostMountRace(out) {
			break
		}
	}
	made := filepath.Join(target, "proj")
	if !fileExists(made) {
		t.Fatalf("the planted link did not lead bubblewrap out here, so this test proves nothing (args: %q)", args)
	}
	if err := os.Remove(made); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(sb.homeDir, "code")); err != nil {
		t.Fatal(err)
	}

	plant()
	if out, code := sb.run("test -d " + proj + " && echo SEEN"); code != 0 || !strings.Contains(out, "SEEN") {
		t.Fatalf("the allowed root is not shown (exit %d):\n%s", code, out)
	}
	if fileExists(made) {
		t.Fatalf("bubblewrap made %s on the host through the agent's link", made)
	}
	if st, err := os.Lstat(filepath.Join(sb.homeDir, "code")); err != nil || !st.IsDir() {
		t.Fatalf("the mount point in the confined home is not a directory: %v %v", st, err)
	}
}

// What HOME hides through a link is hidden where the link leads too
// (~/.config a link to /data/dot/config, which holds Sluice's gateway
// token), and a daemon's socket outside /tmp and /run cannot be reached
// from the sandbox. Each is first reached outside, where it must be.
func TestBubblewrap_HidesResolvedPlacesAndDaemonSockets(t *testing.T) {
	sb := newSandbox(t)
	out := outsideDir(t)
	token := mkfile(t, out, "dot/config/sluice/gateway.json", `{"token": "SECRET"}`)
	ssh := mkfile(t, out, "dot/ssh/id_ed25519", "PRIVATE KEY")
	symlink(t, filepath.Join(out, "dot", "config"), filepath.Join(sb.person, ".config"))
	symlink(t, filepath.Join(out, "dot", "ssh"), filepath.Join(sb.person, ".ssh"))
	daemon := filepath.Join(out, "lxd")
	if err := os.Mkdir(daemon, 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(daemon, "unix.socket"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("DAEMON\n"))
			c.Close()
		}
	}()
	saved := DaemonSockets
	DaemonSockets = append(slices.Clone(DaemonSockets), daemon)
	t.Cleanup(func() { DaemonSockets = saved })
	places := PlanPlaces(sb.person, func(string) string { return "" }, []string{filepath.Join(sb.person, ".config", "sluice")}, []string{sb.root}, nil)
	sb.spec.Hide, sb.spec.Expose, sb.spec.Secret = places.Hide, places.Expose, places.Secret

	c, err := net.Dial("unix", filepath.Join(daemon, "unix.socket"))
	if err != nil {
		t.Fatalf("the daemon's socket cannot be reached outside either: %v", err)
	}
	c.Close()
	probe := fmt.Sprintf(`cat %s %s 2>/dev/null; python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect("%s"); print(s.recv(9).decode())' 2>/dev/null || echo CONNECT-FAILED`,
		token, ssh, filepath.Join(daemon, "unix.socket"))
	if _, err := exec.LookPath("python3"); err != nil {
		probe = fmt.Sprintf(`cat %s %s 2>/dev/null; test -S %s && echo SOCKET-THERE || echo CONNECT-FAILED`, token, ssh, filepath.Join(daemon, "unix.socket"))
	}
	got, _ := sb.run(probe)
	for _, leak := range []string{"SECRET", "PRIVATE KEY", "DAEMON", "SOCKET-THERE"} {
		if strings.Contains(got, leak) {
			t.Errorf("%s reached the sandbox:\n%s", leak, got)
		}
	}
	if !strings.Contains(got, "CONNECT-FAILED") {
		t.Errorf("the probe did not run:\n%s", got)
	}
}

// slowWriter is a person's terminal that takes its time: what the agent
// writes waits in the session's terminal while the launcher copies it.
type slowWriter struct{ bytes.Buffer }

func (w *slowWriter) Write(b []byte) (int, error) {
	time.Sleep(20 * time.Millisecond)
	return w.Buffer.Write(b)
}

// The agent's last words reach the person's terminal: Wait returns only
// once all it wrote to the session's terminal is copied out, however slow
// the person's terminal (the copy ends when the sandbox's last descriptor
// of the session's terminal is closed, never by a timeout). Each run ends
// with a line written just before the agent exits.
func TestBubblewrap_TerminalOutputDrained(t *testing.T) {
	sb := newSandbox(t)
	tty := personTerminal(t)
	sb.spec.Argv = []string{"/bin/sh", "-c", `i=0; while [ $i -lt 5000 ]; do echo "line $i of the agent's output"; i=$((i+1)); done; printf 'LAST-LINE\n'`}
	for i := range 10 {
		var out slowWriter
		p, err := Bubblewrap{}.Start(sb.spec, Stdio{In: tty, Out: &out, Err: &out})
		if err != nil {
			t.Fatal(err)
		}
		if code, err := p.Wait(); code != 0 || err != nil {
			t.Fatalf("run %d: exit %d, %v\n%s", i, code, err, out.String())
		}
		if !strings.Contains(out.String(), "LAST-LINE") || !strings.Contains(out.String(), "line 4999 of") {
			t.Fatalf("run %d: the agent's last output was lost:\n…%s", i, tail(out.String(), 300))
		}
	}
}

// personTerminal is a person's terminal for a sandbox's stdin: nothing
// typed, what raw mode might echo read away; closed when the test ends.
func personTerminal(t *testing.T) *os.File {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { ptmx.Close(); tty.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := ptmx.Read(buf); err != nil {
				return
			}
		}
	}()
	return tty
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// keyringProbeEnv names the key that TestKeyringProbe looks for in its
// session keyring; the tests below run this test binary as the probe.
const keyringProbeEnv = "SLUICE_TEST_KEYRING_PROBE"

// TestKeyringProbe is not a test of its own: run by the tests below (in
// a sandbox, or as a launcher that starts one), it says whether the key
// named in its environment is in its session keyring, or runs a sandbox
// that asks the same.
func TestKeyringProbe(t *testing.T) {
	desc := os.Getenv(keyringProbeEnv)
	if desc == "" {
		t.Skip("a helper of TestBubblewrap_OwnSessionKeyring")
	}
	if os.Getenv(keyringProbeEnv+"_LAUNCH") == "" {
		if _, err := unix.KeyctlSearch(unix.KEY_SPEC_SESSION_KEYRING, "user", desc, 0); err == nil {
			fmt.Println("PROBE: the key is within reach")
		} else {
			fmt.Println("PROBE: no such key:", err)
		}
		return
	}
	// As the launcher: this process's every thread has the keyring with
	// the key, and Start runs the probe in a sandbox.
	sb := newSandbox(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sb.spec.Expose = append(sb.spec.Expose, filepath.Dir(self))
	sb.spec.Env = append(sb.spec.Env, keyringProbeEnv+"="+desc)
	out, code := sb.run(self + " -test.run=^TestKeyringProbe$ -test.v")
	fmt.Printf("SANDBOX (exit %d):\n%s\n", code, out)
}

// The agent's sandbox has a session keyring of its own: a key in the
// launcher's (a token a tool put in @s, a Kerberos KEYRING: cache) is not
// within its reach. The launcher is a process of this test binary's whose
// session keyring holds a key (made for the test, never the person's
// own); the same probe run by it directly finds the key.
func TestBubblewrap_OwnSessionKeyring(t *testing.T) {
	needBubblewrap(t)
	realSidecar(t)
	// A fresh keyring for this thread, so that the key never enters the
	// session keyring of whoever runs the tests; children started from
	// this thread inherit it. The thread stays locked: it ends with the
	// test.
	runtime.LockOSThread()
	if _, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); e != 0 {
		t.Skipf("no keyrings here: %v", e)
	}
	desc := "sluice-test-" + NewID()
	if _, err := unix.AddKey("user", desc, []byte("secret"), unix.KEY_SPEC_SESSION_KEYRING); err != nil {
		t.Skipf("no keys here: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	probe := func(launch bool) string {
		cmd := exec.Command(self, "-test.run=^TestKeyringProbe$", "-test.v")
		cmd.Env = append(os.Environ(), keyringProbeEnv+"="+desc)
		if launch {
			cmd.Env = append(cmd.Env, keyringProbeEnv+"_LAUNCH=1", "SLUICE_BIN_DIR="+filepath.Dir(realSidecar(t)))
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("probe: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := probe(false); !strings.Contains(out, "PROBE: the key is within reach") {
		t.Fatalf("the probe does not find the test's key outside a sandbox, so it proves nothing:\n%s", out)
	}
	out := probe(true)
	if !strings.Contains(out, "SANDBOX (exit 0)") || !strings.Contains(out, "PROBE: no such key") {
		t.Fatalf("the key of the launcher's session keyring is within the agent's reach:\n%s", out)
	}
}
