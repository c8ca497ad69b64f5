package seal

import (
	"context"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

type rebaseSeal struct{ a *proposal.RebaseArgs }

// seal: the branch is replayed onto its new base in a temporary worktree,
// as the executor will do it (without signing; the executor signs), so
// conflicts are known before the card and its tree is what lands.
func (s *rebaseSeal) seal(ctx context.Context, sl *Work) (proposal.Sealed, error) {
	ref := proposal.BranchRef(s.a.Branch)
	old, onto := sl.in.Expect(ref), sl.in.Expect(s.a.Onto)
	if err := sl.git.Repo.RefuseMergeDrivers(ctx, old, onto); err != nil {
		return proposal.Sealed{}, asInvalid(err)
	}
	base, err := sl.git.MergeBase(ctx, old, onto)
	if err != nil {
		return proposal.Sealed{}, err
	}
	switch {
	case base == "":
		return proposal.Sealed{}, errcode.New(errcode.UnrelatedHistories, "%s and %s share no history", s.a.Branch, s.a.Onto)
	case base == onto:
		return proposal.Sealed{}, errcode.New(errcode.NothingToCommit, "%s already contains %s; there is nothing to rebase", s.a.Branch, s.a.Onto)
	}
	before, err := sl.Tree(ctx, old)
	if err != nil {
		return proposal.Sealed{}, err
	}
	out := proposal.Sealed{Base: old, Before: before, Effect: proposal.EffectLands}
	next := onto
	if base != old {
		if next, err = sl.git.Rebase(ctx, sl.in.Log(), old, onto, s.a, gitx.ProfileWrite); err != nil {
			return out, err
		}
		if out.Commits, err = sl.commitList(ctx, old, onto); err != nil {
			return out, err
		}
	} else {
		out.FastForward = true
	}
	if out.After, err = sl.Tree(ctx, next); err != nil {
		return out, err
	}
	out.Moves = []proposal.RefMove{{Ref: ref, From: old}}
	if next == onto {
		out.Moves[0].To = onto
	}
	out.Files, err = sl.Changes(ctx, before, out.After)
	return out, err
}
