package apply

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// step is one operation. An execution asks every step what it may touch
// (for the restore point), then for each in order checks it without
// changing anything, then runs it.
type step interface {
	name() proposal.Op
	// touch adds what the step may change to the repositories' touch sets.
	touch(ctx context.Context, r *run, t touches) error
	// check refuses, changing nothing, a step that cannot run now.
	check(ctx context.Context, r *run) error
	// do runs the step. It sets r.changed before its first write that
	// may leave a trace, and records in w what it knows of the state it
	// leaves.
	do(ctx context.Context, r *run, w *writing) error
}

// stepsOf is the steps of a proposal's arguments: a plan's, in order, or
// the one step of its operation (stepOf, generated from the
// ops_<operation>.go files by go generate).
//
//go:generate go run ../../build/opsgen apply
func stepsOf(a proposal.Args) []step {
	if x, ok := a.(*proposal.PlanArgs); ok {
		var out []step
		for _, s := range x.Steps {
			out = append(out, stepsOf(s.Args)...)
		}
		return out
	}
	if st := stepOf(a); st != nil {
		return []step{st}
	}
	return []step{unknownStep{}}
}

type unknownStep struct{}

func (unknownStep) name() proposal.Op { return "" }
func (unknownStep) touch(context.Context, *run, touches) error {
	return errcode.New(errcode.Unsupported, "this executor does not know the operation")
}
func (unknownStep) check(context.Context, *run) error        { return nil }
func (unknownStep) do(context.Context, *run, *writing) error { return nil }

// planStepError names the step of a plan that failed; the code stays.
func planStepError(i, n int, s step, err error) error {
	e := &errcode.Error{Code: errcode.Of(err), Err: err, Msg: fmt.Sprintf("step %d of %d (%s) failed: %v", i+1, n, s.name(), err)}
	if d, ok := err.(*errcode.Error); ok {
		e.Data = d.Data
	}
	return e
}

// ---------------------------------------------------------------------
// Helpers shared by the steps.

// headOf is the HEAD of the main working tree.
func (r *run) head(ctx context.Context) (head, error) { return r.main.headOf(ctx, r.main.path) }

// touchHead records that the branch HEAD is on may move, and returns its
// ref ("" when HEAD is detached: no branch is touched).
func (r *run) touchHead(ctx context.Context, t touches) (string, error) {
	h, err := r.head(ctx)
	if err != nil {
		return "", err
	}
	if h.sym != "" {
		t.of(r.main).addRef(h.sym)
	}
	return h.sym, nil
}

// requireOnBranch refuses when the main working tree is not on branch
// (when the proposal names one).
func (r *run) requireOnBranch(ctx context.Context, branch string) error {
	if branch == "" {
		return nil
	}
	h, err := r.head(ctx)
	if err != nil {
		return err
	}
	if h.sym != proposal.BranchRef(branch) {
		on := strings.TrimPrefix(h.sym, "refs/heads/")
		if on == "" {
			on = "a detached HEAD"
		}
		return &errcode.Error{Code: errcode.StaleBase, Data: map[string]string{"HEAD": h.sha},
			Msg: fmt.Sprintf("the working tree is on %s, not on branch %s as the proposal expects; nothing was changed", on, branch)}
	}
	return nil
}

// operationFiles are the state files of a multi-step git operation.
var operationFiles = map[string]string{
	"rebase-merge": "a rebase", "rebase-apply": "a rebase or am", "MERGE_HEAD": "a merge",
	"CHERRY_PICK_HEAD": "a cherry-pick", "REVERT_HEAD": "a revert", "BISECT_LOG": "a bisect",
}

// requireNoOperation refuses a worktree in the middle of a merge, rebase,
// cherry-pick, revert or bisect: the operation would be mixed into it.
func requireNoOperation(wt worktree) error {
	for f, what := range operationFiles {
		if _, err := os.Lstat(filepath.Join(wt.gitDir, f)); err == nil {
			return errcode.New(errcode.OperationInProgress, "%s is in progress in %s; finish or abort it first", what, wt.path)
		}
	}
	return nil
}

