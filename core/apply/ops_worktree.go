package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/core/apply/seal"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// worktreeStep adds a linked worktree, creating its branch first (by
// compare-and-swap) when asked. Hooks stay off: post-checkout is the
// repository's program, not part of what was approved.
type worktreeStep struct{ a *proposal.WorktreeArgs }

func (s *worktreeStep) name() proposal.Op { return proposal.OpWorktree }

func (s *worktreeStep) touch(_ context.Context, r *run, t touches) error {
	if s.a.NewBranch {
		t.of(r.main).addRef(proposal.BranchRef(s.a.Branch))
	}
	t.of(r.main).newWorktree = s.a.Path
	return nil
}

func (s *worktreeStep) check(ctx context.Context, r *run) error {
	parent := filepath.Dir(s.a.Path)
	canon, err := r.e.allowed().Confine(parent)
	if err != nil || canon != parent {
		return errcode.New(errcode.InvalidArgument, "the new worktree's parent directory must be a canonical directory inside the allowed roots")
	}
	if err := s.checkPlace(r); err != nil {
		return err
	}
	if _, err := os.Lstat(s.a.Path); err == nil {
		return errcode.New(errcode.InvalidArgument, "%s already exists; a worktree needs a new directory", s.a.Path)
	}
	if !s.a.NewBranch {
		wt, err := r.checkedOut(ctx, r.main, proposal.BranchRef(s.a.Branch))
		if err != nil && !errors.Is(err, &errcode.Error{Code: errcode.BranchCheckedOut}) {
			return err
		}
		if wt != nil || err != nil {
			return errcode.New(errcode.BranchCheckedOut, "branch %s is already checked out in another worktree", s.a.Branch)
		}
	}
	return nil
}

// checkPlace applies, before the worktree is added, the rule its seal
// applied (see seal.WorktreePlace).
func (s *worktreeStep) checkPlace(r *run) error {
	return seal.WorktreePlace(r.e.allowed(), s.a, r.p.Pinned.WorktreeNestedIn)
}

func (s *worktreeStep) do(ctx context.Context, r *run, w *writing) error {
	rc := r.main
	ref := proposal.BranchRef(s.a.Branch)
	if s.a.NewBranch {
		start := r.expect[s.a.StartPoint]
		if err := r.cas(ctx, rc, ref, start, "", fmt.Sprintf("sluice: branch %s for a worktree (proposal %s)", s.a.Branch, r.p.ID)); err != nil {
			return err
		}
		r.changed = true
	}
	if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"worktree", "add", "--quiet"}, revs: []string{s.a.Path, s.a.Branch}}); err != nil {
		if s.a.NewBranch {
			if derr := r.cas(ctx, rc, ref, "", r.expect[s.a.StartPoint], "sluice: undo a branch whose worktree failed"); derr == nil {
				r.changed = false
			}
		}
		if st := stderrOf(err); strings.Contains(st, "already checked out") || strings.Contains(st, "already used by worktree") {
			return &errcode.Error{Code: errcode.BranchCheckedOut, Msg: "branch " + s.a.Branch + " is already checked out in another worktree", Err: err}
		}
		return err
	}
	r.changed = true
	r.note("added worktree %s on branch %s", s.a.Path, s.a.Branch)
	return nil
}
