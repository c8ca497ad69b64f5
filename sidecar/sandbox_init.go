package sidecar

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/sluicehq/sluice/core/session"
)

// The first process inside a confined session's sandbox. The sandbox has
// no network but its own loopback; the only way out is the egress proxy,
// which the launcher serves on a Unix socket bound into the sandbox. This
// process forwards, on the sandbox's loopback, the proxy port (HTTPS_PROXY
// points there) and each loopback endpoint of the session's network (a
// model served on the host's 127.0.0.1, which a client may reach without
// its proxy), each through the socket; then it runs the agent, with the
// session's terminal as its controlling terminal, passes signals on and
// exits as the agent does.

func runSandboxInit(args []string, _ io.Writer, stderr io.Writer) int {
	// First of all: a signal the launcher passes on before the agent runs
	// must not be lost (as the first process of its PID namespace, this
	// one gets no signal it does not handle).
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	// Then a session keyring of the sandbox's own, never the person's.
	// Keyrings are per thread: this goroutine keeps this thread, and the
	// agent is started from it, so it inherits the new one. This is a
	// second lock, not the first: under bubblewrap the launcher left the
	// person's keyring before bwrap started (and fails if it cannot), and
	// a container never had it (runc gives each its own, gVisor's kernel
	// has no keys of the host's and refuses the call). So a refusal here
	// is no error.
	runtime.LockOSThread()
	_ = session.LeaveSessionKeyring()
	fs := flag.NewFlagSet("sandbox-init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("proxy-port", session.ProxyPort, "loopback port of the HTTP proxy")
	egress := fs.String("egress", session.InsideEgress, "the egress proxy's socket")
	var forwards []string
	fs.Func("forward", "host:port on loopback to forward through the proxy (repeatable)", func(v string) error {
		forwards = append(forwards, v)
		return nil
	})
	size := fs.String("size", "", "ROWSxCOLS: the terminal's size, set before the agent starts")
	startedFD := fs.Int("started-fd", -1, "a descriptor to write one byte to, and close, once this runs (the launcher's sign that the sandbox's set-up is over)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	session.SayStarted(*startedFD)
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(stderr, "sluice-sidecar sandbox-init: no command")
		return 2
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(stderr, "sluice-sidecar sandbox-init: proxy port:", err)
		return 1
	}
	go serveForward(ln, func(c net.Conn) { splice(c, *egress, "") })
	for _, f := range forwards {
		host, p, err := net.SplitHostPort(f)
		if err != nil {
			fmt.Fprintln(stderr, "sluice-sidecar sandbox-init: --forward", f, err)
			return 2
		}
		if host == "localhost" {
			host = "127.0.0.1"
		}
		fl, err := net.Listen("tcp", net.JoinHostPort(host, p))
		if err != nil {
			fmt.Fprintln(stderr, "sluice-sidecar sandbox-init: forward", f, err)
			return 1
		}
		target := f
		go serveForward(fl, func(c net.Conn) { splice(c, *egress, target) })
	}
	if *size != "" && term.IsTerminal(int(os.Stdin.Fd())) {
		// A container's console gets the person's size from the Engine
		// only after it starts; the agent's first look at it must not
		// find it without one.
		var rows, cols uint16
		if _, err := fmt.Sscanf(*size, "%dx%d", &rows, &cols); err != nil || rows == 0 || cols == 0 {
			fmt.Fprintln(stderr, "sluice-sidecar sandbox-init: --size wants ROWSxCOLS")
			return 2
		}
		unix.IoctlSetWinsize(int(os.Stdin.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	}
	start := func(attr *syscall.SysProcAttr) (*exec.Cmd, error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.SysProcAttr = attr
		return cmd, cmd.Start()
	}
	attr := &syscall.SysProcAttr{Setsid: true}
	if term.IsTerminal(int(os.Stdin.Fd())) {
		if tty, err := os.Open("/dev/tty"); err == nil {
			// A container's console is already this process's
			// controlling terminal: the agent's process group takes
			// its foreground (^C reaches the agent).
			tty.Close()
			attr = &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: 0}
		} else {
			// The session's terminal (under bubblewrap, a new session
			// without one) becomes the agent's own.
			attr.Setctty, attr.Ctty = true, 0
		}
	}
	cmd, err := start(attr)
	if err != nil && (attr.Setctty || attr.Foreground) && (errors.Is(err, syscall.ENOTTY) || errors.Is(err, syscall.EPERM)) {
		// A terminal that cannot be made a controlling one (gVisor as
		// Debian packages it passes the console in as a host
		// descriptor): the agent still reads and writes it, in a
		// process group of its own.
		cmd, err = start(&syscall.SysProcAttr{Setpgid: true})
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice: cannot start %s in the session: %v\n", argv[0], err)
		return 127
	}
	// A signal that came before the agent ran waits in sigs, and reaches
	// it now.
	go func() {
		for s := range sigs {
			// The agent leads its own process group.
			syscall.Kill(-cmd.Process.Pid, s.(syscall.Signal))
		}
	}()
	return reapUntil(cmd.Process.Pid)
}

// reapUntil waits for every child (as the namespace's first process, the
// agent's orphans are this process's to reap) until the agent exits, and
// returns the agent's exit code as a shell would.
func reapUntil(agent int) int {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 1
		}
		if pid != agent {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

func serveForward(ln net.Listener, handle func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go handle(c)
	}
}

// splice connects c to the egress proxy. With a target, the proxy is
// asked for a tunnel to it first (CONNECT), so that the bytes that follow
// are the client's own, whatever protocol it speaks.
func splice(c net.Conn, egress, target string) {
	defer c.Close()
	up, err := net.Dial("unix", egress)
	if err != nil {
		return
	}
	defer up.Close()
	var from io.Reader = up
	if target != "" {
		fmt.Fprintf(up, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		br := bufio.NewReader(up)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != http.StatusOK {
			return
		}
		from = br
	}
	done := make(chan struct{})
	go func() {
		io.Copy(up, c)
		if uc, ok := up.(*net.UnixConn); ok {
			uc.CloseWrite()
		}
		close(done)
	}()
	io.Copy(c, from)
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	<-done
}
