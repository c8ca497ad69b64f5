package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sluicehq/sluice/core/connect"
	"github.com/sluicehq/sluice/core/errcode"
)

// Inside every sandbox, Sluice's own pieces are at fixed paths under
// /run/sluice (a tmpfs there, so nothing of the host's /run is seen).
const (
	InsideDir     = "/run/sluice"
	InsideSidecar = InsideDir + "/bin/sluice-sidecar"
	InsideEgress  = InsideDir + "/egress.sock"
	InsideMCP     = InsideDir + "/mcp.sock"
	// ProxyPort is where, on the sandbox's own loopback, the in-sandbox
	// forwarder takes HTTP proxy connections to the egress proxy.
	ProxyPort = 3128
)

// Spec is one confined agent, as a runtime starts it.
type Spec struct {
	Session *Session
	// Copy is the private copy (host path); it is mounted writable at
	// Session.Repo. Origin is the empty directory of the session's on which
	// the sidecar sees the person's repository.
	Copy string
	// Home is the agent's confined HOME (host path), mounted at HomePath,
	// the person's own HOME path, so that paths in the agent's settings
	// read as they would outside.
	Home, HomePath string
	// Hide are host directories the agent must not see at all: the
	// person's HOME, the XDG directories, Sluice's own directories. Each
	// becomes an empty tmpfs; files among them are covered by /dev/null.
	Hide []string
	// Expose are host directories shown read-only although they lie under
	// a hidden one: allowed roots inside HOME, the directories of the
	// toolchains on PATH and of the agent's own program.
	Expose []string
	// Secret are paths hidden again inside what Expose shows: the
	// person's credentials and Sluice's state, wherever a root reaches
	// them.
	Secret []string
	// Sidecar is the sluice-sidecar binary on the host, mounted at
	// InsideSidecar; EgressSocket and MCPSocket are the Unix sockets the
	// launcher listens on, mounted at InsideEgress and InsideMCP.
	Sidecar, EgressSocket, MCPSocket string
	// Forwards are loopback host:port entries of the session's network
	// (a model served on 127.0.0.1): the forwarder listens on the same
	// address inside, so a client that skips the proxy for loopback
	// still reaches it, and only it.
	Forwards []string
	// Dir is the working directory inside (the person's current one,
	// inside the repository).
	Dir string
	// Argv is the agent's command line; Env its environment, which
	// carries the model key and is passed as the process environment,
	// never as arguments (no secret is ever in a /proc/*/cmdline).
	Argv []string
	Env  []string
	// Name is the program as the person named it ("sh", where Argv[0] is
	// /usr/bin/dash): a container runs its image's program of that name
	// when the host's lies in a system directory.
	Name string
}

// Runtime starts confined agents. Bubblewrap is the default; Container
// (the workspace image under the Engine's runtime, gVisor's runsc for a
// second kernel) is the other; a pod is where the seam leads next.
type Runtime interface {
	// Name is the runtime's name as cards show it.
	Name() string
	// Start starts spec's agent confined, with the person's terminal or
	// streams.
	Start(spec *Spec, stdio Stdio) (Process, error)
}

// Stdio is what the agent reads and writes: the person's terminal when In
// is one, else their streams as they are.
type Stdio struct {
	In       *os.File
	Out, Err io.Writer
}

// Process is a confined agent that runs.
type Process interface {
	// Wait waits for the agent to end and returns its exit code (128+n
	// for a signal, as a shell says).
	Wait() (int, error)
	// Signal passes a signal to the agent, through the sandbox's first
	// process; after a grace period the sandbox is ended outright.
	Signal(sig syscall.Signal)
	// Resize gives the agent's terminal the person's terminal's size.
	Resize()
}

// ErrNoBubblewrap: bwrap is not installed.
var ErrNoBubblewrap = &errcode.Error{Code: errcode.Unsupported,
	Msg: "bubblewrap (bwrap) is not installed; it is what confines the agent: apt install bubblewrap (Debian, Ubuntu), dnf install bubblewrap (Fedora)"}

// Bubblewrap runs the agent under bwrap with every namespace of its own:
// no daemon and no root, the host's file system read-only so the person's
// toolchains work, and only the copy writable.
type Bubblewrap struct {
	// Path is bwrap's absolute path; empty finds it on PATH.
	Path string
}

