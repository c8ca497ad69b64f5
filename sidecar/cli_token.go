package sidecar

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/tokens"
)

const tokenUsage = "usage: sluice-sidecar token create --name NAME | token list | token revoke --name NAME"

func runToken(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, tokenUsage)
		return 2
	}
	fs := flag.NewFlagSet("token "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "the token's name: the agent's identity in proposals and the ledger")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *name == "" && fs.NArg() == 1 {
		*name = fs.Arg(0)
	} else if fs.NArg() > 0 {
		fmt.Fprintln(stderr, tokenUsage)
		return 2
	}
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(stderr, "sluice-sidecar:", err)
		return 1
	}
	store := tokens.Open(tokens.DefaultPath(cfg))
	switch args[0] {
	case "create":
		if *name == "" {
			fmt.Fprintln(stderr, tokenUsage)
			return 2
		}
		secret, err := store.Create(*name)
		if err != nil {
			fmt.Fprintln(stderr, "sluice-sidecar:", err)
			if errors.Is(err, tokens.ErrBadName) {
				return 2
			}
			return 1
		}
		fmt.Fprintln(stdout, secret)
		fmt.Fprintf(stderr, "Token %q created. It is shown only this once: give it to the agent as\n  Authorization: Bearer <token>\nRevoke it with: sluice-sidecar token revoke --name %s\n", *name, *name)
		return 0
	case "list":
		list, err := store.List()
		if err != nil {
			fmt.Fprintln(stderr, "sluice-sidecar:", err)
			return 1
		}
		if len(list) == 0 {
			fmt.Fprintln(stdout, "no tokens; create one with: sluice-sidecar token create --name NAME")
			return 0
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tCREATED")
		for _, t := range list {
			fmt.Fprintf(tw, "%s\t%s\n", t.Name, t.CreatedAt.Format("2006-01-02 15:04:05Z07:00"))
		}
		tw.Flush()
		return 0
	case "revoke":
		if *name == "" {
			fmt.Fprintln(stderr, tokenUsage)
			return 2
		}
		if err := store.Revoke(*name); err != nil {
			fmt.Fprintln(stderr, "sluice-sidecar:", err)
			return 1
		}
		fmt.Fprintf(stdout, "revoked %s\n", *name)
		return 0
	}
	fmt.Fprintln(stderr, tokenUsage)
	return 2
}
