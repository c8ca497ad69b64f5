package sidecar

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/connect"
	"github.com/sluicehq/sluice/core/tokens"
)

func runConfig(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	client := fs.String("client", "", "the client: "+strings.Join(connect.ClientNames(), ", "))
	scope := fs.String("scope", "user", "user or project")
	project := fs.String("project", "", "the project directory for --scope project (default: the current directory); with user scope, a project whose own Sluice entry is removed so that one remains (Claude Code's .mcp.json)")
	write := fs.Bool("write", false, "write the configuration (without it, only print what would be written)")
	toolsets := fs.String("toolsets", "", "comma-separated toolsets the client gets (default from config)")
	command := fs.String("command", "", "absolute path of sluice-sidecar to run (default: this executable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *client == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: sluice-sidecar config --client NAME [--scope user|project] [--project DIR] [--write]")
		fmt.Fprintln(stderr, "clients:", strings.Join(connect.ClientNames(), ", "))
		return 2
	}
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(stderr, "sluice-sidecar:", err)
		return 1
	}
	opts := connect.Options{Client: *client, Scope: connect.Scope(*scope), Command: *command, Toolsets: cfg.Toolsets}
	if *toolsets != "" {
		opts.Toolsets = splitComma(*toolsets)
	}
	if opts.Command == "" {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(stderr, "sluice-sidecar: cannot find this executable's path; pass --command:", err)
			return 1
		}
		opts.Command = exe
	}
	if opts.Scope != connect.ScopeProject && *project != "" {
		// User scope: the project whose entries are reconciled (Claude
		// Code's .mcp.json there loses its Sluice entry).
		if abs, err := filepath.Abs(*project); err == nil {
			opts.ProjectDir = abs
		}
	}
	if opts.Scope == connect.ScopeProject {
		dir := *project
		if dir == "" {
			dir, _ = os.Getwd()
		}
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		opts.ProjectDir = dir
	}
	plan, err := connect.Make(opts)
	if err != nil {
		fmt.Fprintln(stderr, "sluice-sidecar:", err)
		if errors.Is(err, connect.ErrUnknownClient) || errors.Is(err, connect.ErrScope) || errors.Is(err, connect.ErrBadOptions) {
			return 2
		}
		return 1
	}
	plan.Describe(stdout)
	if !*write {
		if plan.Changed() || plan.TokenName != "" {
			fmt.Fprintln(stdout, "\nDry run: nothing was written. Run again with --write to apply.")
		}
		return 0
	}
	res, err := plan.Apply(time.Now())
	if res != nil {
		for i, w := range res.Written {
			fmt.Fprintf(stdout, "wrote %s\n", w)
			if i < len(res.Backups) {
				fmt.Fprintf(stdout, "  backup: %s\n", res.Backups[i])
			}
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "sluice-sidecar:", err)
		return 1
	}
	if plan.TokenName != "" {
		return createClientToken(stdout, stderr, cfg, plan.TokenName)
	}
	if !plan.Changed() {
		fmt.Fprintln(stdout, "\nNothing to change: the configuration is already in place.")
	} else {
		fmt.Fprintf(stdout, "\nRestart %s to pick up Sluice.\n", plan.Title)
	}
	return 0
}

// createClientToken makes the HTTP token a client needs (ChatGPT) and
// shows it once.
func createClientToken(stdout, stderr io.Writer, cfg *config.Config, name string) int {
	secret, err := tokens.Open(tokens.DefaultPath(cfg)).Create(name)
	if errors.Is(err, tokens.ErrExists) {
		fmt.Fprintf(stdout, "\nA token named %q already exists (tokens are shown only once). To make a new one:\n  sluice-sidecar token revoke --name %s\n  then run this command again.\n", name, name)
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "sluice-sidecar:", err)
		return 1
	}
	fmt.Fprintf(stdout, "\nToken for %s (shown only this once; use it as TOKEN above):\n%s\n", name, secret)
	return 0
}
