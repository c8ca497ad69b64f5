package app

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/connect"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx"
	confined "github.com/sluicehq/sluice/core/session"
	"github.com/sluicehq/sluice/core/workspace"
	"github.com/sluicehq/sluice/core/workspace/dockerrt"
	"github.com/sluicehq/sluice/core/workspace/kube"
)

// `sluice run` starts an agent inside a sandbox Sluice builds (see
// core/session): its repository replaced by a private copy at the same
// path, a confined HOME, none of the account's credentials, Sluice's own
// state out of sight, no network but the model provider through Sluice's
// egress proxy, and MCP through a relay to a sidecar outside that speaks
// for the session. This is the launcher: it runs as the person, outside the
// sandbox, and lives as long as the agent does; the app notices when it is
// gone and offers what the agent left.

// runOptions are `sluice run`'s flags and command.
type runOptions struct {
	// Agent is the known client (nil for `-- COMMAND`); Program is what
	// runs, Args its arguments.
	Agent   *connect.Agent
	Program string
	Args    []string
	Runtime string
	// AllowHosts are hosts allowed for this session on top of the
	// client's own (each audited); Env are variables of the person's
	// environment to pass in as well.
	AllowHosts []string
	Env        []string
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func runUsage(w io.Writer) {
	fmt.Fprintf(w, `usage: sluice run [flags] CLIENT [ARGS...]
       sluice run [flags] -- COMMAND [ARGS...]

Starts an agent confined: it works in a private copy of the repository you
are in (at the same path), sees none of your credentials or Sluice's own
files, reaches only its model provider, and changes your repository only
by proposals you approve in Sluice.

CLIENT is one of: %s

flags:
  --allow-host HOST[:PORT]  let the session reach this host too (repeatable; audited)
  --env NAME                pass this variable of your environment in too (repeatable)
  --runtime NAME            the sandbox: bubblewrap (default); docker or runsc run it in
                            the workspace image (runsc: under gVisor, a kernel of its own);
                            kubernetes runs it in a pod of the configured cluster, from
                            kubernetes.sessionImage
`, strings.Join(connect.AgentNames(), ", "))
}

func parseRunOptions(args []string) (runOptions, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var hosts, env listFlag
	fs.Var(&hosts, "allow-host", "")
	fs.Var(&env, "env", "")
	rt := fs.String("runtime", confined.RuntimeBubblewrap, "")
	if err := fs.Parse(args); err != nil {
		return runOptions{}, err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return runOptions{}, errors.New("name a client or, after --, a command")
	}
	o := runOptions{Runtime: *rt, AllowHosts: hosts, Env: env, Program: rest[0], Args: rest[1:]}
	command := len(args) > len(rest) && args[len(args)-len(rest)-1] == "--"
	if !command {
		a, ok := connect.AgentByName(rest[0])
		if !ok {
			return runOptions{}, fmt.Errorf("%q is not a client Sluice knows (%s); run another program with `sluice run -- %s`", rest[0], strings.Join(connect.AgentNames(), ", "), rest[0])
		}
		o.Agent, o.Program = &a, a.Program
	}
	for _, e := range o.Env {
		if confined.Refused(e) {
			return runOptions{}, fmt.Errorf("--env %s: that variable never enters a session (it carries the account's credentials or its session)", e)
		}
	}
	return o, nil
}

func runRun(args []string, stdin *os.File, stdout, stderr io.Writer) int {
	o, err := parseRunOptions(args)
	if err != nil {
		fmt.Fprintln(stderr, "sluice run:", err)
		runUsage(stderr)
		return 2
	}
	code, err := launch(o, stdin, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "sluice run:", err)
		return 1
	}
	return code
}

