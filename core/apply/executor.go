package apply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/restorepoint"
)

// DefaultGitTimeout bounds one git process of an execution. Executions
// are not cancellable once they started (a half-written checkout is worse
// than a slow one), so this is the only thing that stops a stuck git.
const DefaultGitTimeout = 10 * time.Minute

// by is who the journal records for execution transitions.
const by = "executor"

// Options configure an Executor.
type Options struct {
	// Journal holds the proposals; required.
	Journal *journal.Journal
	// Roots confine every repository and worktree the executor touches;
	// required unless RootsFunc is set.
	Roots gitx.Roots
	// RootsFunc, when set, is asked for the roots each time they are
	// needed, instead of Roots: the person may add or remove one while
	// the app runs, and that takes effect at once.
	RootsFunc func() gitx.Roots
	// Runner is the hardened git of core/gitx; nil means gitx.Default().
	Runner *gitx.Runner
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// GitTimeout bounds each git process; zero means DefaultGitTimeout.
	GitTimeout time.Duration
	// OnStep, when set, is called at the named points of sealing and
	// execution (see Executor.beforeStep). Crash tests stop a real process
	// there; nothing else sets it.
	OnStep func(step string)
	// Sessions finds a confined session's private copy, where the content
	// of the session's commits comes from; nil means no proposal from a
	// session can be sealed.
	Sessions SessionCopies
}

// Executor runs approved proposals. It is safe for concurrent use:
// executions and restores that involve the same repository run one at a
// time.
type Executor struct {
	j       *journal.Journal
	roots   gitx.Roots
	rootsFn func() gitx.Roots
	runner  *gitx.Runner
	now     func() time.Time
	log     *slog.Logger
	timeout time.Duration

	mu sync.Mutex
	// locks holds one single-slot semaphore per repository.
	locks map[string]chan struct{}

	// beforeStep, when set, is called at named points of an execution,
	// each a point where the repository is wholly in its state before or
	// after the operation (never inside a git command that writes). Tests
	// use it to stop a real process there.
	beforeStep func(step string)
	// sessions finds confined sessions' copies.
	sessions SessionCopies
}

// allowed is the allowed roots as they are now.
func (e *Executor) allowed() gitx.Roots {
	if e.rootsFn != nil {
		return e.rootsFn()
	}
	return e.roots
}

