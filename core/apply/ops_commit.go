package apply

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// commitStep commits paths (or everything) on the checked-out branch with
// the person's own git: identity, hooks and signing, because they
// approved exactly this commit. It never amends.
type commitStep struct {
	a *proposal.CommitArgs
	commitsOnHead
}

// commitsOnHead is the touch of a step that commits on the checked-out
// branch: that branch (sym, "" for a detached HEAD) may move, and the main
// worktree may change to commitDepth.
type commitsOnHead struct{ sym string }

func (c *commitsOnHead) touch(ctx context.Context, r *run, t touches) error {
	sym, err := r.touchHead(ctx, t)
	if err != nil {
		return err
	}
	c.sym = sym
	t.of(r.main).addWorktree(r.main.main(), r.main.commitDepth(ctx))
	return nil
}

func (s *commitStep) name() proposal.Op { return proposal.OpCommit }

func (s *commitStep) check(ctx context.Context, r *run) error {
	if sealed := r.sealedStep(); sealed != nil && sealed.Below != "" {
		return &errcode.Error{Code: errcode.ProposalRefused, Data: map[string]string{"below": sealed.Below}, Msg: stackedWhy(sealed.Below) + "; nothing was changed"}
	}
	if err := r.requireOnBranch(ctx, s.a.Branch); err != nil {
		return err
	}
	// A commit in the middle of a merge would conclude that merge.
	return requireNoOperation(r.main.main())
}

// touch: a session's commit writes files of the checkout
// (Sealed.Checkout), so the restore point holds the files too, and
// undoing the commit takes them back.
func (s *commitStep) touch(ctx context.Context, r *run, t touches) error {
	if err := s.commitsOnHead.touch(ctx, r, t); err != nil {
		return err
	}
	if r.p.Origin != nil {
		t.of(r.main).addWorktree(r.main.main(), depthFiles)
	}
	return nil
}

func (s *commitStep) do(ctx context.Context, r *run, w *writing) error {
	sealed := r.sealedStep()
	if sealed == nil {
		return errcode.New(errcode.Unsupported, "the commit has no sealed outcome; nothing was run")
	}
	if r.p.Origin == nil {
		_, err := r.commitSealed(ctx, w, s.sym, withTrailers(s.a.Message, r.p), sealed, nil)
		return err
	}
	// A session's commit writes files of the checkout: each must still be
	// as the card found it, with nothing of the person's in its way. What
	// they staged stays staged.
	plan, err := r.planCheckout(ctx, sealed.Files)
	if err != nil {
		return err
	}
	if err := plan.requireWritable(sealed.Checkout); err != nil {
		return err
	}
	old := r.expect["HEAD"]
	sha, err := r.commitSealed(ctx, w, s.sym, withTrailers(s.a.Message, r.p), sealed, &plan.index)
	if err != nil && sha != "" {
		return r.takeBack(ctx, w, s.sym, old, sha, sealed, &plan.index, &checkoutWrite{}, err)
	}
	if err != nil {
		return err
	}
	// All or nothing: a checkout that cannot be written (something of the
	// person's appeared in the way since the check) takes the commit back.
	wr, err := r.writeCheckout(ctx, sealed)
	if err != nil {
		return r.takeBack(ctx, w, s.sym, old, sha, sealed, &plan.index, wr, err)
	}
	return nil
}