// launch runs one confined session to its end and returns the agent's
// exit code.
func launch(o runOptions, stdin *os.File, stdout, stderr io.Writer) (int, error) {
	// A descriptor this process inherited (a directory, a pipe of
	// whatever started it) would reach the sandbox through bubblewrap,
	// which passes on every one not marked close-on-exec.
	if err := closeInherited(); err != nil {
		return 0, fmt.Errorf("marking inherited descriptors close-on-exec: %w", err)
	}
	cfg, err := config.Load()
	if err != nil {
		return 0, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return 0, errors.New("HOME is not set to an absolute path")
	}
	prog, err := exec.LookPath(o.Program)
	switch {
	case err != nil && o.Runtime == confined.RuntimeKubernetes:
		// A pod runs the session image's program of that name.
		prog = filepath.Base(o.Program)
	case err != nil:
		return 0, fmt.Errorf("%s is not installed (not on PATH)", o.Program)
	default:
		if prog, err = filepath.Abs(prog); err != nil {
			return 0, err
		}
		// The program itself, not a link to it: the directory a link sits
		// in (a bin directory in HOME) is not shown inside.
		if real, err := filepath.EvalSymlinks(prog); err == nil {
			prog = real
		}
	}
	bwrap, err := confined.FindBubblewrap()
	if err != nil {
		return 0, err
	}
	c, err := gateway.NewClientFromEndpoint(cfg.GatewayFile())
	if err != nil {
		//lint:ignore ST1005 Sluice is the product's name, and this sentence is shown to the person as written.
		return 0, errors.New("Sluice is not running: start it first (`sluice`, or `sluice serve` without a display); it is where you approve what the agent proposes")
	}
	req := gateway.SessionRequest{Dir: cwd, Runtime: o.Runtime, AllowHosts: o.AllowHosts, LauncherPID: os.Getpid()}
	if o.Agent != nil {
		req.Client = o.Agent.Client
		req.ModelHosts = append(slices.Clone(o.Agent.ModelHosts), o.Agent.ModelEndpoints(os.Getenv)...)
	} else {
		req.Command = filepath.Base(o.Program)
	}
	ctx := context.Background()
	grant, err := c.RegisterSession(ctx, req)
	if err != nil {
		return 0, err
	}
	code, err := runSession(ctx, cfg, o, grant, prog, bwrap, home, cwd, stdin, stdout, stderr)
	if errors.Is(err, kube.ErrSessionPodKept) {
		// The agent's last files are still in its pod: the app reads them
		// back itself once this process is gone, and only then offers them.
		fmt.Fprintln(stderr, "sluice: the agent's last files could not be read back from its pod; Sluice reads them again and then offers what it left")
		return code, err
	}
	// Whatever happened, the session ends here: what the agent left and
	// never proposed is offered as one card.
	end, eerr := c.EndSession(context.Background(), grant.ID, grant.Token)
	if eerr != nil {
		fmt.Fprintf(stderr, "sluice: the session could not be ended now (%v); Sluice ends it by itself and keeps its copy\n", eerr)
	} else {
		fmt.Fprintln(stderr, "sluice:", end.Message)
	}
	return code, err
}

