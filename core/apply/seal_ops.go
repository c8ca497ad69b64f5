package apply

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// How each operation seals its outcome. The executor's half of each (that
// it produces exactly this) is beside the operation's do.

// seal: the tree the commit records is HEAD's tree with exactly the
// committed paths as they are on disk now (with stageAll, every change
// that is not ignored); the executor commits that tree, whatever the
// working tree holds by then.
func (s *commitStep) seal(ctx context.Context, sl *sealing) (proposal.Sealed, error) {
	below, err := s.below(ctx, sl)
	if err != nil {
		return proposal.Sealed{}, err
	}
	if src, err := sl.r.sessionSource(); err != nil {
		return proposal.Sealed{}, err
	} else if src != nil {
		if below != nil {
			return proposal.Sealed{}, errcode.New(errcode.Unsupported, "a confined session's commit cannot be stacked on another proposal yet: propose it when that one has landed")
		}
		return s.sealFromCopy(ctx, sl, src)
	}
	base := sl.r.expect["HEAD"]
	var before string
	if below != nil {
		before = below.After
	} else if before, err = sl.tree(ctx, base); err != nil {
		return proposal.Sealed{}, err
	}
	var env []string
	if s.a.StageAll {
		wt := sl.rc.main()
		if env, _, err = sl.index(ctx, "", &wt); err != nil {
			return proposal.Sealed{}, err
		}
		if _, err := sl.run(ctx, call{global: bulkObjects, args: []string{"add", "--all"}, env: env}); err != nil {
			return proposal.Sealed{}, err
		}
	} else {
		if env, _, err = sl.index(ctx, before, nil); err != nil {
			return proposal.Sealed{}, err
		}
		if err := sl.addPaths(ctx, env, s.a.Paths); err != nil {
			return proposal.Sealed{}, err
		}
	}
	after, files, err := sl.newTree(ctx, env, before,
		&errcode.Error{Code: errcode.NothingToCommit, Msg: "there is nothing to commit: the paths are the same as in HEAD"})
	if err != nil {
		return proposal.Sealed{}, err
	}
	if err := sl.refuseFilters(ctx, files); err != nil {
		return proposal.Sealed{}, err
	}
	mv, err := sl.r.headMove(ctx, "")
	if err != nil {
		return proposal.Sealed{}, err
	}
	out := proposal.Sealed{Base: base, Before: before, After: after, Files: files, Effect: proposal.EffectLands,
		Moves: []proposal.RefMove{mv}}
	if below != nil {
		out.Below = s.a.Below
	}
	return out, nil
}

// seal: the result of git merge-tree (or, for a fast-forward, the
// source's tree); a conflicting merge is refused before any card, with
// the files, so the agent can resolve it and propose again.
func (s *mergeStep) seal(ctx context.Context, sl *sealing) (proposal.Sealed, error) {
	rc := sl.rc
	ref := proposal.BranchRef(s.a.Target)
	old, src := sl.r.expect[ref], sl.r.expect[s.a.Source]
	p := s.read(ctx, rc, old, src)
	if p.err != nil {
		return proposal.Sealed{}, p.err
	}
	switch {
	case p.base == "":
		return proposal.Sealed{}, errcode.New(errcode.UnrelatedHistories, "%s and %s share no history", s.a.Source, s.a.Target)
	case p.base == src:
		return proposal.Sealed{}, errcode.New(errcode.NothingToCommit, "%s already contains %s; there is nothing to merge", s.a.Target, s.a.Source)
	}
	before, err := sl.tree(ctx, old)
	if err != nil {
		return proposal.Sealed{}, err
	}
	out := proposal.Sealed{Base: old, Before: before, Effect: proposal.EffectLands}
	if s.fastForward(p.base, old, src) {
		out.FastForward = true
		if out.After, err = sl.tree(ctx, src); err != nil {
			return out, err
		}
		out.Moves = []proposal.RefMove{{Ref: ref, From: old, To: src}}
	} else {
		tree, conflicts, err := rc.mergeTree(ctx, old, src)
		if err != nil {
			return out, err
		}
		if len(conflicts) > 0 {
			return out, &errcode.Error{Code: errcode.MergeConflict, Data: map[string]any{"files": conflicts},
				Msg: fmt.Sprintf("merging %s into %s would conflict in %s: %s. Resolve it on a branch (merge %s into it and fix the files), then propose again",
					s.a.Source, s.a.Target, proposal.Count(len(conflicts), "file"), strings.Join(limitList(conflicts, 50), ", "), s.a.Target)}
		}
		out.After = tree
		out.Moves = []proposal.RefMove{{Ref: ref, From: old}}
	}
	if out.Commits, err = rc.commitList(ctx, src, old); err != nil {
		return out, err
	}
	out.Files, err = sl.changes(ctx, out.Before, out.After)
	return out, err
}

