package seal

import (
	"context"
	"strings"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/proposal"
)

type pushSeal struct{ a *proposal.PushArgs }

// seal: the commits the remote receives (and, forced, the ones it
// loses), and the content change the remote branch sees.
func (s *pushSeal) seal(ctx context.Context, sl *Work) (proposal.Sealed, error) {
	local := sl.in.Expect(proposal.BranchRef(s.a.Branch))
	tracking := s.a.LeaseRef()
	now, err := sl.in.Resolve(ctx, []string{tracking})
	if err != nil {
		return proposal.Sealed{}, err
	}
	remoteAt := now[tracking]
	if s.a.ForceWithLease {
		remoteAt = sl.in.Expect(tracking)
	}
	out := proposal.Sealed{Base: remoteAt, Effect: proposal.EffectLands,
		Moves: []proposal.RefMove{{Ref: proposal.BranchRef(s.a.RemoteName()), From: remoteAt, To: local, Repo: "remote " + s.a.Remote}}}
	if remoteAt != "" {
		if out.Commits, err = sl.commitList(ctx, local, remoteAt); err != nil {
			return out, err
		}
		trees, err := sl.git.Trees(ctx, sl.root(), remoteAt, local)
		if err != nil {
			return out, err
		}
		out.Before, out.After = trees[remoteAt], trees[local]
		if out.Files, err = sl.Changes(ctx, out.Before, out.After); err != nil {
			return out, err
		}
	} else {
		// A new branch on the remote: the commits none of the remote's
		// tracking refs has (rev-list's --remotes=<remote>, as revisions).
		res, err := sl.git.Run(ctx, gitrun.Call{Dir: sl.root(), Args: []string{"for-each-ref", "--format=%(objectname)"},
			Revs: []string{"refs/remotes/" + s.a.Remote + "/"}})
		if err != nil {
			return out, err
		}
		if out.Commits, err = sl.commitList(ctx, local, strings.Fields(res.Text())...); err != nil {
			return out, err
		}
	}
	if s.a.ForceWithLease && remoteAt != "" {
		if out.Lost, err = sl.commitList(ctx, remoteAt, local); err != nil {
			return out, err
		}
	}
	return out, nil
}
