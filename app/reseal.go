package app

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/intake"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// The watch of pending proposals: whenever a ref that a pending proposal
// is pinned to moves (the person commits, another card lands), every
// pending proposal of that repository is checked again. One whose changes
// can be carried to the new base unchanged is re-sealed there (see
// apply.Reseal) and its card says so; the others are marked stale in the
// list, with what conflicts, before anyone opens them.

// resealEvery is how often the watch looks at the refs of repositories
// with pending proposals (one git process per repository); an execution
// that lands wakes it at once.
const resealEvery = time.Second

// pendingWatch is the watch's memory between looks.
type pendingWatch struct {
	mu sync.Mutex
	// seen is each repository's ref state at the last look.
	seen map[string]string
	// checked is the digest each pending proposal had when it was last
	// checked, and stale what was found stale then (by id).
	checked map[string]string
	stale   map[string]string
	// kick wakes the watch early.
	kick chan struct{}
}

func newPendingWatch() *pendingWatch {
	return &pendingWatch{seen: map[string]string{}, checked: map[string]string{}, stale: map[string]string{}, kick: make(chan struct{}, 1)}
}

// staleWhy is what the watch found stale in proposal id ("" when
// nothing).
func (w *pendingWatch) staleWhy(id string) string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stale[id]
}

// wake asks for a look now.
func (w *pendingWatch) wake() {
	if w == nil {
		return
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// watchPending looks at the pending proposals' repositories until ctx
// ends.
func (a *App) watchPending(ctx context.Context) {
	t := time.NewTicker(resealEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.pending.kick:
		}
		a.recheckPending(ctx)
	}
}

// recheckPending checks again every pending proposal of each repository
// whose refs moved since the last look, and every proposal not checked at
// its current digest.
func (a *App) recheckPending(ctx context.Context) {
	if a.executor == nil {
		return
	}
	recs, err := a.journal.List(journal.Filter{States: []proposal.State{proposal.Pending}})
	if err != nil {
		a.log.Warn("pending watch: list", "err", err)
		return
	}
	byRepo := map[string][]journal.Record{}
	live := map[string]bool{}
	for _, rec := range recs {
		byRepo[rec.Proposal.Repo] = append(byRepo[rec.Proposal.Repo], rec)
		live[rec.Proposal.ID] = true
	}
	w := a.pending
	w.mu.Lock()
	for id := range w.checked {
		if !live[id] {
			delete(w.checked, id)
			delete(w.stale, id)
		}
	}
	for repo := range w.seen {
		if byRepo[repo] == nil {
			delete(w.seen, repo)
		}
	}
	w.mu.Unlock()
	for repo, rs := range byRepo {
		if ctx.Err() != nil {
			return
		}
		if a.recheckRepo(ctx, repo, rs, false) {
			// Something was re-sealed: a commit stacked on it is sealed on
			// it again now, not at the next move.
			for range 8 {
				rs, err = a.pendingIn(repo)
				if err != nil || !a.recheckRepo(ctx, repo, rs, true) {
					break
				}
			}
		}
	}
}

// pendingIn lists the pending proposals of repo.
func (a *App) pendingIn(repo string) ([]journal.Record, error) {
	recs, err := a.journal.List(journal.Filter{States: []proposal.State{proposal.Pending}})
	if err != nil {
		return nil, err
	}
	var out []journal.Record
	for _, rec := range recs {
		if rec.Proposal.Repo == repo {
			out = append(out, rec)
		}
	}
	return out, nil
}

// recheckRepo checks the pending proposals rs of repo when its refs moved
// since the last look, or they were not checked at their digest (all of
// them with again); it reports whether any was re-sealed.
func (a *App) recheckRepo(ctx context.Context, repo string, rs []journal.Record, again bool) bool {
	w := a.pending
	var keys []string
	for _, rec := range rs {
		for k := range rec.Proposal.Pinned.Refs {
			keys = append(keys, k)
		}
	}
	state, err := a.executor.RefState(ctx, repo, keys)
	if err != nil {
		a.log.Debug("pending watch: refs", "repo", repo, "err", err)
		return false
	}
	w.mu.Lock()
	moved := w.seen[repo] != state
	w.seen[repo] = state
	w.mu.Unlock()
	resealed := false
	for _, rec := range rs {
		w.mu.Lock()
		due := again || moved || w.checked[rec.Proposal.ID] != rec.Proposal.Digest ||
			stackedAndStale(rec.Proposal, w.stale[rec.Proposal.ID])
		w.mu.Unlock()
		if due && a.recheck(ctx, rec) {
			resealed = true
		}
	}
	return resealed
}

// stackedAndStale reports a commit sealed on the proposal below it that
// was found stale: it hangs on that proposal's state too, which moves no
// ref when it ends (a landing moves the branch before the journal says it
// completed, and the look between the two finds the stacked commit
// sealed on a base that is gone). It is looked at again at every look
// until it is current.
func stackedAndStale(p proposal.Proposal, why string) bool {
	return why != "" && p.Sealed != nil && p.Sealed.Below != ""
}

// recheck checks one pending proposal: re-sealed when it can be, marked
// stale when it cannot, unmarked when nothing it depends on moved.
func (a *App) recheck(ctx context.Context, rec journal.Record) (resealed bool) {
	w := a.pending
	id := rec.Proposal.ID
	why, err := a.reseal(ctx, rec)
	if err != nil {
		a.log.Warn("pending watch: check", "proposal", id, "err", err)
		return false
	}
	if now, err := a.journal.Get(id); err == nil && now.Proposal.Digest != rec.Proposal.Digest {
		resealed = true
	}
	w.mu.Lock()
	before, had := w.stale[id]
	if why == "" {
		delete(w.stale, id)
	} else {
		w.stale[id] = why
	}
	w.checked[id] = rec.Proposal.Digest
	changed := had != (why != "") || before != why
	w.mu.Unlock()
	if changed {
		a.events.Publish(Event{Name: "proposal:updated", Data: ProposalEvent{ID: id, Agent: rec.Proposal.Agent, Op: rec.Proposal.Op, State: rec.State, Version: rec.Version}})
	}
	return resealed
}

// reseal re-seals rec's proposal when what it is pinned to moved and its
// changes carry over unchanged, and returns what keeps it from landing
// otherwise ("" when nothing: it is current, or now re-sealed).
func (a *App) reseal(ctx context.Context, rec journal.Record) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// A stacked commit is sealed on the proposal below it while that one
	// has not landed; one below that ended otherwise leaves it nothing to
	// land on.
	sctx, err := intake.StackContext(ctx, a.journal, rec.Proposal)
	if e, ok := errcode.As(err); ok {
		return e.Msg, nil
	} else if err != nil {
		return "", err
	}
	res, err := a.executor.Reseal(sctx, rec.Proposal)
	if errcode.IsCode(err, errcode.StaleBase) {
		e, _ := errcode.As(err)
		return e.Msg, nil
	}
	if err != nil || res == nil {
		return "", err
	}
	np := res.Proposal
	// The new objects are kept beside the old before the journal names
	// them: whichever digest a crash leaves in the record, its objects
	// are there.
	if err := a.executor.KeepResealed(ctx, np); err != nil {
		return "", err
	}
	r := journal.Reseal{Moves: res.Moves, Base: np.Sealed.Base}
	if b, ok := strings.CutPrefix(np.Sealed.Head, "refs/heads/"); ok {
		r.Branch = b
	}
	if np.Sealed.Base == "" {
		r.Base = firstPin(np)
	}
	if _, err := a.journal.Reseal(np.ID, rec.Proposal.Digest, np, r); err != nil {
		if errors.Is(err, journal.ErrNotPending) || errors.Is(err, journal.ErrExpired) || errors.Is(err, journal.ErrDigestMismatch) {
			// Decided, expired or re-sealed meanwhile: nothing to do.
			return "", nil
		}
		return "", err
	}
	a.log.Info("pending watch: re-sealed on a moved base", "proposal", np.ID, "base", r.Base)
	return "", nil
}

// firstPin is the commit of the proposal's HEAD pin, or of any pin.
func firstPin(p proposal.Proposal) string {
	if s := p.Pinned.Refs["HEAD"]; s != "" {
		return s
	}
	for _, s := range p.Pinned.Refs {
		return s
	}
	return ""
}
