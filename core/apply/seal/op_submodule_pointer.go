package seal

import (
	"context"
	"strings"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

type submoduleSeal struct {
	a *proposal.SubmodulePointerArgs
}

// seal: recording stages the submodule's pinned commit as the gitlink;
// returning moves the submodule's checkout to the recorded commit.
func (s *submoduleSeal) seal(ctx context.Context, sl *Work) (proposal.Sealed, error) {
	sub, err := sl.in.Submodule(ctx, s.a)
	if err != nil {
		return proposal.Sealed{}, err
	}
	subPath := sub.Repo.Root
	subHead := sl.p.Pinned.Repos[subPath]["HEAD"]
	head := sl.in.Expect("HEAD")
	before, err := sl.Tree(ctx, head)
	if err != nil {
		return proposal.Sealed{}, err
	}
	if s.a.Action == proposal.SubmoduleReturn {
		res, err := sl.run(ctx, gitrun.Call{Args: []string{"ls-files", "-s", "-z"}, Paths: []string{s.a.Path}})
		if err != nil {
			return proposal.Sealed{}, err
		}
		f := strings.Fields(strings.TrimRight(string(res.Out), "\x00"))
		if len(f) < 2 || f[0] != proposal.ModeGitlink {
			return proposal.Sealed{}, errcode.New(errcode.InvalidArgument, "%s is not a submodule in the superproject's index", s.a.Path)
		}
		return proposal.Sealed{Base: head, Moves: []proposal.RefMove{{Ref: "HEAD", From: subHead, To: f[1], Repo: subPath}}}, nil
	}
	env, _, err := sl.index(ctx, before)
	if err != nil {
		return proposal.Sealed{}, err
	}
	if _, err := sl.run(ctx, gitrun.Call{Args: []string{"update-index", "--add", "--cacheinfo", proposal.ModeGitlink + "," + subHead + "," + s.a.Path}, Env: env}); err != nil {
		return proposal.Sealed{}, err
	}
	after, files, err := sl.newTree(ctx, env, before,
		errcode.New(errcode.NothingToCommit, "the superproject already records %s at %s", s.a.Path, short(subHead)))
	if err != nil {
		return proposal.Sealed{}, err
	}
	mv, err := sl.headMove(ctx, "")
	if err != nil {
		return proposal.Sealed{}, err
	}
	return proposal.Sealed{Base: head, Before: before, After: after, Files: files, Effect: proposal.EffectLands, Moves: []proposal.RefMove{mv}}, nil
}
