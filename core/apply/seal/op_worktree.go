package seal

import (
	"context"
	"errors"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

type worktreeSeal struct{ a *proposal.WorktreeArgs }

// seal: a new branch, when one is created, and the new working tree.
func (s *worktreeSeal) seal(ctx context.Context, sl *Work) (proposal.Sealed, error) {
	if err := WorktreePlace(sl.in.Roots(), s.a, sl.p.Pinned.WorktreeNestedIn); err != nil {
		return proposal.Sealed{}, err
	}
	out := proposal.Sealed{}
	if s.a.NewBranch {
		start := sl.in.Expect(s.a.StartPoint)
		out.Base = start
		out.Moves = []proposal.RefMove{{Ref: proposal.BranchRef(s.a.Branch), To: start}}
	} else {
		out.Base = sl.in.Expect(proposal.BranchRef(s.a.Branch))
	}
	return out, nil
}

// WorktreePlace applies the rule the sidecar and the gateway applied, to
// the files as they are now (at seal and again before the worktree is
// added): never inside a git directory, never under a tree whose git
// directory is outside the roots, and nested exactly where the proposal
// says (nestedIn, its Pinned.WorktreeNestedIn).
func WorktreePlace(roots gitx.Roots, a *proposal.WorktreeArgs, nestedIn string) error {
	place, nested, err := roots.WorktreePlace(a.Path)
	if err != nil {
		var ge *errcode.Error
		if errors.As(err, &ge) {
			return &errcode.Error{Code: ge.Code, Msg: ge.Msg, Err: err}
		}
		return err
	}
	if place != a.Path || nested != nestedIn {
		return errcode.New(errcode.InvalidArgument, "the new worktree would not be where the proposal says (its nesting in another working tree changed)")
	}
	return nil
}
