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
	"syscall"
	"time"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/doctor"
	"github.com/sluicehq/sluice/core/journal"
)

// Main runs the sluice command with args (without the program name) and
// returns the exit code. assets is the built front end (frontend/dist).
func Main(args []string, assets fs.FS, stdout, stderr io.Writer) int {
	cmd := ""
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "":
		if DesktopAvailable() {
			return runDesktop(assets, stderr)
		}
		fmt.Fprintln(stderr, "sluice: no desktop in this build or no display; serving the web UI instead")
		return runServe(nil, assets, stdout, stderr)
	case "desktop":
		if !DesktopAvailable() {
			fmt.Fprintln(stderr, "sluice: this build has no desktop window or there is no display (DISPLAY/WAYLAND_DISPLAY); use `sluice serve`")
			return 1
		}
		return runDesktop(assets, stderr)
	case "serve":
		return runServe(args, assets, stdout, stderr)
	case "login":
		return runLogin(args, stdout, stderr)
	case "doctor":
		// The app starts its own gateway, so a stopped one only warns.
		return doctor.Command(args, stdout, stderr, doctor.Options{})
	case "workspace":
		return runWorkspace(args, os.Stdin, stdout, stderr)
	case "roots":
		return runRoots(args, stdout, stderr)
	case "run":
		return runRun(args, os.Stdin, stdout, stderr)
	case "version", "--version", "-version", "-v":
		fmt.Fprintln(stdout, "sluice", config.Version)
		return 0
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "sluice: unknown command %q\n", cmd)
		usage(stderr)
		return 2
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: sluice [command]

  (none)    open the desktop window (or serve the web UI when there is no display)
  desktop   open the desktop window
  serve     serve the web UI on loopback: sluice serve [--addr 127.0.0.1:PORT]
            (the port stays the same across restarts: webAddr in config.json,
            SLUICE_WEB_ADDR, default `+config.DefaultWebAddr+`)
  login     print a fresh one-time login link for the running `+"`sluice serve`"+`
  doctor    check the installation
  workspace grant a workspace a secret or network hosts:
            sluice workspace grant --id WS [--secret NAME] [--egress host,host] [--revoke-secret NAME]
            (the secret's value is read from standard input, never from the command line)
            stop its running commands, or destroy it (asks first; --yes does not):
            sluice workspace stop WS | destroy WS [--yes]
            choose the image workspaces run on (pinned by ID in config.json):
            sluice workspace image list | use NAME[:TAG] | pull NAME@sha256:DIGEST
  run       start an agent confined, in a private copy of this repository:
            sluice run claude | codex | gemini | copilot | opencode | qwen [ARGS...]
            sluice run [--allow-host H] [--env NAME] -- COMMAND [ARGS...]
  roots     the directories agents may name repositories under (in config.json):
            sluice roots list | add DIR... | remove DIR...
  version   print the version
`)
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
	persistEnvOverrides(cfg, log)
	a, err := Start(cfg, log)
	if errors.Is(err, journal.ErrLocked) {
		fmt.Fprintln(stderr, "sluice:", runningInstance(cfg))
		return 1
	}
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
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