// verifyTree fails, before anything moves, when a step is about to
// produce another tree than the one it sealed.
func (r *run) verifyTree(sealed *proposal.Sealed, got, what string) error {
	if sealed == nil || sealed.After == "" || got == sealed.After {
		return nil
	}
	return &errcode.Error{Code: errcode.StaleBase, Data: map[string]any{"sealed": sealed.After, "got": got},
		Msg: fmt.Sprintf("%s would give tree %s, not the sealed %s shown on the card; nothing was changed", what, short(got), short(sealed.After))}
}

// seal: the branch is replayed onto its new base in a temporary worktree,
// as the executor will do it (without signing; the executor signs), so
// conflicts are known before the card and its tree is what lands.
func (s *rebaseStep) seal(ctx context.Context, sl *sealing) (proposal.Sealed, error) {
	rc := sl.rc
	ref := proposal.BranchRef(s.a.Branch)
	old, onto := sl.r.expect[ref], sl.r.expect[s.a.Onto]
	if err := rc.repo.RefuseMergeDrivers(ctx, old, onto); err != nil {
		return proposal.Sealed{}, asInvalid(err)
	}
	base, err := rc.mergeBase(ctx, old, onto)
	if err != nil {
		return proposal.Sealed{}, err
	}
	switch {
	case base == "":
		return proposal.Sealed{}, errcode.New(errcode.UnrelatedHistories, "%s and %s share no history", s.a.Branch, s.a.Onto)
	case base == onto:
		return proposal.Sealed{}, errcode.New(errcode.NothingToCommit, "%s already contains %s; there is nothing to rebase", s.a.Branch, s.a.Onto)
	}
	before, err := sl.tree(ctx, old)
	if err != nil {
		return proposal.Sealed{}, err
	}
	out := proposal.Sealed{Base: old, Before: before, Effect: proposal.EffectLands}
	next := onto
	if base != old {
		if next, err = sl.r.rebaseAway(ctx, rc, old, onto, s.a, gitx.ProfileWrite); err != nil {
			return out, err
		}
		if out.Commits, err = rc.commitList(ctx, old, onto); err != nil {
			return out, err
		}
	} else {
		out.FastForward = true
	}
	if out.After, err = sl.tree(ctx, next); err != nil {
		return out, err
	}
	out.Moves = []proposal.RefMove{{Ref: ref, From: old}}
	if next == onto {
		out.Moves[0].To = onto
	}
	out.Files, err = sl.changes(ctx, before, out.After)
	return out, err
}

