package apply

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// rebaseStep replays Branch onto Onto in a temporary worktree of its own,
// never in the person's checkout, then moves the branch by
// compare-and-swap.
type rebaseStep struct {
	a *proposal.RebaseArgs
	branchMove
}

func (s *rebaseStep) name() proposal.Op { return proposal.OpRebase }

func (s *rebaseStep) touch(ctx context.Context, r *run, t touches) error {
	return s.touchBranch(ctx, r, t, s.a.Branch)
}

func (s *rebaseStep) check(ctx context.Context, r *run) error {
	return s.checkBranch(ctx, r, "the branch "+s.a.Branch)
}

func (s *rebaseStep) do(ctx context.Context, r *run, w *writing) error {
	rc := r.main
	ref := proposal.BranchRef(s.a.Branch)
	old, onto := r.expect[ref], r.expect[s.a.Onto]
	if err := rc.repo.RefuseMergeDrivers(ctx, old, onto); err != nil {
		return asInvalid(err)
	}
	base, err := rc.mergeBase(ctx, old, onto)
	if err != nil {
		return err
	}
	var next, how string
	switch {
	case base == "":
		return errcode.New(errcode.UnrelatedHistories, "%s and %s share no history; nothing was changed", s.a.Branch, s.a.Onto)
	case base == onto:
		r.note("%s already contains %s; nothing to rebase", s.a.Branch, s.a.Onto)
		return nil
	case base == old:
		next, how = onto, "fast-forward"
	default:
		if next, err = r.rebaseAway(ctx, rc, old, onto, s.a, gitx.ProfileSigned); err != nil {
			return err
		}
		how = "replayed"
		trees, err := rc.resolveTrees(ctx, next)
		if err != nil {
			return err
		}
		if err := r.verifyTree(r.sealedStep(), trees[next], "the rebase"); err != nil {
			return err
		}
	}
	r.e.step("before-ref-update")
	msg := fmt.Sprintf("sluice: rebase %s onto %s (proposal %s)", s.a.Branch, s.a.Onto, r.p.ID)
	if err := r.moveCheckout(ctx, w, rc, ref, old, next, s.wt, msg, nil); err != nil {
		return err
	}
	r.moved(rc, ref, next, s.wt != nil && s.wt.path == rc.path)
	r.note("rebased %s onto %s (%s): %s → %s", s.a.Branch, s.a.Onto, how, short(old), short(next))
	return nil
}