// requireClean refuses a worktree with staged or unstaged changes to
// tracked files (untracked files are fine unless they are in the way,
// which the checkout update itself detects).
func (r *run) requireClean(ctx context.Context, rc *repoCtx, wt worktree, what string) error {
	if err := requireNoOperation(wt); err != nil {
		return err
	}
	dirty, err := rc.dirtyTracked(ctx, wt)
	if err != nil {
		return err
	}
	if len(dirty) > 0 {
		return &errcode.Error{Code: errcode.DirtyWorktree, Data: map[string]any{"worktree": wt.path, "files": dirty},
			Msg: fmt.Sprintf("%s is checked out in %s, which has uncommitted changes (%s); commit or stash them, then retry it from its card. Nothing was changed",
				what, wt.path, strings.Join(dirty, ", "))}
	}
	return nil
}

// checkedOut returns the worktree that has ref checked out, if any. A
// checkout outside the allowed roots is refused: Sluice writes only where
// it may.
func (r *run) checkedOut(ctx context.Context, rc *repoCtx, ref string) (*worktree, error) {
	list, err := rc.repo.Worktrees(ctx)
	if err != nil {
		return nil, err
	}
	for _, w := range list.Worktrees {
		if w.Branch == "" || proposal.BranchRef(w.Branch) != ref {
			continue
		}
		canon, err := filepath.EvalSymlinks(w.Path)
		if err != nil {
			// A worktree whose directory is gone holds the branch in
			// git's eyes only.
			return nil, errcode.New(errcode.BranchCheckedOut, "%s is checked out in a worktree whose directory is missing; run git worktree prune", ref)
		}
		if canon == rc.path {
			wt := rc.main()
			return &wt, nil
		}
		if _, err := r.e.allowed().Confine(canon); err != nil {
			return nil, errcode.New(errcode.BranchCheckedOut, "%s is checked out in a worktree outside the allowed roots, which Sluice does not change", ref)
		}
		wt, err := rc.worktreeAt(ctx, canon)
		if err != nil {
			return nil, asInvalid(err)
		}
		return &wt, nil
	}
	return nil, nil
}

// cas moves ref from old to new with git update-ref's compare-and-swap:
// new "" deletes, old "" means the ref must not exist. A ref that is not
// at old is stale_base (or ref_exists for a creation), and nothing moved.
func (r *run) cas(ctx context.Context, rc *repoCtx, ref, new, old, msg string) error {
	args := []string{"update-ref", "-m", msg}
	if ref == "HEAD" {
		args = append(args, "--no-deref")
	}
	o := old
	if o == "" {
		o = rc.g.zero
	}
	revs := []string{ref, new, o}
	if new == "" {
		args, revs = append(args, "-d"), []string{ref, o}
	}
	if _, err := rc.g.run(ctx, call{dir: rc.path, args: args, revs: revs}); err != nil {
		return rc.casFailed(ctx, err, ref, old)
	}
	return nil
}

func (rc *repoCtx) casFailed(ctx context.Context, err error, ref, old string) error {
	s := stderrOf(err)
	if !strings.Contains(s, "but expected") && !strings.Contains(s, "already exists") && !strings.Contains(s, "missing") &&
		!strings.Contains(s, "unable to resolve") {
		return err
	}
	if old == "" {
		return &errcode.Error{Code: errcode.RefExists, Msg: fmt.Sprintf("%s already exists; nothing was changed", ref), Err: err}
	}
	cur, rerr := rc.resolve(ctx, []string{ref})
	if rerr != nil {
		return err
	}
	return staleBase(map[string]string{ref: cur[ref]}, map[string]string{ref: old})
}

