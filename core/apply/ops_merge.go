package apply

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/apply/seal"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// mergeStep merges Source into the branch Target. The merge is computed
// by git merge-tree, never in a checkout; the branch moves by
// compare-and-swap, and its checkout (if any) follows only when clean.
type mergeStep struct {
	a *proposal.MergeArgs
	branchMove
	// plan is what reading tells of the merge, read while the checks and
	// the restore point run (see start).
	plan chan mergePlan
}

// mergePlan is what a merge will do, as far as reading tells: the merge
// base, and for a fast-forward the paths the checkout update adds. It is
// computed without writing anything, so that a merge refused by the
// checks leaves the repository exactly as it was.
type mergePlan struct {
	base string
	// added lists the paths a fast-forward of the checkout adds, and
	// srcTree is the tree it checks out.
	added   []string
	srcTree string
	err     error
}

// branchMove is what merge and rebase share: the branch they move, and
// the worktree where it is checked out, if any, which must be clean and
// follows the branch.
type branchMove struct{ wt *worktree }

// touchBranch records the branch and its checkout in the touch set.
func (b *branchMove) touchBranch(ctx context.Context, r *run, t touches, branch string) error {
	ref := proposal.BranchRef(branch)
	t.of(r.main).addRef(ref)
	wt, err := r.checkedOut(ctx, r.main, ref)
	if err != nil {
		return err
	}
	if b.wt = wt; wt != nil {
		t.of(r.main).addWorktree(*wt, depthFiles)
	}
	return nil
}

// checkBranch refuses a dirty checkout of the branch.
func (b *branchMove) checkBranch(ctx context.Context, r *run, what string) error {
	if b.wt == nil {
		return nil
	}
	return r.requireClean(ctx, r.main, *b.wt, what)
}

func (s *mergeStep) name() proposal.Op { return proposal.OpMerge }

func (s *mergeStep) touch(ctx context.Context, r *run, t touches) error {
	return s.touchBranch(ctx, r, t, s.a.Target)
}

func (s *mergeStep) check(ctx context.Context, r *run) error {
	s.start(ctx, r)
	return s.checkBranch(ctx, r, "the target branch "+s.a.Target)
}

// start reads what the merge needs alongside the checks and the restore
// point.
func (s *mergeStep) start(ctx context.Context, r *run) {
	if s.plan != nil {
		return
	}
	s.plan = make(chan mergePlan, 1)
	ref := proposal.BranchRef(s.a.Target)
	old, src := r.expect[ref], r.expect[s.a.Source]
	r.background(func() { s.plan <- s.read(ctx, r.main, old, src) })
}

func (s *mergeStep) read(ctx context.Context, rc *repoCtx, old, src string) (p mergePlan) {
	if p.err = rc.repo.RefuseMergeDrivers(ctx, old, src); p.err != nil {
		p.err = asInvalid(p.err)
		return p
	}
	if p.base, p.err = rc.mergeBase(ctx, old, src); p.err != nil {
		return p
	}
	if s.fastForward(p.base, old, src) && s.wt != nil {
		if p.added, p.err = rc.addedPaths(ctx, old, src); p.err != nil {
			return p
		}
		var res map[string]string
		if res, p.err = rc.resolveTrees(ctx, src); p.err == nil {
			p.srcTree = res[src]
		}
	}
	return p
}

func (s *mergeStep) fastForward(base, old, src string) bool {
	return seal.FastForward(s.a, base, old, src)
}

func (s *mergeStep) do(ctx context.Context, r *run, w *writing) error {
	rc := r.main
	ref := proposal.BranchRef(s.a.Target)
	old, src := r.expect[ref], r.expect[s.a.Source]
	s.start(ctx, r)
	p := <-s.plan
	if p.err != nil {
		return p.err
	}
	switch {
	case p.base == "":
		return errcode.New(errcode.UnrelatedHistories, "%s and %s share no history; nothing was changed", s.a.Source, s.a.Target)
	case p.base == src:
		r.note("%s already contains %s; nothing to merge", s.a.Target, s.a.Source)
		return nil
	}
	next, how, added, tree := src, "fast-forward", p.added, p.srcTree
	if !s.fastForward(p.base, old, src) {
		var conflicts []string
		var err error
		if tree, conflicts, err = rc.mergeTree(ctx, old, src); err != nil {
			return err
		}
		if len(conflicts) > 0 {
			return &errcode.Error{Code: errcode.MergeConflict, Data: map[string]any{"files": conflicts},
				Msg: fmt.Sprintf("merging %s into %s conflicts in %s: %s; nothing was changed",
					s.a.Source, s.a.Target, proposal.Count(len(conflicts), "file"), strings.Join(limitList(conflicts, 50), ", "))}
		}
		if err := r.verifyTree(r.sealedStep(), tree, "the merge"); err != nil {
			return err
		}
		msg := s.a.Message
		parents := []string{old, src}
		how = "merge commit"
		if s.a.Strategy == proposal.MergeSquash {
			parents, how = []string{old}, "squash commit"
			if msg == "" {
				msg = fmt.Sprintf("Squash %s into %s", s.a.Source, s.a.Target)
				if log := rc.shortlog(ctx, old, src); log != "" {
					msg += "\n\n" + log
				}
			}
		} else if msg == "" {
			msg = fmt.Sprintf("Merge %s into %s", s.a.Source, s.a.Target)
		}
		r.e.step("merge-computed")
		// The paths the checkout update adds are read while the person's
		// git makes the commit (with their signing, which may take a
		// while).
		var addErr error
		if s.wt != nil {
			done := make(chan struct{})
			r.background(func() {
				defer close(done)
				added, addErr = rc.addedPaths(ctx, old, tree)
			})
			next, err = r.personCommit(ctx, rc, tree, parents, withTrailers(msg, r.p))
			<-done
		} else {
			next, err = r.personCommit(ctx, rc, tree, parents, withTrailers(msg, r.p))
		}
		if err != nil {
			return err
		}
		if addErr != nil {
			return addErr
		}
	}
	r.e.step("before-ref-update")
	msg := fmt.Sprintf("sluice: merge %s into %s (proposal %s)", s.a.Source, s.a.Target, r.p.ID)
	if err := r.moveCheckout(ctx, w, rc, ref, old, next, s.wt, msg, added); err != nil {
		return err
	}
	if s.wt != nil && tree != "" {
		w.left[rc].movedHeads[s.wt.path] = head{sym: ref, sha: next, tree: tree}
	}
	r.moved(rc, ref, next, s.wt != nil && s.wt.path == rc.path)
	r.note("merged %s into %s (%s): %s → %s", s.a.Source, s.a.Target, how, short(old), short(next))
	return nil
}

func limitList(s []string, n int) []string { return gitrun.LimitList(s, n) }

// rebaseAway runs git rebase in a detached temporary worktree outside the
// repository and returns the rebased tip (see gitrun.Rebase).
func (r *run) rebaseAway(ctx context.Context, rc *repoCtx, old, onto string, a *proposal.RebaseArgs, how gitx.Profile) (string, error) {
	return rc.g.git.Rebase(ctx, r.e.log, old, onto, a, how)
}