// commitSealed commits exactly the sealed tree with the person's git:
// their identity, hooks and signing. The commit is made from a temporary
// index that holds the sealed tree, so nothing on disk now (an edit made
// after the proposal) can slip in; the person's own index is then updated
// for the committed paths only, and the working tree is never touched, so
// a later edit stays there, uncommitted. When a hook changes what is
// committed, the commit is taken off again: what lands is what was shown.
// keep, for a session's commit, is what the index keeps through it; then
// an index that cannot be updated is an error, returned with the commit,
// for the caller to take the commit back (the checkout is written from
// the index).
func (r *run) commitSealed(ctx context.Context, w *writing, sym, msg string, sealed *proposal.Sealed, keep *indexKeep) (string, error) {
	rc := r.main
	old := r.expect["HEAD"]
	tmp, err := os.MkdirTemp("", "sluice-commit-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	idx := filepath.Join(tmp, "index")
	env := []string{"GIT_INDEX_FILE=" + idx}
	// The temporary index starts as a copy of the person's, and --reset
	// then makes its entries the sealed tree's, keeping the stat data of
	// every entry whose content stays: git commit refreshes the index it
	// commits, and without stat data that would hash every file of the
	// working tree. What is committed is the entries alone either way.
	// git refuses the --reset where it would have to clear a
	// skip-worktree mark over a file that differs; then the index starts
	// empty.
	kept := false
	if err := gitx.CopyIndex(filepath.Join(rc.main().gitDir, "index"), idx); err == nil {
		_, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"read-tree", "--reset"}, revs: []string{sealed.After}, env: env})
		kept = err == nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if !kept {
		if err := os.Remove(idx); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"read-tree"}, revs: []string{sealed.After}, env: env}); err != nil {
			return "", err
		}
	}
	// The person's git: they approved this commit, so their hooks,
	// identity and signing apply, as if they had run it.
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"commit", "--quiet", "--allow-empty-message", "--file=-"}, env: env,
		stdin: []byte(msg), profile: gitx.ProfilePerson, ok: []int{1}})
	if err == nil && res.exit != 0 {
		err = r.commitFailed(ctx, res)
	}
	if err != nil {
		return "", err
	}
	r.changed = true
	l, err := r.landed(ctx, sym, old, sealed.After, "sluice: undo a commit that is not the sealed one")
	if err != nil {
		return "", err
	}
	sha, h, ref := l.own, l.head, l.ref
	w.left[rc].movedHeads[rc.path] = h
	r.moved(rc, ref, h.sha, true)
	r.note("committed the sealed %s on %s: %s", proposal.Count(len(sealed.Files), "file"), branchName(sym), short(sha))
	hooked, err := rc.hookFiles(ctx, l)
	if err != nil {
		r.e.log.Warn("apply: could not list the files a hook's commits changed", "err", err)
	}
	if len(l.above) > 0 {
		r.note("%s", l.aboveNote(sym, hooked, sealed.SealedPaths()))
	}
	// The person's index: the committed paths, and those a hook's commits
	// on top changed (it committed them from the commit's temporary
	// index), now match the new HEAD; every other entry (their own staged
	// work) stays as it was.
	paths := keep.resetPaths(sealed)
	for _, p := range hooked {
		paths = appendNew(paths, p)
	}
	// (No paths would make the reset one of the whole index.)
	if len(paths) > 0 {
		if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"reset", "--quiet", "--no-refresh", h.sha, "--pathspec-from-file=-", "--pathspec-file-nul"},
			stdin: nulList(paths)}); err != nil && keep != nil {
			return sha, err
		} else if err != nil {
			r.note("the commit landed, but the index could not be updated for its paths (%v): run git reset -- %s", err, strings.Join(limitList(paths, 10), " "))
		} else {
			changes := pathChanges(sealed.Files)
			if err := keep.mark(ctx, rc, func(p string) bool { return changes[p] != nil && !changes[p].deleted() }); err != nil {
				r.note("the commit landed, but the assume-unchanged or skip-worktree marks of its paths could not be set again (%v)", err)
			}
		}
	}
	// Between the commit and the index update a crash leaves an
	// execution that reconciliation shows with its restore point; from
	// here on the repository is wholly in its state after the commit.
	r.e.step("committed")
	return sha, nil
}

func branchName(sym string) string {
	if sym == "" {
		return "a detached HEAD"
	}
	return strings.TrimPrefix(sym, "refs/heads/")
}

