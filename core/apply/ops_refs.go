package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// branchStep creates a branch at the pinned start point; a branch of that
// name that already exists is left alone (ref_exists). With Checkout the
// main working tree then switches to it, which needs a clean checkout.
type branchStep struct{ a *proposal.BranchArgs }

func (s *branchStep) name() proposal.Op { return proposal.OpBranch }

func (s *branchStep) touch(_ context.Context, r *run, t touches) error {
	t.of(r.main).addRef(proposal.BranchRef(s.a.Name))
	if s.a.Checkout {
		t.of(r.main).addWorktree(r.main.main(), depthFiles)
	}
	return nil
}

func (s *branchStep) check(ctx context.Context, r *run) error {
	if !s.a.Checkout {
		return nil
	}
	return r.requireClean(ctx, r.main, r.main.main(), "the working tree")
}

func (s *branchStep) do(ctx context.Context, r *run, w *writing) error {
	ref, start := proposal.BranchRef(s.a.Name), r.expect[s.a.StartPoint]
	msg := fmt.Sprintf("sluice: branch %s at %s (proposal %s)", s.a.Name, s.a.StartPoint, r.p.ID)
	if err := r.cas(ctx, r.main, ref, start, "", msg); err != nil {
		return err
	}
	r.changed = true
	r.moved(r.main, ref, start, false)
	r.note("created branch %s at %s", s.a.Name, short(start))
	if !s.a.Checkout {
		return nil
	}
	return s.switchTo(ctx, r, w, ref, start, msg)
}

// switchTo moves the main working tree onto the new branch: its files
// follow with a two-tree read-tree (refused first when an untracked or
// ignored file is in the way), then HEAD is pointed at the branch.
func (s *branchStep) switchTo(ctx context.Context, r *run, w *writing, ref, start, msg string) error {
	wt := r.main.main()
	h, err := r.head(ctx)
	if err != nil {
		return err
	}
	if h.sha != start {
		if err := r.main.followable(ctx, wt, h.sha, start, nil); err != nil {
			return err
		}
		if err := r.main.follow(ctx, w.left[r.main], wt, h.sha, start); err != nil {
			return err
		}
	}
	if _, err := r.main.g.run(ctx, call{dir: wt.path, args: []string{"symbolic-ref", "-m", msg + " (checkout)"}, revs: []string{"HEAD", ref}}); err != nil {
		return err
	}
	r.moved(r.main, ref, start, true)
	r.note("checked out %s", s.a.Name)
	return nil
}

// worktreeStep adds a linked worktree, creating its branch first (by
// compare-and-swap) when asked. Hooks stay off: post-checkout is the
// repository's program, not part of what was approved.
type worktreeStep struct{ a *proposal.WorktreeArgs }

func (s *worktreeStep) name() proposal.Op { return proposal.OpWorktree }

func (s *worktreeStep) touch(_ context.Context, r *run, t touches) error {
	if s.a.NewBranch {
		t.of(r.main).addRef(proposal.BranchRef(s.a.Branch))
	}
	t.of(r.main).newWorktree = s.a.Path
	return nil
}

func (s *worktreeStep) check(ctx context.Context, r *run) error {
	parent := filepath.Dir(s.a.Path)
	canon, err := r.e.allowed().Confine(parent)
	if err != nil || canon != parent {
		return errcode.New(errcode.InvalidArgument, "the new worktree's parent directory must be a canonical directory inside the allowed roots")
	}
	if err := s.checkPlace(r); err != nil {
		return err
	}
	if _, err := os.Lstat(s.a.Path); err == nil {
		return errcode.New(errcode.InvalidArgument, "%s already exists; a worktree needs a new directory", s.a.Path)
	}
	if !s.a.NewBranch {
		wt, err := r.checkedOut(ctx, r.main, proposal.BranchRef(s.a.Branch))
		if err != nil && !errors.Is(err, &errcode.Error{Code: errcode.BranchCheckedOut}) {
			return err
		}
		if wt != nil || err != nil {
			return errcode.New(errcode.BranchCheckedOut, "branch %s is already checked out in another worktree", s.a.Branch)
		}
	}
	return nil
}

// checkPlace applies the rule the sidecar and the gateway applied, to the
// files as they are now (at seal and again before the worktree is added):
// never inside a git directory, never under a tree whose git directory is
// outside the roots, and nested exactly where the proposal says.
func (s *worktreeStep) checkPlace(r *run) error {
	place, nested, err := r.e.allowed().WorktreePlace(s.a.Path)
	if err != nil {
		var ge *errcode.Error
		if errors.As(err, &ge) {
			return &errcode.Error{Code: ge.Code, Msg: ge.Msg, Err: err}
		}
		return err
	}
	if place != s.a.Path || nested != r.p.Pinned.WorktreeNestedIn {
		return errcode.New(errcode.InvalidArgument, "the new worktree would not be where the proposal says (its nesting in another working tree changed)")
	}
	return nil
}

