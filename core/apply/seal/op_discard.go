package seal

import (
	"context"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

type discardSeal struct{ a *proposal.DiscardArgs }

// seal: what is lost is the state of the discarded files now, against
// HEAD: Before is HEAD's tree with those files as they are on disk, After
// HEAD's tree.
func (s *discardSeal) seal(ctx context.Context, sl *Work) (proposal.Sealed, error) {
	head := sl.in.Expect("HEAD")
	headTree, err := sl.Tree(ctx, head)
	if err != nil {
		return proposal.Sealed{}, err
	}
	before, untracked, err := DiscardState(ctx, sl, s.a, head, headTree)
	if err != nil {
		return proposal.Sealed{}, err
	}
	if before == headTree {
		return proposal.Sealed{}, errcode.New(errcode.NothingToCommit, "there are no uncommitted changes to discard in %s", strings.Join(gitrun.LimitList(s.a.Paths, 10), ", "))
	}
	files, err := sl.Changes(ctx, before, headTree)
	if err != nil {
		return proposal.Sealed{}, err
	}
	out := proposal.Sealed{Base: head, Before: before, After: headTree, Files: files, Effect: proposal.EffectLoses}
	// The work, as the person made it: from HEAD to the files as they are.
	if out.Work, err = sl.Changes(ctx, headTree, before); err != nil {
		return proposal.Sealed{}, err
	}
	for _, f := range files {
		if slices.Contains(untracked, f.Path) {
			out.Untracked = append(out.Untracked, f.Path)
		} else {
			out.Uncommitted = append(out.Uncommitted, f.Path)
		}
	}
	return out, nil
}

// discardFiles lists every file a discard of a's paths changes: what the
// index or HEAD tracks there and, with Untracked, the untracked files
// that are not ignored.
func discardFiles(ctx context.Context, sl *Work, a *proposal.DiscardArgs, head string) (tracked, untracked []string, err error) {
	env, _, err := sl.indexCopy(ctx)
	if err != nil {
		return nil, nil, err
	}
	inIndex, err := sl.listPaths(ctx, env, gitrun.Call{Args: []string{"ls-files", "-z"}, Paths: a.Paths, DashDash: true})
	if err != nil {
		return nil, nil, err
	}
	inHead, err := sl.listPaths(ctx, nil, gitrun.Call{Args: []string{"ls-tree", "-r", "-z", "--name-only", "--full-tree"}, Revs: []string{head}, Paths: a.Paths, DashDash: true})
	if err != nil {
		return nil, nil, err
	}
	tracked = appendNew(inIndex, inHead...)
	if a.Untracked {
		if untracked, err = sl.listPaths(ctx, env, gitrun.Call{Args: []string{"ls-files", "-z", "--others", "--exclude-standard"}, Paths: a.Paths, DashDash: true}); err != nil {
			return nil, nil, err
		}
	}
	return tracked, untracked, nil
}

// DiscardState is the tree of the files the discard a throws away, as
// they are (HEAD's tree with them as on disk), and the untracked ones
// among them. The executor computes it again before it discards.
func DiscardState(ctx context.Context, sl *Work, a *proposal.DiscardArgs, head, headTree string) (string, []string, error) {
	tracked, untracked, err := discardFiles(ctx, sl, a, head)
	if err != nil {
		return "", nil, err
	}
	t, _, err := sl.WorktreeState(ctx, headTree, append(tracked, untracked...))
	return t, untracked, err
}
