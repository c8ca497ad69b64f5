package apply

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/core/apply/seal"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// A sealed outcome is computed by the app when a proposal arrives, before
// its card opens (see proposal.Sealed). Each operation's step says how it
// seals (sealer) and checks, when it runs, that it produces exactly that
// outcome. Sealing writes only git objects and the one ref that keeps them
// (refs/sluice/sealed/<id>); it never touches the person's index, working
// tree or branches, and runs no hook, filter or driver the repository
// configures.

// sealer is implemented by every step: it computes the step's outcome on
// the state the sealing has reached.
type sealer interface {
	seal(ctx context.Context, s *sealing) (proposal.Sealed, error)
}

// sealing is one proposal being sealed: the temporary indexes, scratch
// objects and plan overlays of core/apply/seal, with the execution state
// its steps read (the pins as they are now, the repositories opened).
type sealing struct {
	*seal.Work
	r  *run
	rc *repoCtx
}

// run runs git in the repository with the sealing's environment.
func (s *sealing) run(ctx context.Context, c call) (result, error) {
	res, err := s.Run(ctx, c.gitrun())
	return resultOf(res), err
}

// listPaths runs a git command that prints NUL-separated paths.
func (s *sealing) listPaths(ctx context.Context, env []string, c call) ([]string, error) {
	return s.ListPaths(ctx, env, c.gitrun())
}

// newSealing starts a sealing of r's proposal in its main repository,
// with its temporary files in tmp.
func newSealing(r *run, tmp string) *sealing {
	return &sealing{Work: seal.New(r.main.g.git, tmp), r: r, rc: r.main}
}

// Seal computes proposal p's outcome, writes the objects it names into
// the repository and keeps them under proposal.SealedRef(p.ID). The
// proposal must not carry an outcome already: only the app seals. A
// proposal whose outcome cannot be produced (a patch that does not apply,
// a merge that conflicts, nothing to commit) is refused with the reason,
// and nothing stays behind but unreferenced objects.
func (e *Executor) Seal(ctx context.Context, p proposal.Proposal) (*proposal.Sealed, error) {
	if p.Sealed != nil {
		return nil, errcode.New(errcode.InvalidArgument, "a proposal's outcome is sealed by the Sluice app; it cannot come with the proposal")
	}
	r := &run{e: e, p: p}
	if err := r.open(ctx); err != nil {
		return nil, err
	}
	unlock, err := e.lock(ctx, reposOf(p))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, ok := p.Args.(*proposal.BranchDeleteArgs); !ok {
		if err := r.checkPins(ctx); err != nil {
			return nil, err
		}
	}
	head, err := r.headName(ctx)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "sluice-seal-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	s := newSealing(r, tmp)
	e.step("seal-start")
	var out proposal.Sealed
	steps := stepsOf(p.Args)
	if len(steps) == 1 {
		if out, err = sealStep(ctx, s, steps[0]); err != nil {
			return nil, err
		}
	} else {
		if out, err = s.sealPlan(ctx, steps); err != nil {
			return nil, err
		}
	}
	out.Ref, out.Head = proposal.SealedRef(p.ID), head
	// The outcome is the objects themselves (no git Sluice runs reads
	// replace refs or grafts); the card says when the person's own git
	// would show the repository otherwise.
	if out.Indirections, err = r.main.repo.Indirections(ctx); err != nil {
		return nil, err
	}
	e.step("seal-computed")
	return &out, nil
}

func sealStep(ctx context.Context, s *sealing, st step) (proposal.Sealed, error) {
	sl, ok := st.(sealer)
	if !ok {
		return proposal.Sealed{}, errcode.New(errcode.Unsupported, "%s cannot be sealed", st.name())
	}
	return sl.seal(ctx, s)
}

