package doctor

import (
	"context"
	"flag"
	"io"

	"github.com/sluicehq/sluice/core/config"
)

// Command is the doctor subcommand of both binaries; opts carry what the
// calling program alone knows. It writes one line per check to stdout
// and returns 0 when nothing failed, 1 when a check (or loading the
// configuration) failed, and 2 on a usage error.
func Command(args []string, stdout, stderr io.Writer, opts Options) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := config.Load()
	if err != nil {
		// Without a configuration no other check can run; the failure
		// is reported in the same form as theirs.
		Print(stdout, []Result{{Name: "config", Status: Fail, Detail: err.Error()}})
		return 1
	}
	if Print(stdout, Run(context.Background(), cfg, opts)) {
		return 1
	}
	return 0
}
