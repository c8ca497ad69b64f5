package apply

import (
	"context"
	"strings"

	"github.com/sluicehq/sluice/core/apply/seal"
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

// verify: the files are still exactly as sealed.
func (s *discardStep) verify(ctx context.Context, r *run) error {
	sealed := r.sealedStep()
	if sealed == nil {
		return nil
	}
	return r.unchanged(ctx, sealed.Before, func(ctx context.Context, sl *seal.Work, headTree string) (string, error) {
		t, _, err := seal.DiscardState(ctx, sl, s.a, r.expect["HEAD"], headTree)
		return t, err
	})
}
