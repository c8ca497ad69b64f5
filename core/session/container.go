package session

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/term"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
)

// Container runs the agent in a container of the Docker Engine, from the
// workspace image, with the agent's own install mounted: the same
// boundary as Bubblewrap, and under gVisor (runsc) a kernel of its own
// between the agent and the host's. Nothing of the host's file system is
// seen but what the session names: its copy at the repository's path (the
// person's objects read-only at the origin alternate), its confined HOME,
// the allowed roots read-only, the agent's install read-only, the sidecar
// binary and the two sockets. The image must carry what the agent needs
// to run (Node.js for most CLIs).
//
// Under gVisor, a socket bound into the container can be reached only when
// the runtime is registered with --host-uds=open (build/scripts/setup.sh
// does so); without it MCP and the model cannot be reached.
type Container struct {
	// Engine starts the container: the app's Docker Engine.
	Engine ContainerEngine
	// Runtime is "docker" (the Engine's default OCI runtime) or "runsc".
	Runtime string
	Image   string
	// Roots are the allowed roots, shown read-only; Tools the agent's
	// install.
	Roots, Tools []string
	Limits       workspace.Limits
}

// ContainerEngine starts session containers (dockerrt.Docker through the
// app's adapter). It is an interface so that this package, which the
// sidecar links, links no container client.
type ContainerEngine interface {
	StartSession(ctx context.Context, s workspace.SessionContainerSpec, in io.Reader, out, errOut io.Writer) (ContainerRun, error)
}

// ContainerRun is a session's running container.
type ContainerRun interface {
	Wait() (int, error)
	Signal(sig string) error
	Resize(rows, cols uint) error
	Remove() error
}

// Name implements Runtime.
func (c Container) Name() string { return c.Runtime }