// runSession sets up the session's egress proxy, sidecar and confined
// HOME, and runs the agent.
func runSession(ctx context.Context, cfg *config.Config, o runOptions, g gateway.SessionGrant, prog, bwrap, home, cwd string,
	stdin *os.File, stdout, stderr io.Writer) (int, error) {
	s := &confined.Session{ID: g.ID, Agent: g.Agent, Repo: g.Repo, Objects: g.Objects, Runtime: o.Runtime, Network: g.Network}
	roots := gitx.Roots(cfg.AllowedRoots)
	var id confined.Identity
	if r, err := gitx.Default(); err == nil {
		if repo, err := r.Open(ctx, roots, g.Repo); err == nil {
			id.Name, _ = repo.Config("user.name")
			id.Email, _ = repo.Config("user.email")
		}
	}
	if err := confined.PrepareHome(g.Home, o.Agent, cfg.Toolsets, g.Repo, id); err != nil {
		return 0, fmt.Errorf("preparing the session's home: %w", err)
	}
	// Sockets live in a short private directory (a Unix socket's path is
	// limited to 108 bytes); the sandbox sees them at fixed paths. It is
	// under /run or /tmp, which every sandbox empties (wherever TMPDIR
	// points), so no session sees another's sockets.
	sockDir, err := os.MkdirTemp(socketParent(), "sluice-run-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(sockDir)
	egressLn, err := net.Listen("unix", filepath.Join(sockDir, "egress.sock"))
	if err != nil {
		return 0, err
	}
	defer egressLn.Close()
	mcpLn, err := net.Listen("unix", filepath.Join(sockDir, "mcp.sock"))
	if err != nil {
		return 0, err
	}
	defer mcpLn.Close()
	var deniedMu sync.Mutex
	var denied []string
	proxy := workspace.NewProxy(func(d workspace.Denial) {
		deniedMu.Lock()
		defer deniedMu.Unlock()
		if !slices.Contains(denied, d.Host) && len(denied) < 20 {
			denied = append(denied, d.Host)
		}
	})
	pg, err := proxy.Register(g.ID, "session", g.Network)
	if err != nil {
		return 0, err
	}
	defer pg.Revoke()
	go proxy.ServeGrant(egressLn, pg)

	var tools []string
	if o.Runtime != confined.RuntimeKubernetes {
		tools = toolDirs(prog)
	}
	// Sluice's places as this process's configuration names them, and as
	// the app's does (it may have started with other variables).
	places := confined.PlanPlaces(home, os.Getenv, append(sluiceDirs(cfg), g.Hide...), cfg.AllowedRoots, tools)
	var rt confined.Runtime = confined.Bubblewrap{Path: bwrap}
	switch o.Runtime {
	case confined.RuntimeBubblewrap:
	case confined.RuntimeKubernetes:
		k := cfg.Kubernetes
		if !cfg.OnKubernetes() {
			return 0, errcode.New(errcode.Unsupported, `config.json configures no cluster ("workspaceRuntime": "kubernetes" and its "kubernetes" block)`)
		}
		// client-go reports a stream's end on stderr through klog; the
		// person's terminal is the agent's, and errors come back as values.
		klog.LogToStderr(false)
		klog.SetOutput(io.Discard)
		klog.SetLogger(logr.Discard())
		kr, err := kube.New(ctx, kube.Options{Kubeconfig: k.Kubeconfig, Context: k.Context, Namespace: k.Namespace,
			RuntimeClassName: k.RuntimeClassName, ImagePullPolicy: k.ImagePullPolicy, PodUIDs: k.PodUIDs})
		if err != nil {
			return 0, err
		}
		// The image the app started the session with (and audited); the
		// pod sees no root and no install of the person's: the image
		// carries the agent.
		rt = confined.Container{Engine: kubeSessionEngine{kr}, Runtime: o.Runtime, Image: g.Image, Limits: kubeSessionLimits}
	default:
		d, err := dockerrt.New(ctx)
		if err != nil {
			return 0, err
		}
		defer d.Close()
		if o.Runtime == confined.RuntimeRunsc {
			info, err := d.CheckRuntime(ctx, "runsc")
			if err != nil {
				return 0, err
			}
			if !info.HostUDS {
				return 0, errcode.New(errcode.Unsupported, `the Docker Engine's runsc runtime cannot reach host sockets, so the session could reach neither Sluice nor its model: add "--host-uds=open" to its runtimeArgs in /etc/docker/daemon.json and reload the Engine (sudo kill -HUP $(pidof dockerd)); build/scripts/setup.sh test registers it so`)
			}
		}
		// The image the app started the session with (and audited), not
		// whatever this process's configuration names.
		rt = confined.Container{Engine: sessionEngine{d}, Runtime: o.Runtime, Image: g.Image, Roots: cfg.AllowedRoots, Tools: tools}
	}
	sc, err := startSessionSidecar(s, g, bwrap, credentials(home), mcpLn.(*net.UnixListener))
	if err != nil {
		return 0, err
	}
	defer sc.stop()

	var forwards []string
	for _, h := range g.Network {
		if host, _, err := net.SplitHostPort(h); err == nil && (host == "127.0.0.1" || host == "localhost" || host == "::1") {
			forwards = append(forwards, h)
		}
	}
	spec := &confined.Spec{
		Session: s, Copy: g.Copy, Home: g.Home, HomePath: home,
		Hide: places.Hide, Expose: places.Expose, Secret: places.Secret,
		Sidecar: sidecarPath(), EgressSocket: egressLn.Addr().String(), MCPSocket: mcpLn.Addr().String(),
		Forwards: forwards, Dir: cwd, Argv: append([]string{prog}, o.Args...), Name: o.Program,
		Env: confined.Environment(os.Environ(), o.Agent, o.Env, home),
	}
	proc, err := rt.Start(spec, confined.Stdio{In: stdin, Out: stdout, Err: stderr})
	if err != nil {
		return 0, err
	}
	code, err := waitConfined(proc)
	deniedMu.Lock()
	defer deniedMu.Unlock()
	if len(denied) > 0 {
		fmt.Fprintf(stderr, "sluice: the session's egress proxy refused %s (not in the session's network; allow one with --allow-host)\n", strings.Join(denied, ", "))
	}
	return code, err
}

// waitConfined waits for the agent; signals the launcher gets go to it,
// a change of the person's window size to its terminal.
func waitConfined(proc confined.Process) (int, error) {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGWINCH)
	defer signal.Stop(sigs)
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := proc.Wait()
		done <- result{code, err}
	}()
	for {
		select {
		case r := <-done:
			return r.code, r.err
		case s := <-sigs:
			if s == syscall.SIGWINCH {
				proc.Resize()
				continue
			}
			proc.Signal(s.(syscall.Signal))
		}
	}
}