// discardFiles lists every file a discard of paths changes: what the
// index or HEAD tracks there and, with untracked, the untracked files
// that are not ignored.
func (s *discardStep) files(ctx context.Context, sl *sealing, head string) (tracked, untracked []string, err error) {
	wt := sl.rc.main()
	env, _, err := sl.index(ctx, "", &wt)
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

func appendNew(dst []string, src ...string) []string {
	for _, s := range src {
		if !slices.Contains(dst, s) {
			dst = append(dst, s)
		}
	}
	return dst
}

// seal: what is lost is the state of the discarded files now, against
// HEAD: Before is HEAD's tree with those files as they are on disk, After
// HEAD's tree.
func (s *discardStep) seal(ctx context.Context, sl *sealing) (proposal.Sealed, error) {
	head := sl.r.expect["HEAD"]
	headTree, err := sl.tree(ctx, head)
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
	files, err := sl.changes(ctx, before, headTree)
	if err != nil {
		return proposal.Sealed{}, err
	}
	out := proposal.Sealed{Base: head, Before: before, After: headTree, Files: files, Effect: proposal.EffectLoses}
	// The work, as the person made it: from HEAD to the files as they are.
	if out.Work, err = sl.changes(ctx, headTree, before); err != nil {
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
	t, _, err := sl.worktreeState(ctx, headTree, append(tracked, untracked...))
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
		out.Kept, err = sl.changes(ctx, trees[target], trees[old])
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
	if out.Files, err = sl.changes(ctx, before, trees[target]); err != nil {
		return out, err
	}
	dirty, err := sl.changes(ctx, trees[old], before)
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
	if sl.worktree != "" {
		// An earlier step of the plan left the checkout at this tree.
		return sl.worktree, nil, nil
	}
	wt := sl.rc.main()
	env, _, err := sl.index(ctx, "", &wt)
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
		if err := sl.addPaths(ctx, env, inTheWay); err != nil {
			return "", nil, err
		}
	}
	t, err := sl.writeTree(ctx, env)
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

// seal: the patch applied, at receipt, to the files (or the index) as
// they are; one that does not apply is refused with git's reason.
func (s *patchStep) seal(ctx context.Context, sl *sealing) (proposal.Sealed, error) {
	head := sl.r.expect["HEAD"]
	headTree, err := sl.tree(ctx, head)
	if err != nil {
		return proposal.Sealed{}, err
	}
	before, idx, err := s.state(ctx, sl, headTree)
	if err != nil {
		return proposal.Sealed{}, err
	}
	env, err := sl.copyIndexFile(idx)
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
	after, err := sl.writeTree(ctx, env)
	if err != nil {
		return proposal.Sealed{}, err
	}
	files, err := sl.changes(ctx, before, after)
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
		wt := sl.rc.main()
		env, idx, err := sl.index(ctx, "", &wt)
		if err != nil {
			return "", "", err
		}
		t, err := sl.writeTree(ctx, env)
		return t, idx, err
	}
	if sl.worktree != "" {
		// An earlier step of the plan left the checkout at this tree.
		_, idx, err := sl.index(ctx, sl.worktree, nil)
		return sl.worktree, idx, err
	}
	files, _ := s.a.FilesTouched()
	return sl.worktreeState(ctx, headTree, files)
}

// verify: the patch runs only on the content it was sealed on.
func (s *patchStep) verify(ctx context.Context, r *run) error {
	sealed := r.sealedStep()
	if sealed == nil {
		return nil
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

// seal: the commits the remote receives (and, forced, the ones it
// loses), and the content change the remote branch sees.
func (s *pushStep) seal(ctx context.Context, sl *sealing) (proposal.Sealed, error) {
	rc := sl.rc
	local := sl.r.expect[proposal.BranchRef(s.a.Branch)]
	tracking := s.a.LeaseRef()
	now, err := rc.resolve(ctx, []string{tracking})
	if err != nil {
		return proposal.Sealed{}, err
	}
	remoteAt := now[tracking]
	if s.a.ForceWithLease {
		remoteAt = sl.r.expect[tracking]
	}
	out := proposal.Sealed{Base: remoteAt, Effect: proposal.EffectLands,
		Moves: []proposal.RefMove{{Ref: proposal.BranchRef(s.a.RemoteName()), From: remoteAt, To: local, Repo: "remote " + s.a.Remote}}}
	if remoteAt != "" {
		if out.Commits, err = rc.commitList(ctx, local, remoteAt); err != nil {
			return out, err
		}
		trees, err := rc.resolveTrees(ctx, remoteAt, local)
		if err != nil {
			return out, err
		}
		out.Before, out.After = trees[remoteAt], trees[local]
		if out.Files, err = sl.changes(ctx, out.Before, out.After); err != nil {
			return out, err
		}
	} else {
		// A new branch on the remote: the commits none of the remote's
		// tracking refs has (rev-list's --remotes=<remote>, as revisions).
		res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"for-each-ref", "--format=%(objectname)"},
			revs: []string{"refs/remotes/" + s.a.Remote + "/"}})
		if err != nil {
			return out, err
		}
		if out.Commits, err = rc.commitList(ctx, local, strings.Fields(res.text())...); err != nil {
			return out, err
		}
	}
	if s.a.ForceWithLease && remoteAt != "" {
		if out.Lost, err = rc.commitList(ctx, remoteAt, local); err != nil {
			return out, err
		}
	}
	return out, nil
}

