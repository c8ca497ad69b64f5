package app

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/workspace"
)

// workspaceEndOptions are the flags of `sluice workspace stop|destroy`.
type workspaceEndOptions struct {
	ID      string
	Destroy bool
	// Yes skips the question (scripts); without it the person types yes.
	Yes bool
}

// runWorkspaceEnd is `sluice workspace stop ID` and `sluice workspace
// destroy ID`: the terminal's way to end a workspace's runs or remove it,
// confirmed and audited as on the Workspaces screen.
func runWorkspaceEnd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o := workspaceEndOptions{Destroy: args[0] == "destroy"}
	fs := flag.NewFlagSet("workspace "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&o.Yes, "yes", false, "do not ask for confirmation")
	// The id may come before or after --yes.
	rest := args[1:]
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		o.ID, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return 2
	}
	if o.ID == "" && fs.NArg() == 1 {
		o.ID = fs.Arg(0)
	} else if fs.NArg() > 0 || o.ID == "" {
		fmt.Fprintf(stderr, "usage: sluice workspace %s ID [--yes]\n", args[0])
		return 2
	}
	if err := workspaceEnd(o, stdin, stdout); err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	return 0
}

// errNotConfirmed is a question answered with anything but yes.
var errNotConfirmed = errors.New("not confirmed; nothing was done")

func workspaceEnd(o workspaceEndOptions, stdin io.Reader, stdout io.Writer) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	ledger, _, err := audit.SetupFor(cfg).Open()
	if err != nil {
		return err
	}
	defer ledger.Close()
	m := openWorkspaces(cfg, newLogger(io.Discard))
	if m == nil {
		return errWorkspacesOff
	}
	defer m.Close()
	w, err := m.Get(o.ID)
	if err != nil {
		return fmt.Errorf("workspace %s: %w", o.ID, err)
	}
	if !o.Yes {
		fmt.Fprint(stdout, endQuestion(w, o.Destroy))
		line, _ := bufio.NewReader(io.LimitReader(stdin, 1<<10)).ReadString('\n')
		if strings.TrimSpace(line) != "yes" {
			return errNotConfirmed
		}
	}
	j := readJournal(cfg, ledger)
	if j != nil {
		defer j.Close()
	}
	openCard := func(id string) (journal.Record, bool, bool) {
		if j == nil {
			return journal.Record{}, false, false
		}
		return openCardIn(j, id)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, workspaceEndTimeout)
	defer cancel()
	res, err := endWorkspace(ctx, m, ledger, "owner:terminal", o.ID, o.Destroy, openCard)
	if err != nil {
		return err
	}
	if o.Destroy {
		fmt.Fprintf(stdout, "workspace %s destroyed (%d running command(s) stopped)\n", o.ID, res.RunsStopped)
	} else {
		fmt.Fprintf(stdout, "workspace %s: %d running command(s) stopped\n", o.ID, res.RunsStopped)
	}
	return nil
}

// endQuestion says what stopping or destroying w will do, and asks.
func endQuestion(w *workspace.Workspace, destroy bool) string {
	owner := "its agent"
	if w.Agent != "" {
		owner = w.Agent
	}
	if !destroy {
		return fmt.Sprintf("Stop the commands running in workspace %s (%s)? %s's runs end as interrupted; the workspace and its files stay.\nType yes to stop them: ", w.ID, owner, owner)
	}
	return fmt.Sprintf("Destroy workspace %s (%s, %s)? Its files, commits and run records are deleted and %s can no longer use it; this cannot be undone.\nType yes to destroy it: ",
		w.ID, owner, w.State, owner)
}

// readJournal opens the journal to look up cards when no Sluice has it
// open; nil when one does (or there is none), and then a sealed
// workspace is not destroyed from here (see refuseOpenCard). What the
// journal records meanwhile (an expiry it notices) goes to the ledger as
// the app's own would.
func readJournal(cfg *config.Config, ledger *audit.Ledger) *journal.Journal {
	if _, err := os.Stat(cfg.JournalFile()); err != nil {
		return nil
	}
	j, err := journal.Open(cfg.JournalFile(), journal.Options{Recorder: journalRecorder{ledger}, Retention: cfg.Retention,
		PendingExpiry: config.MaxPendingExpiry, LockTimeout: 200 * time.Millisecond})
	if err != nil {
		return nil
	}
	return j
}