// moveCheckout moves ref from old to new. When ref is checked out in wt
// (which requireClean has vetted), the checkout follows with a two-tree
// read-tree, once requireNothingInTheWay made sure it writes over nothing
// git does not track. added, when not nil, lists the paths the update
// adds (see addedPaths), computed ahead.
func (r *run) moveCheckout(ctx context.Context, w *writing, rc *repoCtx, ref, old, new string, wt *worktree, msg string, added []string) error {
	if wt == nil {
		if err := r.cas(ctx, rc, ref, new, old, msg); err != nil {
			return err
		}
		r.changed = true
		return nil
	}
	if err := rc.followable(ctx, *wt, old, new, added); err != nil {
		return err
	}
	if err := r.cas(ctx, rc, ref, new, old, msg); err != nil {
		return err
	}
	was := r.changed
	r.changed = true
	if err := rc.follow(ctx, w.left[rc], *wt, old, new); err != nil {
		// The checkout could not follow (it checks everything before it
		// writes a file): put the ref back, so that the worktree and its
		// branch agree again, as they were.
		if rerr := r.cas(ctx, rc, ref, old, new, msg+" (undone)"); rerr != nil {
			r.e.log.Error("apply: could not move a ref back after a failed checkout", "ref", ref, "err", rerr)
		} else {
			r.changed = was
		}
		return err
	}
	return nil
}

// followable refuses, before anything moves, a checkout update of wt from
// old to new that would write over a file git does not track there.
// added, when not nil, lists the paths the update adds, computed ahead.
func (rc *repoCtx) followable(ctx context.Context, wt worktree, old, new string, added []string) error {
	if added == nil {
		var err error
		if added, err = rc.addedPaths(ctx, old, new); err != nil {
			return err
		}
	}
	return requireNothingInTheWay(wt, added)
}

// follow updates wt's index and files from old to new with a two-tree
// read-tree, which checks everything before it writes a file; a worktree
// that had no change at all is left exactly at new (settled in left).
func (rc *repoCtx) follow(ctx context.Context, left *effects, wt worktree, old, new string) error {
	if _, err := rc.g.run(ctx, call{dir: wt.path, args: []string{"read-tree", "-m", "-u"}, revs: []string{old, new}}); err != nil {
		return checkoutBlocked(err, &wt)
	}
	left.settled[wt.path] = left.pristine[wt.path]
	return nil
}

// addedPaths lists the paths a checkout update from old to new adds (see
// gitrun.AddedPaths).
func (rc *repoCtx) addedPaths(ctx context.Context, old, new string) ([]string, error) {
	return rc.g.git.AddedPaths(ctx, old, new)
}

// requireNothingInTheWay refuses, before anything moves, a checkout
// update that adds paths where the worktree has a file git does not
// track: an untracked one, which git read-tree would refuse only once the
// branch had moved, or an ignored one, which it would overwrite, and
// which no restore point holds (a .env, say).
func requireNothingInTheWay(wt worktree, added []string) error {
	in := inTheWay(wt, added)
	if len(in) == 0 {
		return nil
	}
	return &errcode.Error{Code: errcode.DirtyWorktree, Data: map[string]any{"worktree": wt.path, "files": limitList(in, 50)},
		Msg: fmt.Sprintf("the checkout in %s cannot follow without overwriting files git does not track there (untracked or ignored): %s; move them away, then retry it from its card. Nothing was changed",
			wt.path, strings.Join(limitList(in, 20), ", "))}
}

// requireNoIgnoredInTheWay refuses an update from old to new that would
// overwrite an ignored file (see gitrun.RequireNoIgnoredInTheWay).
func (rc *repoCtx) requireNoIgnoredInTheWay(ctx context.Context, wt worktree, old, new string) error {
	return rc.g.git.RequireNoIgnoredInTheWay(ctx, wt.path, old, new)
}

// inTheWay lists what stands in the worktree where the added paths would
// go (see gitrun.InTheWay).
func inTheWay(wt worktree, added []string) []string { return gitrun.InTheWay(wt.path, added) }

// standing returns what stands in the worktree where path would go (see
// gitrun.Standing).
func standing(wt worktree, path string) string { return gitrun.Standing(wt.path, path) }

func checkoutBlocked(err error, wt *worktree) error {
	s := stderrOf(err)
	if strings.Contains(s, "would be overwritten") || strings.Contains(s, "would be removed") || strings.Contains(s, "not uptodate") {
		return &errcode.Error{Code: errcode.DirtyWorktree, Err: err, Data: map[string]any{"worktree": wt.path},
			Msg: fmt.Sprintf("the checkout in %s cannot follow without overwriting files there: %s; nothing was changed", wt.path, clip(s, 1500))}
	}
	return err
}

