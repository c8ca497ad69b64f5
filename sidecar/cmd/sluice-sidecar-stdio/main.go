// Command sluice-sidecar-stdio serves MCP over stdio for one agent session
// and does nothing else. sluice-sidecar replaces itself with it (execve:
// the same process) when an agent starts it to serve stdio and this binary
// is installed beside it, so that an idle session holds only what serving
// links; agents and their configurations name sluice-sidecar, never this.
// It takes the arguments of `sluice-sidecar [stdio] [flags]`.
package main

import (
	"os"

	"github.com/sluicehq/sluice/sidecar"
)

func main() {
	os.Exit(sidecar.ServeStdio(os.Args[1:], os.Stdout, os.Stderr))
}
