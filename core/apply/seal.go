package apply

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/apply/seal"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// A sealed outcome is computed by the app when a proposal arrives, before
// its card opens (see proposal.Sealed), by core/apply/seal: what each
// operation's card shows is its seal there (op_<operation>.go). The
// executor opens the repositories, holds their lock and checks the pins
// while it seals (Seal, below), keeps the objects the outcome names
// (Keep), and checks, when the proposal runs, that each step produces
// exactly its sealed outcome. Sealing writes only git objects and the one
// ref that keeps them (refs/sluice/sealed/<id>); it never touches the
// person's index, working tree or branches, and runs no hook, filter or
// driver the repository configures.

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
	e.step("seal-start")
	out, err := seal.Outcome(ctx, r.main.g.git, tmp, p, sealInputs{r})
	if err != nil {
		return nil, err
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

// sealInputs is what a sealing reads through the execution state r (see
// seal.Inputs): the repositories r opened at one moment, the pins as r
// expects them, and what sealing shares with the steps that run.
type sealInputs struct{ r *run }

func (in sealInputs) Expect(rev string) string { return in.r.expect[rev] }

func (in sealInputs) Moved(ref, sha string, headMoved bool) {
	in.r.moved(in.r.main, ref, sha, headMoved)
}

func (in sealInputs) Head(ctx context.Context) (gitrun.Head, error) {
	h, err := in.r.head(ctx)
	return gitrun.Head{Sym: h.sym, SHA: h.sha, Tree: h.tree}, err
}

func (in sealInputs) HeadName(ctx context.Context) (string, error) { return in.r.headName(ctx) }

func (in sealInputs) Resolve(ctx context.Context, revs []string) (map[string]string, error) {
	return in.r.main.resolve(ctx, revs)
}

func (in sealInputs) Repo(path string) *gitrun.Git {
	if rc := in.r.others[path]; rc != nil {
		return rc.g.git
	}
	return nil
}

func (in sealInputs) Roots() gitx.Roots { return in.r.e.allowed() }

func (in sealInputs) Log() *slog.Logger { return in.r.e.log }

func (in sealInputs) SessionCopy() (string, string, error) {
	src, err := in.r.sessionSource()
	if err != nil || src == nil {
		return "", "", err
	}
	return src.dir, src.base, nil
}

func (in sealInputs) PlanCheckout(ctx context.Context, files []proposal.FileChange) ([]string, []string, error) {
	plan, err := in.r.planCheckout(ctx, files)
	if err != nil {
		return nil, nil, err
	}
	if err := plan.refuseBlocked(in.r.main.main()); err != nil {
		return nil, nil, err
	}
	return plan.write, plan.notes(), nil
}

// Submodule finds the submodule as the step's touch does, which the
// execution asks first.
func (in sealInputs) Submodule(ctx context.Context, a *proposal.SubmodulePointerArgs) (*gitrun.Git, error) {
	s := &submoduleStep{a: a}
	if err := s.touch(ctx, in.r, touches{}); err != nil {
		return nil, err
	}
	return s.sub.g.git, nil
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
