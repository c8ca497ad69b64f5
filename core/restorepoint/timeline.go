package restorepoint

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
)

// Timeline limits.
const (
	DefaultTimelineLimit = 50
	MaxTimelineLimit     = 300
	// timelineRefs bounds how many reflogs besides HEAD's are read: the
	// refs the newest restore points touched.
	timelineRefs = 8
)

// Event kinds of the safety timeline.
const (
	EventRestorePoint = "restore_point"
	EventRefMoved     = "ref_moved"
)

// TimelineEvent is one thing that happened to a repository's refs: a
// restore point Sluice took, or a movement recorded in a reflog (by
// Sluice, by the person, or by any other tool).
type TimelineEvent struct {
	ID   string    `json:"id" jsonschema:"pass to safety_event for details"`
	Kind string    `json:"kind" jsonschema:"restore_point or ref_moved"`
	At   time.Time `json:"at"`
	Ref  string    `json:"ref,omitempty"`
	// From and To are abbreviated SHAs of a movement.
	From    string `json:"from,omitempty"`
	To      string `json:"to,omitempty"`
	Action  string `json:"action,omitempty" jsonschema:"reflog action: commit, reset, merge, sluice, …"`
	Message string `json:"message"`
	// BySluice marks movements made by Sluice's executor.
	BySluice     bool   `json:"bySluice,omitempty"`
	RestorePoint string `json:"restorePoint,omitempty"`
	ProposalID   string `json:"proposalId,omitempty"`
}

// Timeline is the merged, newest-first history of restore points and ref
// movements.
type Timeline struct {
	Events []TimelineEvent `json:"events"`
	// Refs are the refs whose reflogs were read.
	Refs      []string `json:"refs"`
	Truncated bool     `json:"truncated,omitempty"`
}

// SafetyTimeline merges the repository's restore points with the reflogs
// of HEAD and of the refs the newest restore points touched, newest first.
// It writes nothing.
func SafetyTimeline(ctx context.Context, repo *gitx.Repo, limit int) (*Timeline, error) {
	if limit <= 0 {
		limit = DefaultTimelineLimit
	}
	if limit > MaxTimelineLimit {
		return nil, errcode.New(errcode.InvalidArgument, "limit must be at most %d", MaxTimelineLimit)
	}
	events, refs, err := timelineEvents(ctx, repo, limit)
	if err != nil {
		return nil, err
	}
	t := &Timeline{Events: events, Refs: refs}
	if len(t.Events) > limit {
		t.Events, t.Truncated = t.Events[:limit], true
	}
	return t, nil
}

func timelineEvents(ctx context.Context, repo *gitx.Repo, perRef int) ([]TimelineEvent, []string, error) {
	// The newest perRef restore points are all a page of perRef events
	// can hold: an older one sorts below each of them.
	rps, ids, err := page(ctx, repo, perRef)
	if err != nil {
		return nil, nil, err
	}
	events := []TimelineEvent{}
	refs := []string{"HEAD"}
	for _, rp := range rps {
		events = append(events, restorePointEvent(rp))
		for _, r := range rp.Refs {
			if len(refs) < timelineRefs+1 && !slices.Contains(refs, r.Ref) && (strings.HasPrefix(r.Ref, "refs/heads/") || strings.HasPrefix(r.Ref, "refs/remotes/")) {
				refs = append(refs, r.Ref)
			}
		}
	}
	// Restore points removed past their retention stay on the timeline,
	// dated when they were removed (one recorded as expired by a tend
	// stopped before it removed it is still listed above, and not here).
	expired, err := ListExpired(ctx, repo)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range expired[:min(len(expired), perRef)] {
		if !ids[e.ID] {
			events = append(events, expiredEvent(e))
		}
	}
	for _, ref := range refs {
		log, err := repo.Reflog(ctx, ref, min(perRef, gitx.MaxReflogLimit))
		if err != nil {
			if errcode.IsCode(err, errcode.InvalidArgument) {
				continue // the ref is gone
			}
			return nil, nil, err
		}
		for _, e := range log.Entries {
			events = append(events, reflogEvent(log.Ref, e))
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].At.After(events[j].At) })
	return events, refs, nil
}

