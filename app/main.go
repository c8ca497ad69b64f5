package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/doctor"
	"github.com/sluicehq/sluice/core/doctor/engine"
	"github.com/sluicehq/sluice/core/journal"
)

// appCommand is one subcommand of sluice.
type appCommand struct {
	// names are the command and its aliases; "" is what runs without one.
	names []string
	// usage is what `sluice help` says of it: the first line beside its
	// name, the others below it.
	usage []string
	run   func(c cmdIO, args []string) int
}

// cmdIO is what a command is given besides its arguments: the built front
// end and the standard streams.
type cmdIO struct {
	assets         fs.FS
	stdin          *os.File
	stdout, stderr io.Writer
}

// appCommands are every subcommand, in the order usage lists them; `help`
// (-h, --help) prints that list.
var appCommands = []appCommand{
	{[]string{""}, []string{"open the desktop window (or serve the web UI when there is no display)"}, func(c cmdIO, _ []string) int {
		if DesktopAvailable() {
			return runDesktop(c.assets, c.stderr)
		}
		fmt.Fprintln(c.stderr, "sluice: no desktop in this build or no display; serving the web UI instead")
		return runServe(nil, c.assets, c.stdout, c.stderr)
	}},
	{[]string{"desktop"}, []string{"open the desktop window"}, func(c cmdIO, _ []string) int {
		if !DesktopAvailable() {
			fmt.Fprintln(c.stderr, "sluice: this build has no desktop window or there is no display (DISPLAY/WAYLAND_DISPLAY); use `sluice serve`")
			return 1
		}
		return runDesktop(c.assets, c.stderr)
	}},
	{[]string{"serve"}, []string{
		"serve the web UI on loopback: sluice serve [--addr 127.0.0.1:PORT]",
		"(the port stays the same across restarts: webAddr in config.json,",
		"SLUICE_WEB_ADDR, default " + config.DefaultWebAddr + ")",
	}, func(c cmdIO, args []string) int { return runServe(args, c.assets, c.stdout, c.stderr) }},
	{[]string{"remote"}, []string{
		"serve remote connectors (ChatGPT, Claude.ai) through your tunnel, with the web UI on loopback:",
		"sluice remote --public-url https://NAME.example.com [--addr 127.0.0.1:8766] [--trusted-proxy CIDR,...]",
	}, func(c cmdIO, args []string) int { return runRemote(args, c.assets, c.stdout, c.stderr) }},
	{[]string{"login"}, []string{"print a fresh one-time login link for the running `sluice serve`"},
		func(c cmdIO, args []string) int { return runLogin(args, c.stdout, c.stderr) }},
	{[]string{"doctor"}, []string{"check the installation"}, func(c cmdIO, args []string) int {
		// The app starts its own gateway, so a stopped one only warns.
		return doctor.Command(args, c.stdout, c.stderr, doctor.Options{Engine: engine.Checks})
	}},
	{[]string{"workspace"}, []string{
		"grant a workspace a secret or network hosts:",
		"sluice workspace grant --id WS [--secret NAME] [--egress host,host] [--revoke-secret NAME]",
		"(the secret's value is read from standard input, never from the command line)",
		"stop its running commands, or destroy it (asks first; --yes does not):",
		"sluice workspace stop WS | destroy WS [--yes]",
		"choose the image workspaces run on (pinned by ID in config.json):",
		"sluice workspace image list | use NAME[:TAG] | pull NAME@sha256:DIGEST",
	}, func(c cmdIO, args []string) int { return runWorkspace(args, c.stdin, c.stdout, c.stderr) }},
	{[]string{"run"}, []string{
		"start an agent confined, in a private copy of this repository:",
		"sluice run claude | codex | gemini | copilot | opencode | qwen [ARGS...]",
		"sluice run [--allow-host H] [--env NAME] -- COMMAND [ARGS...]",
	}, func(c cmdIO, args []string) int { return runRun(args, c.stdin, c.stdout, c.stderr) }},
	{[]string{"roots"}, []string{
		"the directories agents may name repositories under (in config.json):",
		"sluice roots list | add DIR... | remove DIR...",
	}, func(c cmdIO, args []string) int { return runRoots(args, c.stdout, c.stderr) }},
	{[]string{"version", "--version", "-version", "-v"}, []string{"print the version"}, func(c cmdIO, _ []string) int {
		fmt.Fprintln(c.stdout, "sluice", config.Version)
		return 0
	}},
}

