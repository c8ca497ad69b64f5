package apply

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// submoduleStep records a submodule's checked-out commit as the
// superproject's pointer (a commit of the gitlink only, made like any
// approved commit), or returns the submodule's checkout, detached, to the
// commit the superproject records.
type submoduleStep struct {
	a   *proposal.SubmodulePointerArgs
	sub *repoCtx
	commitsOnHead
}

func (s *submoduleStep) name() proposal.Op { return proposal.OpSubmodulePointer }

func (s *submoduleStep) touch(ctx context.Context, r *run, t touches) error {
	want, err := filepath.EvalSymlinks(filepath.Join(r.main.path, filepath.FromSlash(s.a.Path)))
	if err != nil {
		return errcode.New(errcode.InvalidArgument, "%s is not a checked-out submodule", s.a.Path)
	}
	s.sub = r.others[want]
	if s.sub == nil || len(r.p.Pinned.Repos) != 1 {
		return errcode.New(errcode.InvalidArgument, "the proposal does not pin the submodule at %s", s.a.Path)
	}
	if s.a.Action == proposal.SubmoduleReturn {
		t.of(s.sub).addWorktree(s.sub.main(), depthFiles)
		return nil
	}
	return s.commitsOnHead.touch(ctx, r, t)
}

func (s *submoduleStep) check(ctx context.Context, r *run) error {
	if s.a.Action == proposal.SubmoduleReturn {
		return r.requireClean(ctx, s.sub, s.sub.main(), "the submodule "+s.a.Path)
	}
	return requireNoOperation(r.main.main())
}

func (s *submoduleStep) do(ctx context.Context, r *run, w *writing) error {
	subHead := r.p.Pinned.Repos[s.sub.path]["HEAD"]
	if s.a.Action == proposal.SubmoduleReturn {
		return s.returnTo(ctx, r, w, subHead)
	}
	msg := fmt.Sprintf("Update submodule %s to %s", s.a.Path, short(subHead))
	sha, err := r.commit(ctx, w, s.sym, withTrailers(msg, r.p), []string{s.a.Path})
	if err != nil {
		return err
	}
	// The commit took the submodule's HEAD as it was when git ran; it
	// must be the approved one.
	res, err := r.main.g.run(ctx, call{dir: r.main.path, args: []string{"ls-tree", "-z"}, revs: []string{sha}, paths: []string{s.a.Path}})
	if err != nil {
		return err
	}
	if got := gitlinkOf(string(res.out)); got != subHead {
		ref := s.sym
		if ref == "" {
			ref = "HEAD"
		}
		// Only Sluice's own commit is taken back, never one a hook made
		// on top of it.
		if tip := r.expect["HEAD"]; tip != sha {
			return &errcode.Error{Code: errcode.HookFailed, Data: map[string]any{"commit": sha, "head": tip},
				Msg: fmt.Sprintf("needs reconciliation: the submodule %s moved to %s while it was committed, and commits were then made on top of Sluice's commit %s, so Sluice took nothing back: %s is at %s. Restore point %s holds the state before",
					s.a.Path, short(got), short(sha), branchName(s.sym), short(tip), r.p.ID)}
		}
		if err := r.cas(ctx, r.main, ref, r.p.Pinned.Refs["HEAD"], sha, "sluice: undo a submodule pointer that moved"); err != nil {
			return err
		}
		return staleBase(map[string]string{s.sub.path + ":HEAD": got}, map[string]string{s.sub.path + ":HEAD": subHead})
	}
	r.note("recorded submodule %s at %s: commit %s on %s", s.a.Path, short(subHead), short(sha), branchName(s.sym))
	return nil
}

// returnTo checks the submodule out, detached, at the commit the
// superproject's index records.
func (s *submoduleStep) returnTo(ctx context.Context, r *run, w *writing, subHead string) error {
	res, err := r.main.g.run(ctx, call{dir: r.main.path, args: []string{"ls-files", "-s", "-z"}, paths: []string{s.a.Path}})
	if err != nil {
		return err
	}
	recorded := ""
	if f := strings.Fields(strings.TrimRight(string(res.out), "\x00")); len(f) >= 2 && f[0] == "160000" {
		recorded = f[1]
	}
	if recorded == "" {
		return errcode.New(errcode.InvalidArgument, "%s is not a submodule in the superproject's index", s.a.Path)
	}
	wt := s.sub.main()
	h, err := s.sub.g.headOf(ctx, wt.path)
	if err != nil {
		return err
	}
	if recorded == subHead && h.sym == "" {
		r.note("submodule %s is already at the recorded commit %s", s.a.Path, short(recorded))
		return nil
	}
	msg := fmt.Sprintf("sluice: return submodule to the recorded commit (proposal %s)", r.p.ID)
	if err := r.moveCheckout(ctx, w, s.sub, "HEAD", subHead, recorded, &wt, msg, nil); err != nil {
		if strings.Contains(stderrOf(err), "unpack") || strings.Contains(stderrOf(err), "not a tree") {
			return errcode.New(errcode.GitFailed, "the recorded commit %s is not in the submodule's repository; fetch it there first", short(recorded))
		}
		return err
	}
	r.note("returned submodule %s to the recorded commit %s (detached; it was at %s)", s.a.Path, short(recorded), short(subHead))
	return nil
}