func (s *worktreeStep) do(ctx context.Context, r *run, w *writing) error {
	rc := r.main
	ref := proposal.BranchRef(s.a.Branch)
	if s.a.NewBranch {
		start := r.expect[s.a.StartPoint]
		if err := r.cas(ctx, rc, ref, start, "", fmt.Sprintf("sluice: branch %s for a worktree (proposal %s)", s.a.Branch, r.p.ID)); err != nil {
			return err
		}
		r.changed = true
	}
	if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"worktree", "add", "--quiet"}, revs: []string{s.a.Path, s.a.Branch}}); err != nil {
		if s.a.NewBranch {
			if derr := r.cas(ctx, rc, ref, "", r.expect[s.a.StartPoint], "sluice: undo a branch whose worktree failed"); derr == nil {
				r.changed = false
			}
		}
		if st := stderrOf(err); strings.Contains(st, "already checked out") || strings.Contains(st, "already used by worktree") {
			return &errcode.Error{Code: errcode.BranchCheckedOut, Msg: "branch " + s.a.Branch + " is already checked out in another worktree", Err: err}
		}
		return err
	}
	r.changed = true
	r.note("added worktree %s on branch %s", s.a.Path, s.a.Branch)
	return nil
}

// pushStep pushes the pinned commit of a branch. It runs the person's git
// (their credentials, transport configuration and pre-push hook): a push
// needs them, and the person approved this push. A forced push is only
// ever --force-with-lease against the remote-tracking SHA that was pinned,
// never a bare force.
type pushStep struct{ a *proposal.PushArgs }

func (s *pushStep) name() proposal.Op { return proposal.OpPush }

func (s *pushStep) touch(_ context.Context, r *run, t touches) error {
	t.of(r.main).addRef(s.a.LeaseRef())
	if s.a.SetUpstream {
		t.of(r.main).addConfig(s.a.Branch)
	}
	t.of(r.main).note = "a restore puts back the local remote-tracking ref and branch configuration only; what was pushed stays on the remote"
	return nil
}

func (s *pushStep) check(context.Context, *run) error { return nil }

func (s *pushStep) do(ctx context.Context, r *run, w *writing) error {
	rc := r.main
	sha := r.expect[proposal.BranchRef(s.a.Branch)]
	dst := proposal.BranchRef(s.a.RemoteName())
	args := []string{"push", "--porcelain"}
	if s.a.ForceWithLease {
		args = append(args, "--force-with-lease="+dst+":"+r.expect[s.a.LeaseRef()])
	}
	r.e.step("before-push")
	// The person's git: they approved this push, which needs their
	// credentials, and their pre-push hook runs as it would for them.
	res, err := rc.g.run(ctx, call{dir: rc.path, args: args, revs: []string{s.a.Remote, sha + ":" + dst}, profile: gitx.ProfilePerson, ok: []int{1}})
	if err != nil {
		return err
	}
	flag, summary := pushStatus(string(res.out), dst)
	if res.exit != 0 || flag == "!" {
		switch {
		case strings.Contains(summary, "stale info"):
			return &errcode.Error{Code: errcode.StaleBase, Data: map[string]string{s.a.Remote + ":" + dst: ""},
				Msg: fmt.Sprintf("the remote branch %s on %s moved since the proposal was made, so the lease refused the forced push; nothing was pushed", s.a.RemoteName(), s.a.Remote)}
		case summary != "":
			return &errcode.Error{Code: errcode.PushRejected, Data: errcode.GitFailure{Command: "push", ExitCode: res.exit, Stderr: clip(res.stderr, 4096)},
				Msg: fmt.Sprintf("%s refused the push of %s: %s", s.a.Remote, s.a.RemoteName(), summary)}
		}
		return failed("push", gitx.ProfilePerson, res)
	}
	r.changed = true
	if s.a.SetUpstream {
		for _, kv := range [][2]string{{"branch." + s.a.Branch + ".remote", s.a.Remote}, {"branch." + s.a.Branch + ".merge", dst}} {
			if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"config", "--local", kv[0], kv[1]}}); err != nil {
				return err
			}
		}
	}
	how := "pushed"
	if s.a.ForceWithLease {
		how = "force-pushed (with lease)"
	}
	r.note("%s %s (%s) to %s as %s", how, s.a.Branch, short(sha), s.a.Remote, s.a.RemoteName())
	return nil
}

