package apply

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// discardStep throws away uncommitted changes to paths: index and files
// go back to HEAD, and with Untracked, untracked files there are removed
// (ignored files never are).
type discardStep struct{ a *proposal.DiscardArgs }

func (s *discardStep) name() proposal.Op { return proposal.OpDiscard }

func (s *discardStep) touch(_ context.Context, r *run, t touches) error {
	t.of(r.main).addWorktree(r.main.main(), depthFiles)
	return nil
}

func (s *discardStep) check(ctx context.Context, r *run) error {
	if err := r.requireOnBranch(ctx, s.a.Branch); err != nil {
		return err
	}
	if err := requireNoOperation(r.main.main()); err != nil {
		return err
	}
	return s.verify(ctx, r)
}

func (s *discardStep) do(ctx context.Context, r *run, w *writing) error {
	rc := r.main
	head := r.expect["HEAD"]
	// git restore refuses a path it knows nothing about (one that holds
	// only untracked files), so only the paths known to the index or HEAD
	// go to it; clean takes care of the rest.
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"ls-files", "-z", "--with-tree=" + head}, paths: s.a.Paths, dashdash: true})
	if err != nil {
		return err
	}
	known := knownPaths(s.a.Paths, strings.Split(string(res.out), "\x00"))
	r.changed = true
	if len(known) > 0 {
		if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"restore", "--source=" + head, "--staged", "--worktree"}, paths: known, dashdash: true}); err != nil {
			return err
		}
	}
	what := "uncommitted changes"
	if s.a.Untracked {
		if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"clean", "--force", "-d", "--quiet"}, paths: s.a.Paths, dashdash: true}); err != nil {
			return err
		}
		what = "uncommitted changes and untracked files"
	}
	r.note("discarded %s in %s", what, strings.Join(limitList(s.a.Paths, 20), ", "))
	return nil
}

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

// patchStep applies a unified diff to the files or to the index only.
// git apply checks every hunk before it writes anything, so a patch that
// does not apply changes nothing.
type patchStep struct{ a *proposal.PatchArgs }

func (s *patchStep) name() proposal.Op { return proposal.OpPatch }

func (s *patchStep) touch(_ context.Context, r *run, t touches) error {
	t.of(r.main).addWorktree(r.main.main(), depthFiles)
	return nil
}

func (s *patchStep) check(ctx context.Context, r *run) error {
	if err := r.requireOnBranch(ctx, s.a.Branch); err != nil {
		return err
	}
	if s.a.Target == proposal.PatchIndex {
		if err := requireNoOperation(r.main.main()); err != nil {
			return err
		}
	}
	return s.verify(ctx, r)
}

func (s *patchStep) do(ctx context.Context, r *run, w *writing) error {
	rc := r.main
	args := []string{"apply", "--whitespace=nowarn"}
	where := "the working tree"
	if s.a.Target == proposal.PatchIndex {
		args, where = append(args, "--cached"), "the index"
	}
	if _, err := rc.g.run(ctx, call{dir: rc.path, args: args, stdin: []byte(s.a.Patch)}); err != nil {
		if st := stderrOf(err); st != "" {
			return &errcode.Error{Code: errcode.PatchDoesNotApply, Err: err, Data: errcode.GitFailure{Command: "apply", Stderr: st},
				Msg: "the patch does not apply to " + where + ": " + clip(st, 2000) + "; nothing was changed"}
		}
		return err
	}
	r.changed = true
	if s.a.Target != proposal.PatchIndex {
		w.left[r.main].dirtied[r.main.path] = true
	}
	if err := s.verifyAfter(ctx, r); err != nil {
		return err
	}
	files, _ := s.a.FilesTouched()
	r.note("applied a patch to %s (%s)", where, proposal.Count(len(files), "file"))
	return nil
}

// knownPaths keeps the paths (literal pathspecs) that name at least one
// of the entries.
func knownPaths(paths, entries []string) []string {
	var out []string
	for _, p := range paths {
		for _, e := range entries {
			if e != "" && (p == "." || e == p || strings.HasPrefix(e, p+"/")) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
