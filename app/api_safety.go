package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/apply"
	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/restorepoint"
)

// TimelineView is the safety timeline of one repository.
type TimelineView struct {
	Repo          string            `json:"repo"`
	RestorePoints []RestorePointRow `json:"restorePoints"`
	Events        []TimelineRow     `json:"events"`
}

// RestorePointRow is one restore point as the timeline lists it.
type RestorePointRow struct {
	ID string `json:"id"`
	// Label names what the point preserves; no two share one.
	Label               string           `json:"label"`
	ProposalID          string           `json:"proposalId,omitempty"`
	Op                  string           `json:"op,omitempty"`
	CreatedAt           time.Time        `json:"createdAt"`
	Refs                []apply.RefState `json:"refs"`
	HasWorktreeSnapshot bool             `json:"hasWorktreeSnapshot"`
	Note                string           `json:"note,omitempty"`
}

// TimelineRow is a restore point or a ref movement.
type TimelineRow struct {
	Time           time.Time `json:"time"`
	Kind           string    `json:"kind"`
	Ref            string    `json:"ref,omitempty"`
	From           string    `json:"from,omitempty"`
	To             string    `json:"to,omitempty"`
	Message        string    `json:"message"`
	RestorePointID string    `json:"restorePointId,omitempty"`
}