// New returns an Executor.
func New(opts Options) (*Executor, error) {
	if opts.Journal == nil {
		return nil, errors.New("apply: a journal is required")
	}
	if len(opts.Roots) == 0 && opts.RootsFunc == nil {
		return nil, errors.New("apply: allowed roots are required")
	}
	r := opts.Runner
	if r == nil {
		var err error
		if r, err = gitx.Default(); err != nil {
			return nil, fmt.Errorf("apply: %w", err)
		}
	}
	if !r.Version().AtLeast(minVersion) {
		return nil, fmt.Errorf("apply: git %s is too old; executing proposals needs git %s or newer", r.Version(), minVersion)
	}
	e := &Executor{j: opts.Journal, roots: opts.Roots, rootsFn: opts.RootsFunc, runner: r, now: opts.Now, log: opts.Logger,
		timeout: opts.GitTimeout, locks: map[string]chan struct{}{}, beforeStep: opts.OnStep, sessions: opts.Sessions}
	if e.now == nil {
		e.now = time.Now
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.timeout <= 0 {
		e.timeout = DefaultGitTimeout
	}
	return e, nil
}

// minVersion: merge-tree --write-tree (2.38) computes merges away from
// the person's checkout.
var minVersion = gitx.MinMergeTree

func (e *Executor) step(name string) {
	if e.beforeStep != nil {
		e.beforeStep(name)
	}
}

// lock takes the locks of every repository in paths, in a fixed order so
// that two executions naming the same repositories cannot deadlock. It
// gives up when ctx ends.
func (e *Executor) lock(ctx context.Context, paths []string) (func(), error) {
	paths = slices.Clone(paths)
	sort.Strings(paths)
	paths = slices.Compact(paths)
	var held []chan struct{}
	unlock := func() {
		for i := len(held) - 1; i >= 0; i-- {
			<-held[i]
		}
	}
	for _, p := range paths {
		e.mu.Lock()
		m := e.locks[p]
		if m == nil {
			m = make(chan struct{}, 1)
			e.locks[p] = m
		}
		e.mu.Unlock()
		select {
		case m <- struct{}{}:
			held = append(held, m)
			continue
		default:
		}
		// Something else of Sluice's works in the repository: tests see
		// the wait here.
		e.step("lock-wait")
		select {
		case m <- struct{}{}:
			held = append(held, m)
		case <-ctx.Done():
			unlock()
			return nil, ctx.Err()
		}
	}
	return unlock, nil
}

// tryLock takes the lock of the repository at path when nothing else of
// Sluice's holds it, and reports whether it did.
func (e *Executor) tryLock(path string) (func(), bool) {
	e.mu.Lock()
	m := e.locks[path]
	if m == nil {
		m = make(chan struct{}, 1)
		e.locks[path] = m
	}
	e.mu.Unlock()
	select {
	case m <- struct{}{}:
		return func() { <-m }, true
	default:
		return nil, false
	}
}

// reposOf lists every repository a proposal touches.
func reposOf(p proposal.Proposal) []string {
	out := []string{p.Repo}
	for r := range p.Pinned.Repos {
		out = append(out, r)
	}
	if a, ok := p.Args.(*proposal.BranchDeleteArgs); ok {
		for _, r := range a.OtherRepos {
			out = append(out, r.Repo)
		}
	}
	return out
}

// checkDigest verifies that the stored proposal is exactly what was
// approved.
func checkDigest(rec journal.Record) error {
	p := rec.Proposal
	d := rec.Decision
	if d == nil || !d.Approved || d.ApprovedDigest == "" {
		return &errcode.Error{Code: errcode.DigestMismatch, Msg: "the proposal has no approved digest"}
	}
	if d.ApprovedDigest != p.Digest {
		return &errcode.Error{Code: errcode.DigestMismatch, Msg: fmt.Sprintf("the approved digest %s is not the proposal's digest %s; nothing was run",
			proposal.ShortDigest(d.ApprovedDigest), proposal.ShortDigest(p.Digest))}
	}
	if err := p.VerifyDigest(); err != nil {
		return &errcode.Error{Code: errcode.DigestMismatch, Msg: "the stored proposal no longer matches its digest; nothing was run", Err: err}
	}
	if err := p.Validate(); err != nil {
		return &errcode.Error{Code: errcode.DigestMismatch, Msg: "the stored proposal is not valid; nothing was run", Err: err}
	}
	return nil
}

// Execute runs the approved proposal id and returns its final record.
//
// Before anything runs, the proposal's digest must equal the approved
// digest and every pinned ref must still hold (otherwise the record fails
// with stale_base and the current SHAs, and nothing changes). Then the
// refs and working trees the operation touches are saved as a restore
// point (id = proposal id), the operation runs with compare-and-swap ref
// updates, and the record is completed or failed with Outcome.RestorePoint
// set (empty when the operation failed before it changed anything).
//
// The error is nil only when the proposal completed. A failure of the
// operation is a *errcode.Error whose code is also the outcome's code. Once the
// record is executing, it always ends completed or failed unless the
// process dies, and then Recover makes it needs_reconciliation. The
// context bounds the wait for the repository; once the proposal is
// executing it runs to the end whatever happens to ctx.
func (e *Executor) Execute(ctx context.Context, id string) (journal.Record, error) {
	rec, err := e.j.Get(id)
	if err != nil {
		return rec, err
	}
	if rec.State != proposal.Approved {
		return rec, errcode.New(errcode.NotApproved, "proposal %s is %s, not approved", id, rec.State)
	}
	if derr := checkDigest(rec); derr != nil {
		failed, ferr := e.j.Fail(id, by, journal.Outcome{Code: errcode.DigestMismatch, Message: derr.Error()})
		if ferr != nil {
			return rec, errors.Join(derr, ferr)
		}
		return failed, derr
	}
	p := rec.Proposal
	unlock, err := e.lock(ctx, reposOf(p))
	if err != nil {
		return rec, err
	}
	defer unlock()
	rec, err = e.j.MarkExecuting(id, rec.Decision.ApprovedDigest)
	if err != nil {
		if errors.Is(err, journal.ErrDigestMismatch) {
			return rec, &errcode.Error{Code: errcode.DigestMismatch, Msg: "the proposal changed after it was approved; nothing was run", Err: err}
		}
		return rec, err
	}
	// From here on the record must end completed or failed.
	ctx = context.WithoutCancel(ctx)
	start := e.now()
	r := &run{e: e, p: p}
	res, opErr := r.execute(ctx)
	out := journal.Outcome{RestorePoint: res.restorePoint}
	if opErr == nil {
		out.Message = res.summary
		final, jerr := e.j.Complete(id, by, out)
		if jerr != nil {
			e.log.Error("apply: the proposal ran but its completion could not be recorded", "proposal", id, "err", jerr)
			return final, jerr
		}
		e.log.Info("apply: proposal completed", "proposal", id, "op", p.Op, "restorePoint", res.restorePoint, "duration", e.now().Sub(start))
		return final, nil
	}
	out.Code = errcode.Of(opErr)
	out.Message = clip(opErr.Error(), 6000)
	if res.summary != "" {
		out.Message = clip(res.summary+"; then: "+opErr.Error(), 6000)
	}
	record := e.j.Fail
	if u := (*unsettledError)(nil); errors.As(opErr, &u) {
		record = e.j.Unsettled
	}
	final, jerr := record(id, by, out)
	if jerr != nil {
		e.log.Error("apply: the proposal failed and the failure could not be recorded", "proposal", id, "err", jerr, "cause", opErr)
		return final, errors.Join(opErr, jerr)
	}
	e.log.Info("apply: proposal failed", "proposal", id, "op", p.Op, "code", out.Code, "restorePoint", res.restorePoint)
	return final, opErr
}

// Revalidate checks, for journal.Recover at start-up, that an approved
// proposal may still run: its repositories are inside the roots and every
// pinned ref still holds. It changes nothing.
func (e *Executor) Revalidate(rec journal.Record) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := &run{e: e, p: rec.Proposal}
	if err := r.open(ctx); err != nil {
		return err
	}
	if r.p.Pinned.WorktreeFingerprint != "" {
		return errFingerprint
	}
	if _, ok := r.p.Args.(*proposal.BranchDeleteArgs); ok {
		return r.revalidateBranchDelete(ctx)
	}
	if err := r.checkPins(ctx); err != nil {
		return err
	}
	return r.checkHead(ctx)
}