// Start implements Runtime.
func (c Container) Start(spec *Spec, stdio Stdio) (Process, error) {
	s := spec.Session
	if c.Engine == nil || c.Image == "" {
		return nil, errcode.New(errcode.Unsupported, "a session under %s needs the workspace image (sluice workspace image use NAME) and a running Docker Engine", c.Runtime)
	}
	binds, tools := c.binds(spec)
	var dests []string
	for _, b := range binds {
		dests = append(dests, b.Target)
	}
	if err := homeMountPoints(spec, dests); err != nil {
		return nil, err
	}
	argv := slices.Clone(spec.Argv)
	if len(argv) > 0 && !slices.ContainsFunc(tools, func(d string) bool { return Within(argv[0], d) }) {
		// A program of the host's system directories is the image's
		// program of that name.
		argv[0] = filepath.Base(cmp.Or(spec.Name, argv[0]))
	}
	cmd := []string{InsideSidecar, "sandbox-init", "--proxy-port", strconv.Itoa(ProxyPort)}
	for _, f := range spec.Forwards {
		cmd = append(cmd, "--forward", f)
	}
	tty := stdio.In != nil && term.IsTerminal(int(stdio.In.Fd()))
	var rows, cols uint
	if tty {
		if sz, err := pty.GetsizeFull(stdio.In); err == nil && sz.Rows > 0 && sz.Cols > 0 {
			rows, cols = uint(sz.Rows), uint(sz.Cols)
			cmd = append(cmd, "--size", fmt.Sprintf("%dx%d", rows, cols))
		}
	}
	cmd = append(append(cmd, "--"), argv...)
	oci := ""
	if c.Runtime == RuntimeRunsc {
		oci = "runsc"
	}
	lim := c.Limits
	if lim.MemoryBytes == 0 {
		lim = workspace.Limits{MemoryBytes: 4 << 30, CPUs: 4, PIDs: 4096, TmpfsBytes: 1 << 30}
	}
	cs := workspace.SessionContainerSpec{
		Session: s.ID, Image: c.Image, RuntimeName: oci, User: fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
		Cmd: cmd, Env: spec.Env, WorkingDir: spec.Dir, Binds: binds, TTY: tty, Limits: lim, Copy: s.Repo,
	}
	cs.Rows, cs.Cols = rows, cols
	p := &containerProcess{stdin: stdio.In, restore: func() {}}
	if tty {
		if old, err := term.MakeRaw(int(stdio.In.Fd())); err == nil {
			p.restore = func() { term.Restore(int(stdio.In.Fd()), old) }
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.Engine.StartSession(ctx, cs, stdio.In, stdio.Out, stdio.Err)
	if err != nil {
		p.restore()
		return nil, err
	}
	p.run = run
	p.Resize()
	return p, nil
}

// binds are the host paths a session's container sees, and the agent's
// install among them: the copy at the repository's path, the person's
// objects read-only at its origin alternate, the confined HOME, the
// sidecar and the two sockets; then, read-only, each allowed root and
// tool directory that holds nothing the sandbox hides (a root at HOME or
// above, or one with Sluice's state, an XDG directory, a credential
// store or a daemon's socket in it, is left out whole: a bind cannot
// leave holes). Hide and Secret name each place both as written and
// resolved (PlanPlaces), so a root that reaches one through a link is
// left out too.
func (c Container) binds(spec *Spec) ([]workspace.SessionBind, []string) {
	s := spec.Session
	binds := []workspace.SessionBind{
		{Source: spec.Copy, Target: s.Repo},
		{Source: s.Objects, Target: s.Repo + "/.git/" + OriginAlternate, ReadOnly: true},
		{Source: spec.Home, Target: spec.HomePath},
		{Source: spec.Sidecar, Target: InsideSidecar, ReadOnly: true},
		{Source: spec.EgressSocket, Target: InsideEgress},
		{Source: spec.MCPSocket, Target: InsideMCP},
	}
	hidden := slices.Concat(forms(spec.HomePath), spec.Hide, spec.Secret, DaemonSockets)
	tools := ImageTools(c.Tools)
	var shown []string
	for _, d := range slices.Concat(c.Roots, tools) {
		d = filepath.Clean(d)
		if d == s.Repo || slices.ContainsFunc(hidden, func(h string) bool { return Within(h, d) }) {
			continue
		}
		if _, err := os.Stat(d); err == nil {
			binds = append(binds, workspace.SessionBind{Source: d, Target: d, ReadOnly: true})
			if slices.Contains(tools, d) {
				shown = append(shown, d)
			}
		}
	}
	return binds, shown
}

// imageDirs are where an image keeps its own programs and libraries: a
// host directory there is never shown in a session's container (it would
// replace the image's, whose programs need their own libraries).
var imageDirs = []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
	"/usr/bin", "/usr/sbin", "/usr/lib", "/usr/libexec", "/usr/local/bin", "/usr/local/sbin"}

// ImageTools are the tool directories a container shows: the agent's own
// install wherever it lies (a node_modules, a directory of its own), but
// no host directory the image has its own of (the interpreter in
// /usr/bin is the image's).
func ImageTools(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		d = filepath.Clean(d)
		// An npm install is the agent's own wherever it lies
		// (/usr/lib/node_modules on some systems).
		npm := filepath.Base(d) == "node_modules" || strings.Contains(d, "/node_modules/")
		if !npm && slices.ContainsFunc(imageDirs, func(s string) bool { return Within(d, s) }) ||
			slices.Contains([]string{"/", "/usr", "/usr/lib", "/usr/local", "/usr/local/lib", "/usr/share", "/opt"}, d) {
			continue
		}
		out = append(out, d)
	}
	return out
}

type containerProcess struct {
	run     ContainerRun
	stdin   *os.File
	restore func()
}

func (p *containerProcess) Wait() (int, error) {
	code, err := p.run.Wait()
	p.restore()
	if rerr := p.run.Remove(); err == nil {
		err = rerr
	}
	return code, err
}

func (p *containerProcess) Signal(sig syscall.Signal) {
	// The container's first process is sandbox-init, which passes it on.
	name := map[syscall.Signal]string{syscall.SIGINT: "INT", syscall.SIGTERM: "TERM", syscall.SIGHUP: "HUP"}[sig]
	if name == "" {
		name = "TERM"
	}
	p.run.Signal(name)
	go func() {
		time.Sleep(signalGrace)
		p.run.Signal("KILL")
	}()
}

func (p *containerProcess) Resize() {
	if p.stdin == nil {
		return
	}
	if sz, err := pty.GetsizeFull(p.stdin); err == nil {
		p.run.Resize(uint(sz.Rows), uint(sz.Cols))
	}
}
