package apply

import (
	"context"
	"crypto/rand"
	"log/slog"
	"os"
	"path/filepath"

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
// while it seals (Seal, below), keeps the objects the outcome names (Keep,
// kept.go), and checks, when the proposal runs, that each step produces
// exactly its sealed outcome (sealed.go). Sealing writes only git objects
// and the one ref that keeps them (refs/sluice/sealed/<id>); it never
// touches the person's index, working tree or branches, and runs no hook,
// filter or driver the repository configures.

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
	// The sealing makes this directory only if it puts a file there (a
	// small stageAll puts none).
	tmp := filepath.Join(os.TempDir(), "sluice-seal-"+rand.Text())
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
