package sidecar

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sluicehq/sluice/core/session/podlink"
)

// socketFlags is the repeatable --socket NAME=PATH.
type socketFlags map[string]string

func (s socketFlags) String() string { return "" }

func (s socketFlags) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	switch {
	case !ok || path == "":
		return errors.New("want NAME=PATH")
	case !podlink.ValidName(name):
		return fmt.Errorf("invalid name %q (1 to 64 letters, digits, '-', '_', '.')", name)
	case s[name] != "":
		return fmt.Errorf("name %q given twice", name)
	}
	s[name] = path
	return nil
}

// runPodLink is the pod's end of a confined session's link (see package
// podlink): started in the pod's keeper container over exec, it listens
// on each --socket path and carries every connection over its stdin and
// stdout to the host. It exits 0 when stdin ends (the host went away),
// with its sockets removed.
func runPodLink(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pod-link", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sockets := socketFlags{}
	fs.Var(sockets, "socket", "NAME=PATH: listen on the Unix socket PATH and carry its connections as NAME (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if len(sockets) == 0 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: sluice-sidecar pod-link --socket NAME=PATH [--socket NAME=PATH…]")
		return 2
	}
	// Only this user (the agent runs as it) may connect: the sockets are
	// made 0600 from the start, not chmod'ed after.
	syscall.Umask(0o177)
	listeners := map[string]net.Listener{}
	cleanup := func() {
		for name, ln := range listeners {
			_ = ln.Close()
			_ = os.Remove(sockets[name])
		}
	}
	for name, path := range sockets {
		ln, err := listenUnix(path)
		if err != nil {
			fmt.Fprintln(stderr, "sluice-sidecar pod-link:", err)
			cleanup()
			return 1
		}
		listeners[name] = ln
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	err := podlink.Forward(ctx, stdioLink{r: os.Stdin, w: stdout}, listeners)
	cleanup()
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "sluice-sidecar pod-link:", err)
		return 1
	}
	return 0
}

// listenUnix listens on path, first removing a socket a previous link left
// there; anything else at path is refused, not removed.
func listenUnix(path string) (net.Listener, error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	// Bound and listening under another name first, then renamed into
	// place: once path exists, a connection to it is accepted (a socket
	// file that exists before its listen refuses connections).
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	_ = os.Remove(tmp)
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// stdioLink is the link: stdin and stdout of this process. Closing it
// closes stdin, so that the mux's reader ends.
type stdioLink struct {
	r *os.File
	w io.Writer
}

func (l stdioLink) Read(p []byte) (int, error)  { return l.r.Read(p) }
func (l stdioLink) Write(p []byte) (int, error) { return l.w.Write(p) }
func (l stdioLink) Close() error                { return l.r.Close() }