// pushStatus reads git push --porcelain: "<flag>\t<from>:<to>\t<summary>".
func pushStatus(out, dst string) (flag, summary string) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) == 3 && strings.HasSuffix(f[1], ":"+dst) {
			return strings.TrimSpace(f[0]), strings.TrimSpace(f[2])
		}
	}
	return "", ""
}

// branchDeleteStep deletes the branches that are safe to delete and keeps
// the rest, saying why: a branch goes only when its tip is reachable from
// HEAD or from its upstream, it is checked out nowhere, and it has not
// moved since the proposal.
type branchDeleteStep struct {
	a    *proposal.BranchDeleteArgs
	del  map[*repoCtx][]string
	keep []kept
}

func (s *branchDeleteStep) name() proposal.Op { return proposal.OpBranchDelete }

// branchSets lists, per repository, the branches and their pins.
func (s *branchDeleteStep) branchSets(r *run) []branchSet {
	sets := []branchSet{{rc: r.main, branches: s.a.Branches, pins: r.p.Pinned.Refs}}
	for _, o := range s.a.OtherRepos {
		sets = append(sets, branchSet{rc: r.others[o.Repo], branches: o.Branches, pins: r.p.Pinned.Repos[o.Repo]})
	}
	return sets
}

type branchSet struct {
	rc       *repoCtx
	branches []string
	pins     map[string]string
}

func (s *branchDeleteStep) touch(_ context.Context, r *run, t touches) error {
	for _, set := range s.branchSets(r) {
		if set.rc == nil {
			return errcode.New(errcode.InvalidArgument, "a repository named by the proposal could not be opened")
		}
		for _, b := range set.branches {
			t.of(set.rc).addRef(proposal.BranchRef(b))
			t.of(set.rc).addConfig(b)
		}
	}
	return nil
}

// check decides, changing nothing, which branches go and which stay;
// when none can go it refuses before a restore point is taken.
func (s *branchDeleteStep) check(ctx context.Context, r *run) error {
	s.del, s.keep = map[*repoCtx][]string{}, nil
	for _, set := range s.branchSets(r) {
		del, k, err := set.evaluate(ctx)
		if err != nil {
			return err
		}
		s.keep = append(s.keep, k...)
		if len(del) > 0 {
			s.del[set.rc] = del
		}
	}
	if len(s.del) > 0 {
		return s.checkSealed(r)
	}
	var why []string
	moved, expected, allMoved := map[string]string{}, map[string]string{}, len(s.keep) > 0
	for _, k := range s.keep {
		name := k.name(r)
		why = append(why, name+" ("+k.why+")")
		if k.moved {
			moved[name], expected[name] = k.now, k.pinned
		} else {
			allMoved = false
		}
	}
	if allMoved {
		e := staleBase(moved, expected)
		e.Msg = "no branch was deleted: every one moved or disappeared since the proposal (" + strings.Join(why, ", ") + ")"
		return e
	}
	return &errcode.Error{Code: errcode.NothingDeleted, Msg: "no branch was safe to delete: " + strings.Join(why, ", ")}
}