// Name implements Runtime.
func (Bubblewrap) Name() string { return RuntimeBubblewrap }

// FindBubblewrap returns bwrap's absolute path.
func FindBubblewrap() (string, error) {
	for _, p := range []string{"/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return "", ErrNoBubblewrap
	}
	return filepath.Abs(p)
}

// baseArgs begin every sandbox's bwrap command line.
var baseArgs = []string{
	// Every namespace: user, ipc, pid, net (only loopback), uts,
	// cgroup. No further user namespace inside, so nothing in the
	// sandbox gets capabilities of its own (bubblewrap 0.8 or later).
	"--unshare-all", "--unshare-user", "--disable-userns",
	// Killed with the launcher; no controlling terminal of the
	// person's (no TIOCSTI into their shell): the launcher gives the
	// agent a terminal of its own. sandbox-init is the namespace's
	// first process (it reaps, and it takes the signals the launcher
	// passes on, which bwrap's own would drop).
	"--die-with-parent", "--new-session", "--as-pid-1",
	"--hostname", "sluice-session",
	"--ro-bind", "/", "/",
	"--dev", "/dev",
	"--proc", "/proc",
}

// BaseArgs are the first arguments of every sandbox's bwrap command line:
// its namespaces and the host's file system read-only. `sluice doctor`
// tries a sandbox with these, so that it meets what `sluice run` meets.
func BaseArgs() []string { return slices.Clone(baseArgs) }

// AgentArgs is bwrap's command line for spec's agent. The order is the
// order bwrap mounts in, and it matters: each mount covers what the ones
// before it put at that path.
func AgentArgs(spec *Spec) ([]string, error) {
	s := spec.Session
	if s == nil || !filepath.IsAbs(s.Repo) || !filepath.IsAbs(spec.Copy) || !filepath.IsAbs(spec.Home) || !filepath.IsAbs(spec.HomePath) {
		return nil, errors.New("session: incomplete sandbox spec")
	}
	if len(spec.Argv) == 0 {
		return nil, errors.New("session: no command to run")
	}
	a := BaseArgs()
	// Sockets of the person's session live in these (Emptied).
	for _, d := range Emptied {
		if st, err := os.Lstat(d); err == nil && st.IsDir() {
			a = append(a, "--tmpfs", d)
		}
	}
	// Daemons' sockets elsewhere (DaemonSockets).
	for _, d := range DaemonSockets {
		if !insideAny(d, Emptied) {
			a = append(a, hide(d)...)
		}
	}
	for _, h := range spec.Hide {
		a = append(a, hide(h)...)
	}
	a = append(a, "--bind", spec.Home, spec.HomePath)
	for _, e := range shown(spec) {
		a = append(a, "--ro-bind", e, e)
	}
	for _, sec := range spec.Secret {
		if insideAny(sec, spec.Expose) {
			a = append(a, hide(sec)...)
		}
	}
	a = append(a,
		"--bind", spec.Copy, s.Repo,
		"--ro-bind", s.Objects, filepath.Join(s.Repo, ".git", OriginAlternate),
		"--dir", InsideDir+"/bin",
		"--ro-bind", spec.Sidecar, InsideSidecar,
		"--bind", spec.EgressSocket, InsideEgress,
		"--bind", spec.MCPSocket, InsideMCP,
		"--chdir", spec.Dir,
		"--", InsideSidecar, "sandbox-init", "--proxy-port", fmt.Sprint(ProxyPort), "--started-fd", fmt.Sprint(StartedFD),
	)
	for _, f := range spec.Forwards {
		a = append(a, "--forward", f)
	}
	a = append(a, "--")
	return append(a, spec.Argv...), nil
}

// shown are the Expose directories that exist.
func shown(spec *Spec) []string {
	var out []string
	for _, e := range spec.Expose {
		if _, err := os.Stat(e); err == nil {
			out = append(out, e)
		}
	}
	return out
}

