package sidecar

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/restorepoint"
)

// The safety tools: what Sluice recorded before each approved change, and
// how the repository's refs moved, read straight from the repository.
// Restoring is the person's action in the app; no tool here changes
// anything.

// The outputs are flat on purpose: the git toolset's tools/list has a
// token budget, and strings a model reads well beat nested schemas.

// RestorePointsIn names a repository.
type RestorePointsIn struct {
	RepoPath string `json:"repoPath" jsonschema:"the repository"`
	Limit    int    `json:"limit,omitempty" jsonschema:"default 50, max 500"`
}

// RestorePointHead is what names a restore point, in the list and in
// its details.
type RestorePointHead struct {
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	ProposalID string `json:"proposalId,omitempty"`
	Op         string `json:"op,omitempty"`
	CreatedAt  string `json:"createdAt"`
	Outcome    string `json:"outcome"`
}

// RestorePointSummary is one restore point.
type RestorePointSummary struct {
	RestorePointHead
	// Refs maps each ref the operation could change to its SHA before it
	// ("" when it did not exist).
	Refs map[string]string `json:"refs,omitempty"`
}

// RestorePointsOut is restore_points's result.
type RestorePointsOut struct {
	RestorePoints []RestorePointSummary `json:"restorePoints"`
	Total         int                   `json:"total"`
	ErrorField
}

// RestorePointIn names one restore point.
type RestorePointIn struct {
	RepoPath       string `json:"repoPath" jsonschema:"the repository"`
	RestorePointID string `json:"restorePointId" jsonschema:"id from restore_points"`
}

// RestorePointDetailsOut is restore_point_details's result.
type RestorePointDetailsOut struct {
	RestorePointHead
	// Refs: one line per ref, "<ref>: <before> → <after>, now <current>".
	Refs []string `json:"refs"`
	// Worktrees: one line per recorded working tree.
	Worktrees []string `json:"worktrees,omitempty"`
	// ChangedSince lists work done after the operation that a restore
	// would overwrite.
	ChangedSince []string `json:"changedSince"`
	Note         string   `json:"note,omitempty"`
	ErrorField
}

// SafetyTimelineIn selects a timeline.
type SafetyTimelineIn struct {
	RepoPath string `json:"repoPath" jsonschema:"the repository"`
	Limit    int    `json:"limit,omitempty" jsonschema:"default 50, max 300"`
}

// TimelineEventOut is one timeline event.
type TimelineEventOut struct {
	ID       string `json:"id"`
	At       string `json:"at"`
	Kind     string `json:"kind"`
	Ref      string `json:"ref,omitempty"`
	From     string `json:"from,omitempty"`
	To       string `json:"to,omitempty"`
	Message  string `json:"message"`
	BySluice bool   `json:"bySluice,omitempty"`
}

// SafetyTimelineOut is safety_timeline's result.
type SafetyTimelineOut struct {
	Events    []TimelineEventOut `json:"events"`
	Truncated bool               `json:"truncated,omitempty"`
	ErrorField
}

// SafetyEventIn names one event.
type SafetyEventIn struct {
	RepoPath string `json:"repoPath" jsonschema:"the repository"`
	EventID  string `json:"eventId" jsonschema:"id from safety_timeline"`
}

// SafetyEventOut is safety_event's result.
type SafetyEventOut struct {
	TimelineEventOut
	// ChangedSince: for a restore point, what a restore would overwrite.
	ChangedSince []string `json:"changedSince,omitempty"`
	// Recoverable: for a movement, commits it left that only the reflog
	// still holds ("<sha> <subject> …").
	Recoverable []string `json:"recoverable,omitempty"`
	ErrorField
}

const maxRestorePointsLimit = 500

func (g *gitTools) registerSafety() {
	addTool(g.s.server, &mcp.Tool{
		Name:  "restore_points",
		Title: "Restore points",
		Description: "Restore points Sluice took before carrying out approved changes, newest first. Use it when a change " +
			"has to be undone: name one to the person, since only they restore.",
		Annotations: readOnly("Restore points"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in RestorePointsIn) (RestorePointsOut, error) {
		limit := in.Limit
		if limit <= 0 {
			limit = 50
		}
		if limit > maxRestorePointsLimit {
			return RestorePointsOut{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: "limit must be at most 500"}
		}
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return RestorePointsOut{}, err
		}
		list, total, err := restorepoint.Page(ctx, repo, limit)
		if err != nil {
			return RestorePointsOut{}, safetyError(err)
		}
		out := RestorePointsOut{RestorePoints: []RestorePointSummary{}, Total: total}
		for _, rp := range list {
			out.RestorePoints = append(out.RestorePoints, summarize(rp))
		}
		return out, nil
	})

	addTool(g.s.server, &mcp.Tool{
		Name:  "restore_point_details",
		Title: "Restore point details",
		Description: "One restore point: refs before, after and now, and the later work a restore would overwrite. Use it " +
			"before suggesting a restore.",
		Annotations: readOnly("Restore point details"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in RestorePointIn) (RestorePointDetailsOut, error) {
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return RestorePointDetailsOut{}, err
		}
		d, err := restorepoint.Describe(ctx, repo, in.RestorePointID)
		if err != nil {
			return RestorePointDetailsOut{}, safetyError(err)
		}
		return detailsOut(d), nil
	})

	addTool(g.s.server, &mcp.Tool{
		Name:  "safety_timeline",
		Title: "Safety timeline",
		Description: "Restore points and reflog movements of HEAD and branches, newest first, Sluice's own marked. Use it " +
			"to see what moved a branch and when.",
		Annotations: readOnly("Safety timeline"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in SafetyTimelineIn) (SafetyTimelineOut, error) {
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return SafetyTimelineOut{}, err
		}
		tl, err := restorepoint.SafetyTimeline(ctx, repo, in.Limit)
		if err != nil {
			return SafetyTimelineOut{}, safetyError(err)
		}
		out := SafetyTimelineOut{Events: []TimelineEventOut{}, Truncated: tl.Truncated}
		for _, e := range tl.Events {
			out.Events = append(out.Events, eventOut(e))
		}
		return out, nil
	})

	addTool(g.s.server, &mcp.Tool{
		Name:  "safety_event",
		Title: "Safety event",
		Description: "One safety_timeline event: what restoring it would overwrite, or the commits only the reflog still " +
			"holds. Use it to recover work from a timeline entry.",
		Annotations: readOnly("Safety event"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in SafetyEventIn) (SafetyEventOut, error) {
		if in.EventID == "" || len(in.EventID) > 600 {
			return SafetyEventOut{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: "eventId must be an id from safety_timeline"}
		}
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return SafetyEventOut{}, err
		}
		d, err := restorepoint.SafetyEvent(ctx, repo, in.EventID)
		if err != nil {
			return SafetyEventOut{}, safetyError(err)
		}
		out := SafetyEventOut{TimelineEventOut: eventOut(d.Event)}
		if d.RestorePoint != nil {
			out.ChangedSince = changedSince(d.RestorePoint)
		}
		for _, r := range d.Recoverable {
			out.Recoverable = append(out.Recoverable, fmt.Sprintf("%s %s (%d commits; %s)", r.SHA, r.Subject, r.Commits, r.Selector))
		}
		return out, nil
	})
}

