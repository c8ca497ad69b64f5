package app

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/core/intake"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// sealedRetention is how long the sealed objects of a proposal that ended
// without running (rejected, cancelled, expired, failed) are kept. A
// completed proposal keeps them as long as its record: they are its
// executed diff in History.
const sealedRetention = 7 * 24 * time.Hour

// tendSealed runs once at start-up: every open proposal's sealed objects
// are kept (a crash may have come between storing a proposal and keeping
// them), and the sealed refs of proposals that ended long ago, or whose
// record is gone, are dropped.
func (a *App) tendSealed(ctx context.Context, b *intake.Intake) {
	if a.executor == nil {
		return
	}
	if err := b.KeepSealed(ctx); err != nil {
		a.log.Error("keeping the sealed objects of open proposals", "err", err)
	}
	recs, err := a.journal.List(journal.Filter{})
	if err != nil {
		a.log.Error("listing proposals for sealed objects", "err", err)
		return
	}
	byID := map[string]journal.Record{}
	repos := map[string]bool{}
	for _, r := range recs {
		byID[r.Proposal.ID] = r
		repos[r.Proposal.Repo] = true
	}
	cutoff := time.Now().Add(-sealedRetention)
	for repo := range repos {
		if ctx.Err() != nil {
			return
		}
		ids, err := a.executor.SealedIDs(ctx, repo)
		if err != nil {
			continue // the repository is gone or outside the roots now
		}
		for _, id := range ids {
			rec, ok := byID[id]
			drop := !ok || (rec.State.Terminal() && rec.State != proposal.Completed && rec.UpdatedAt.Before(cutoff))
			if !drop {
				continue
			}
			if err := a.executor.Unseal(ctx, repo, id); err != nil {
				a.log.Warn("dropping sealed objects", "proposal", id, "err", err)
			}
		}
	}
}