// homeMountPoints makes, in the confined HOME on the host (spec.Home),
// the mount points that dests (the runtime's mount destinations) need
// there. A runtime makes a missing mount point itself and follows a link
// on its way, and the agent writes the confined HOME, which lasts across
// sessions: with ~/src made a link to ../../../oldroot/srv/x by an
// earlier session's agent, bubblewrap made /srv/x/proj on the host, as
// the person. A destination needs one when it is below HomePath (as
// named or resolved) and no other destination below HomePath covers it.
// A link on its way there is the agent's; it is removed and a directory
// made in its place, through an os.Root (connect.ConfinedHome).
//
// A session of the same program that runs meanwhile shares the home, and
// its agent could plant a link again between this and the runtime's
// mounts.
func homeMountPoints(spec *Spec, dests []string) error {
	var need []string
	for _, d := range dests {
		d = filepath.Clean(d)
		for _, base := range forms(spec.HomePath) {
			if d == base || !Within(d, base) {
				continue
			}
			covered := slices.ContainsFunc(dests, func(e string) bool {
				e = filepath.Clean(e)
				return e != d && Within(d, e) && !Within(base, e)
			})
			if !covered && !slices.Contains(need, d[len(base)+1:]) {
				need = append(need, d[len(base)+1:])
			}
		}
	}
	if len(need) == 0 {
		return nil
	}
	h, err := connect.OpenConfinedHome(spec.Home)
	if err != nil {
		return fmt.Errorf("the session's home: %w", err)
	}
	defer h.Close()
	for _, rel := range need {
		if err := h.MakeDir(rel, 0o700); err != nil {
			return fmt.Errorf("the session's home: %w", err)
		}
	}
	return nil
}

// LeaveSessionKeyring gives the calling thread a new, empty session
// keyring of its own (KEYCTL_JOIN_SESSION_KEYRING with no name) in place
// of the person's, whose keys (a Kerberos KEYRING: cache, a token a tool
// put in @s) would otherwise be readable by the agent: user keyrings
// (@u, @us, persistent) are per user namespace, the session keyring is
// inherited. Keyrings are per thread: the caller locks its goroutine to
// the thread (runtime.LockOSThread) and starts from it what must not
// inherit the person's.
//
// Where keyctl is refused altogether (the Engine's default seccomp
// profile, a kernel without keys) no keyring is reachable from here, nor
// from what is started from here, and that is no error.
func LeaveSessionKeyring() error {
	_, _, errno := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
	if errno == 0 {
		return nil
	}
	refused := func(e error) bool { return errors.Is(e, unix.ENOSYS) || errors.Is(e, unix.EPERM) }
	if refused(errno) {
		if _, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, false); refused(err) {
			return nil
		}
	}
	return fmt.Errorf("cannot leave the person's session keyring: %w", errno)
}

// hide covers a host path: a directory with an empty tmpfs, a file with
// /dev/null. A path that does not exist needs nothing.
func hide(p string) []string {
	st, err := os.Stat(p)
	switch {
	case err != nil:
		return nil
	case st.IsDir():
		return []string{"--tmpfs", p}
	default:
		return []string{"--ro-bind", "/dev/null", p}
	}
}

// SidecarArgs is bwrap's command line for the session's sidecar: the
// person's world as it is (network included: it reaches the app's
// gateway), except that the repository's path holds the copy, as the
// agent sees it, and the person's repository itself is seen at the
// session's origin directory, read-only, where proposals are pinned.
//
// The account's credentials (secret) are hidden from it too: the copy's
// git configuration is the agent's to write, and a read tool run on it
// must not be able to include a file of the person's.
func SidecarArgs(s *Session, copyDir, originDir string, secret []string, argv []string) []string {
	a := []string{
		"--bind", "/", "/",
		"--dev-bind", "/dev", "/dev",
	}
	for _, p := range secret {
		a = append(a, hide(p)...)
	}
	a = append(a,
		"--ro-bind", s.Repo, originDir,
		"--bind", copyDir, s.Repo,
		"--ro-bind", s.Objects, filepath.Join(s.Repo, ".git", OriginAlternate),
		"--die-with-parent",
		"--",
	)
	return append(a, argv...)
}

// insideAny reports whether p is one of dirs or below one.
func insideAny(p string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return Within(p, d) })
}

// Within reports whether p is dir or lies below it (both clean and
// absolute).
func Within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}
