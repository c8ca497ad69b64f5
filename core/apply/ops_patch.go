package apply

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/core/apply/seal"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// patchStep applies a unified diff to the files or to the index only.
// git apply checks every hunk before it writes anything, so a patch that
// does not apply changes nothing.
type patchStep struct{ a *proposal.PatchArgs }

func (s *patchStep) name() proposal.Op { return proposal.OpPatch }

func (s *patchStep) touch(_ context.Context, r *run, t touches) error {
	// git apply --cached writes index entries and no file.
	d := depthFiles
	if s.a.Target == proposal.PatchIndex {
		d = depthIndex
	}
	t.of(r.main).addWorktree(r.main.main(), d)
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
	if err := s.verifyAfter(ctx, r, w.left[r.main]); err != nil {
		return err
	}
	files, _ := s.a.FilesTouched()
	r.note("applied a patch to %s (%s)", where, proposal.Count(len(files), "file"))
	return nil
}

// verify: the patch runs only on the content it was sealed on.
func (s *patchStep) verify(ctx context.Context, r *run) error {
	sealed := r.sealedStep()
	if sealed == nil {
		return nil
	}
	if same, err := s.sameOnDisk(ctx, r, sealed.Before, nil); err != nil || same {
		return err
	}
	if same, err := s.sameInIndex(ctx, r, sealed.Before, nil); err != nil || same {
		return err
	}
	return r.unchanged(ctx, sealed.Before, s.stateNow)
}

func (s *patchStep) stateNow(ctx context.Context, sl *seal.Work, headTree string) (string, error) {
	t, _, err := seal.PatchState(ctx, sl, s.a, headTree)
	return t, err
}

// verifyAfter: what the patch left is the sealed result. The index
// entries it reads to tell, after git apply, are those the end state
// records (left): if the person's git changes them before the end is
// recorded, a restore sees that as a change made after the operation
// and asks, instead of putting their work back unasked.
func (s *patchStep) verifyAfter(ctx context.Context, r *run, left *effects) error {
	sealed := r.sealedStep()
	if sealed == nil {
		return nil
	}
	if same, err := s.sameOnDisk(ctx, r, sealed.After, left); err != nil || same {
		return err
	}
	if same, err := s.sameInIndex(ctx, r, sealed.After, left); err != nil || same {
		return err
	}
	now, _, err := r.compareState(ctx, sealed.After, s.stateNow)
	if err != nil {
		return err
	}
	if now != sealed.After {
		return &errcode.Error{Code: errcode.GitFailed, Data: map[string]any{"sealed": sealed.After, "got": now},
			Msg: fmt.Sprintf("the applied patch gave %s, not the sealed result %s; restore point %s puts the files back", short(now), short(sealed.After), r.p.ID)}
	}
	return nil
}
