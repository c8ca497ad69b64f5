package seal

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// Inputs is what a sealing reads through the executor (core/apply), which
// opened the proposal's repositories at one moment, checked its pins and
// holds their lock while the outcome is sealed.
type Inputs interface {
	// Expect is the commit rev names now: its pin, or where an earlier
	// step of a plan moves it.
	Expect(rev string) string
	// Moved records that a step of a plan moves ref (of the main
	// repository) to sha, and HEAD with it when headMoved, for the steps
	// after it.
	Moved(ref, sha string, headMoved bool)
	// Head is the main working tree's HEAD, as read at that moment.
	Head(ctx context.Context) (gitrun.Head, error)
	// HeadName is what the main working tree's HEAD names for the sealed
	// outcome to pin (proposal.Sealed.Head): its branch, "HEAD" when
	// detached, "" when the outcome does not depend on it.
	HeadName(ctx context.Context) (string, error)
	// Resolve is the commit each revision names now ("" when none).
	Resolve(ctx context.Context, revs []string) (map[string]string, error)
	// Repo is the git of another repository the proposal names, by path;
	// nil when it was not opened.
	Repo(path string) *gitrun.Git
	// Roots are the allowed roots as they are now.
	Roots() gitx.Roots
	// SessionCopy is the copy of the confined session the proposal came
	// from (its working tree, and the commit it was made at); dir is ""
	// for a proposal from outside any session.
	SessionCopy() (dir, base string, err error)
	// PlanCheckout plans the checkout that a session's commit of files
	// writes, as the executor will write it: the files it writes and a
	// note for each it keeps. It refuses a commit that would write over a
	// file git does not track.
	PlanCheckout(ctx context.Context, files []proposal.FileChange) (write, keeps []string, err error)
	// Submodule is the git of the submodule a pointer proposal names, as
	// the executor finds it.
	Submodule(ctx context.Context, a *proposal.SubmodulePointerArgs) (*gitrun.Git, error)
	// Log is where a sealing says what went wrong beside its answer.
	Log() *slog.Logger
}

// sealer is implemented by each operation's seal (op_<operation>.go): it
// computes the operation's outcome on the state the sealing has reached.
type sealer interface {
	seal(ctx context.Context, sl *Work) (proposal.Sealed, error)
}

// Outcome computes the outcome of proposal p's operation (of each step
// of a plan in turn) in the repository of git, reading the pins and
// HEAD through in; its temporary files go to tmp, a path that does not
// exist yet, made when the sealing first needs it (the caller removes it
// whether it was made or not). It writes objects only:
// nothing references them until the executor keeps them. Ref, Head and
// Indirections are the executor's to fill in.
func Outcome(ctx context.Context, git *gitrun.Git, tmp string, p proposal.Proposal, in Inputs) (proposal.Sealed, error) {
	sl := &Work{git: git, tmp: tmp, makeTmp: true, p: p, in: in}
	steps := sealsOf(p.Args)
	if len(steps) == 1 {
		return sealStep(ctx, sl, steps[0])
	}
	return sl.sealPlan(ctx, steps)
}

// sealsOf is the seals of a proposal's arguments: a plan's, in order, or
// the one seal of its operation (sealOf, generated from the
// op_<operation>.go files by go generate). An operation without one is
// nil.
//
//go:generate go run ../../../build/opsgen seal
func sealsOf(a proposal.Args) []step {
	if x, ok := a.(*proposal.PlanArgs); ok {
		var out []step
		for _, s := range x.Steps {
			out = append(out, sealsOf(s.Args)...)
		}
		return out
	}
	return []step{{a: a, s: sealOf(a)}}
}

// step is one operation to seal: its arguments and its seal.
type step struct {
	a proposal.Args
	s sealer
}

func (st step) name() proposal.Op {
	if st.s == nil {
		return ""
	}
	return st.a.Op()
}

func sealStep(ctx context.Context, sl *Work, st step) (proposal.Sealed, error) {
	if st.s == nil {
		return proposal.Sealed{}, errcode.New(errcode.Unsupported, "%s cannot be sealed", st.name())
	}
	return st.s.seal(ctx, sl)
}

