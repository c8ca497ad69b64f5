package app

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
)

// runWorkspace is `sluice workspace grant …`: the terminal's way to make a
// human-only grant. The secret's value comes from standard input so that
// it never appears in a process list or a shell history.
func runWorkspace(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "grant" {
		fmt.Fprintln(stderr, "usage: sluice workspace grant --id WS [--secret NAME] [--egress host,host] [--revoke-secret NAME]")
		return 2
	}
	fs := flag.NewFlagSet("workspace grant", flag.ContinueOnError)
	fs.SetOutput(stderr)
	id := fs.String("id", "", "the workspace")
	secret := fs.String("secret", "", "grant a secret under this environment variable name; its value is read from standard input")
	revoke := fs.String("revoke-secret", "", "take a secret away")
	egress := fs.String("egress", "", "comma-separated hosts (host or host:port) the workspace's runs may reach through Sluice's proxy; \"none\" takes access away")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	g := GrantRequest{ID: *id, SecretName: *secret, RevokeSecret: *revoke}
	switch *egress {
	case "":
	case "none":
		g.Egress = []string{}
	default:
		g.Egress = strings.Split(*egress, ",")
	}
	if g.SecretName != "" {
		line, err := bufio.NewReader(io.LimitReader(stdin, 64<<10)).ReadString('\n')
		if err != nil && err != io.EOF {
			fmt.Fprintln(stderr, "sluice: reading the secret:", err)
			return 1
		}
		g.SecretValue = strings.TrimRight(line, "\r\n")
	}
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	ledger, _, err := audit.SetupFor(cfg).Open()
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	defer ledger.Close()
	m := openWorkspaces(cfg, newLogger(stderr))
	if m != nil {
		defer m.Close()
	}
	if err := grantWorkspace(m, ledger, "owner:terminal", g); err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	fmt.Fprintln(stdout, "granted")
	return 0
}
