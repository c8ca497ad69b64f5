package apply

import (
	"context"
	"slices"
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

// discardFiles lists every file a discard of paths changes: what the
// index or HEAD tracks there and, with untracked, the untracked files
// that are not ignored.
func (s *discardStep) files(ctx context.Context, sl *sealing, head string) (tracked, untracked []string, err error) {
	env, _, err := sl.IndexCopy(ctx)
	if err != nil {
		return nil, nil, err
	}
	inIndex, err := sl.listPaths(ctx, env, call{args: []string{"ls-files", "-z"}, paths: s.a.Paths, dashdash: true})
	if err != nil {
		return nil, nil, err
	}
	inHead, err := sl.listPaths(ctx, nil, call{args: []string{"ls-tree", "-r", "-z", "--name-only", "--full-tree"}, revs: []string{head}, paths: s.a.Paths, dashdash: true})
	if err != nil {
		return nil, nil, err
	}
	tracked = appendNew(inIndex, inHead...)
	if s.a.Untracked {
		if untracked, err = sl.listPaths(ctx, env, call{args: []string{"ls-files", "-z", "--others", "--exclude-standard"}, paths: s.a.Paths, dashdash: true}); err != nil {
			return nil, nil, err
		}
	}
	return tracked, untracked, nil
}

// seal: what is lost is the state of the discarded files now, against
// HEAD: Before is HEAD's tree with those files as they are on disk, After
// HEAD's tree.
func (s *discardStep) seal(ctx context.Context, sl *sealing) (proposal.Sealed, error) {
	head := sl.r.expect["HEAD"]
	headTree, err := sl.Tree(ctx, head)
	if err != nil {
		return proposal.Sealed{}, err
	}
	before, untracked, err := s.state(ctx, sl, head, headTree)
	if err != nil {
		return proposal.Sealed{}, err
	}
	if before == headTree {
		return proposal.Sealed{}, errcode.New(errcode.NothingToCommit, "there are no uncommitted changes to discard in %s", strings.Join(limitList(s.a.Paths, 10), ", "))
	}
	files, err := sl.Changes(ctx, before, headTree)
	if err != nil {
		return proposal.Sealed{}, err
	}
	out := proposal.Sealed{Base: head, Before: before, After: headTree, Files: files, Effect: proposal.EffectLoses}
	// The work, as the person made it: from HEAD to the files as they are.
	if out.Work, err = sl.Changes(ctx, headTree, before); err != nil {
		return proposal.Sealed{}, err
	}
	for _, f := range files {
		if slices.Contains(untracked, f.Path) {
			out.Untracked = append(out.Untracked, f.Path)
		} else {
			out.Uncommitted = append(out.Uncommitted, f.Path)
		}
	}
	return out, nil
}

// state is the tree of the files the discard throws away, as they are.
func (s *discardStep) state(ctx context.Context, sl *sealing, head, headTree string) (string, []string, error) {
	tracked, untracked, err := s.files(ctx, sl, head)
	if err != nil {
		return "", nil, err
	}
	t, _, err := sl.WorktreeState(ctx, headTree, append(tracked, untracked...))
	return t, untracked, err
}

// verify: the files are still exactly as sealed.
func (s *discardStep) verify(ctx context.Context, r *run) error {
	sealed := r.sealedStep()
	if sealed == nil {
		return nil
	}
	return r.unchanged(ctx, sealed.Before, func(ctx context.Context, sl *sealing, headTree string) (string, error) {
		t, _, err := s.state(ctx, sl, r.expect["HEAD"], headTree)
		return t, err
	})
}
