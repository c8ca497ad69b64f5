package apply

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/core/proposal"
)

// mergeStep merges Source into the branch Target. The merge is computed
// by git merge-tree, never in a checkout; the branch moves by
// compare-and-swap, and its checkout (if any) follows only when clean.
type mergeStep struct {
	a *proposal.MergeArgs
	branchMove
}

// branchMove is what merge and rebase share: the branch they move, and
// the worktree where it is checked out, if any, which must be clean and
// follows the branch.
type branchMove struct{ wt *worktree }

// touchBranch records the branch and its checkout in the touch set.
func (b *branchMove) touchBranch(ctx context.Context, r *run, branch string) error {
	ref := proposal.BranchRef(branch)
	r.main.touched.addRef(ref)
	wt, err := r.checkedOut(ctx, r.main, ref)
	if err != nil {
		return err
	}
	if b.wt = wt; wt != nil {
		r.main.touched.addWorktree(*wt, depthFiles)
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

func (s *mergeStep) touch(ctx context.Context, r *run) error {
	return s.touchBranch(ctx, r, s.a.Target)
}

func (s *mergeStep) check(ctx context.Context, r *run) error {
	return s.checkBranch(ctx, r, "the target branch "+s.a.Target)
}

func (s *mergeStep) do(ctx context.Context, r *run) error {
	rc := r.main
	ref := proposal.BranchRef(s.a.Target)
	old, src := r.expect[ref], r.expect[s.a.Source]
	if err := rc.repo.RefuseMergeDrivers(ctx, old, src); err != nil {
		return asInvalid(err)
	}
	base, err := rc.mergeBase(ctx, old, src)
	if err != nil {
		return err
	}
	switch {
	case base == "":
		return newErr(CodeUnrelatedHistories, "%s and %s share no history; nothing was changed", s.a.Source, s.a.Target)
	case base == src:
		r.note("%s already contains %s; nothing to merge", s.a.Target, s.a.Source)
		return nil
	}
	var next, how string
	if base == old && s.a.Strategy == proposal.MergeCommit {
		next, how = src, "fast-forward"
	} else {
		tree, conflicts, err := rc.mergeTree(ctx, old, src)
		if err != nil {
			return err
		}
		if len(conflicts) > 0 {
			return &Error{Code: CodeMergeConflict, Data: map[string]any{"files": conflicts},
				Msg: fmt.Sprintf("merging %s into %s conflicts in %d file(s): %s; nothing was changed",
					s.a.Source, s.a.Target, len(conflicts), strings.Join(limitList(conflicts, 50), ", "))}
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
		if next, err = r.personCommit(ctx, rc, tree, parents, withTrailers(msg, r.p)); err != nil {
			return err
		}
	}
	r.e.step("before-ref-update")
	msg := fmt.Sprintf("sluice: merge %s into %s (proposal %s)", s.a.Source, s.a.Target, r.p.ID)
	if err := r.moveCheckout(ctx, rc, ref, old, next, s.wt, msg); err != nil {
		return err
	}
	r.moved(rc, ref, next, s.wt != nil && s.wt.path == rc.path)
	r.note("merged %s into %s (%s): %s → %s", s.a.Source, s.a.Target, how, short(old), short(next))
	return nil
}

func limitList(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("… %d more", len(s)-n))
}

// rebaseStep replays Branch onto Onto in a temporary worktree of its own,
// never in the person's checkout, then moves the branch by
// compare-and-swap.
type rebaseStep struct {
	a *proposal.RebaseArgs
	branchMove
}

func (s *rebaseStep) name() proposal.Op { return proposal.OpRebase }

func (s *rebaseStep) touch(ctx context.Context, r *run) error {
	return s.touchBranch(ctx, r, s.a.Branch)
}

func (s *rebaseStep) check(ctx context.Context, r *run) error {
	return s.checkBranch(ctx, r, "the branch "+s.a.Branch)
}

func (s *rebaseStep) do(ctx context.Context, r *run) error {
	rc := r.main
	ref := proposal.BranchRef(s.a.Branch)
	old, onto := r.expect[ref], r.expect[s.a.Onto]
	if err := rc.repo.RefuseMergeDrivers(ctx, old, onto); err != nil {
		return asInvalid(err)
	}
	base, err := rc.mergeBase(ctx, old, onto)
	if err != nil {
		return err
	}
	var next, how string
	switch {
	case base == "":
		return newErr(CodeUnrelatedHistories, "%s and %s share no history; nothing was changed", s.a.Branch, s.a.Onto)
	case base == onto:
		r.note("%s already contains %s; nothing to rebase", s.a.Branch, s.a.Onto)
		return nil
	case base == old:
		next, how = onto, "fast-forward"
	default:
		if next, err = r.rebaseAway(ctx, rc, old, onto, s.a); err != nil {
			return err
		}
		how = "replayed"
	}
	r.e.step("before-ref-update")
	msg := fmt.Sprintf("sluice: rebase %s onto %s (proposal %s)", s.a.Branch, s.a.Onto, r.p.ID)
	if err := r.moveCheckout(ctx, rc, ref, old, next, s.wt, msg); err != nil {
		return err
	}
	r.moved(rc, ref, next, s.wt != nil && s.wt.path == rc.path)
	r.note("rebased %s onto %s (%s): %s → %s", s.a.Branch, s.a.Onto, how, short(old), short(next))
	return nil
}

// rebaseAway runs git rebase in a detached temporary worktree outside the
// repository and returns the rebased tip. Hooks stay off; the person's
// signing applies to the replayed commits, as it would to their own
// rebase.
func (r *run) rebaseAway(ctx context.Context, rc *repoCtx, old, onto string, a *proposal.RebaseArgs) (string, error) {
	tmp, err := os.MkdirTemp("", "sluice-rebase-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	wt := filepath.Join(tmp, "wt")
	if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"worktree", "add", "--detach", "--quiet", "--", wt, old}}); err != nil {
		return "", err
	}
	defer func() {
		if _, err := rc.g.run(context.WithoutCancel(ctx), call{dir: rc.path, args: []string{"worktree", "remove", "--force", "--", wt}}); err != nil {
			r.e.log.Warn("apply: could not remove a temporary rebase worktree", "path", wt, "err", err)
		}
	}()
	res, err := rc.g.run(ctx, call{dir: wt, mode: signing, args: []string{"rebase", "--quiet", "--no-autostash", "--no-update-refs", onto}, ok: []int{1}})
	if err != nil {
		return "", err
	}
	if res.exit != 0 {
		files := []string{}
		if u, err := rc.g.run(ctx, call{dir: wt, args: []string{"diff", "--no-ext-diff", "--name-only", "--diff-filter=U", "-z"}}); err == nil {
			for _, f := range strings.Split(string(u.out), "\x00") {
				if f != "" {
					files = append(files, f)
				}
			}
		}
		if len(files) == 0 {
			return "", gitFailed([]string{"rebase"}, res)
		}
		return "", &Error{Code: CodeMergeConflict, Data: map[string]any{"files": files},
			Msg: fmt.Sprintf("rebasing %s onto %s conflicts in %d file(s): %s; nothing was changed",
				a.Branch, a.Onto, len(files), strings.Join(limitList(files, 50), ", "))}
	}
	h, err := rc.g.headOf(ctx, wt)
	if err != nil {
		return "", err
	}
	return h.sha, nil
}