var errFingerprint = &errcode.Error{Code: errcode.Unsupported, Msg: "the proposal pins a worktree fingerprint, which this executor cannot verify; nothing was run"}

// Restore puts the restore point id of repo back: the refs it recorded,
// the HEAD, index and files of the working trees it recorded, branch
// configuration, and removes a worktree the operation added. Unless force
// is set it refuses (restore_conflict, with the changes in the error's
// data) when anything changed after the operation ended, or when the
// operation never recorded its end. A restore point of the present is
// taken first (RestoreResult.UndoPoint), so a restore can be undone.
// Restoring is a human action: the caller audits it with the result.
func (e *Executor) Restore(ctx context.Context, repo, restorePointID string, force bool) (*RestoreResult, error) {
	rc, err := e.openRepo(ctx, repo)
	if err != nil {
		return nil, err
	}
	unlock, err := e.lock(ctx, []string{rc.path})
	if err != nil {
		return nil, err
	}
	defer unlock()
	rp, err := restorepoint.Find(ctx, rc.repo, restorePointID)
	if err != nil {
		return nil, restorepoint.OrExpired(ctx, rc.repo, restorePointID, err)
	}
	paths := []string{rp.NewWorktree}
	for _, w := range rp.Worktrees {
		paths = append(paths, w.Path)
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if _, err := e.allowed().Confine(filepath.Dir(p)); err != nil {
			return nil, errcode.New(errcode.InvalidArgument, "the restore point names a working tree outside the allowed roots")
		}
	}
	// Not even force restores past a lock: it may be a running git's, and
	// removing it is the person's decision (RemoveLocks).
	if err := requireUnlocked(ctx, rc); err != nil {
		return nil, err
	}
	return e.restore(context.WithoutCancel(ctx), rc, rp, force)
}

// ListRestorePoints lists the restore points of the repository at path
// (confined to the roots), newest first.
func (e *Executor) ListRestorePoints(ctx context.Context, path string) ([]RestorePoint, error) {
	rc, err := e.openRepo(ctx, path)
	if err != nil {
		return nil, err
	}
	return restorepoint.List(ctx, rc.repo)
}