const stamp = "2006-01-02T15:04:05.000Z07:00"

func eventOut(e restorepoint.TimelineEvent) TimelineEventOut {
	return TimelineEventOut{ID: e.ID, At: e.At.Format(stamp), Kind: e.Kind, Ref: e.Ref, From: e.From, To: e.To,
		Message: e.Message, BySluice: e.BySluice}
}

func detailsOut(d *restorepoint.Details) RestorePointDetailsOut {
	out := RestorePointDetailsOut{RestorePointHead: headOf(d.RestorePoint), Refs: []string{}, ChangedSince: changedSince(d), Note: d.Note}
	sha := func(s string) string {
		if s == "" {
			return "(none)"
		}
		return s
	}
	after := map[string]string{}
	if d.End != nil {
		for _, r := range d.End.Refs {
			after[r.Ref] = r.SHA
		}
	}
	for i, r := range d.Refs {
		line := r.Ref + ": " + sha(r.SHA)
		if d.End != nil {
			line += " → " + sha(after[r.Ref])
		}
		if i < len(d.Current) {
			line += ", now " + sha(d.Current[i].SHA)
		}
		out.Refs = append(out.Refs, line)
	}
	for _, w := range d.Worktrees {
		head := "detached at " + w.HeadSHA
		if w.Head != "" {
			head = strings.TrimPrefix(w.Head, "refs/heads/") + " at " + w.HeadSHA
		}
		line := w.Path + ": HEAD " + head
		switch {
		case w.Files && w.Clean:
			line += "; clean"
		case len(w.Paths) > 0 && w.Files:
			line += fmt.Sprintf("; the %d paths the operation changes (index and files) recorded in snapshot %s", len(w.Paths), w.Snapshot)
		case len(w.Paths) > 0:
			line += fmt.Sprintf("; the index entries at the %d paths the operation changes recorded in snapshot %s", len(w.Paths), w.Snapshot)
		case w.Files:
			line += "; index and files recorded in snapshot " + w.Snapshot
		case w.Index != "":
			line += "; index recorded in snapshot " + w.Snapshot
		}
		out.Worktrees = append(out.Worktrees, line)
	}
	if d.NewWorktree != "" {
		out.Worktrees = append(out.Worktrees, d.NewWorktree+": added by the operation; a restore removes it")
	}
	return out
}

// changedSince is the work done after the operation that a restore would
// overwrite.
func changedSince(d *restorepoint.Details) []string {
	out := []string{}
	for _, c := range d.Conflicts {
		out = append(out, c.Message)
	}
	return out
}

func headOf(rp restorepoint.RestorePoint) RestorePointHead {
	h := RestorePointHead{ID: rp.ID, Kind: rp.Kind, ProposalID: rp.ProposalID, Op: rp.Op,
		CreatedAt: rp.CreatedAt.UTC().Format(stamp), Outcome: "unfinished"}
	if rp.End != nil {
		h.Outcome = rp.End.Outcome
	}
	return h
}

func summarize(rp restorepoint.RestorePoint) RestorePointSummary {
	s := RestorePointSummary{RestorePointHead: headOf(rp)}
	if len(rp.Refs) > 0 {
		s.Refs = map[string]string{}
		for _, r := range rp.Refs {
			s.Refs[r.Ref] = r.SHA
		}
	}
	return s
}

// safetyError keeps the model-facing codes to the stable set: a restore
// point that does not exist is an invalid argument, and the executor's
// other codes for a failed read are a git failure.
func safetyError(err error) error {
	var e *errcode.Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Code {
	case errcode.InvalidArgument, errcode.RestorePointNotFound:
		return &errcode.Error{Code: errcode.InvalidArgument, Msg: e.Msg}
	case errcode.Unsupported:
		return &errcode.Error{Code: errcode.Unsupported, Msg: e.Msg}
	}
	return &errcode.Error{Code: errcode.GitFailed, Msg: e.Msg, Data: e.Data}
}