// Timeline merges a repository's restore points and ref movements,
// newest first.
func (api *API) Timeline(repo string) (TimelineView, error) {
	a := api.app
	if a.executor == nil {
		return TimelineView{}, errNoRoots
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := gitx.Default()
	if err != nil {
		return TimelineView{}, err
	}
	g, err := r.Open(ctx, a.allowed(), repo)
	if err != nil {
		return TimelineView{}, err
	}
	points, err := a.executor.ListRestorePoints(ctx, g.Root)
	if err != nil {
		return TimelineView{}, err
	}
	tl, err := restorepoint.SafetyTimeline(ctx, g, 0)
	if err != nil {
		return TimelineView{}, err
	}
	v := TimelineView{Repo: g.Root, RestorePoints: []RestorePointRow{}, Events: []TimelineRow{}}
	for _, p := range points {
		v.RestorePoints = append(v.RestorePoints, RestorePointRow{ID: p.ID, Label: p.Label, ProposalID: p.ProposalID, Op: p.Op,
			CreatedAt: p.CreatedAt, Refs: p.Refs, HasWorktreeSnapshot: len(p.Worktrees) > 0, Note: p.Note})
	}
	for _, e := range tl.Events {
		kind := "ref_move"
		if e.Kind == "restore_point" {
			kind = "restore_point"
		}
		v.Events = append(v.Events, TimelineRow{Time: e.At, Kind: kind, Ref: e.Ref, From: e.From, To: e.To,
			Message: e.Message, RestorePointID: e.RestorePoint})
	}
	return v, nil
}

// RestorePreview is what restoring a point would change, compared with the
// repository as it is now: the restore dialog shows it before the person
// confirms.
type RestorePreview struct {
	Label string `json:"label"`
	// Refs are the point's refs: where each is now and where a restore
	// puts it.
	Refs []RefPreview `json:"refs"`
	// Worktree is true when a restore also puts back the index and working
	// tree from the snapshot.
	Worktree bool `json:"worktree"`
	// Conflicts are changes made since the operation that a restore would
	// overwrite (it refuses unless the person confirms them).
	Conflicts []apply.Conflict `json:"conflicts"`
	Note      string           `json:"note,omitempty"`
}

// RefPreview is one ref of a restore preview.
type RefPreview struct {
	Ref string `json:"ref"`
	// Now and After are SHAs; "" is a ref that does not exist.
	Now   string `json:"now,omitempty"`
	After string `json:"after,omitempty"`
	// Leaving counts the commits on the ref now that it would no longer
	// reach; -1 when that cannot be counted (the ref is deleted, or a
	// commit is gone).
	Leaving int `json:"leaving"`
}

// RestorePreview compares restore point id of repo with the present. It
// writes nothing.
func (api *API) RestorePreview(repo, id string) (RestorePreview, error) {
	a := api.app
	if a.executor == nil {
		return RestorePreview{}, errNoRoots
	}
	if repo == "" || id == "" {
		return RestorePreview{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: "repo and restorePoint are required"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := gitx.Default()
	if err != nil {
		return RestorePreview{}, err
	}
	g, err := r.Open(ctx, a.allowed(), repo)
	if err != nil {
		return RestorePreview{}, err
	}
	d, err := a.executor.RestorePointDetails(ctx, g.Root, id)
	if err != nil {
		return RestorePreview{}, err
	}
	v := RestorePreview{Label: d.Label, Refs: []RefPreview{}, Worktree: len(d.Worktrees) > 0, Conflicts: d.Conflicts, Note: d.Note}
	if points, err := a.executor.ListRestorePoints(ctx, g.Root); err == nil {
		for _, p := range points {
			if p.ID == id {
				v.Label = p.Label
			}
		}
	}
	if v.Conflicts == nil {
		v.Conflicts = []apply.Conflict{}
	}
	for i, ref := range d.Refs {
		rp := RefPreview{Ref: ref.Ref, After: ref.SHA, Leaving: -1}
		if i < len(d.Current) {
			rp.Now = d.Current[i].SHA
		}
		switch {
		case rp.Now == rp.After || rp.Now == "":
			rp.Leaving = 0
		case rp.After != "":
			out, err := g.ReadGit(ctx, "rev-list", []string{"--count"}, []string{rp.After + ".." + rp.Now}, nil, 1<<10)
			if err == nil {
				fmt.Sscanf(strings.TrimSpace(string(out.Stdout)), "%d", &rp.Leaving)
			}
		}
		v.Refs = append(v.Refs, rp)
	}
	return v, nil
}

// RestoreRequest asks to put a restore point back.
type RestoreRequest struct {
	Repo         string `json:"repo"`
	RestorePoint string `json:"restorePoint"`
	// Force overwrites changes made after the restore point; the person
	// confirmed twice.
	Force bool `json:"force"`
}

// RestoreView is what a restore did.
type RestoreView struct {
	Restored         []apply.RefChange `json:"restored"`
	WorktreeRestored bool              `json:"worktreeRestored"`
	// UndoPoint is the restore point taken just before, which undoes this
	// restore.
	UndoPoint string `json:"undoPoint"`
	Note      string `json:"note,omitempty"`
}

// Restore puts a restore point back: a human action, audited before it
// happens (if the entry cannot be written, nothing is restored) and after.
func (api *API) Restore(r RestoreRequest) (RestoreView, error) {
	res, err := api.restore(r)
	if err != nil {
		return RestoreView{}, err
	}
	v := RestoreView{Restored: res.Refs, WorktreeRestored: len(res.Worktrees) > 0, UndoPoint: res.UndoPoint, Note: res.Note}
	if v.Restored == nil {
		v.Restored = []apply.RefChange{}
	}
	return v, nil
}

func (api *API) restore(r RestoreRequest) (*apply.RestoreResult, error) {
	a := api.app
	if a.executor == nil {
		return nil, errNoRoots
	}
	if r.Repo == "" || r.RestorePoint == "" {
		return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: "repo and restorePoint are required"}
	}
	repo, err := a.allowed().Confine(r.Repo)
	if err != nil {
		return nil, err
	}
	entry := audit.Entry{EventType: "restore_requested", RepoScope: audit.RepoScope(repo), Approval: "owner:" + api.kind,
		Result: "ok", Data: map[string]any{"restore_point": r.RestorePoint, "force": r.Force}}
	if _, err := a.ledger.Append(entry); err != nil {
		return nil, &errcode.Error{Code: errcode.AuditFailed, Msg: "the restore was not done because the audit ledger could not be written"}
	}
	ctx, cancel := context.WithTimeout(a.runCtx, 10*time.Minute)
	defer cancel()
	res, rerr := a.executor.Restore(ctx, repo, r.RestorePoint, r.Force)
	done := audit.Entry{EventType: "restore_completed", RepoScope: audit.RepoScope(repo), Approval: "owner:" + api.kind,
		Result: "ok", Data: map[string]any{"restore_point": r.RestorePoint, "force": r.Force}}
	if rerr != nil {
		done.EventType, done.Result = "restore_failed", "error:"+string(errcode.Of(rerr))
	} else {
		done.Data["undo_point"] = res.UndoPoint
		done.Data["refs"] = int64(len(res.Refs))
	}
	if _, err := a.ledger.Append(done); err != nil {
		a.log.Error("audit of a finished restore failed", "err", err)
	}
	if rerr != nil {
		return nil, rerr
	}
	a.events.Publish(Event{Name: "timeline:changed", Data: TimelineChanged{Repo: repo}})
	return res, nil
}