// RestorePointDetails describes one restore point of the repository at
// path and what restoring it would overwrite.
func (e *Executor) RestorePointDetails(ctx context.Context, path, id string) (*Details, error) {
	rc, err := e.openRepo(ctx, path)
	if err != nil {
		return nil, err
	}
	return restorepoint.Describe(ctx, rc.repo, id)
}

// openRepo confines path and opens the repository whose working tree
// root it is.
func (e *Executor) openRepo(ctx context.Context, path string) (*repoCtx, error) {
	repo, err := e.runner.Open(ctx, e.allowed(), path)
	if err != nil {
		return nil, err
	}
	if repo.Bare {
		return nil, errcode.New(errcode.Unsupported, "the repository is bare; Sluice executes proposals in working trees")
	}
	if repo.Root != path {
		return nil, errcode.New(errcode.InvalidArgument, "the repository path must be the canonical top level of a working tree")
	}
	g := newGitEnv(repo, e.timeout)
	g.step = e.step
	return &repoCtx{path: repo.Root, repo: repo, g: g, e: e, store: &objectStore{}}, nil
}

// repoCtx is one repository an execution or restore works in: what is
// fixed for it. What a phase of an execution computes there is that
// phase's result (touches, restorePoints, effects), passed to the next.
type repoCtx struct {
	e    *Executor
	path string
	repo *gitx.Repo
	g    *gitEnv
	// store writes bookkeeping commits (see commitTree); every view of
	// the repository shares it.
	store *objectStore
	// reads caches reads at one moment (see readCache and atOneMoment);
	// nil in a view that caches nothing.
	reads *readCache
	// entriesInProcess: the index entries at a scope's paths are read
	// from the index file in process where git's ls-files would read the
	// same (gitEnv.listEntries): a restore's check and undo point, an
	// execution's intent-to-add check, restore point and end state.
	entriesInProcess bool
}

// atOneMoment returns a view of rc whose reads look at one moment: they
// are cached until the cache ends (see readCache).
func (rc *repoCtx) atOneMoment() *repoCtx {
	v := *rc
	v.reads = newReadCache()
	return &v
}

func (rc *repoCtx) objectsDir() string { return filepath.Join(rc.repo.CommonDir, "objects") }

// main is the repository's own working tree.
func (rc *repoCtx) main() worktree { return worktree{path: rc.path, gitDir: rc.repo.GitDir} }

// worktreeAt opens another working tree of the repository (or of a
// submodule) by path; os.ErrNotExist when it is gone.
func (rc *repoCtx) worktreeAt(ctx context.Context, path string) (worktree, error) {
	if path == rc.path {
		return rc.main(), nil
	}
	if _, err := os.Lstat(path); err != nil {
		return worktree{}, err
	}
	repo, err := rc.repo.Runner().Open(ctx, rc.repo.Roots(), path)
	if err != nil {
		return worktree{}, err
	}
	return worktree{path: repo.Root, gitDir: repo.GitDir}, nil
}

// run is one execution.
type run struct {
	e    *Executor
	p    proposal.Proposal
	main *repoCtx
	// others are the other repositories the proposal names, by path.
	others map[string]*repoCtx
	// expect is what every pinned revision names now, as far as this
	// execution knows: the pins at first, then what earlier steps of a
	// plan moved.
	expect map[string]string
	// changed is set once anything in a repository may have changed;
	// until then a failure drops the restore point.
	changed bool
	notes   []string
	// stepIndex is the plan step running now (0 for a single operation).
	stepIndex int
	// pending counts work started in the background (see background).
	pending sync.WaitGroup
}

// background runs f alongside the execution. Such work only reads the
// repository or writes objects nothing refers to; the execution waits for
// it before it ends, whatever happened.
func (r *run) background(f func()) {
	r.pending.Add(1)
	go func() {
		defer r.pending.Done()
		f()
	}()
}

func (r *run) note(format string, a ...any) { r.notes = append(r.notes, fmt.Sprintf(format, a...)) }