// credentials are the account's credential files and directories under
// HOME, as the session's sidecar is kept from them: Sluice's own state
// excepted (the sidecar keeps its record there), and the person's git
// configuration, which their git reads of other repositories follow.
func credentials(home string) []string {
	var out []string
	for _, c := range confined.CredentialPaths {
		if !strings.Contains(c, "sluice") && c != ".gitconfig" && c != ".config/git" {
			out = append(out, filepath.Join(home, c))
		}
	}
	return out
}

// sluiceDirs are Sluice's own places a sandbox hides wherever they are.
func sluiceDirs(cfg *config.Config) []string {
	out := []string{cfg.ConfigDir, cfg.StateDir}
	if cfg.AuditKeyFile != "" {
		out = append(out, cfg.AuditKeyFile, cfg.AuditPublicKeyFile())
	}
	// The cluster credentials workspaces run with are Sluice's too: an
	// agent holding them could create pods that Sluice never checked.
	return append(out, cfg.KubeconfigFiles()...)
}

// toolDirs are the directories the agent's program needs: its own
// install and its interpreter's (a script's #! line).
func toolDirs(prog string) []string {
	out := confined.ToolDirs(prog, os.Getenv("PATH"))
	if interp := interpreter(prog); interp != "" {
		if p, err := exec.LookPath(interp); err == nil {
			for _, d := range confined.ToolDirs(p, "") {
				if !slices.Contains(out, d) {
					out = append(out, d)
				}
			}
		}
	}
	return out
}

// interpreter is the program a script's "#!" line names ("node" for
// "#!/usr/bin/env node").
func interpreter(prog string) string {
	f, err := os.Open(prog)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReader(io.LimitReader(f, 256)).ReadString('\n')
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if !strings.HasPrefix(line, "#!") || len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) == "env" {
		for _, f := range fields[1:] {
			if !strings.HasPrefix(f, "-") {
				return f
			}
		}
		return ""
	}
	return fields[0]
}

// sessionSidecar is the session's sidecar process.
type sessionSidecar struct {
	cmd   *exec.Cmd
	token io.WriteCloser
}