// seal: a new ref; with checkout, the working tree's change.
func (s *branchStep) seal(ctx context.Context, sl *sealing) (proposal.Sealed, error) {
	start := sl.r.expect[s.a.StartPoint]
	out := proposal.Sealed{Base: start, Moves: []proposal.RefMove{{Ref: proposal.BranchRef(s.a.Name), To: start}}}
	if !s.a.Checkout {
		return out, nil
	}
	h, err := sl.r.head(ctx)
	if err != nil {
		return out, err
	}
	trees, err := sl.rc.resolveTrees(ctx, h.sha, start)
	if err != nil {
		return out, err
	}
	out.Before, out.After, out.Effect = trees[h.sha], trees[start], proposal.EffectLands
	out.Moves = append(out.Moves, proposal.RefMove{Ref: "HEAD", From: h.sha, To: start})
	out.Files, err = sl.changes(ctx, out.Before, out.After)
	return out, err
}

// seal: which branches go (their commits are all reachable elsewhere, as
// the executor requires) and which stay, and why.
func (s *branchDeleteStep) seal(ctx context.Context, sl *sealing) (proposal.Sealed, error) {
	out := proposal.Sealed{}
	for _, set := range s.branchSets(sl.r) {
		if set.rc == nil {
			return out, errcode.New(errcode.InvalidArgument, "a repository named by the proposal could not be opened")
		}
		del, keep, err := set.evaluate(ctx)
		if err != nil {
			return out, err
		}
		repo := ""
		if set.rc != sl.rc {
			repo = set.rc.path
		}
		for _, b := range del {
			ref := proposal.BranchRef(b)
			out.Moves = append(out.Moves, proposal.RefMove{Ref: ref, From: set.pins[ref], Repo: repo, Delete: true})
		}
		for _, k := range keep {
			out.Keeps = append(out.Keeps, k.name(sl.r)+" ("+k.why+")")
		}
	}
	if len(out.Moves) == 0 {
		return out, &errcode.Error{Code: errcode.NothingDeleted, Msg: "no branch is safe to delete: " + strings.Join(out.Keeps, ", ")}
	}
	return out, nil
}

// seal: a new branch, when one is created, and the new working tree.
func (s *worktreeStep) seal(ctx context.Context, sl *sealing) (proposal.Sealed, error) {
	if err := s.checkPlace(sl.r); err != nil {
		return proposal.Sealed{}, err
	}
	out := proposal.Sealed{}
	if s.a.NewBranch {
		start := sl.r.expect[s.a.StartPoint]
		out.Base = start
		out.Moves = []proposal.RefMove{{Ref: proposal.BranchRef(s.a.Branch), To: start}}
	} else {
		out.Base = sl.r.expect[proposal.BranchRef(s.a.Branch)]
	}
	return out, nil
}