// checkSealed: the branches that go are exactly the ones the card named.
func (s *branchDeleteStep) checkSealed(r *run) error {
	sealed := r.sealedStep()
	if sealed == nil {
		return nil
	}
	var want, got []string
	for _, m := range sealed.Moves {
		want = append(want, m.Repo+":"+m.Ref)
	}
	for _, set := range s.branchSets(r) {
		repo := ""
		if set.rc != r.main {
			repo = set.rc.path
		}
		for _, b := range s.del[set.rc] {
			got = append(got, repo+":"+proposal.BranchRef(b))
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		return &errcode.Error{Code: errcode.StaleBase, Data: map[string]any{"sealed": want, "now": got},
			Msg: "the branches that are safe to delete are not the ones the card named any more; nothing was deleted"}
	}
	return nil
}

// kept is a branch that was not deleted.
type kept struct {
	repo, branch, why string
	moved             bool
	now, pinned       string
}

func (k kept) name(r *run) string {
	if k.repo != r.main.path {
		return k.repo + ":" + k.branch
	}
	return k.branch
}

func (s *branchDeleteStep) do(ctx context.Context, r *run, w *writing) error {
	var deleted []string
	for _, set := range s.branchSets(r) {
		del := s.del[set.rc]
		if len(del) == 0 {
			continue
		}
		var in bytes.Buffer
		for _, b := range del {
			fmt.Fprintf(&in, "delete %s %s\n", proposal.BranchRef(b), set.pins[proposal.BranchRef(b)])
		}
		r.e.step("before-ref-update")
		if _, err := set.rc.g.run(ctx, call{dir: set.rc.path, args: []string{"update-ref", "-m", "sluice: delete branches (proposal " + r.p.ID + ")", "--stdin"}, stdin: in.Bytes()}); err != nil {
			if st := stderrOf(err); strings.Contains(st, "but expected") || strings.Contains(st, "unable to resolve") {
				return &errcode.Error{Code: errcode.StaleBase, Err: err, Msg: "a branch moved while it was being deleted; none of this repository's branches were deleted"}
			}
			return err
		}
		r.changed = true
		for _, b := range del {
			if _, err := set.rc.g.run(ctx, call{dir: set.rc.path, args: []string{"config", "--local", "--remove-section", "branch." + b}, ok: []int{128}}); err != nil {
				return err
			}
			deleted = append(deleted, kept{repo: set.rc.path, branch: b}.name(r))
		}
	}
	r.note("deleted %s", strings.Join(deleted, ", "))
	if len(s.keep) > 0 {
		var why []string
		for _, k := range s.keep {
			why = append(why, k.name(r)+" ("+k.why+")")
		}
		r.note("kept %s", strings.Join(why, ", "))
	}
	return nil
}

// evaluate decides which of the set's branches may be deleted.
func (set branchSet) evaluate(ctx context.Context) ([]string, []kept, error) {
	rc := set.rc
	refs := make([]string, 0, len(set.branches))
	for _, b := range set.branches {
		refs = append(refs, proposal.BranchRef(b))
	}
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"for-each-ref", "--format=%(refname)%00%(objectname)%00%(upstream)%00%(worktreepath)"}, revs: refs})
	if err != nil {
		return nil, nil, err
	}
	type info struct{ sha, upstream, worktree string }
	have := map[string]info{}
	for _, line := range strings.Split(res.text(), "\n") {
		f := strings.Split(line, "\x00")
		if len(f) == 4 {
			have[f[0]] = info{f[1], f[2], f[3]}
		}
	}
	h, err := rc.g.headOf(ctx, rc.path)
	if err != nil {
		return nil, nil, err
	}
	res, err = rc.g.run(ctx, call{dir: rc.path, args: []string{"for-each-ref", "--format=%(refname)", "--merged=" + h.sha}, revs: refs})
	if err != nil {
		return nil, nil, err
	}
	merged := map[string]bool{}
	for _, l := range strings.Split(res.text(), "\n") {
		merged[l] = true
	}
	var del []string
	var keep []kept
	for _, b := range set.branches {
		ref := proposal.BranchRef(b)
		in, ok := have[ref]
		k := kept{repo: rc.path, branch: b, pinned: set.pins[ref]}
		switch {
		case !ok:
			k.why, k.moved = "it no longer exists", true
		case in.sha != set.pins[ref]:
			k.why, k.moved, k.now = "it moved since the proposal; now at "+short(in.sha), true, in.sha
		case in.worktree != "":
			k.why = "it is checked out in " + in.worktree
		case merged[ref]:
			del = append(del, b)
			continue
		case in.upstream != "":
			res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"merge-base", "--is-ancestor"}, revs: []string{in.sha, in.upstream}, ok: []int{1}})
			if err != nil {
				return nil, nil, err
			}
			if res.exit == 0 {
				del = append(del, b)
				continue
			}
			k.why = "its commits are neither in HEAD nor in its upstream"
		default:
			k.why = "its commits are not in HEAD and it has no upstream"
		}
		keep = append(keep, k)
	}
	sort.Strings(del)
	return del, keep, nil
}

// revalidateBranchDelete: a deletion may still run while at least one of
// its branches is where it was pinned; the others will be kept and
// reported.
func (r *run) revalidateBranchDelete(ctx context.Context) error {
	s := &branchDeleteStep{a: r.p.Args.(*proposal.BranchDeleteArgs)}
	moved, expected := map[string]string{}, map[string]string{}
	for _, set := range s.branchSets(r) {
		if set.rc == nil {
			return errcode.New(errcode.InvalidArgument, "a repository named by the proposal could not be opened")
		}
		refs := make([]string, 0, len(set.branches))
		for _, b := range set.branches {
			refs = append(refs, proposal.BranchRef(b))
		}
		states, err := set.rc.refStates(ctx, refs)
		if err != nil {
			return err
		}
		for _, st := range states {
			if st.SHA == set.pins[st.Ref] {
				return nil
			}
			moved[set.rc.path+":"+st.Ref], expected[set.rc.path+":"+st.Ref] = st.SHA, set.pins[st.Ref]
		}
	}
	return staleBase(moved, expected)
}
