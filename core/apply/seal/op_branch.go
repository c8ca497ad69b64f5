package seal

import (
	"context"

	"github.com/sluicehq/sluice/core/proposal"
)

type branchSeal struct{ a *proposal.BranchArgs }

// seal: a new ref; with checkout, the working tree's change.
func (s *branchSeal) seal(ctx context.Context, sl *Work) (proposal.Sealed, error) {
	start := sl.in.Expect(s.a.StartPoint)
	out := proposal.Sealed{Base: start, Moves: []proposal.RefMove{{Ref: proposal.BranchRef(s.a.Name), To: start}}}
	if !s.a.Checkout {
		return out, nil
	}
	h, err := sl.in.Head(ctx)
	if err != nil {
		return out, err
	}
	trees, err := sl.git.Trees(ctx, sl.root(), h.SHA, start)
	if err != nil {
		return out, err
	}
	out.Before, out.After, out.Effect = trees[h.SHA], trees[start], proposal.EffectLands
	out.Moves = append(out.Moves, proposal.RefMove{Ref: "HEAD", From: h.SHA, To: start})
	out.Files, err = sl.Changes(ctx, out.Before, out.After)
	return out, err
}
