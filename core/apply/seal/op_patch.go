package seal

import (
	"context"
	"strings"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

type patchSeal struct{ a *proposal.PatchArgs }

// seal: the patch applied, at receipt, to the files (or the index) as
// they are; one that does not apply is refused with git's reason.
func (s *patchSeal) seal(ctx context.Context, sl *Work) (proposal.Sealed, error) {
	head := sl.in.Expect("HEAD")
	headTree, err := sl.Tree(ctx, head)
	if err != nil {
		return proposal.Sealed{}, err
	}
	before, idx, err := PatchState(ctx, sl, s.a, headTree)
	if err != nil {
		return proposal.Sealed{}, err
	}
	env, err := sl.copyIndexFile(idx)
	if err != nil {
		return proposal.Sealed{}, err
	}
	if _, err := sl.run(ctx, gitrun.Call{Args: []string{"apply", "--cached", "--whitespace=nowarn"}, Env: env, Stdin: []byte(s.a.Patch)}); err != nil {
		if st := gitrun.StderrOf(err); st != "" {
			return proposal.Sealed{}, &errcode.Error{Code: errcode.PatchDoesNotApply, Err: err, Data: errcode.GitFailure{Command: "apply", Stderr: st},
				Msg: "the patch does not apply to the " + string(s.a.Target) + " as it is now: " + clip(strings.TrimSpace(st), 2000)}
		}
		return proposal.Sealed{}, err
	}
	after, err := sl.writeTree(ctx, env)
	if err != nil {
		return proposal.Sealed{}, err
	}
	files, err := sl.Changes(ctx, before, after)
	if err != nil {
		return proposal.Sealed{}, err
	}
	return proposal.Sealed{Base: head, Before: before, After: after, Files: files, Effect: proposal.EffectLands}, nil
}

// PatchState is what the patch a applies to, as a tree, and the
// temporary index that holds it: for the index, a copy of the index; for
// the working tree, HEAD's tree with the patch's files as they are on
// disk. The executor computes it again before and after it applies.
func PatchState(ctx context.Context, sl *Work, a *proposal.PatchArgs, headTree string) (string, string, error) {
	if a.Target == proposal.PatchIndex {
		env, idx, err := sl.indexCopy(ctx)
		if err != nil {
			return "", "", err
		}
		t, err := sl.writeTree(ctx, env)
		return t, idx, err
	}
	if sl.worktree != "" {
		// An earlier step of the plan left the checkout at this tree.
		_, idx, err := sl.index(ctx, sl.worktree)
		return sl.worktree, idx, err
	}
	files, _ := a.FilesTouched()
	return sl.WorktreeState(ctx, headTree, files)
}