// commit stages paths (all changes when nil) and commits them with the
// person's git. The commit must land on the expected HEAD: if HEAD moved
// in the instant between the check and git's own lock, the commit is
// taken off again and the result is stale_base. When the commit fails
// (a hook refused it), the index is put back as it was.
func (r *run) commit(ctx context.Context, w *writing, sym, msg string, paths []string) (string, error) {
	rc := r.main
	old := r.expect["HEAD"]
	add := []string{"add", "--all"}
	commit := []string{"commit", "--quiet", "--file=-"}
	if paths != nil {
		commit = append(commit, "--only")
	}
	r.changed = true
	// The person's git for the add and the commit: they approved this
	// commit, so their filters, hooks, identity and signing apply.
	if _, err := rc.g.run(ctx, call{dir: rc.path, args: add, paths: paths, dashdash: paths != nil, profile: gitx.ProfilePerson}); err != nil {
		r.rollbackIndex(ctx, w)
		return "", err
	}
	res, err := rc.g.run(ctx, call{dir: rc.path, args: commit, paths: paths, dashdash: paths != nil, stdin: []byte(msg), profile: gitx.ProfilePerson, ok: []int{1}})
	if err == nil && res.exit != 0 {
		err = r.commitFailed(ctx, res)
	}
	if err != nil {
		r.rollbackIndex(ctx, w)
		return "", err
	}
	r.e.step("committed")
	l, err := r.landed(ctx, sym, old, "", "sluice: undo a commit made on a moved base")
	if err != nil {
		return "", err
	}
	w.left[rc].movedHeads[rc.path] = l.head
	r.moved(rc, l.ref, l.head.sha, true)
	if len(l.above) > 0 {
		hooked, _ := rc.hookFiles(ctx, l)
		r.note("%s", l.aboveNote(sym, hooked, paths))
	}
	return l.own, nil
}

// afterCommit reads, in one git process, the HEAD a commit left (a hook
// may have moved it anywhere, even to a root commit).
func (rc *repoCtx) afterCommit(ctx context.Context) (head, error) {
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"rev-parse", "HEAD", "HEAD^{tree}", "--symbolic-full-name", "HEAD"}, dashdash: true})
	if err != nil {
		return head{}, err
	}
	return parseHead(strings.Split(res.text(), "\n"))
}

// commitFailed classifies a failed git commit.
func (r *run) commitFailed(ctx context.Context, res result) error {
	hooks := r.main.hasHooks(ctx, refusingHooks)
	out := strings.TrimSpace(strings.TrimSpace(string(res.out)) + "\n" + strings.TrimSpace(res.stderr))
	low := strings.ToLower(out)
	switch {
	case strings.Contains(low, "nothing to commit") || strings.Contains(low, "nothing added to commit") || strings.Contains(low, "no changes added to commit"):
		return &errcode.Error{Code: errcode.NothingToCommit, Msg: "there is nothing to commit: " + clip(out, 500)}
	case strings.Contains(low, "failed to sign") || strings.Contains(low, "signing failed"):
		return &errcode.Error{Code: errcode.GitFailed, Data: errcode.GitFailure{Command: "commit", ExitCode: res.exit, Stderr: clip(out, 4096)},
			Msg: "the commit could not be signed with the person's signing configuration: " + clip(out, 2000)}
	case hooks:
		return &errcode.Error{Code: errcode.HookFailed, Data: map[string]any{"output": clip(out, 8000)},
			Msg: "a commit hook refused the commit; nothing was committed. Hook output:\n" + clip(out, 4000)}
	}
	return failed("commit", gitx.ProfilePerson, res)
}

// rollbackIndex puts the index back as the restore point recorded it, after
// a commit that did not happen.
func (r *run) rollbackIndex(ctx context.Context, w *writing) {
	rc := r.main
	tk := w.points[rc]
	if tk == nil {
		return
	}
	for _, wt := range tk.rp.Worktrees {
		if wt.Path != rc.path || wt.Index == "" {
			continue
		}
		restore := func() error { return rc.g.restoreIndex(ctx, rc.main(), wt.Index) }
		if len(wt.Paths) > 0 {
			// A scope: the entries at the commit's paths alone.
			restore = func() error { return rc.g.restoreIndexPaths(ctx, rc.main(), wt.Index, wt.Paths) }
		}
		if err := restore(); err != nil {
			r.e.log.Error("apply: could not put the index back after a failed commit", "err", err)
			return
		}
		// The index was the only thing changed, and it is back (a commit is
		// never a step of a plan).
		r.changed = false
	}
}

// gitlinkOf reads the object id of a gitlink from ls-tree -z output.
func gitlinkOf(out string) string {
	meta, _, _ := strings.Cut(out, "\t")
	f := strings.Fields(meta)
	if len(f) == 3 && f[0] == "160000" {
		return f[2]
	}
	return ""
}
