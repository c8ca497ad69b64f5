package apply

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/core/apply/seal"
	"github.com/sluicehq/sluice/core/proposal"
)

// resetStep moves the checked-out branch (or a detached HEAD) to Target
// by compare-and-swap, then makes the index (mixed) or index and files
// (hard) match it.
type resetStep struct {
	a   *proposal.ResetArgs
	sym string
}

func (s *resetStep) name() proposal.Op { return proposal.OpReset }

func (s *resetStep) touch(ctx context.Context, r *run, t touches) error {
	sym, err := r.touchHead(ctx, t)
	if err != nil {
		return err
	}
	s.sym = sym
	// soft moves only HEAD, mixed the index too, hard the files too.
	d := map[proposal.ResetMode]depth{proposal.ResetSoft: depthHead, proposal.ResetMixed: depthIndex}[s.a.Mode]
	if s.a.Mode == proposal.ResetHard {
		d = depthFiles
	}
	t.of(r.main).addWorktree(r.main.main(), d)
	return nil
}

func (s *resetStep) check(ctx context.Context, r *run) error {
	if err := r.requireOnBranch(ctx, s.a.Branch); err != nil {
		return err
	}
	if err := requireNoOperation(r.main.main()); err != nil {
		return err
	}
	if s.a.Mode != proposal.ResetHard {
		return nil
	}
	// A hard reset overwrites what stands where the target has a file;
	// the restore point holds tracked and untracked files, not ignored
	// ones.
	if err := r.main.requireNoIgnoredInTheWay(ctx, r.main.main(), r.expect["HEAD"], r.expect[s.a.Target]); err != nil {
		return err
	}
	return s.verify(ctx, r)
}

func (s *resetStep) do(ctx context.Context, r *run, w *writing) error {
	rc := r.main
	old, target := r.expect["HEAD"], r.expect[s.a.Target]
	ref := s.sym
	if ref == "" {
		ref = "HEAD"
	}
	r.e.step("before-ref-update")
	msg := fmt.Sprintf("sluice: reset --%s to %s (proposal %s)", s.a.Mode, s.a.Target, r.p.ID)
	if err := r.cas(ctx, rc, ref, target, old, msg); err != nil {
		return err
	}
	r.changed = true
	switch s.a.Mode {
	case proposal.ResetMixed:
		// A single-tree read keeps the stat data of unchanged entries,
		// as git reset --mixed does; --reset, unlike -m, also takes an
		// entry whose file has unstaged changes on top of staged ones (git
		// reset --mixed leaves the file as it is, and so does this).
		if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"read-tree", "--reset"}, revs: []string{target}}); err != nil {
			return err
		}
	case proposal.ResetHard:
		if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"read-tree", "--reset", "-u"}, revs: []string{target}}); err != nil {
			return err
		}
	}
	r.moved(rc, ref, target, true)
	r.note("reset --%s %s to %s: %s → %s", s.a.Mode, strings.TrimPrefix(ref, "refs/heads/"), s.a.Target, short(old), short(target))
	return nil
}

// verify: a hard reset runs only on the working tree it sealed.
func (s *resetStep) verify(ctx context.Context, r *run) error {
	sealed := r.sealedStep()
	if sealed == nil || s.a.Mode != proposal.ResetHard {
		return nil
	}
	return r.unchanged(ctx, sealed.Before, func(ctx context.Context, sl *seal.Work, _ string) (string, error) {
		t, _, err := seal.ResetState(ctx, sl, r.expect[s.a.Target])
		return t, err
	})
}
