package seal

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

type mergeSeal struct{ a *proposal.MergeArgs }

// seal: the result of git merge-tree (or, for a fast-forward, the
// source's tree); a conflicting merge is refused before any card, with
// the files, so the agent can resolve it and propose again.
func (s *mergeSeal) seal(ctx context.Context, sl *Work) (proposal.Sealed, error) {
	ref := proposal.BranchRef(s.a.Target)
	old, src := sl.in.Expect(ref), sl.in.Expect(s.a.Source)
	if err := sl.git.Repo.RefuseMergeDrivers(ctx, old, src); err != nil {
		return proposal.Sealed{}, asInvalid(err)
	}
	base, err := sl.git.MergeBase(ctx, old, src)
	if err != nil {
		return proposal.Sealed{}, err
	}
	switch {
	case base == "":
		return proposal.Sealed{}, errcode.New(errcode.UnrelatedHistories, "%s and %s share no history", s.a.Source, s.a.Target)
	case base == src:
		return proposal.Sealed{}, errcode.New(errcode.NothingToCommit, "%s already contains %s; there is nothing to merge", s.a.Target, s.a.Source)
	}
	before, err := sl.Tree(ctx, old)
	if err != nil {
		return proposal.Sealed{}, err
	}
	out := proposal.Sealed{Base: old, Before: before, Effect: proposal.EffectLands}
	if FastForward(s.a, base, old, src) {
		out.FastForward = true
		if out.After, err = sl.Tree(ctx, src); err != nil {
			return out, err
		}
		out.Moves = []proposal.RefMove{{Ref: ref, From: old, To: src}}
	} else {
		tree, conflicts, err := sl.git.MergeTree(ctx, old, src)
		if err != nil {
			return out, err
		}
		if len(conflicts) > 0 {
			return out, &errcode.Error{Code: errcode.MergeConflict, Data: map[string]any{"files": conflicts},
				Msg: fmt.Sprintf("merging %s into %s would conflict in %s: %s. Resolve it on a branch (merge %s into it and fix the files), then propose again",
					s.a.Source, s.a.Target, proposal.Count(len(conflicts), "file"), strings.Join(gitrun.LimitList(conflicts, 50), ", "), s.a.Target)}
		}
		out.After = tree
		out.Moves = []proposal.RefMove{{Ref: ref, From: old}}
	}
	if out.Commits, err = sl.commitList(ctx, src, old); err != nil {
		return out, err
	}
	out.Files, err = sl.Changes(ctx, out.Before, out.After)
	return out, err
}

// FastForward reports whether the merge a, of src into the target at old
// with merge base base, moves the target to src without a merge commit.
func FastForward(a *proposal.MergeArgs, base, old, src string) bool {
	return base == old && base != src && a.Strategy == proposal.MergeCommit
}