// Main runs the sluice command with args (without the program name) and
// returns the exit code. assets is the built front end (frontend/dist).
func Main(args []string, assets fs.FS, stdout, stderr io.Writer) int {
	cmd := ""
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	}
	for _, c := range appCommands {
		if slices.Contains(c.names, cmd) {
			return c.run(cmdIO{assets: assets, stdin: os.Stdin, stdout: stdout, stderr: stderr}, args)
		}
	}
	fmt.Fprintf(stderr, "sluice: unknown command %q\n", cmd)
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, "usage: sluice [command]\n\n")
	for _, c := range appCommands {
		name := c.names[0]
		if name == "" {
			name = "(none)"
		}
		fmt.Fprintf(w, "  %-9s %s\n", name, c.usage[0])
		for _, line := range c.usage[1:] {
			fmt.Fprintf(w, "            %s\n", line)
		}
	}
}

func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// DesktopAvailable reports whether this binary can open a window here.
func DesktopAvailable() bool {
	return desktopBuild && (os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "")
}

func runServe(args []string, assets fs.FS, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "loopback address for the web UI (default: webAddr in config.json, SLUICE_WEB_ADDR, or "+config.DefaultWebAddr+")")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := newLogger(stderr)
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	listen, fixed := cfg.WebAddr, cfg.WebAddrConfigured
	if *addr != "" {
		if err := config.CheckLoopbackAddr(*addr); err != nil {
			fmt.Fprintln(stderr, "sluice: --addr:", err)
			return 2
		}
		listen, fixed = *addr, true
	}
	a, code := startFor(cfg, log, stderr)
	if a == nil {
		return code
	}
	defer a.Close()
	web, token, err := NewWeb(a, assets, listen)
	if err != nil && !fixed {
		// The default port is taken by something else: a free one still
		// serves, only an open tab will not find it again.
		log.Warn("the web UI's usual address is taken; serving on a free port", "addr", listen, "err", err)
		web, token, err = NewWeb(a, assets, "127.0.0.1:0")
	}
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 2
	}
	if err := web.Publish(UIEndpointFile(cfg)); err != nil {
		fmt.Fprintln(stderr, "sluice: publish web.json:", err)
		return 1
	}
	defer web.Withdraw(UIEndpointFile(cfg))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- web.Serve() }()
	fmt.Fprintf(stdout, "Sluice %s is serving its UI at http://%s\nLogin: %s\n(the link works once, within %d minutes; `%s` prints a new one)\n",
		config.Version, web.Addr(), web.LoginURL(token), int(loginTTL/time.Minute), loginCommand())
	select {
	case <-ctx.Done():
	case err := <-errc:
		if err != nil {
			fmt.Fprintln(stderr, "sluice:", err)
			return 1
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	web.Shutdown(sctx)
	return 0
}

// startFor starts the app for a command that serves it, or says on stderr
// why it cannot (another Sluice holds the journal, or anything else) and
// returns the exit code.
func startFor(cfg *config.Config, log *slog.Logger, stderr io.Writer) (*App, int) {
	persistEnvOverrides(cfg, log)
	a, err := Start(cfg, log)
	if errors.Is(err, journal.ErrLocked) {
		fmt.Fprintln(stderr, "sluice:", runningInstance(cfg))
		return nil, 1
	}
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return nil, 1
	}
	return a, 0
}