// sealPlan seals each step of a plan on the state the steps before it
// leave: the refs they move; when a step moves the checkout (a merge or
// rebase of the checked-out branch, a hard reset), the tree it leaves;
// when it changes files (a patch, a discard), those files as it leaves
// them. A hard reset after a step that changed files, or a discard after
// the checkout moved, refuses the plan with that reason.
func (s *Work) sealPlan(ctx context.Context, steps []step) (proposal.Sealed, error) {
	out := proposal.Sealed{}
	for i, st := range steps {
		_, isDiscard := st.a.(*proposal.DiscardArgs)
		reset, isReset := st.a.(*proposal.ResetArgs)
		if (isReset && reset.Mode == proposal.ResetHard && s.overlay != "") || (isDiscard && s.worktree != "") {
			return out, errcode.New(errcode.Unsupported, "plan step %d (%s) works on files an earlier step changes in a way its outcome cannot be computed from: propose the steps one at a time", i+1, st.name())
		}
		h, err := s.in.Head(ctx)
		if err != nil {
			return out, err
		}
		sub, err := sealStep(ctx, s, st)
		if err != nil {
			return out, planStepError(i, len(steps), st, err)
		}
		out.Steps = append(out.Steps, sub)
		switch x := st.a.(type) {
		case *proposal.MergeArgs:
			if h.Sym == proposal.BranchRef(x.Target) {
				s.movedCheckout(sub.After)
			}
		case *proposal.RebaseArgs:
			if h.Sym == proposal.BranchRef(x.Branch) {
				s.movedCheckout(sub.After)
			}
		case *proposal.ResetArgs:
			if x.Mode == proposal.ResetHard {
				s.movedCheckout(sub.After)
			}
		case *proposal.PatchArgs:
			if x.Target != proposal.PatchWorktree {
				break
			}
			if s.worktree != "" {
				s.worktree = sub.After
			} else if err := s.addOverlay(ctx, sub.After, sub.SealedPaths()); err != nil {
				return out, err
			}
		case *proposal.DiscardArgs:
			if err := s.addOverlay(ctx, sub.After, sub.SealedPaths()); err != nil {
				return out, err
			}
		}
		// A later step sees the refs this one moves.
		for _, m := range sub.Moves {
			if m.Repo == "" && m.To != "" {
				s.in.Moved(m.Ref, m.To, m.Ref == "HEAD" || m.Ref == h.Sym)
			}
		}
	}
	return out, nil
}

// planStepError names the step of a plan that failed; the code stays.
func planStepError(i, n int, s step, err error) error {
	e := &errcode.Error{Code: errcode.Of(err), Err: err, Msg: fmt.Sprintf("step %d of %d (%s) failed: %v", i+1, n, s.name(), err)}
	if d, ok := err.(*errcode.Error); ok {
		e.Data = d.Data
	}
	return e
}

// root is the repository's working tree.
func (w *Work) root() string { return w.git.Repo.Root }

// headMove is the move of the checked-out branch (or a detached HEAD).
func (w *Work) headMove(ctx context.Context, to string) (proposal.RefMove, error) {
	h, err := w.in.Head(ctx)
	if err != nil {
		return proposal.RefMove{}, err
	}
	ref := h.Sym
	if ref == "" {
		ref = "HEAD"
	}
	return proposal.RefMove{Ref: ref, From: w.in.Expect("HEAD"), To: to}, nil
}

// commitList lists the commits reachable from include and from none of
// exclude: the first proposal.MaxListedCommits with their subjects, and
// the count.
func (w *Work) commitList(ctx context.Context, include string, exclude ...string) (*proposal.CommitList, error) {
	revs := []string{include}
	for _, x := range exclude {
		revs = append(revs, "^"+x)
	}
	res, err := w.git.Run(ctx, gitrun.Call{Dir: w.root(), Args: []string{"rev-list", "--count"}, Revs: revs, DashDash: true})
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(res.Text())
	if err != nil {
		return nil, errcode.New(errcode.GitFailed, "git rev-list gave an unexpected count")
	}
	out := &proposal.CommitList{Count: n, Commits: []proposal.CommitRef{}}
	if n == 0 {
		return out, nil
	}
	res, err = w.git.Run(ctx, gitrun.Call{Dir: w.root(), Args: []string{"log", "--no-decorate", "--format=%H%x00%s", "-n", strconv.Itoa(proposal.MaxListedCommits)}, Revs: revs, DashDash: true})
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(res.Text(), "\n") {
		if h, subj, ok := strings.Cut(l, "\x00"); ok {
			out.Commits = append(out.Commits, proposal.CommitRef{SHA: h, Subject: subj})
		}
	}
	return out, nil
}

// asInvalid keeps coded errors and turns anything else into
// invalid_argument: a repository that cannot be read so is not a bug.
func asInvalid(err error) error {
	if e, ok := errcode.As(err); ok {
		return &errcode.Error{Code: e.Code, Msg: err.Error(), Err: err}
	}
	return &errcode.Error{Code: errcode.InvalidArgument, Msg: err.Error(), Err: err}
}

// short abbreviates a SHA for messages.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// headLabel names what HEAD names for a person: the branch, or "a
// detached HEAD".
func headLabel(ref string) string {
	if ref == "HEAD" {
		return "a detached HEAD"
	}
	return "branch " + strings.TrimPrefix(ref, "refs/heads/")
}

func appendNew(dst []string, src ...string) []string {
	for _, s := range src {
		if !slices.Contains(dst, s) {
			dst = append(dst, s)
		}
	}
	return dst
}

// Seals reports whether every operation of a (each step of a plan) has a
// seal: an op_<operation>.go file that says what its card shows.
func Seals(a proposal.Args) bool {
	for _, st := range sealsOf(a) {
		if st.s == nil {
			return false
		}
	}
	return true
}