// open opens every repository the proposal names, each as a view at
// one moment: what is read before the operation writes is read once.
func (r *run) open(ctx context.Context) error {
	rc, err := r.e.openRepo(ctx, r.p.Repo)
	if err != nil {
		return asInvalid(err)
	}
	r.main = rc.atOneMoment()
	r.main.entriesInProcess = executeEntriesInProcess
	r.others = map[string]*repoCtx{}
	for _, path := range reposOf(r.p)[1:] {
		if r.others[path] != nil || path == r.p.Repo {
			continue
		}
		o, err := r.e.openRepo(ctx, path)
		if err != nil {
			return asInvalid(err)
		}
		r.others[path] = o.atOneMoment()
		r.others[path].entriesInProcess = executeEntriesInProcess
	}
	r.expect = map[string]string{}
	for k, v := range r.p.Pinned.Refs {
		r.expect[k] = v
	}
	return nil
}

// asInvalid keeps coded errors and turns anything else into
// invalid_argument: a repository that cannot be opened is not a bug.
func asInvalid(err error) error {
	if e, ok := errcode.As(err); ok {
		return &errcode.Error{Code: e.Code, Msg: err.Error(), Err: err}
	}
	return &errcode.Error{Code: errcode.InvalidArgument, Msg: err.Error(), Err: err}
}

// executed is what an execution leaves for its record.
type executed struct {
	// restorePoint is the id of the restore point taken; empty when the
	// operation changed nothing.
	restorePoint string
	// summary says what the operation did.
	summary string
}

// execute runs the proposal: it checks, records what the operation may
// touch, takes the restore points, runs the steps and ends the restore
// points, each phase handing its result to the next.
func (r *run) execute(ctx context.Context) (executed, error) {
	defer r.pending.Wait()
	ops, err := r.ready(ctx)
	if err != nil {
		return executed{}, err
	}
	touched, err := r.touch(ctx, ops)
	if err != nil {
		return executed{}, err
	}
	if err := r.scope(ctx, ops, touched); err != nil {
		return executed{}, err
	}
	if err := r.refuseIntentToAdd(ctx, touched); err != nil {
		return executed{}, err
	}
	if err := ops[0].check(ctx, r); err != nil {
		return executed{}, err
	}
	points, err := r.takeRestorePoints(ctx, touched)
	if err != nil {
		return executed{}, err
	}
	defer points.cleanup()
	w := r.startWriting(ops, points)
	r.e.step("restore-point")
	opErr := r.apply(ctx, ops, w)
	r.e.step("applied")
	return r.end(ctx, w, opErr)
}

// ready opens the repositories and checks, changing nothing, that the
// proposal may run as it was approved and sealed. It returns its steps.
func (r *run) ready(ctx context.Context) ([]step, error) {
	if err := r.open(ctx); err != nil {
		return nil, err
	}
	if r.p.Pinned.WorktreeFingerprint != "" {
		return nil, errFingerprint
	}
	// A lock of git's means git is working there or one was killed: the
	// operation would fail halfway with a bare git error.
	if err := requireUnlocked(ctx, r.repos()...); err != nil {
		return nil, err
	}
	ops := stepsOf(r.p.Args)
	if err := r.checkSealed(ctx); err != nil {
		return nil, err
	}
	if _, ok := r.p.Args.(*proposal.BranchDeleteArgs); !ok {
		if err := r.checkPins(ctx); err != nil {
			return nil, err
		}
	}
	if err := r.checkHead(ctx); err != nil {
		return nil, err
	}
	r.e.step("pins-checked")
	return ops, nil
}

