package apply

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

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

// seal: the patch applied, at receipt, to the files (or the index) as
// they are; one that does not apply is refused with git's reason.
func (s *patchStep) seal(ctx context.Context, sl *sealing) (proposal.Sealed, error) {
	head := sl.r.expect["HEAD"]
	headTree, err := sl.Tree(ctx, head)
	if err != nil {
		return proposal.Sealed{}, err
	}
	before, idx, err := s.state(ctx, sl, headTree)
	if err != nil {
		return proposal.Sealed{}, err
	}
	env, err := sl.CopyIndexFile(idx)
	if err != nil {
		return proposal.Sealed{}, err
	}
	if _, err := sl.run(ctx, call{args: []string{"apply", "--cached", "--whitespace=nowarn"}, env: env, stdin: []byte(s.a.Patch)}); err != nil {
		if st := stderrOf(err); st != "" {
			return proposal.Sealed{}, &errcode.Error{Code: errcode.PatchDoesNotApply, Err: err, Data: errcode.GitFailure{Command: "apply", Stderr: st},
				Msg: "the patch does not apply to the " + string(s.a.Target) + " as it is now: " + clip(strings.TrimSpace(st), 2000)}
		}
		return proposal.Sealed{}, err
	}
	after, err := sl.WriteTree(ctx, env)
	if err != nil {
		return proposal.Sealed{}, err
	}
	files, err := sl.Changes(ctx, before, after)
	if err != nil {
		return proposal.Sealed{}, err
	}
	return proposal.Sealed{Base: head, Before: before, After: after, Files: files, Effect: proposal.EffectLands}, nil
}

// state is what the patch applies to, as a tree, and the temporary index
// that holds it: for the index, a copy of the index; for the working
// tree, HEAD's tree with the patch's files as they are on disk.
func (s *patchStep) state(ctx context.Context, sl *sealing, headTree string) (string, string, error) {
	if s.a.Target == proposal.PatchIndex {
		env, idx, err := sl.IndexCopy(ctx)
		if err != nil {
			return "", "", err
		}
		t, err := sl.WriteTree(ctx, env)
		return t, idx, err
	}
	if sl.Worktree != "" {
		// An earlier step of the plan left the checkout at this tree.
		_, idx, err := sl.Index(ctx, sl.Worktree)
		return sl.Worktree, idx, err
	}
	files, _ := s.a.FilesTouched()
	return sl.WorktreeState(ctx, headTree, files)
}

// verify: the patch runs only on the content it was sealed on.
func (s *patchStep) verify(ctx context.Context, r *run) error {
	sealed := r.sealedStep()
	if sealed == nil {
		return nil
	}
	if same, err := s.sameOnDisk(ctx, r, sealed.Before); err != nil || same {
		return err
	}
	return r.unchanged(ctx, sealed.Before, s.stateNow)
}

func (s *patchStep) stateNow(ctx context.Context, sl *sealing, headTree string) (string, error) {
	t, _, err := s.state(ctx, sl, headTree)
	return t, err
}

// verifyAfter: what the patch left is the sealed result.
func (s *patchStep) verifyAfter(ctx context.Context, r *run) error {
	sealed := r.sealedStep()
	if sealed == nil {
		return nil
	}
	if same, err := s.sameOnDisk(ctx, r, sealed.After); err != nil || same {
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