// startSessionSidecar starts sluice-sidecar in the session's view of the
// machine (the copy at the repository's path), serving MCP on the
// listener the launcher made, with the session's token on its stdin. The
// token goes only to a sidecar that runs: bwrap's set-up may end before
// (a lost mount race is tried again, confined.LostMountRace).
func startSessionSidecar(s *confined.Session, g gateway.SessionGrant, bwrap string, secret []string, ln *net.UnixListener) (*sessionSidecar, error) {
	lf, err := ln.File()
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	argv := []string{sidecarPath(), "session", "--session", g.ID, "--agent", g.Agent, "--repo", g.Repo, "--origin", g.Origin,
		"--started-fd", strconv.Itoa(confined.StartedFD)}
	logPath := filepath.Join(filepath.Dir(g.Copy), "sidecar.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	for attempt := 1; ; attempt++ {
		from, err := logf.Seek(0, io.SeekEnd)
		if err != nil {
			return nil, err
		}
		sc, err := startSidecarOnce(s, g, bwrap, secret, argv, lf, logf)
		if sc != nil || err != nil {
			return sc, err
		}
		early := readFrom(logPath, from)
		if confined.LostMountRace(early) && attempt < 5 {
			continue
		}
		return nil, fmt.Errorf("starting the session's sidecar: its sandbox could not be made: %s", strings.TrimSpace(string(early)))
	}
}

// startSidecarOnce makes the sidecar's sandbox once: the sidecar, or
// neither it nor an error when bwrap ended in its set-up.
func startSidecarOnce(s *confined.Session, g gateway.SessionGrant, bwrap string, secret, argv []string, lf, logf *os.File) (*sessionSidecar, error) {
	ran, err := confined.NewStarted()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bwrap, confined.SidecarArgs(s, g.Copy, g.Origin, secret, argv)...)
	cmd.ExtraFiles = []*os.File{lf, ran.File()}
	cmd.Env = sidecarEnv(os.Environ())
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	cmd.Stdout, cmd.Stderr = logf, logf
	in, err := cmd.StdinPipe()
	if err != nil {
		ran.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		ran.Close()
		return nil, fmt.Errorf("starting the session's sidecar: %w", err)
	}
	if !ran.Wait() {
		cmd.Wait()
		return nil, nil
	}
	if _, err := io.WriteString(in, g.Token+"\n"); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("starting the session's sidecar: %w", err)
	}
	return &sessionSidecar{cmd: cmd, token: in}, nil
}

// readFrom is what the file at path holds from offset on (at most 64 KiB).
func readFrom(path string, offset int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(io.NewSectionReader(f, offset, 1<<16), 1<<16))
	return b
}

// stop ends the sidecar: its stdin closes, which it takes as the end.
func (sc *sessionSidecar) stop() {
	sc.token.Close()
	done := make(chan struct{})
	go func() { sc.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		syscall.Kill(-sc.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// closeInherited marks every descriptor above stderr close-on-exec.
func closeInherited() error {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	}
	// Kernels before 5.11: one by one.
	des, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, de := range des {
		if fd, err := strconv.Atoi(de.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}

// socketParent is where a session's sockets go: the account's runtime
// directory, else /tmp; both are emptied in every sandbox.
func socketParent() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) && (confined.Within(d, "/run") || confined.Within(d, "/tmp")) {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
	}
	return "/tmp"
}

// sidecarEnv is what the session's sidecar gets of the person's
// environment: where things are and how to speak, none of the account's
// credentials (GH_TOKEN, SSH_AUTH_SOCK, cloud keys…), which it never
// needs and its git, reading a copy the agent configures, must not have.
func sidecarEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case slices.Contains([]string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TERM"}, k),
			strings.HasPrefix(k, "LC_"), strings.HasPrefix(k, "XDG_"), strings.HasPrefix(k, "SLUICE_"):
			out = append(out, kv)
		}
	}
	return out
}
