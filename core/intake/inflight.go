package intake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// A proposal being sealed outlives the request that brought it. Sealing
// a very large change (100,000 files) can take longer than the sidecar
// waits for an answer; the seal goes on without the request, the
// proposal is stored when it is done, and meanwhile its status says
// "sealing" (gateway.StatusSealing) to whoever asks with its id, and a
// wait follows it to its end. A resend of the same proposal joins the
// seal under way instead of starting another.

// maxSealing bounds the seals under way for one agent (in one session):
// a seal goes on after its request gave up, so without a bound an agent
// that keeps sending and hanging up would queue work without end.
const maxSealing = 4

// keepFinished is how long the end of a seal nobody waited for stays
// answerable (a refusal is not in the journal: only here).
const keepFinished = 15 * time.Minute

type inflight struct {
	agent, session, digest string
	op                     proposal.Op
	repo                   string
	done                   chan struct{}
	st                     gateway.ProposalStatus
	err                    error
	ended                  time.Time
}

// sealingStatus is the status of a proposal whose outcome is still being
// computed.
func (f *inflight) sealingStatus(id string) gateway.ProposalStatus {
	return gateway.ProposalStatus{ProposalID: id, Status: gateway.StatusSealing, Op: f.op, Agent: f.agent, Repo: f.repo, Pinned: proposal.Pinned{Refs: map[string]string{}}}
}

func sessionOf(ctx context.Context) string {
	if c := gateway.CallerFrom(ctx); c != nil {
		return c.Session
	}
	return ""
}

// join returns the seal under way for p.ID, or registers a new one
// (first is then true and the caller starts it). A different proposal
// under the same id is refused.
func (b *Intake) join(ctx context.Context, p proposal.Proposal) (f *inflight, first bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	for id, g := range b.sealing {
		if !g.ended.IsZero() && now.Sub(g.ended) > keepFinished {
			delete(b.sealing, id)
		}
	}
	if g, ok := b.sealing[p.ID]; ok {
		if g.agent != p.Agent || g.session != sessionOf(ctx) || g.digest != p.Digest {
			return nil, false, &errcode.Error{Code: errcode.Conflict, Msg: "another proposal with this id is being sealed"}
		}
		if g.ended.IsZero() || g.err == nil {
			return g, false, nil
		}
		// A resend after a refusal is sealed again: what refused it may
		// have changed.
	}
	if c := gateway.CallerFrom(ctx); c != nil && b.ended[c.Session] && (c.Origin == nil || !c.Origin.Leftover) {
		// The app's own card of what the session left is the one
		// proposal an ended session still has.
		return nil, false, &errcode.Error{Code: errcode.Forbidden, Msg: "the confined session has ended: it proposes nothing more"}
	}
	under := 0
	for _, g := range b.sealing {
		if g.ended.IsZero() && g.agent == p.Agent && g.session == sessionOf(ctx) {
			under++
		}
	}
	if under >= maxSealing {
		return nil, false, &errcode.Error{Code: errcode.TooManyPending,
			Msg: fmt.Sprintf("%d proposals of yours are still being sealed; follow them with proposal_wait before proposing more", under)}
	}
	if b.sealing == nil {
		b.sealing = map[string]*inflight{}
	}
	f = &inflight{agent: p.Agent, session: sessionOf(ctx), digest: p.Digest, op: p.Op, repo: p.Repo, done: make(chan struct{})}
	b.sealing[p.ID] = f
	return f, true, nil
}

// CloseSession is told that confined session ended: from now on no seal
// of its proposals starts (its token no longer authenticates, and this
// also stops a request that did before), and it returns how many are
// still being sealed. Until that is none, what the session left cannot
// be told apart from what it proposed: those proposals are not in the
// journal yet.
func (b *Intake) CloseSession(session string) (sealing int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended == nil {
		b.ended = map[string]bool{}
	}
	b.ended[session] = true
	for _, g := range b.sealing {
		if g.ended.IsZero() && g.session == session {
			sealing++
		}
	}
	return sealing
}

// finish records the end of f's seal.
func (b *Intake) finish(f *inflight, st gateway.ProposalStatus, err error) {
	b.mu.Lock()
	f.st, f.err, f.ended = st, err, time.Now()
	b.mu.Unlock()
	close(f.done)
}

// under returns the seal of id that the caller (agent and session) may
// see, if there is one.
func (b *Intake) under(ctx context.Context, agent, id string) *inflight {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.sealing[id]
	if f == nil || f.agent != agent || f.session != sessionOf(ctx) {
		return nil
	}
	return f
}

// sealInBackground seals and stores p apart from the request, and waits
// for the end as long as the request does.
func (b *Intake) sealInBackground(ctx context.Context, p proposal.Proposal) (gateway.ProposalStatus, error) {
	f, first, err := b.join(ctx, p)
	if err != nil {
		return gateway.ProposalStatus{}, err
	}
	if first {
		go func() {
			st, err := b.sealAndStore(context.WithoutCancel(ctx), p)
			b.finish(f, st, err)
		}()
	}
	select {
	case <-f.done:
		return f.st, f.err
	case <-ctx.Done():
		return gateway.ProposalStatus{}, ctx.Err()
	}
}

// notStored answers a status read of id that the journal does not have:
// the seal under way (or its end), else the journal's error.
func (b *Intake) notStored(ctx context.Context, agent, id string, err error) (gateway.ProposalStatus, bool, error) {
	if !errors.Is(err, journal.ErrNotFound) {
		return gateway.ProposalStatus{}, false, err
	}
	f := b.under(ctx, agent, id)
	if f == nil {
		return gateway.ProposalStatus{}, false, err
	}
	select {
	case <-f.done:
		return f.st, true, f.err
	default:
		return f.sealingStatus(id), true, nil
	}
}
