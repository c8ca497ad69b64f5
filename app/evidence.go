package app

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/core/proposal"
)

// CardEvidence is Sluice's own record of the workspace runs behind a
// proposal: read by the app from the workspace it manages, never taken
// from the agent's words, and shown apart from them.
type CardEvidence struct {
	WorkspaceID string             `json:"workspaceId"`
	Runs        []WorkspaceRunView `json:"runs"`
	// Failed: a run failed (a non-zero exit, out of memory, a time limit,
	// a failed test); FailedRuns counts them and LastFailed says whether
	// the last one did.
	Failed     bool `json:"failed"`
	FailedRuns int  `json:"failedRuns"`
	LastFailed bool `json:"lastFailed"`
	// invisible lists the lines of the runs' commands and output that
	// held invisible characters (shown above as ⟨U+XXXX⟩); the card lists
	// them with its diff's.
	invisible contentFlags
}

// workspaceRef is where a sealed workspace's commits are handed off.
const workspaceRef = "refs/sluice/proposals/"

// mergedWorkspace is the id of the workspace whose handed-off commits p
// merges, if it merges one.
func mergedWorkspace(p proposal.Proposal) (string, bool) {
	source, ok := p.MergeSource()
	if !ok {
		return "", false
	}
	id, ok := strings.CutPrefix(source, workspaceRef)
	return id, ok && proposal.ValidID(id)
}

// evidenceFor is the run evidence of the workspace a proposal merges, or
// nil when it merges none (or the workspace is gone).
func (a *App) evidenceFor(p proposal.Proposal) *CardEvidence {
	if a.workspaces == nil {
		return nil
	}
	id, ok := mergedWorkspace(p)
	if !ok {
		return nil
	}
	runs, err := a.workspaces.Runs(id)
	if err != nil {
		return nil
	}
	ev := &CardEvidence{WorkspaceID: id, Runs: []WorkspaceRunView{}}
	if len(runs) > maxRunsShown {
		runs = runs[len(runs)-maxRunsShown:]
	}
	for i, r := range runs {
		failed := r.ExitCode != 0 || r.OOMKilled || r.TimedOut || (r.Tests != nil && r.Tests.Failed+r.Tests.Errors > 0)
		if failed {
			ev.FailedRuns++
		}
		ev.LastFailed = failed && i == len(runs)-1
		ev.Runs = append(ev.Runs, visibleRun(runView(r), i+1, &ev.invisible))
	}
	ev.Failed = ev.FailedRuns > 0
	return ev
}

// visibleRun shows the command and output of the n-th run listed with
// every invisible character written as ⟨U+XXXX⟩: what a run printed is
// the agent's text as much as its reason is.
func visibleRun(rv WorkspaceRunView, n int, f *contentFlags) WorkspaceRunView {
	argv := make([]string, len(rv.Argv))
	for i, a := range rv.Argv {
		shown, chars := contentLine(a, false)
		if len(chars) > 0 {
			f.add(fmt.Sprintf("workspace run %d argument %d", n, i+1), 0, false, shown, chars)
		}
		argv[i] = shown
	}
	rv.Argv = argv
	rv.Stdout = visibleOutput(fmt.Sprintf("workspace run %d stdout", n), rv.Stdout, f)
	rv.Stderr = visibleOutput(fmt.Sprintf("workspace run %d stderr", n), rv.Stderr, f)
	return rv
}
