package app

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/workspace"
)

// WorkspaceEnded is what stopping or destroying a workspace did.
type WorkspaceEnded struct {
	ID string `json:"id"`
	// RunsStopped counts the run containers that were ended.
	RunsStopped int `json:"runsStopped"`
	// Destroyed: the workspace's containers, files and run records are
	// gone, each verified.
	Destroyed bool `json:"destroyed"`
}

// workspaceEndTimeout bounds a stop or a destroy (Destroy itself waits up
// to 30 seconds for an operation in flight to let go).
const workspaceEndTimeout = 2 * time.Minute

// openCardFinder finds the card a workspace's changes came back as while
// it waits for a decision or is being carried out. known is false when
// the journal cannot be read (the CLI while Sluice runs).
type openCardFinder func(workspaceID string) (rec journal.Record, open, known bool)

// StopWorkspace ends the commands running in a workspace now (an agent's
// run ends as interrupted); the workspace and its files stay. Audited
// before it happens: if the entry cannot be written, nothing is stopped.
func (api *API) StopWorkspace(id string) (WorkspaceEnded, error) {
	a := api.app
	ctx, cancel := context.WithTimeout(a.runCtx, workspaceEndTimeout)
	defer cancel()
	res, err := endWorkspace(ctx, a.workspaces, a.ledger, "owner:"+api.kind, id, false, a.openWorkspaceCard)
	if err == nil {
		a.events.Publish(Event{Name: "workspace:changed"})
	}
	return res, err
}

// DestroyWorkspace removes a workspace: its runs are stopped, its
// containers, files and run records deleted. A workspace whose changes
// are an open card is refused: the card shows the workspace's runs as its
// evidence, so it is decided first. Audited before it happens.
func (api *API) DestroyWorkspace(id string) (WorkspaceEnded, error) {
	a := api.app
	ctx, cancel := context.WithTimeout(a.runCtx, workspaceEndTimeout)
	defer cancel()
	res, err := endWorkspace(ctx, a.workspaces, a.ledger, "owner:"+api.kind, id, true, a.openWorkspaceCard)
	if err == nil {
		a.events.Publish(Event{Name: "workspace:changed"})
	}
	return res, err
}

// openWorkspaceCard is openCardFinder over the app's journal.
func (a *App) openWorkspaceCard(id string) (journal.Record, bool, bool) {
	return openCardIn(a.journal, id)
}

// openCardIn looks for an open card in j that merges workspace id's
// handed-off commits.
func openCardIn(j *journal.Journal, id string) (journal.Record, bool, bool) {
	recs, err := j.List(journal.Filter{States: []proposal.State{proposal.Pending, proposal.Approved, proposal.Executing, proposal.NeedsReconciliation}})
	if err != nil {
		return journal.Record{}, false, false
	}
	for _, rec := range recs {
		if ws, ok := mergedWorkspace(rec.Proposal); ok && ws == id {
			return rec, true, true
		}
	}
	return journal.Record{}, false, true
}

// endWorkspace stops (destroy false) or destroys workspace id for a
// person (by), with an audit entry before and after.
func endWorkspace(ctx context.Context, m *workspace.Manager, ledger *audit.Ledger, by, id string, destroy bool, openCard openCardFinder) (WorkspaceEnded, error) {
	if m == nil {
		return WorkspaceEnded{}, errWorkspacesOff
	}
	if !proposal.ValidID(id) {
		return WorkspaceEnded{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: "invalid workspace id"}
	}
	w, err := m.Get(id)
	if err != nil {
		return WorkspaceEnded{}, err
	}
	requested, ended, past := "workspace_stop_requested", "workspace_stopped", "stopped"
	if destroy {
		requested, ended, past = "workspace_destroy_requested", "workspace_destroyed", "destroyed"
		if err := refuseOpenCard(w, openCard); err != nil {
			return WorkspaceEnded{}, err
		}
	}
	data := map[string]any{"workspace": id, "state": string(w.State)}
	if w.Agent != "" {
		data["owner"] = w.Agent
	}
	if _, err := ledger.Append(audit.Entry{EventType: requested, Approval: by, Result: "ok", Data: data}); err != nil {
		return WorkspaceEnded{}, &errcode.Error{Code: errcode.AuditFailed, Msg: "nothing was done to the workspace because the audit ledger could not be written"}
	}
	res := WorkspaceEnded{ID: id}
	if destroy {
		var rep *workspace.DestroyReport
		rep, err = m.Destroy(ctx, id)
		if rep != nil {
			res.RunsStopped, res.Destroyed = rep.ContainersRemoved, rep.ContainersGone && rep.TreeRemoved
		}
	} else {
		var rep *workspace.StopReport
		rep, err = m.Stop(ctx, id)
		if rep != nil {
			res.RunsStopped = rep.RunsStopped
		}
	}
	done := audit.Entry{EventType: ended, Approval: by, Result: "ok",
		Data: map[string]any{"workspace": id, "runs_stopped": int64(res.RunsStopped)}}
	if err != nil {
		done.Result = "error:" + string(errcode.Of(err))
	}
	if _, aerr := ledger.Append(done); aerr != nil && err == nil {
		err = &errcode.Error{Code: errcode.AuditFailed, Msg: fmt.Sprintf("the workspace was %s but the audit ledger could not record it", past)}
	}
	return res, err
}

// refuseOpenCard refuses to destroy a sealed workspace whose changes wait
// on a card (or are being carried out): the card shows the workspace's
// runs as its evidence, and would lose them.
func refuseOpenCard(w *workspace.Workspace, openCard openCardFinder) error {
	if w.State != workspace.StateSealed || openCard == nil {
		return nil
	}
	rec, open, known := openCard(w.ID)
	if !known {
		return &errcode.Error{Code: errcode.Conflict, Msg: fmt.Sprintf("workspace %s is sealed: its changes came back as a card, and whether that card is still open cannot be checked while Sluice runs; destroy it from the Workspaces screen, which checks", w.ID)}
	}
	if open {
		return &errcode.Error{Code: errcode.Conflict, Msg: fmt.Sprintf("workspace %s's changes are card %s, which is %s: its runs are that card's evidence, so decide the card first (approve or reject it), then destroy the workspace", w.ID, shortID(rec.Proposal.ID), rec.State)}
	}
	return nil
}

// shortID is the first eight characters of a proposal id, as cards show it.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