// resolveTrees returns the tree of each commit.
func (rc *repoCtx) resolveTrees(ctx context.Context, commits ...string) (map[string]string, error) {
	return rc.g.git.Trees(ctx, rc.path, commits...)
}

// mergeBase is the best common ancestor of a and b, or "".
func (rc *repoCtx) mergeBase(ctx context.Context, a, b string) (string, error) {
	return rc.g.git.MergeBase(ctx, a, b)
}

// mergeTree merges b into a without a worktree or index (see
// gitrun.MergeTree).
func (rc *repoCtx) mergeTree(ctx context.Context, a, b string) (string, []string, error) {
	return rc.g.git.MergeTree(ctx, a, b)
}

// personCommit makes a commit that is the person's, computed away from
// any checkout (a merge or squash): their identity from their
// configuration, and signed when they sign their commits. This is the
// signing exception to the hardening, and the only one commit-tree gets.
func (r *run) personCommit(ctx context.Context, rc *repoCtx, tree string, parents []string, msg string) (string, error) {
	args := []string{"commit-tree"}
	if v, _ := rc.repo.Config("commit.gpgsign"); configTrue(v) {
		args = append(args, "-S")
	}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	res, err := rc.g.run(ctx, call{dir: rc.path, args: args, revs: []string{tree}, stdin: []byte(msg), profile: gitx.ProfileSigned})
	if err != nil {
		return "", err
	}
	return res.text(), nil
}

func configTrue(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "yes", "on", "1":
		return true
	}
	return false
}

var trailerLine = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*: `)

// withTrailers adds Sluice-Proposal and Sluice-Approved-Digest to a
// commit message: to its trailer block when it ends with one, else as a
// new paragraph.
func withTrailers(msg string, p proposal.Proposal) string {
	msg = strings.TrimRight(msg, " \t\r\n")
	add := "Sluice-Proposal: " + p.ID + "\nSluice-Approved-Digest: " + proposal.ShortDigest(p.Digest)
	paras := strings.Split(msg, "\n\n")
	if len(paras) > 1 {
		last := strings.Split(strings.TrimSpace(paras[len(paras)-1]), "\n")
		all := true
		for _, l := range last {
			all = all && trailerLine.MatchString(l)
		}
		if all {
			return msg + "\n" + add + "\n"
		}
	}
	return msg + "\n\n" + add + "\n"
}

// shortlog lists the subjects of base..tip for a squash message.
func (rc *repoCtx) shortlog(ctx context.Context, base, tip string) string {
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"log", "--no-ext-diff", "--no-textconv", "--format=* %s", "--max-count=100"}, revs: []string{base + ".." + tip}, dashdash: true})
	if err != nil {
		return ""
	}
	return res.text()
}

// refusingHooks are the hooks that can refuse a commit.
var refusingHooks = []string{"pre-commit", "prepare-commit-msg", "commit-msg"}

// commitHooks are every hook a commit can run (reference-transaction
// because the commit moves a ref, post-index-change because it writes
// the index); any of them could change files.
var commitHooks = append(slices.Clone(refusingHooks), "post-commit", "post-index-change", "reference-transaction")

// hasHooks reports whether any of the named hooks of the person's is
// installed. core.hooksPath is read with the person's git: the hardened
// one overrides it.
func (rc *repoCtx) hasHooks(ctx context.Context, names []string) bool {
	dir := filepath.Join(rc.repo.CommonDir, "hooks")
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"config", "--path", "--get", "core.hooksPath"}, profile: gitx.ProfilePerson, ok: []int{1}})
	if p := res.text(); err == nil && res.exit == 0 && p != "" {
		if !filepath.IsAbs(p) {
			p = filepath.Join(rc.path, p)
		}
		dir = p
	}
	for _, h := range names {
		if st, err := os.Stat(filepath.Join(dir, h)); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return true
		}
	}
	return false
}

// commitDepth is how much of the main worktree an approved commit may
// change: the index, and files only when a hook of the person's runs (a
// formatter in pre-commit, say). A commit by itself never writes files.
func (rc *repoCtx) commitDepth(ctx context.Context) depth {
	if rc.hasHooks(ctx, commitHooks) {
		return depthFiles
	}
	return depthIndex
}
