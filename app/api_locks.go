package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/core/apply"
	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// locksFor lists, on the card of an interrupted execution, the lock files
// git left in the proposal's repositories, each marked with whether the
// execution's own (killed) git left it. Nil when there are none or when
// they cannot be read (the card still shows the restore point).
func (a *App) locksFor(rec journal.Record) []apply.Lock {
	if rec.State != proposal.NeedsReconciliation || a.executor == nil {
		return nil
	}
	id := rec.Proposal.ID
	ctx, cancel := context.WithTimeout(a.runCtx, 30*time.Second)
	defer cancel()
	ls, err := a.executor.LeftLocks(ctx, rec)
	if err != nil {
		a.log.Warn("could not look for git's locks of an interrupted execution", "proposal", id, "err", err)
		return nil
	}
	return ls
}

// RemoveLocksRequest names, from a card, the lock files the person
// confirmed removing, exactly as the card showed them.
type RemoveLocksRequest struct {
	ID    string       `json:"id"`
	Locks []apply.Lock `json:"locks"`
}

// RemoveLocks removes the lock files an interrupted execution's git left,
// on the person's confirmation: only those the card named, only while each
// is the file it showed (same path, size and time), and never one a
// running git may hold. Audited before (nothing is removed if the entry
// cannot be written) and after.
func (api *API) RemoveLocks(r RemoveLocksRequest) (apply.LockRemoval, error) {
	a := api.app
	if a.executor == nil {
		return apply.LockRemoval{}, errNoRoots
	}
	rec, err := a.record(r.ID)
	if err != nil {
		return apply.LockRemoval{}, err
	}
	if rec.State != proposal.NeedsReconciliation {
		return apply.LockRemoval{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: "only an interrupted execution's card can remove git's lock files; this proposal is " + string(rec.State)}
	}
	fp, err := audit.ArgsFingerprint(r.Locks)
	if err != nil {
		return apply.LockRemoval{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: "the lock list is malformed"}
	}
	entry := audit.Entry{EventType: "locks_removal_requested", RepoScope: audit.RepoScope(rec.Proposal.Repo), Approval: "owner:" + api.kind,
		Result: "ok", ProposalID: rec.Proposal.ID, ProposalDigest: rec.Proposal.Digest, ArgsFingerprint: fp,
		Data: map[string]any{"locks": int64(len(r.Locks))}}
	if _, err := a.ledger.Append(entry); err != nil {
		return apply.LockRemoval{}, &errcode.Error{Code: errcode.AuditFailed, Msg: "nothing was removed because the audit ledger could not be written"}
	}
	ctx, cancel := context.WithTimeout(a.runCtx, time.Minute)
	defer cancel()
	res, rerr := a.executor.RemoveLocks(ctx, rec, r.Locks)
	done := audit.Entry{EventType: "locks_removed", RepoScope: audit.RepoScope(rec.Proposal.Repo), Approval: "owner:" + api.kind,
		Result: "ok", ProposalID: rec.Proposal.ID, ProposalDigest: rec.Proposal.Digest, ArgsFingerprint: fp}
	if rerr != nil {
		done.Result = "error:" + string(errcode.Of(rerr))
	}
	if res != nil {
		done.Data = map[string]any{"removed": int64(len(res.Removed)), "kept": int64(len(res.Kept))}
	}
	if _, err := a.ledger.Append(done); err != nil {
		a.log.Error("audit of a lock removal failed", "err", err)
	}
	if rerr != nil {
		return apply.LockRemoval{}, rerr
	}
	a.events.Publish(Event{Name: "proposal:updated", Data: ProposalEvent{ID: rec.Proposal.ID, State: rec.State, Version: rec.Version}})
	return *res, nil
}

// logLeftLocks says at start-up which lock files the interrupted
// executions' git left: the cards name them too, this is for a person
// reading the log.
func logLeftLocks(e *apply.Executor, j *journal.Journal, ids []string, log *slog.Logger) {
	for _, id := range ids {
		rec, err := j.Get(id)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ls, err := e.LeftLocks(ctx, rec)
		cancel()
		if err != nil {
			continue
		}
		for _, l := range ls {
			if l.Leftover {
				log.Warn("an interrupted execution left a lock file of git's; remove it from its card", "proposal", id, "lock", l.Shown)
			}
		}
	}
}