// touch asks every step what it may change.
func (r *run) touch(ctx context.Context, ops []step) (touches, error) {
	t := touches{}
	for _, s := range ops {
		if err := s.touch(ctx, r, t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// startWriting ends the moment every repository was read at: from here on
// the operation writes, and nothing read before holds. It returns what
// the steps will record of the state they leave, starting from the
// worktrees that had no change at all (for a single-step operation).
func (r *run) startWriting(ops []step, points restorePoints) *writing {
	w := &writing{points: points, left: map[*repoCtx]*effects{}}
	for _, rc := range r.repos() {
		ef := &effects{pristine: map[string]bool{}, settled: map[string]bool{}, dirtied: map[string]bool{}, movedHeads: map[string]head{}}
		seen := rc.reads.end()
		if len(ops) == 1 {
			for path, out := range seen {
				ef.pristine[path] = len(out) == 0
			}
		}
		w.left[rc] = ef
	}
	return w
}

// apply runs the steps in order, checking each but the first (checked
// before the restore point) just before it runs, and stops at the first
// failure.
func (r *run) apply(ctx context.Context, ops []step, w *writing) error {
	var opErr error
	for i, s := range ops {
		r.stepIndex = i
		if i > 0 {
			opErr = s.check(ctx, r)
		}
		if opErr == nil {
			opErr = s.do(ctx, r, w)
		}
		if opErr != nil {
			if len(ops) > 1 {
				opErr = planStepError(i, len(ops), s, opErr)
			}
			break
		}
	}
	if len(ops) > 1 {
		// What a step knew of the HEAD and the index it left, a later
		// one may have changed.
		for _, ef := range w.left {
			clear(ef.movedHeads)
			clear(ef.entries)
		}
	}
	return opErr
}

// end records, in every restore point, the state the operation left, or
// drops the restore points when it failed before it changed anything.
func (r *run) end(ctx context.Context, w *writing, opErr error) (executed, error) {
	if opErr != nil && !r.changed {
		for _, rc := range r.repos() {
			if w.points[rc] != nil {
				if err := rc.dropRestorePoint(ctx, r.p.ID); err != nil {
					r.e.log.Warn("apply: could not drop an unused restore point", "proposal", r.p.ID, "err", err)
				}
			}
		}
		return executed{summary: strings.Join(r.notes, "; ")}, opErr
	}
	outcome := EndCompleted
	if opErr != nil {
		outcome = EndFailed
	}
	for _, rc := range r.repos() {
		if tk := w.points[rc]; tk != nil {
			if err := rc.endRestorePoint(ctx, tk, outcome, r.e.now(), w.left[rc]); err != nil {
				// The operation happened all the same; without its end
				// state a restore only needs the person's confirmation.
				r.e.log.Error("apply: could not record the end of a restore point", "proposal", r.p.ID, "err", err)
				r.note("the end state of restore point %s could not be recorded, so restoring it will ask for confirmation", r.p.ID)
			}
		}
	}
	r.e.step("ended")
	return executed{restorePoint: r.p.ID, summary: strings.Join(r.notes, "; ")}, opErr
}

// repos lists the main repository and then the others, sorted.
func (r *run) repos() []*repoCtx {
	out := []*repoCtx{r.main}
	keys := make([]string, 0, len(r.others))
	for k := range r.others {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, r.others[k])
	}
	return out
}

// takeRestorePoints records, in every repository with something to
// touch, what the operation may change.
func (r *run) takeRestorePoints(ctx context.Context, touched touches) (restorePoints, error) {
	points := restorePoints{}
	for _, rc := range r.repos() {
		t := touched[rc]
		if t == nil || t.empty() {
			continue
		}
		rp := &RestorePoint{ID: r.p.ID, Kind: KindProposal, ProposalID: r.p.ID, Op: string(r.p.Op), Digest: r.p.Digest,
			CreatedAt: r.e.now().UTC().Truncate(time.Millisecond), Label: proposalLabel(r.p)}
		tk, err := rc.takeRestorePoint(ctx, rp, *t)
		if err != nil {
			// Points taken in other repositories so far are dropped: the
			// operation does not run.
			for _, o := range r.repos() {
				if tk := points[o]; tk != nil {
					_ = o.dropRestorePoint(ctx, r.p.ID)
					tk.cleanup()
				}
			}
			return nil, err
		}
		points[rc] = tk
	}
	return points, nil
}

// touches is what an operation may change, by repository: what the steps
// add, and what the restore points then record.
type touches map[*repoCtx]*touchSet

// of is the touch set of rc.
func (t touches) of(rc *repoCtx) *touchSet {
	ts := t[rc]
	if ts == nil {
		ts = &touchSet{}
		t[rc] = ts
	}
	return ts
}

// restorePoints are the restore points an execution took, by repository.
type restorePoints map[*repoCtx]*taken

func (p restorePoints) cleanup() {
	for _, tk := range p {
		tk.cleanup()
	}
}

// effects is what the steps of an execution know of the state they left
// in one repository. The end state records it rather than read it again:
// if anything changed meanwhile, a restore sees it as a change made after
// the operation and asks for confirmation.
type effects struct {
	// pristine holds the worktrees that had no change at all, untracked
	// files included, when a single-step operation started; settled
	// those the operation left exactly at their new HEAD (a checkout
	// update of a pristine worktree), which the end state records as
	// clean without hashing them again.
	pristine, settled map[string]bool
	// movedHeads holds the HEAD the operation left in worktrees whose
	// branch it moved, as it knows it.
	movedHeads map[string]head
	// dirtied holds the worktrees the operation left with changes for
	// certain (a patch applied to the files): their end state goes
	// straight to hashing, without a status first.
	dirtied map[string]bool
	// restored holds, for a restore, the scoped states it wrote back
	// (see restorePaths): the paths of those worktrees are exactly as the
	// restore point recorded them, and the end state records that.
	restored map[string]WorktreeState
	// entries holds index entries at a scope's paths (by entriesKey)
	// that a step read after its last write, to check what it left: the
	// end state records them rather than load the whole index again.
	entries map[string][]byte
}

// readAfter notes index entries a step read after its last write (see
// effects.entries); ef may be nil.
func (ef *effects) readAfter(wt worktree, paths []string, entries []byte) {
	if ef == nil {
		return
	}
	if ef.entries == nil {
		ef.entries = map[string][]byte{}
	}
	ef.entries[entriesKey(wt, paths)] = entries
}

// writing is what the steps of an execution share once it writes.
type writing struct {
	points restorePoints
	// left is what the steps left, by repository.
	left map[*repoCtx]*effects
}

// checkPins resolves every pinned revision in every repository and fails
// with stale_base, naming the current SHAs, when one no longer holds.
func (r *run) checkPins(ctx context.Context) error {
	moved := map[string]string{}
	expected := map[string]string{}
	check := func(rc *repoCtx, pins map[string]string, prefix string) error {
		keys, now, err := rc.movedPins(ctx, pins)
		for _, k := range keys {
			moved[prefix+k] = now[k]
			expected[prefix+k] = pins[k]
		}
		return err
	}
	if err := check(r.main, r.p.Pinned.Refs, ""); err != nil {
		return err
	}
	for path, pins := range r.p.Pinned.Repos {
		rc := r.others[path]
		if rc == nil {
			return errcode.New(errcode.InvalidArgument, "a pinned repository could not be opened")
		}
		if err := check(rc, pins, path+":"); err != nil {
			return err
		}
	}
	if len(moved) > 0 {
		return staleBase(moved, expected)
	}
	return nil
}

// pinsHead reports whether p's outcome depends on the branch the main
// working tree has checked out: it pins HEAD (a commit, a patch, a reset,
// a discard and a submodule pointer work on the checked-out branch and its
// files), or it merges or rebases (the checkout follows the branch moved
// when that branch is the one checked out).
func pinsHead(p proposal.Proposal) bool {
	if slices.Contains(p.Args.Pins(), "HEAD") {
		return true
	}
	for _, s := range stepsOf(p.Args) {
		switch s.(type) {
		case *mergeStep, *rebaseStep:
			return true
		}
	}
	return false
}

// headName is what the main working tree's HEAD names, for the sealed
// outcome to pin (proposal.Sealed.Head): its branch, or "HEAD" when
// detached; "" when the outcome does not depend on it.
func (r *run) headName(ctx context.Context) (string, error) {
	if !pinsHead(r.p) {
		return "", nil
	}
	h, err := r.head(ctx)
	if err != nil {
		return "", err
	}
	if h.sym == "" {
		return "HEAD", nil
	}
	return h.sym, nil
}

// headMoved says, when HEAD names another branch than the one the
// outcome was sealed on (even at the same commit), which the card was for
// and which is checked out now; "" when it is the same, or the outcome
// pins none.
func (r *run) headMoved(ctx context.Context) (string, error) {
	want := ""
	if r.p.Sealed != nil {
		want = r.p.Sealed.Head
	}
	if want == "" {
		return "", nil
	}
	h, err := r.head(ctx)
	if err != nil {
		return "", err
	}
	now := h.sym
	if now == "" {
		now = "HEAD"
	}
	if now == want {
		return "", nil
	}
	return fmt.Sprintf("the card is for %s, but %s is checked out now", headLabel(want), headLabel(now)), nil
}

// checkHead fails with stale_base when HEAD names another branch than the
// one the outcome was sealed on.
func (r *run) checkHead(ctx context.Context) error {
	moved, err := r.headMoved(ctx)
	if err != nil || moved == "" {
		return err
	}
	return &errcode.Error{Code: errcode.StaleBase, Data: map[string]string{"head": r.p.Sealed.Head},
		Msg: moved + ", so nothing was changed: switch back to approve it, or send it back"}
}

// headLabel names what HEAD names for a person: the branch, or "a
// detached HEAD".
func headLabel(ref string) string {
	if ref == "HEAD" {
		return "a detached HEAD"
	}
	return "branch " + strings.TrimPrefix(ref, "refs/heads/")
}

// movedPins resolves every pin and returns, sorted, the keys of those that
// name another commit now, with what they name ("" when gone).
func (rc *repoCtx) movedPins(ctx context.Context, pins map[string]string) ([]string, map[string]string, error) {
	keys := make([]string, 0, len(pins))
	for k := range pins {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	now, err := rc.resolve(ctx, keys)
	if err != nil {
		return nil, nil, err
	}
	var moved []string
	for _, k := range keys {
		if now[k] != pins[k] {
			moved = append(moved, k)
		}
	}
	return moved, now, nil
}

// resolve returns the commit each revision names now ("" when it names
// none). All of them are resolved by one git process when they all exist.
func (rc *repoCtx) resolve(ctx context.Context, revs []string) (map[string]string, error) {
	out := map[string]string{}
	if len(revs) == 0 {
		return out, nil
	}
	args := []string{"rev-parse"}
	for _, rev := range revs {
		if err := gitx.CheckRev("pinned revision", rev); err != nil {
			return nil, err
		}
		args = append(args, rev+"^{commit}")
	}
	// Before the operation, the same process reads HEAD for the cache:
	// the checks and the restore point ask for it next.
	_, cached := rc.reads.headOf(rc.path)
	withHead := rc.reads.live() && !cached
	// The ref files are read in this process where git's answer is
	// certain (see gitrun.ResolveLocal); git answers the rest.
	if got, err := rc.g.git.ResolveLocal(revs, withHead); err == nil {
		if withHead {
			rc.reads.putHead(rc.path, headFrom(got.Head))
		}
		return got.Commits, nil
	}
	if withHead {
		args = append(args, "HEAD", "HEAD^{tree}", "--symbolic-full-name", "HEAD")
	}
	// The trailing "--" makes every argument a revision, never a path.
	res, err := rc.g.run(ctx, call{dir: rc.path, args: append(args, "--"), ok: []int{128}})
	if err != nil {
		return nil, err
	}
	lines := strings.Split(res.text(), "\n")
	want := len(revs) + 1
	if withHead {
		want += 3
	}
	if res.exit == 0 && len(lines) == want {
		for i, rev := range revs {
			if !hexSHA.MatchString(lines[i]) {
				return nil, errcode.New(errcode.GitFailed, "git rev-parse gave an unexpected answer")
			}
			out[rev] = lines[i]
		}
		if withHead {
			h, err := parseHead(lines[len(revs):])
			if err != nil {
				return nil, err
			}
			rc.reads.putHead(rc.path, h)
			rc.g.git.RememberTree(h.sha, h.tree)
		}
		return out, nil
	}
	// Some revision is gone; find which, one at a time.
	for _, rev := range revs {
		res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"rev-parse", "--verify", "--quiet"}, revs: []string{rev + "^{commit}"}, ok: []int{1, 128}})
		if err != nil {
			return nil, err
		}
		if res.exit == 0 && hexSHA.MatchString(res.text()) {
			out[rev] = res.text()
		} else {
			out[rev] = ""
		}
	}
	return out, nil
}

// moved records that a step moved ref to sha, so that later steps of a
// plan expect it there. The short branch name moves with it, and HEAD
// when the step moved the main worktree's HEAD.
func (r *run) moved(rc *repoCtx, ref, sha string, headMoved bool) {
	if rc != r.main {
		return
	}
	r.expect[ref] = sha
	if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
		if _, pinned := r.expect[b]; pinned {
			r.expect[b] = sha
		}
	}
	if headMoved || ref == "HEAD" {
		r.expect["HEAD"] = sha
	}
}
