// Command sluice-sidecar is Sluice's MCP server for one agent session.
// With no arguments it serves MCP over stdio; see `sluice-sidecar help`.
package main

import (
	"os"

	"github.com/sluicehq/sluice/sidecar"
)

func main() {
	os.Exit(sidecar.Main(os.Args[1:], os.Stdout, os.Stderr))
}
