package seal

import (
	"context"
	"path/filepath"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

type commitSeal struct{ a *proposal.CommitArgs }

// seal: the tree the commit records is HEAD's tree with exactly the
// committed paths as they are on disk now (with stageAll, every change
// that is not ignored); the executor commits that tree, whatever the
// working tree holds by then.
func (s *commitSeal) seal(ctx context.Context, sl *Work) (proposal.Sealed, error) {
	below, err := s.below(ctx, sl)
	if err != nil {
		return proposal.Sealed{}, err
	}
	if src, err := sl.sessionSource(); err != nil {
		return proposal.Sealed{}, err
	} else if src != nil {
		if below != nil {
			return proposal.Sealed{}, errcode.New(errcode.Unsupported, "a confined session's commit cannot be stacked on another proposal yet: propose it when that one has landed")
		}
		return s.sealFromCopy(ctx, sl, src)
	}
	base := sl.in.Expect("HEAD")
	var before string
	if below != nil {
		before = below.After
	} else if before, err = sl.Tree(ctx, base); err != nil {
		return proposal.Sealed{}, err
	}
	nothing := &errcode.Error{Code: errcode.NothingToCommit, Msg: "there is nothing to commit: the paths are the same as in HEAD"}
	var (
		env   []string
		after string
		files []proposal.FileChange
	)
	// A stageAll in a small tree (fewer than bulkPaths entries in the
	// person's index and files on disk) stages loose objects, in this
	// process where git's answer is certain (add_local.go); a larger one
	// stages in bulk.
	small := s.a.StageAll && indexEntries(filepath.Join(sl.git.Repo.GitDir, "index")) < bulkPaths && fewerFiles(sl.root(), bulkPaths)
	if small {
		if tree, ok := sl.addAllLocal(); ok {
			if after, files, err = sl.treeChanges(ctx, before, tree, nothing); err != nil {
				return proposal.Sealed{}, err
			}
		}
	}
	switch {
	case after != "":
		// Staged in process above.
	case s.a.StageAll:
		if env, _, err = sl.indexCopy(ctx); err != nil {
			return proposal.Sealed{}, err
		}
		add := gitrun.Call{Args: []string{"add", "--all"}, Env: env}
		if !small {
			add.Global = bulkObjects
		}
		if _, err := sl.run(ctx, add); err != nil {
			return proposal.Sealed{}, err
		}
	default:
		if env, _, err = sl.index(ctx, before); err != nil {
			return proposal.Sealed{}, err
		}
		if err := sl.addPaths(ctx, env, s.a.Paths); err != nil {
			return proposal.Sealed{}, err
		}
	}
	if after == "" {
		if after, files, err = sl.newTree(ctx, env, before, nothing); err != nil {
			return proposal.Sealed{}, err
		}
	}
	if err := sl.refuseFilters(ctx, files); err != nil {
		return proposal.Sealed{}, err
	}
	mv, err := sl.headMove(ctx, "")
	if err != nil {
		return proposal.Sealed{}, err
	}
	out := proposal.Sealed{Base: base, Before: before, After: after, Files: files, Effect: proposal.EffectLands,
		Moves: []proposal.RefMove{mv}}
	if below != nil {
		out.Below = s.a.Below
	}
	return out, nil
}

// belowKey carries, in a sealing's context, the pending proposal a
// stacked commit is sealed on.
type belowKey struct{}

// WithBelow tells a sealing (and a re-sealing) that the proposal below
// the one it seals is p, still pending: a stacked commit is sealed on p's
// outcome. Without it, a stacked commit whose proposal below has landed
// is sealed on HEAD like any other.
func WithBelow(ctx context.Context, p proposal.Proposal) context.Context {
	return context.WithValue(ctx, belowKey{}, p)
}

// below is the sealed outcome a stacked commit is sealed on (nil when it
// is not stacked, or the proposal below has landed): that proposal's,
// which must be a commit on the same branch at the commit this one pins.
func (s *commitSeal) below(ctx context.Context, sl *Work) (*proposal.Sealed, error) {
	if s.a.Below == "" {
		return nil, nil
	}
	b, ok := ctx.Value(belowKey{}).(proposal.Proposal)
	if !ok {
		return nil, nil
	}
	if b.ID != s.a.Below || b.Sealed == nil || b.Repo != sl.p.Repo {
		return nil, errcode.New(errcode.InvalidArgument, "proposal %s is not a sealed proposal of this repository to stack on", s.a.Below)
	}
	if _, ok := b.Args.(*proposal.CommitArgs); !ok {
		return nil, errcode.New(errcode.Unsupported, "a commit can be stacked on a pending commit only; proposal %s is a %s", b.ID, b.Op)
	}
	head, err := sl.in.HeadName(ctx)
	if err != nil {
		return nil, err
	}
	if b.Sealed.Base != sl.in.Expect("HEAD") || b.Sealed.Head != head {
		return nil, errcode.New(errcode.StaleBase, "proposal %s, below this one, is sealed on %s of %s, not on where this one is (%s of %s): wait until it is re-sealed, or propose on its own",
			b.ID, short(b.Sealed.Base), headLabel(b.Sealed.Head), short(sl.in.Expect("HEAD")), headLabel(head))
	}
	last := b.Sealed
	if n := len(b.Sealed.Steps); n > 0 {
		last = &b.Sealed.Steps[n-1]
	}
	return last, nil
}
