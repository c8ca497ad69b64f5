package apply

import (
	"context"
	"fmt"
	"slices"
	"strings"

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
		// as git reset --mixed does.
		if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"read-tree", "-m"}, revs: []string{target}}); err != nil {
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

// seal: soft and mixed resets keep every file; what the branch loses
// stays in the working tree as uncommitted changes (Kept). A hard reset
// loses what the working tree holds now, tracked files and untracked
// files the target has; Before is that state, After the target's tree.
func (s *resetStep) seal(ctx context.Context, sl *sealing) (proposal.Sealed, error) {
	rc := sl.rc
	old, target := sl.r.expect["HEAD"], sl.r.expect[s.a.Target]
	trees, err := rc.resolveTrees(ctx, old, target)
	if err != nil {
		return proposal.Sealed{}, err
	}
	mv, err := sl.r.headMove(ctx, target)
	if err != nil {
		return proposal.Sealed{}, err
	}
	out := proposal.Sealed{Base: old, Moves: []proposal.RefMove{mv}}
	if out.Lost, err = rc.commitList(ctx, old, target); err != nil {
		return out, err
	}
	if s.a.Mode != proposal.ResetHard {
		out.Before, out.After = trees[old], trees[target]
		out.Kept, err = sl.Changes(ctx, trees[target], trees[old])
		return out, err
	}
	if err := rc.requireNoIgnoredInTheWay(ctx, rc.main(), old, target); err != nil {
		return out, err
	}
	before, inTheWay, err := s.state(ctx, sl, target)
	if err != nil {
		return out, err
	}
	out.Before, out.After, out.Effect, out.Untracked = before, trees[target], proposal.EffectLoses, inTheWay
	if out.Files, err = sl.Changes(ctx, before, trees[target]); err != nil {
		return out, err
	}
	dirty, err := sl.Changes(ctx, trees[old], before)
	if err != nil {
		return out, err
	}
	// The work is what differs from HEAD, not from the target: the files
	// that differ only because of the commits the reset drops are counted
	// as those commits (Lost).
	out.Work = dirty
	for _, d := range dirty {
		if !slices.Contains(inTheWay, d.Path) {
			out.Uncommitted = append(out.Uncommitted, d.Path)
		}
		if d.OldPath != "" && !slices.Contains(out.Uncommitted, d.OldPath) {
			out.Uncommitted = append(out.Uncommitted, d.OldPath)
		}
	}
	return out, nil
}

// state is what a hard reset to target overwrites, as a tree: every
// tracked file as it is on disk, and the untracked files that stand where
// the target has a file (returned too).
func (s *resetStep) state(ctx context.Context, sl *sealing, target string) (string, []string, error) {
	if sl.Worktree != "" {
		// An earlier step of the plan left the checkout at this tree.
		return sl.Worktree, nil, nil
	}
	env, _, err := sl.IndexCopy(ctx)
	if err != nil {
		return "", nil, err
	}
	if _, err := sl.run(ctx, call{args: []string{"add", "--update"}, env: env}); err != nil {
		return "", nil, err
	}
	untracked, err := sl.listPaths(ctx, env, call{args: []string{"ls-files", "-z", "--others", "--exclude-standard"}})
	if err != nil {
		return "", nil, err
	}
	var inTheWay []string
	if len(untracked) > 0 {
		inTarget, err := sl.listPaths(ctx, nil, call{args: []string{"ls-tree", "-r", "-z", "--name-only", "--full-tree"}, revs: []string{target}})
		if err != nil {
			return "", nil, err
		}
		for _, u := range untracked {
			if slices.Contains(inTarget, u) {
				inTheWay = append(inTheWay, u)
			}
		}
		if err := sl.AddPaths(ctx, env, inTheWay); err != nil {
			return "", nil, err
		}
	}
	t, err := sl.WriteTree(ctx, env)
	return t, inTheWay, err
}

// verify: a hard reset runs only on the working tree it sealed.
func (s *resetStep) verify(ctx context.Context, r *run) error {
	sealed := r.sealedStep()
	if sealed == nil || s.a.Mode != proposal.ResetHard {
		return nil
	}
	return r.unchanged(ctx, sealed.Before, func(ctx context.Context, sl *sealing, _ string) (string, error) {
		t, _, err := s.state(ctx, sl, r.expect[s.a.Target])
		return t, err
	})
}
