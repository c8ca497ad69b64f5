package sidecar

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/doctor"
	"github.com/sluicehq/sluice/core/presence"
)

// command is one subcommand of sluice-sidecar.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands are every subcommand, in the order usage lists them. The
// runners live beside what they serve (cli_config.go, cli_token.go,
// http.go, session.go, sandbox_init.go). The table is made by a function,
// not a package-level variable, so that only a binary that calls Main
// links every runner: a package variable's initializer runs in the
// package's init, which links whatever it names into every binary that
// imports the package, sluice-sidecar-stdio included.
func commands() []command {
	return []command{
		{"stdio", "serve MCP over stdin/stdout (the default)", runStdio},
		{"doctor", "check git, directories, the app's gateway, Docker and the audit key", func(args []string, out, errs io.Writer) int {
			return doctor.Command(args, out, errs, doctor.Options{GatewayRequired: true})
		}},
		{"verify-audit", "verify an audit ledger: verify-audit FILE --pubkey PEM [--require-signed] [--expect-head SEQ:HASH] [--print-head]", audit.VerifyCommand},
		{"audit", "audit key management: audit keygen [--out PRIVPATH]", runAudit},
		{"version", "print the version", func(_ []string, out, _ io.Writer) int {
			fmt.Fprintln(out, "sluice-sidecar", config.Version)
			return 0
		}},
		{"config", "connect an MCP client: config --client NAME [--scope user|project] [--project DIR] [--write]", runConfig},
		{"token", "HTTP bearer tokens: token create --name NAME | token list | token revoke --name NAME", runToken},
		{"http", "serve MCP over streamable HTTP with bearer tokens: http --addr 127.0.0.1:PORT", runHTTP},
		{"session", "serve a confined session's agent (started by `sluice run`)", runSessionServer},
		{"relay", "inside a confined session: connect stdio to the session's sidecar", runRelay},
		{"sandbox-init", "inside a confined session: the forwarders, then the agent", runSandboxInit},
		{"pod-link", "inside a session's pod: carry its sockets over stdin/stdout to the host", runPodLink},
		{"pod-tree", "inside a session's pod: write its tree's changes since the manifest on stdin as a tar to stdout", runPodTree},
	}
}

// Main runs sluice-sidecar with args (without the program name) and
// returns the exit code: 0 ok, 1 failure, 2 usage error.
//
// Serving stdio, what every agent starts it for, is handed to
// sluice-sidecar-stdio when it sits beside this binary (execServing): the
// same process, with the same descriptors and environment, running a
// binary that links only what serving needs, so an idle session keeps
// less resident. Without it this binary serves, as it always did.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		execServing()
		return runStdio(nil, stdout, stderr)
	}
	switch args[0] {
	case "--version", "-version", "-v":
		args[0] = "version"
	case "-h", "--help", "help":
		usage(stdout)
		return 0
	}
	if strings.HasPrefix(args[0], "-") {
		// Flags without a subcommand belong to the stdio server.
		execServing()
		return runStdio(args, stdout, stderr)
	}
	if args[0] == "stdio" {
		execServing()
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "sluice-sidecar: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: sluice-sidecar [command] [flags]")
	fmt.Fprintln(w, "\nWith no command, serves MCP over stdio. Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-14s %s\n", c.name, c.summary)
	}
}

func newLogger(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// serving is what every transport opens before it serves: the
// configuration, the audit ledger and this process's presence file.
type serving struct {
	log      *slog.Logger
	cfg      *config.Config
	live     *config.Live
	ledger   *audit.Ledger
	presence *presence.File
}

// openServing fails closed: a sidecar that cannot keep the record does not
// serve.
func openServing(stderr io.Writer, client presence.ClientInfo) (*serving, bool) {
	s := &serving{log: newLogger(stderr)}
	var err error
	if s.cfg, err = config.Load(); err != nil {
		fmt.Fprintln(stderr, "sluice-sidecar:", err)
		return nil, false
	}
	// Roots, the workspace image and runtime and the expiry follow
	// config.json while the process runs: the person adds a root without
	// restarting their agents.
	s.live = config.NewLive(s.cfg)
	if s.ledger, err = OpenLedger(s.cfg); err != nil {
		fmt.Fprintln(stderr, "sluice-sidecar:", err)
		return nil, false
	}
	s.presence = openPresence(s.cfg, s.log, client)
	return s, true
}

func (s *serving) close() {
	if s.presence != nil {
		s.presence.Close()
	}
	s.ledger.Close()
}

// ServeStdio is sluice-sidecar-stdio's whole work: serve MCP over stdio
// with args, the flags of `sluice-sidecar stdio`, optionally after the
// word stdio itself (the serving binary is started with sluice-sidecar's
// own arguments), or prints its version as sluice-sidecar does. It links
// none of the other commands.
func ServeStdio(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version" || args[0] == "-v") {
		fmt.Fprintln(stdout, ServingBinary, config.Version)
		return 0
	}
	if !acceptHandoff(stderr) {
		return 1
	}
	if len(args) > 0 && args[0] == "stdio" {
		args = args[1:]
	}
	return runStdio(args, stdout, stderr)
}

func runStdio(args []string, _ io.Writer, stderr io.Writer) int {
	fs := flag.NewFlagSet("stdio", flag.ContinueOnError)
	fs.SetOutput(stderr)
	toolsets := fs.String("toolsets", "", "comma-separated toolsets to enable (default from config: git,propose,workspace); workspace only when a workspace image is configured")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		// `sluice-sidecar stdio extra`, or the serving binary started with
		// a command (`sluice-sidecar-stdio config`), which it does not
		// have: a mistake, not a session to serve.
		fmt.Fprintf(stderr, "sluice-sidecar: stdio takes flags only, not %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	capProcs()
	env, ok := openServing(stderr, presence.ClientInfo{})
	if !ok {
		return 1
	}
	defer env.close()
	log, cfg := env.log, env.cfg
	opts := Options{Config: cfg, Live: env.live, Logger: log, Ledger: env.ledger, Presence: env.presence}
	if *toolsets != "" {
		opts.Toolsets = splitComma(*toolsets)
		if err := checkToolsets(opts.Toolsets); err != nil {
			fmt.Fprintln(stderr, "sluice-sidecar:", err)
			return 2
		}
		opts.Toolsets = fitToolsets(cfg, opts.Toolsets)
	}
	s, err := New(opts)
	if err != nil {
		fmt.Fprintln(stderr, "sluice-sidecar:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// stdout is the protocol: nothing else may ever be written to it.
	if err := s.Server().Run(ctx, &StdioTransport{In: os.Stdin, Out: os.Stdout, Log: log}); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("stdio server stopped", "err", err)
		return 1
	}
	return 0
}

func splitComma(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func runAudit(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "keygen" {
		fmt.Fprintln(stderr, "usage: sluice-sidecar audit keygen [--out PRIVPATH] [--pub PUBPATH]")
		return 2
	}
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(stderr, "sluice-sidecar:", err)
		return 1
	}
	if err := config.EnsurePrivateDir(cfg.ConfigDir); err != nil {
		fmt.Fprintln(stderr, "sluice-sidecar:", err)
		return 1
	}
	return audit.KeygenCommand(args[1:], cfg.AuditKeyFile, cfg.AuditPublicKeyFile(), stdout, stderr)
}
