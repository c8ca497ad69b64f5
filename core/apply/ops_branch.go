package apply

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/core/proposal"
)

// branchStep creates a branch at the pinned start point; a branch of that
// name that already exists is left alone (ref_exists). With Checkout the
// main working tree then switches to it, which needs a clean checkout.
type branchStep struct{ a *proposal.BranchArgs }

func (s *branchStep) name() proposal.Op { return proposal.OpBranch }

func (s *branchStep) touch(_ context.Context, r *run, t touches) error {
	t.of(r.main).addRef(proposal.BranchRef(s.a.Name))
	if s.a.Checkout {
		t.of(r.main).addWorktree(r.main.main(), depthFiles)
	}
	return nil
}

func (s *branchStep) check(ctx context.Context, r *run) error {
	if !s.a.Checkout {
		return nil
	}
	return r.requireClean(ctx, r.main, r.main.main(), "the working tree")
}

func (s *branchStep) do(ctx context.Context, r *run, w *writing) error {
	ref, start := proposal.BranchRef(s.a.Name), r.expect[s.a.StartPoint]
	msg := fmt.Sprintf("sluice: branch %s at %s (proposal %s)", s.a.Name, s.a.StartPoint, r.p.ID)
	if err := r.cas(ctx, r.main, ref, start, "", msg); err != nil {
		return err
	}
	r.changed = true
	r.moved(r.main, ref, start, false)
	r.note("created branch %s at %s", s.a.Name, short(start))
	if !s.a.Checkout {
		return nil
	}
	return s.switchTo(ctx, r, w, ref, start, msg)
}

// switchTo moves the main working tree onto the new branch: its files
// follow with a two-tree read-tree (refused first when an untracked or
// ignored file is in the way), then HEAD is pointed at the branch.
func (s *branchStep) switchTo(ctx context.Context, r *run, w *writing, ref, start, msg string) error {
	wt := r.main.main()
	h, err := r.head(ctx)
	if err != nil {
		return err
	}
	if h.sha != start {
		if err := r.main.followable(ctx, wt, h.sha, start, nil); err != nil {
			return err
		}
		if err := r.main.follow(ctx, w.left[r.main], wt, h.sha, start); err != nil {
			return err
		}
	}
	if _, err := r.main.g.run(ctx, call{dir: wt.path, args: []string{"symbolic-ref", "-m", msg + " (checkout)"}, revs: []string{"HEAD", ref}}); err != nil {
		return err
	}
	r.moved(r.main, ref, start, true)
	r.note("checked out %s", s.a.Name)
	return nil
}