// seal: recording stages the submodule's pinned commit as the gitlink;
// returning moves the submodule's checkout to the recorded commit.
func (s *submoduleStep) seal(ctx context.Context, sl *sealing) (proposal.Sealed, error) {
	if err := s.touch(ctx, sl.r, touches{}); err != nil {
		return proposal.Sealed{}, err
	}
	subHead := sl.r.p.Pinned.Repos[s.sub.path]["HEAD"]
	head := sl.r.expect["HEAD"]
	before, err := sl.tree(ctx, head)
	if err != nil {
		return proposal.Sealed{}, err
	}
	if s.a.Action == proposal.SubmoduleReturn {
		res, err := sl.run(ctx, call{args: []string{"ls-files", "-s", "-z"}, paths: []string{s.a.Path}})
		if err != nil {
			return proposal.Sealed{}, err
		}
		f := strings.Fields(strings.TrimRight(string(res.out), "\x00"))
		if len(f) < 2 || f[0] != proposal.ModeGitlink {
			return proposal.Sealed{}, errcode.New(errcode.InvalidArgument, "%s is not a submodule in the superproject's index", s.a.Path)
		}
		return proposal.Sealed{Base: head, Moves: []proposal.RefMove{{Ref: "HEAD", From: subHead, To: f[1], Repo: s.sub.path}}}, nil
	}
	env, _, err := sl.index(ctx, before, nil)
	if err != nil {
		return proposal.Sealed{}, err
	}
	if _, err := sl.run(ctx, call{args: []string{"update-index", "--add", "--cacheinfo", proposal.ModeGitlink + "," + subHead + "," + s.a.Path}, env: env}); err != nil {
		return proposal.Sealed{}, err
	}
	after, files, err := sl.newTree(ctx, env, before,
		errcode.New(errcode.NothingToCommit, "the superproject already records %s at %s", s.a.Path, short(subHead)))
	if err != nil {
		return proposal.Sealed{}, err
	}
	mv, err := sl.r.headMove(ctx, "")
	if err != nil {
		return proposal.Sealed{}, err
	}
	return proposal.Sealed{Base: head, Before: before, After: after, Files: files, Effect: proposal.EffectLands, Moves: []proposal.RefMove{mv}}, nil
}

// sealedStep is the sealed outcome of the step running now: the
// proposal's own, or for a plan the current step's.
func (r *run) sealedStep() *proposal.Sealed {
	s := r.p.Sealed
	if s == nil {
		return nil
	}
	if len(s.Steps) > 0 {
		if r.stepIndex < len(s.Steps) {
			return &s.Steps[r.stepIndex]
		}
		return nil
	}
	return s
}

// unchanged recomputes, in a scratch object directory, a state tree the
// way sealing computed it, and fails with stale_base naming the paths
// when it is not want any more.
func (r *run) unchanged(ctx context.Context, want string, f func(ctx context.Context, sl *sealing, headTree string) (string, error)) error {
	now, changed, err := r.compareState(ctx, want, f)
	if err != nil {
		return err
	}
	if now == want {
		return nil
	}
	return &errcode.Error{Code: errcode.StaleBase, Data: map[string]any{"changed": changed},
		Msg: fmt.Sprintf("%s changed since it was proposed, so nothing was changed", strings.Join(limitList(changed, 20), ", "))}
}

// compareState computes a state tree now and the paths where it differs
// from want.
func (r *run) compareState(ctx context.Context, want string, f func(ctx context.Context, sl *sealing, headTree string) (string, error)) (string, []string, error) {
	tmp, err := os.MkdirTemp("", "sluice-check-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(tmp)
	sl := &sealing{r: r, rc: r.main, tmp: tmp}
	if err := sl.scratch(); err != nil {
		return "", nil, err
	}
	headTree, err := sl.tree(ctx, r.expect["HEAD"])
	if err != nil {
		return "", nil, err
	}
	now, err := f(ctx, sl, headTree)
	if err != nil || now == want {
		return now, nil, err
	}
	changes, err := sl.changes(ctx, want, now)
	if err != nil {
		return "", nil, err
	}
	var paths []string
	for _, c := range changes {
		paths = appendNew(paths, c.Path)
		if c.OldPath != "" {
			paths = appendNew(paths, c.OldPath)
		}
	}
	return now, paths, nil
}
