package app

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/core/apply"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/intake"
	"github.com/sluicehq/sluice/core/proposal"
)

// sealedRetention is how long the sealed objects of a proposal that ended
// without running (rejected, cancelled, expired, failed) are kept. A
// completed proposal keeps them as long as its record: they are its
// executed diff in History.
const sealedRetention = 7 * 24 * time.Hour

// sealedTendEvery is how often the app folds the refs of new proposals'
// sealed objects into each repository's one kept ref and lets go of those
// past their retention (see apply.TendSealed).
const sealedTendEvery = time.Hour

// tendSealed runs from start-up until ctx ends. At start-up every open
// proposal's sealed objects are kept (a crash may have come between
// storing a proposal and keeping them); then, at once and every
// sealedTendEvery, each repository's sealed refs are tended.
func (a *App) tendSealed(ctx context.Context, b *intake.Intake) {
	if a.executor == nil {
		return
	}
	if err := b.KeepSealed(ctx); err != nil {
		a.log.Error("keeping the sealed objects of open proposals", "err", err)
	}
	t := time.NewTicker(sealedTendEvery)
	defer t.Stop()
	for {
		a.tendSealedOnce(ctx, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// tendSealedOnce tends the sealed objects of every repository the
// journal has records of: a proposal's own ref is folded into the
// repository's kept ref, and the objects of a proposal whose record is
// gone, or that ended without running longer than sealedRetention ago,
// are let go (now is the time the retention is counted to); then its
// restore points past their retention are removed. The journal
// is asked after the executor read the refs: a ref is written only once
// its proposal is stored, so a proposal found without a record has none
// any more.
func (a *App) tendSealedOnce(ctx context.Context, now time.Time) {
	repos, err := a.journal.Repos()
	if err != nil {
		a.log.Error("listing repositories for sealed objects", "err", err)
		return
	}
	cutoff := now.Add(-sealedRetention)
	drop := func(ids []string) (map[string]bool, error) {
		st, err := a.journal.Standings(ids)
		if err != nil {
			return nil, err
		}
		out := map[string]bool{}
		for _, id := range ids {
			s, ok := st[id]
			if !ok || (s.State.Terminal() && s.State != proposal.Completed && s.UpdatedAt.Before(cutoff)) {
				out[id] = true
			}
		}
		return out, nil
	}
	for _, repo := range repos {
		if ctx.Err() != nil {
			return
		}
		got, err := a.executor.TendSealed(ctx, repo, drop)
		if err != nil {
			// The repository is gone or outside the roots now, or is
			// busy: the next tend tries again.
			a.log.Debug("tending sealed objects", "repo", repo, "err", err)
			continue
		}
		if got.Folded > 0 || got.Dropped > 0 {
			a.log.Info("sealed objects tended", "repo", repo, "folded", got.Folded, "dropped", got.Dropped, "kept", got.Kept)
		}
		a.tendRestorePoints(ctx, repo, now)
	}
}

// tendRestorePoints removes the restore points of repo whose operation
// ended longer than the configured restorePointRetention before now (see
// apply.Executor.TendRestorePoints), keeping those of proposals that
// need reconciliation: the person settles such a proposal from its
// restore point; then it folds the ended ones that are still loose refs
// (apply.Executor.FoldRestorePoints).
func (a *App) tendRestorePoints(ctx context.Context, repo string, now time.Time) {
	retention := a.current().RestorePointRetention
	if retention <= 0 {
		retention = config.DefaultRestorePointRetention
	}
	keep := func(old []apply.RestorePoint) (map[string]bool, error) {
		var ids []string
		for _, rp := range old {
			if rp.ProposalID != "" {
				ids = append(ids, rp.ProposalID)
			}
		}
		st, err := a.journal.Standings(ids)
		if err != nil {
			return nil, err
		}
		out := map[string]bool{}
		for _, rp := range old {
			if s, ok := st[rp.ProposalID]; ok && s.State == proposal.NeedsReconciliation {
				out[rp.ID] = true
			}
		}
		return out, nil
	}
	got, err := a.executor.TendRestorePoints(ctx, repo, now.Add(-retention), keep)
	if err != nil {
		a.log.Debug("tending restore points", "repo", repo, "err", err)
		return
	}
	if got.Removed > 0 {
		a.log.Info("restore points past their retention removed", "repo", repo, "removed", got.Removed, "kept", got.Kept, "left for the next tend", got.Left)
	}
	// Those within their retention leave their loose refs for the one
	// folded ref (see restorepoint.FoldedRef).
	fold, err := a.executor.FoldRestorePoints(ctx, repo)
	if err != nil {
		a.log.Debug("folding restore points", "repo", repo, "err", err)
		return
	}
	if fold.Folded > 0 {
		a.log.Info("restore points folded", "repo", repo, "folded", fold.Folded, "still loose", fold.Loose, "kept folded", fold.Kept)
	}
}