func restorePointEvent(rp RestorePoint) TimelineEvent {
	msg := "restore point taken before proposal " + rp.ProposalID
	if rp.Op != "" {
		msg += " (" + rp.Op + ")"
	}
	if rp.Kind == KindRestore {
		msg = "restore point taken before restoring " + rp.Restores
	}
	switch {
	case rp.End == nil:
		msg += "; the operation never recorded its end"
	default:
		msg += "; the operation " + rp.End.Outcome
	}
	return TimelineEvent{ID: "rp:" + rp.ID, Kind: EventRestorePoint, At: rp.CreatedAt, Message: msg, BySluice: true,
		RestorePoint: rp.ID, ProposalID: rp.ProposalID}
}

// reflogEvent is the timeline event of one reflog entry of ref.
func reflogEvent(ref string, e gitx.ReflogEntry) TimelineEvent {
	at, _ := time.Parse(time.RFC3339, e.Date)
	return TimelineEvent{ID: reflogEventID(ref, e.SHA, at), Kind: EventRefMoved, At: at, Ref: ref,
		From: e.Previous, To: e.SHA, Action: e.Action, Message: e.Message,
		BySluice: e.Action == "sluice" || strings.HasPrefix(e.Message, "sluice:")}
}

func reflogEventID(ref, sha string, at time.Time) string {
	return fmt.Sprintf("reflog:%s:%s:%d", ref, sha, at.Unix())
}

// SafetyEventDetails is one timeline event in full.
type SafetyEventDetails struct {
	Event TimelineEvent `json:"event"`
	// RestorePoint is set for a restore point: what it holds and what
	// restoring it would overwrite.
	RestorePoint *Details `json:"restorePoint,omitempty"`
	// Recoverable lists commits that only the reflog still knows, among
	// those this movement left behind.
	Recoverable []gitx.Recovery `json:"recoverable,omitempty"`
}

// SafetyEvent returns the event id of SafetyTimeline in full. It writes
// nothing.
func SafetyEvent(ctx context.Context, repo *gitx.Repo, id string) (*SafetyEventDetails, error) {
	if rp, ok := strings.CutPrefix(id, "rp:"); ok {
		d, err := Describe(ctx, repo, rp)
		if errcode.IsCode(err, errcode.RestorePointNotFound) {
			// An expired restore point is still an event, with nothing
			// left to restore.
			if expired, lerr := ListExpired(ctx, repo); lerr == nil {
				for _, e := range expired {
					if e.ID == rp {
						return &SafetyEventDetails{Event: expiredEvent(e)}, nil
					}
				}
			}
		}
		if err != nil {
			return nil, err
		}
		return &SafetyEventDetails{Event: restorePointEvent(d.RestorePoint), RestorePoint: d}, nil
	}
	rest, ok := strings.CutPrefix(id, "reflog:")
	if !ok {
		return nil, errcode.New(errcode.InvalidArgument, "unknown event id; take ids from safety_timeline")
	}
	i := strings.LastIndexByte(rest, ':')
	j := strings.LastIndexByte(rest[:max(i, 0)], ':')
	if i < 0 || j < 0 {
		return nil, errcode.New(errcode.InvalidArgument, "malformed event id; take ids from safety_timeline")
	}
	ref := rest[:j]
	if ref != "HEAD" && !strings.HasPrefix(ref, "refs/") {
		return nil, errcode.New(errcode.InvalidArgument, "malformed event id; take ids from safety_timeline")
	}
	log, err := repo.Reflog(ctx, ref, gitx.MaxReflogLimit)
	if err != nil {
		return nil, err
	}
	for _, e := range log.Entries {
		ev := reflogEvent(log.Ref, e)
		if ev.ID != id {
			continue
		}
		d := &SafetyEventDetails{Event: ev}
		for _, rec := range log.Recoverable {
			if e.Previous != "" && strings.HasPrefix(rec.SHA, e.Previous) {
				d.Recoverable = append(d.Recoverable, rec)
			}
		}
		return d, nil
	}
	return nil, errcode.New(errcode.InvalidArgument, "no such event in the last %d movements of %s", gitx.MaxReflogLimit, ref)
}