// sealPlan seals each step of a plan on the state the steps before it
// leave: the refs they move; when a step moves the checkout (a merge or
// rebase of the checked-out branch, a hard reset), the tree it leaves;
// when it changes files (a patch, a discard), those files as it leaves
// them. A hard reset after a step that changed files, or a discard after
// the checkout moved, refuses the plan with that reason.
func (s *sealing) sealPlan(ctx context.Context, steps []step) (proposal.Sealed, error) {
	out := proposal.Sealed{}
	for i, st := range steps {
		_, isDiscard := st.(*discardStep)
		reset, isReset := st.(*resetStep)
		if (isReset && reset.a.Mode == proposal.ResetHard && s.Overlay != "") || (isDiscard && s.Worktree != "") {
			return out, errcode.New(errcode.Unsupported, "plan step %d (%s) works on files an earlier step changes in a way its outcome cannot be computed from: propose the steps one at a time", i+1, st.name())
		}
		h, err := s.r.head(ctx)
		if err != nil {
			return out, err
		}
		sub, err := sealStep(ctx, s, st)
		if err != nil {
			return out, planStepError(i, len(steps), st, err)
		}
		out.Steps = append(out.Steps, sub)
		switch x := st.(type) {
		case *mergeStep:
			if h.sym == proposal.BranchRef(x.a.Target) {
				s.MovedCheckout(sub.After)
			}
		case *rebaseStep:
			if h.sym == proposal.BranchRef(x.a.Branch) {
				s.MovedCheckout(sub.After)
			}
		case *resetStep:
			if x.a.Mode == proposal.ResetHard {
				s.MovedCheckout(sub.After)
			}
		case *patchStep:
			if x.a.Target != proposal.PatchWorktree {
				break
			}
			if s.Worktree != "" {
				s.Worktree = sub.After
			} else if err := s.AddOverlay(ctx, sub.After, sub.SealedPaths()); err != nil {
				return out, err
			}
		case *discardStep:
			if err := s.AddOverlay(ctx, sub.After, sub.SealedPaths()); err != nil {
				return out, err
			}
		}
		// A later step sees the refs this one moves.
		for _, m := range sub.Moves {
			if m.Repo == "" && m.To != "" {
				s.r.moved(s.rc, m.Ref, m.To, m.Ref == "HEAD" || m.Ref == h.sym)
			}
		}
	}
	return out, nil
}

// Keep makes the objects of p's sealed outcome reachable: a commit whose
// tree holds every sealed tree, under refs/sluice/sealed/<id>. Until then
// they are objects nothing refers to, so a proposal that is never stored
// leaves nothing behind that git's own gc does not clean. Keep is called
// once the proposal is stored, and again at start-up for every proposal
// still open (a crash may have come in between); a ref that exists is
// left as it is.
func (e *Executor) Keep(ctx context.Context, p proposal.Proposal) error {
	if p.Sealed == nil {
		return nil
	}
	e.step("seal-keep")
	rc, err := e.openRepo(ctx, p.Repo)
	if err != nil {
		return err
	}
	ref := proposal.SealedRef(p.ID)
	if res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"rev-parse", "--verify", "--quiet"}, revs: []string{ref}, ok: []int{1}}); err != nil {
		return err
	} else if res.exit == 0 {
		return nil
	}
	tree, err := rc.keptTree(ctx, p.Sealed)
	if err != nil {
		return err
	}
	c, err := rc.commitTree(ctx, tree, nil, "sluice: sealed outcome of proposal "+p.ID)
	if err != nil {
		return err
	}
	if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref", "-m", "sluice: seal"}, revs: []string{ref, c, rc.g.zero}}); err != nil {
		return err
	}
	e.step("seal-kept")
	return nil
}

// keptTree is a tree that holds every tree of a sealed outcome, for a
// commit under refs/sluice/sealed/ to keep.
func (rc *repoCtx) keptTree(ctx context.Context, sealed *proposal.Sealed) (string, error) {
	var trees []string
	for _, x := range append([]proposal.Sealed{*sealed}, sealed.Steps...) {
		for _, t := range []string{x.Before, x.After} {
			if t != "" && !slices.Contains(trees, t) {
				trees = append(trees, t)
			}
		}
	}
	var in bytes.Buffer
	for i, t := range trees {
		fmt.Fprintf(&in, "040000 tree %s\tt%02d\n", t, i)
	}
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"mktree"}, stdin: in.Bytes()})
	if err != nil {
		if strings.Contains(stderrOf(err), "bad") || strings.Contains(stderrOf(err), "missing") {
			return "", errcode.New(errcode.StaleBase, "the sealed outcome's objects are no longer in the repository; the proposal cannot run")
		}
		return "", err
	}
	return res.text(), nil
}

