package seal

import (
	"context"
	"slices"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/proposal"
)

type resetSeal struct{ a *proposal.ResetArgs }

// seal: soft and mixed resets keep every file; what the branch loses
// stays in the working tree as uncommitted changes (Kept). A hard reset
// loses what the working tree holds now, tracked files and untracked
// files the target has; Before is that state, After the target's tree.
func (s *resetSeal) seal(ctx context.Context, sl *Work) (proposal.Sealed, error) {
	old, target := sl.in.Expect("HEAD"), sl.in.Expect(s.a.Target)
	trees, err := sl.git.Trees(ctx, sl.root(), old, target)
	if err != nil {
		return proposal.Sealed{}, err
	}
	mv, err := sl.headMove(ctx, target)
	if err != nil {
		return proposal.Sealed{}, err
	}
	out := proposal.Sealed{Base: old, Moves: []proposal.RefMove{mv}}
	if out.Lost, err = sl.commitList(ctx, old, target); err != nil {
		return out, err
	}
	if s.a.Mode != proposal.ResetHard {
		out.Before, out.After = trees[old], trees[target]
		out.Kept, err = sl.Changes(ctx, trees[target], trees[old])
		return out, err
	}
	if err := sl.git.RequireNoIgnoredInTheWay(ctx, sl.root(), old, target); err != nil {
		return out, err
	}
	before, inTheWay, err := ResetState(ctx, sl, target)
	if err != nil {
		return out, err
	}
	out.Before, out.After, out.Effect, out.Untracked = before, trees[target], proposal.EffectLoses, inTheWay
	if out.Files, err = sl.Changes(ctx, before, trees[target]); err != nil {
		return out, err
	}
	dirty, err := sl.Changes(ctx, trees[old], before)
	if err != nil {
		return out, err
	}
	// The work is what differs from HEAD, not from the target: the files
	// that differ only because of the commits the reset drops are counted
	// as those commits (Lost).
	out.Work = dirty
	for _, d := range dirty {
		if !slices.Contains(inTheWay, d.Path) {
			out.Uncommitted = append(out.Uncommitted, d.Path)
		}
		if d.OldPath != "" && !slices.Contains(out.Uncommitted, d.OldPath) {
			out.Uncommitted = append(out.Uncommitted, d.OldPath)
		}
	}
	return out, nil
}

// ResetState is what a hard reset to target overwrites, as a tree: every
// tracked file as it is on disk, and the untracked files that stand where
// the target has a file (returned too). The executor computes it again
// before it resets.
func ResetState(ctx context.Context, sl *Work, target string) (string, []string, error) {
	if sl.worktree != "" {
		// An earlier step of the plan left the checkout at this tree.
		return sl.worktree, nil, nil
	}
	env, _, err := sl.indexCopy(ctx)
	if err != nil {
		return "", nil, err
	}
	if _, err := sl.run(ctx, gitrun.Call{Args: []string{"add", "--update"}, Env: env}); err != nil {
		return "", nil, err
	}
	untracked, err := sl.listPaths(ctx, env, gitrun.Call{Args: []string{"ls-files", "-z", "--others", "--exclude-standard"}})
	if err != nil {
		return "", nil, err
	}
	var inTheWay []string
	if len(untracked) > 0 {
		inTarget, err := sl.listPaths(ctx, nil, gitrun.Call{Args: []string{"ls-tree", "-r", "-z", "--name-only", "--full-tree"}, Revs: []string{target}})
		if err != nil {
			return "", nil, err
		}
		for _, u := range untracked {
			if slices.Contains(inTarget, u) {
				inTheWay = append(inTheWay, u)
			}
		}
		if err := sl.addPaths(ctx, env, inTheWay); err != nil {
			return "", nil, err
		}
	}
	t, err := sl.writeTree(ctx, env)
	return t, inTheWay, err
}
