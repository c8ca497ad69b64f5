package sidecar

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/presence"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/session"
)

// A confined session's sidecar runs outside the agent's sandbox, in a view
// of the machine that differs from the person's in one place: the
// repository's path holds the session's copy, as the agent sees it, so
// every read tool answers for the files the agent reads and edits. The
// person's repository itself is seen read-only at the session's origin
// directory, and a proposal for the repository is pinned there: it is the
// person's branch that the proposal lands on. The app takes the content
// of a commit from the copy (it knows the session by the token).

// SessionView is the confined session a sidecar serves.
type SessionView struct {
	ID string
	// Repo is the person's repository path, which holds the copy in this
	// sidecar's view; Origin is where the person's repository is seen.
	Repo, Origin string
}

// pinFor pins args in repo; a session's own repository is pinned where
// the person's repository is seen.
func (s *Sidecar) pinFor(ctx context.Context, g *gitResolver, roots gitx.Roots, repo string, args proposal.Args) (proposal.Pinned, error) {
	v := s.session
	if v == nil || repo != v.Repo {
		return pin(ctx, g, roots, repo, args)
	}
	oroots := append(gitx.Roots{v.Origin}, roots...)
	og, err := newGitResolver(oroots)
	if err != nil {
		return proposal.Pinned{}, err
	}
	pinned, err := pin(ctx, og, oroots, v.Origin, args)
	if err != nil {
		return pinned, err
	}
	// Paths of other repositories pinned through the origin (a submodule
	// inside it) are named by their place in the person's repository.
	if len(pinned.Repos) > 0 {
		repos := map[string]map[string]string{}
		for p, refs := range pinned.Repos {
			if session.Within(p, v.Origin) {
				p = v.Repo + strings.TrimPrefix(p, v.Origin)
			}
			repos[p] = refs
		}
		pinned.Repos = repos
	}
	return pinned, nil
}

func runSessionServer(args []string, _ io.Writer, stderr io.Writer) int {
	fs := flag.NewFlagSet("session", flag.ContinueOnError)
	fs.SetOutput(stderr)
	id := fs.String("session", "", "the session's id")
	agent := fs.String("agent", "", "the identity the session's proposals carry")
	repo := fs.String("repo", "", "the person's repository (holds the copy in this view)")
	origin := fs.String("origin", "", "where the person's repository is seen")
	sets := fs.String("toolsets", "", "toolsets (default: the configured ones)")
	startedFD := fs.Int("started-fd", -1, "a descriptor to write one byte to, and close, once this runs (the launcher's sign that the sandbox's set-up is over)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	session.SayStarted(*startedFD)
	if !proposal.ValidSessionID(*id) || !proposal.ValidAgent(*agent) || !filepath.IsAbs(*repo) || !filepath.IsAbs(*origin) {
		fmt.Fprintln(stderr, "sluice-sidecar session: --session, --agent, --repo and --origin are required")
		return 2
	}
	// The listening socket is fd 3, made by the launcher before the agent
	// started, so the agent never finds it missing.
	lf := os.NewFile(3, "mcp.sock")
	ln, err := net.FileListener(lf)
	if err != nil {
		fmt.Fprintln(stderr, "sluice-sidecar session: no listener on fd 3:", err)
		return 2
	}
	// The session's token arrives on stdin, never in arguments or the
	// environment; stdin stays open while the launcher lives.
	in := bufio.NewReader(os.Stdin)
	token, err := in.ReadString('\n')
	token = strings.TrimSpace(token)
	if err != nil || !strings.HasPrefix(token, "sluice_session_") {
		fmt.Fprintln(stderr, "sluice-sidecar session: no session token on stdin")
		return 2
	}
	env, ok := openServing(stderr, presence.ClientInfo{Name: *agent})
	if !ok {
		return 1
	}
	defer env.close()
	opts := Options{Config: env.cfg, Logger: env.log, Ledger: env.ledger, Presence: env.presence, Identity: *agent,
		Session: &SessionView{ID: *id, Repo: *repo, Origin: *origin}}
	path := env.cfg.GatewayFile()
	gw := &gatewayClients{}
	opts.Gateway = func() (*gateway.Client, error) { return gw.client(path, token) }
	if *sets != "" {
		opts.Toolsets = splitComma(*sets)
		if err := checkToolsets(opts.Toolsets); err != nil {
			fmt.Fprintln(stderr, "sluice-sidecar:", err)
			return 2
		}
		opts.Toolsets = fitToolsets(env.cfg, opts.Toolsets)
	}
	if _, err := New(opts); err != nil {
		fmt.Fprintln(stderr, "sluice-sidecar:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// The launcher is gone when its end of stdin closes.
		io.Copy(io.Discard, in)
		stop()
	}()
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	var wg sync.WaitGroup
	for {
		conn, err := ln.Accept()
		if err != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			// One MCP server per connection, as one stdio sidecar per
			// process: an agent may start its MCP server more than once.
			s, err := New(opts)
			if err != nil {
				env.log.Error("session sidecar", "err", err)
				return
			}
			if err := s.Server().Run(ctx, &StdioTransport{In: conn, Out: conn, Log: env.log}); err != nil && !errors.Is(err, context.Canceled) {
				env.log.Info("session connection ended", "err", err)
			}
		}()
	}
	wg.Wait()
	return 0
}

// runRelay connects the agent's MCP stdio to the session's sidecar through
// the socket bound into the sandbox.
func runRelay(args []string, stdout io.Writer, stderr io.Writer) int {
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sock := fs.String("socket", session.InsideMCP, "the session sidecar's socket")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	conn, err := net.Dial("unix", *sock)
	if err != nil {
		fmt.Fprintln(stderr, "sluice-sidecar relay: the session's sidecar cannot be reached:", err)
		return 1
	}
	defer conn.Close()
	done := make(chan struct{})
	go func() {
		io.Copy(conn, os.Stdin)
		if uc, ok := conn.(*net.UnixConn); ok {
			uc.CloseWrite()
		}
	}()
	go func() {
		io.Copy(stdout, conn)
		close(done)
	}()
	<-done
	return 0
}