// Unseal lets go of proposal id's sealed objects in repo (when the
// proposal was never stored, or its retention ended): its own ref, and
// its entry in the ref that keeps every folded outcome (see kept.go).
// Objects that are already let go are not an error.
func (e *Executor) Unseal(ctx context.Context, repo, id string) error {
	if !proposal.ValidID(id) {
		return errcode.New(errcode.InvalidArgument, "invalid proposal id")
	}
	rc, err := e.openRepo(ctx, repo)
	if err != nil {
		return err
	}
	// Deleting a ref, git locks packed-refs as well as the ref (the ref
	// may be packed), and packed-refs.lock is one of the locks the lock
	// check reads. The repository's lock keeps this delete and the check
	// apart, so that the start-up's drops are never taken for the
	// person's git (see CheckUnlocked).
	unlock, err := e.lock(ctx, []string{rc.path})
	if err != nil {
		return err
	}
	defer unlock()
	if _, err = rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref", "-d"}, revs: []string{proposal.SealedRef(id)}}); err != nil {
		return err
	}
	_, k, err := rc.readSealed(ctx)
	if err != nil || k.entries[id] == "" {
		return err
	}
	_, err = rc.rewriteKept(ctx, k, nil, map[string]bool{id: true})
	return err
}

// SealedIDs lists the proposal ids that have sealed objects in repo,
// under a ref of their own or folded into the one that keeps them all.
func (e *Executor) SealedIDs(ctx context.Context, repo string) ([]string, error) {
	rc, err := e.openRepo(ctx, repo)
	if err != nil {
		return nil, err
	}
	refs, k, err := rc.readSealed(ctx)
	if err != nil {
		return nil, err
	}
	ids := slices.Collect(maps.Keys(k.entries))
	for _, r := range refs {
		if k.entries[r.id] == "" {
			ids = append(ids, r.id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// commitList lists the commits reachable from include and from none of
// exclude: the first proposal.MaxListedCommits with their subjects, and
// the count.
func (rc *repoCtx) commitList(ctx context.Context, include string, exclude ...string) (*proposal.CommitList, error) {
	revs := []string{include}
	for _, x := range exclude {
		revs = append(revs, "^"+x)
	}
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"rev-list", "--count"}, revs: revs, dashdash: true})
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(res.text())
	if err != nil {
		return nil, errcode.New(errcode.GitFailed, "git rev-list gave an unexpected count")
	}
	out := &proposal.CommitList{Count: n, Commits: []proposal.CommitRef{}}
	if n == 0 {
		return out, nil
	}
	res, err = rc.g.run(ctx, call{dir: rc.path, args: []string{"log", "--no-decorate", "--format=%H%x00%s", "-n", strconv.Itoa(proposal.MaxListedCommits)}, revs: revs, dashdash: true})
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(res.text(), "\n") {
		if h, subj, ok := strings.Cut(l, "\x00"); ok {
			out.Commits = append(out.Commits, proposal.CommitRef{SHA: h, Subject: subj})
		}
	}
	return out, nil
}

// headMove is the move of the checked-out branch (or a detached HEAD).
func (r *run) headMove(ctx context.Context, to string) (proposal.RefMove, error) {
	h, err := r.head(ctx)
	if err != nil {
		return proposal.RefMove{}, err
	}
	ref := h.sym
	if ref == "" {
		ref = "HEAD"
	}
	return proposal.RefMove{Ref: ref, From: r.expect["HEAD"], To: to}, nil
}

// checkSealed refuses to run a proposal whose outcome was never sealed
// (what would land was never shown), and one whose sealed objects are
// gone.
func (r *run) checkSealed(ctx context.Context) error {
	s := r.p.Sealed
	if s == nil {
		return errcode.New(errcode.Unsupported, "the proposal has no sealed outcome, so what it would change was never shown; nothing was run. Propose it again")
	}
	var trees []string
	for _, x := range append([]proposal.Sealed{*s}, s.Steps...) {
		for _, t := range []string{x.Before, x.After} {
			if t != "" {
				trees = append(trees, t)
			}
		}
	}
	if len(trees) == 0 {
		return nil
	}
	var in bytes.Buffer
	for _, t := range trees {
		in.WriteString(t + "\n")
	}
	res, err := r.main.g.run(ctx, call{dir: r.main.path, args: []string{"cat-file", "--batch-check=%(objecttype)"}, stdin: in.Bytes()})
	if err != nil {
		return err
	}
	for _, l := range strings.Split(res.text(), "\n") {
		if l != "tree" {
			return errcode.New(errcode.StaleBase, "the sealed outcome's objects are no longer in the repository (%s); nothing was run. Propose it again", proposal.SealedRef(r.p.ID))
		}
	}
	return nil
}
