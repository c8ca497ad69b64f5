package intake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/core/apply/seal"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/policy"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/restorepoint"
)

// Options configure an Intake.
type Options struct {
	// Roots confine every repository a proposal names; with no roots,
	// every submit is refused.
	Roots gitx.Roots
	// RootsFunc, when set, is asked for the roots on every request
	// instead of Roots, so that a root the person adds while the app runs
	// is allowed at once.
	RootsFunc func() gitx.Roots
	// Policy, when set, is applied to every submit.
	Policy *policy.Policy
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxClockSkew bounds how far a proposal's createdAt may be from the
	// app's clock. Zero means two minutes.
	MaxClockSkew time.Duration
	Logger       *slog.Logger
	// RestorePoints lists restore points for GET /v1/restore-points; nil
	// answers that this app takes none.
	RestorePoints RestorePointLister
	// Sealer computes every proposal's outcome before it is stored. The
	// app always has one; without it (tests of the wire alone) proposals
	// are stored unsealed, and the executor refuses every one of them.
	Sealer Sealer
	// OwnPlaces are Sluice's own configuration and data: no proposal may
	// name a repository in them or change a file in them, wherever they
	// lie. Nil refuses nothing (tests that have no configuration).
	OwnPlaces *config.Places
	// HoldAuto, when set, is asked before a rule approves a proposal by
	// itself: a reason it returns (what the card flags beyond the
	// proposal's own risk, such as invisible characters in its content)
	// keeps the proposal pending for a person. "" lets the rule decide.
	HoldAuto func(ctx context.Context, p proposal.Proposal) string
}

// Sealer seals proposals' outcomes. *apply.Executor implements it.
type Sealer interface {
	Seal(ctx context.Context, p proposal.Proposal) (*proposal.Sealed, error)
	Keep(ctx context.Context, p proposal.Proposal) error
	// SealedIDs lists the proposals whose sealed objects repo keeps.
	SealedIDs(ctx context.Context, repo string) ([]string, error)
}

// PreKeeper is a Sealer that keeps a sealed outcome in two steps: the
// objects while the proposal is stored, the ref once it is.
// *apply.Executor implements it.
type PreKeeper interface {
	// PreKeep writes the objects that keep p's outcome (nothing refers to
	// them yet) and returns Keep for them, to call once p is stored.
	PreKeep(ctx context.Context, p proposal.Proposal) func(context.Context) error
}

// RestorePointLister lists the restore points of one repository (a
// canonical working-tree root inside the allowed roots), newest first.
// *apply.Executor implements it.
type RestorePointLister interface {
	ListRestorePoints(ctx context.Context, repo string) ([]restorepoint.RestorePoint, error)
}

// Intake receives the proposals the gateway's server hands it (it is the
// server's gateway.Backend) and keeps them in a *journal.Journal. It
// re-checks everything a sidecar sent instead of trusting it: the digest,
// the agent, the clock, the repository paths against the allowed roots,
// and the policy.
type Intake struct {
	j    *journal.Journal
	opts Options
	// policy is opts.Policy until SetPolicy replaces it.
	policy atomic.Pointer[policy.Policy]

	mu sync.Mutex
	// sealing holds the proposals being sealed, by id (see inflight.go).
	sealing map[string]*inflight
	// ended holds the confined sessions that ended: no seal of theirs
	// starts any more (see CloseSession).
	ended map[string]bool
}

// New returns an Intake that stores proposals in j.
func New(j *journal.Journal, opts Options) *Intake {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxClockSkew <= 0 {
		opts.MaxClockSkew = 2 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	b := &Intake{j: j, opts: opts}
	b.policy.Store(opts.Policy)
	return b
}

// SetPolicy replaces the policy applied to every later submit, so that a
// rule the person creates or revokes takes effect without a restart.
func (b *Intake) SetPolicy(p *policy.Policy) { b.policy.Store(p) }

func badRequest(msg string) *errcode.Error {
	return &errcode.Error{Code: errcode.InvalidArgument, Msg: msg}
}

// Submit implements gateway.Backend. The proposal as the sidecar made it is
// checked first (its digest included); then the app seals its outcome and
// the digest is computed again over the proposal with its outcome, which
// is what a card shows and an approval binds to.
func (b *Intake) Submit(ctx context.Context, agent string, p proposal.Proposal) (gateway.ProposalStatus, error) {
	if p.Agent != agent {
		return gateway.ProposalStatus{}, badRequest("the proposal's agent does not match " + gateway.AgentHeader)
	}
	if err := p.Validate(); err != nil {
		return gateway.ProposalStatus{}, journal.Coded(err)
	}
	if err := b.confine(p); err != nil {
		return gateway.ProposalStatus{}, err
	}
	if err := b.ownPlaces(p); err != nil {
		return gateway.ProposalStatus{}, err
	}
	now := b.opts.Now()
	if d := p.CreatedAt.Sub(now); d > b.opts.MaxClockSkew || d < -b.opts.MaxClockSkew {
		return gateway.ProposalStatus{}, badRequest("createdAt is too far from the app's clock")
	}
	if p.Sealed != nil {
		return gateway.ProposalStatus{}, badRequest("a proposal's outcome is sealed by the Sluice app; it cannot come with the proposal")
	}
	if p.Origin != nil {
		return gateway.ProposalStatus{}, badRequest("a proposal's origin is set by the Sluice app from the credential it came with; it cannot come with the proposal")
	}
	if p.AgentToken {
		return gateway.ProposalStatus{}, badRequest("agentToken is set by the Sluice app from how the sidecar authenticated the agent; it cannot come with the proposal")
	}
	// A confined session's proposal says so, from its token alone, and
	// names its own repository only: its copy is of that one.
	if c := gateway.CallerFrom(ctx); c != nil {
		if p.Repo != c.Repo || len(p.Pinned.Repos) > 0 {
			return gateway.ProposalStatus{}, &errcode.Error{Code: errcode.PolicyDenied,
				Msg: "a confined session proposes changes to its own repository (" + c.Repo + ") only"}
		}
		o := *c.Origin
		p.Origin = &o
		if err := p.Seal(); err != nil {
			return gateway.ProposalStatus{}, journal.Coded(err)
		}
	} else if gateway.TokenIdentityFrom(ctx) {
		// The name is an HTTP token's, which the sidecar authenticated: a
		// rule made for it approves no program that merely calls itself so.
		p.AgentToken = true
		if err := p.Seal(); err != nil {
			return gateway.ProposalStatus{}, journal.Coded(err)
		}
	}
	// A retry of a request already stored (same key, same change) is
	// answered with that proposal as it is now, before anything is sealed:
	// sealing it again could fail for reasons that are not the agent's (its
	// commit landed meanwhile), and would only be thrown away.
	if rec, ok, err := b.j.Replay(p); err != nil {
		return gateway.ProposalStatus{}, journal.Coded(err)
	} else if ok {
		st := StatusFromRecord(rec)
		st.Replayed = true
		return st, nil
	}
	if b.opts.Sealer == nil {
		return b.store(ctx, p)
	}
	return b.sealInBackground(ctx, p)
}

// sealAndStore seals p's outcome, stores it and keeps its objects.
func (b *Intake) sealAndStore(ctx context.Context, p proposal.Proposal) (gateway.ProposalStatus, error) {
	sctx, err := StackContext(ctx, b.j, p)
	if err != nil {
		return gateway.ProposalStatus{}, err
	}
	out, err := b.opts.Sealer.Seal(sctx, p)
	if err != nil {
		return gateway.ProposalStatus{}, sealError(err)
	}
	p.Sealed = out
	// What the outcome writes is known only now: a merge, a workspace's
	// handoff or a reset names its files in the sealed list alone.
	if err := b.ownPlaces(p); err != nil {
		return gateway.ProposalStatus{}, err
	}
	if err := p.Seal(); err != nil {
		return gateway.ProposalStatus{}, journal.Coded(err)
	}
	// The objects that keep the outcome are written while the record is
	// stored; the ref that refers to them only once it is (a crash in
	// between leaves objects nothing refers to, as a refused proposal
	// does, and the start-up keeps a stored proposal's objects again).
	keep := func(ctx context.Context) error { return b.opts.Sealer.Keep(ctx, p) }
	var kept chan func(context.Context) error
	if pk, ok := b.opts.Sealer.(PreKeeper); ok {
		kept = make(chan func(context.Context) error, 1)
		go func() { kept <- pk.PreKeep(ctx, p) }()
	}
	st, err := b.store(ctx, p)
	if kept != nil {
		keep = <-kept
	}
	if err != nil || st.Replayed {
		// Only a stored proposal keeps its sealed objects; the others are
		// objects nothing refers to.
		return st, err
	}
	if err := keep(ctx); err != nil {
		// The record holds the whole outcome and its objects exist; the
		// ref that keeps them is made again at the next start.
		b.opts.Logger.Error("intake: could not keep a proposal's sealed objects", "proposal", p.ID, "err", err)
	}
	return st, nil
}

// KeepSealed makes sure every open proposal's sealed objects are kept
// (a crash between storing a proposal and keeping its objects leaves them
// unreferenced). The app calls it at start-up. Each repository is asked
// once which proposals it keeps, and only the others are kept now: a
// kept proposal's own ref may have been folded into the repository's one
// kept ref, and is not written again.
func (b *Intake) KeepSealed(ctx context.Context) error {
	if b.opts.Sealer == nil {
		return nil
	}
	recs, err := b.j.List(journal.Filter{States: []proposal.State{proposal.Pending, proposal.Approved, proposal.Executing, proposal.NeedsReconciliation}})
	if err != nil {
		return err
	}
	byRepo := map[string][]proposal.Proposal{}
	for _, rec := range recs {
		if rec.Proposal.Sealed != nil {
			byRepo[rec.Proposal.Repo] = append(byRepo[rec.Proposal.Repo], rec.Proposal)
		}
	}
	var errs []error
	for repo, ps := range byRepo {
		// A repository that cannot say keeps each of its proposals again.
		ids, _ := b.opts.Sealer.SealedIDs(ctx, repo)
		held := make(map[string]bool, len(ids))
		for _, id := range ids {
			held[id] = true
		}
		for _, p := range ps {
			if held[p.ID] {
				continue
			}
			if err := b.opts.Sealer.Keep(ctx, p); err != nil {
				errs = append(errs, fmt.Errorf("proposal %s: %w", p.ID, err))
			}
		}
	}
	return errors.Join(errs...)
}

// sealError is a proposal whose outcome cannot be produced: the
// executor's code and data (the conflicting files, the failing hunk), so
// the agent can act on it; the status table makes it a 422.
func sealError(err error) error {
	if errcode.IsCode(err, errcode.PathOutsideRoots) || errors.Is(err, gitx.ErrWorktreeInGitDir) {
		return confineError(err)
	}
	if e, ok := errcode.As(err); ok {
		return &errcode.Error{Code: e.Code, Msg: e.Msg, Data: e.Data}
	}
	return err
}

// store applies the policy and stores a checked, sealed proposal.
func (b *Intake) store(ctx context.Context, p proposal.Proposal) (gateway.ProposalStatus, error) {
	verdict := b.policy.Load().EvaluateAt(p, b.opts.Now())
	if verdict.AutoApprove != "" && b.opts.HoldAuto != nil {
		if why := b.opts.HoldAuto(ctx, p); why != "" {
			b.opts.Logger.Info("intake: a rule would approve this proposal, but it waits for a person", "proposal", p.ID, "rule", verdict.AutoApprove, "why", why)
			verdict.AutoApprove = ""
		}
	}
	if !verdict.Allowed {
		if err := b.j.Deny(p, verdict.Denial); err != nil {
			// Still denied; the failure to audit it is the app's problem.
			b.opts.Logger.Error("intake: audit of a policy denial failed", "proposal", p.ID, "err", err)
		}
		return gateway.ProposalStatus{}, errcode.New(errcode.PolicyDenied, "%s", verdict.Denial)
	}
	rec, replayed, err := b.j.Submit(p)
	if err != nil {
		return gateway.ProposalStatus{}, journal.Coded(err)
	}
	if !replayed && verdict.AutoApprove != "" {
		approved, err := b.j.ApproveAuto(p.ID, p.Digest, verdict.AutoApprove)
		if err != nil {
			// The proposal stays pending and a person decides instead.
			b.opts.Logger.Error("intake: auto-approval failed", "proposal", p.ID, "err", err)
		} else {
			rec = approved
		}
	}
	st := StatusFromRecord(rec)
	st.Replayed = replayed
	if rec.State == proposal.Pending {
		cs, err := b.j.Collisions(rec.Proposal)
		if err != nil {
			b.opts.Logger.Warn("intake: collision check failed", "proposal", p.ID, "err", err)
		}
		for _, c := range cs {
			st.Collisions = append(st.Collisions, gateway.Collision(c))
		}
	}
	return st, nil
}

// confineError is a path the roots refused: path_outside_roots when it
// is outside them, invalid_argument when it cannot be used at all.
func confineError(err error) error {
	e, ok := errcode.As(err)
	if ok && e.Code == errcode.PathOutsideRoots {
		return &errcode.Error{Code: errcode.PathOutsideRoots, Msg: e.Msg}
	}
	if ok && errors.Is(err, gitx.ErrWorktreeInGitDir) {
		return badRequest(e.Msg)
	}
	return badRequest("a repository path cannot be used: " + err.Error())
}

// roots is the allowed roots as they are now.
func (b *Intake) roots() gitx.Roots {
	if b.opts.RootsFunc != nil {
		return b.opts.RootsFunc()
	}
	return b.opts.Roots
}

// confine re-checks every repository path in p against the allowed roots:
// each must already be canonical and inside them.
func (b *Intake) confine(p proposal.Proposal) error {
	check := func(path string) error {
		canon, err := b.roots().Confine(path)
		if err != nil {
			return confineError(err)
		}
		if canon != path {
			return badRequest("repository paths must be canonical (symlinks resolved)")
		}
		// The working tree is not enough: its .git file or commondir
		// must not lead out of the roots either.
		if err := b.roots().ConfineGitDirs(canon); err != nil {
			return confineError(err)
		}
		return nil
	}
	if err := check(p.Repo); err != nil {
		return err
	}
	for repo := range p.Pinned.Repos {
		if err := check(repo); err != nil {
			return err
		}
	}
	for _, pl := range proposal.Places(p.Args) {
		path := *pl.Path
		if pl.Kind != proposal.PlaceNewWorktree {
			if err := check(path); err != nil {
				return err
			}
			continue
		}
		// The worktree does not exist yet: its parent must.
		if err := check(filepath.Dir(path)); err != nil {
			return err
		}
		// Not inside any git directory, and nested exactly where the
		// proposal (and so its card and digest) says.
		canon, nested, err := b.roots().WorktreePlace(path)
		if err != nil {
			return confineError(err)
		}
		if canon != path {
			return badRequest("the worktree path must be canonical (symlinks resolved)")
		}
		if nested != p.Pinned.WorktreeNestedIn {
			return badRequest("pinned.worktreeNestedIn does not say which working tree the new worktree is inside")
		}
	}
	return nil
}

// ownPlaces refuses a proposal that would change Sluice's own
// configuration or data: its repositories, a new worktree's place, and
// every path its sealed outcome (each step's included) and its args name,
// joined to its repository and compared by canonical path.
func (b *Intake) ownPlaces(p proposal.Proposal) error {
	places := b.opts.OwnPlaces
	if places == nil {
		return nil
	}
	chk := places.Checker()
	refuse := func(path, shown string) error {
		if _, ok := chk.Contains(path); !ok {
			return nil
		}
		return &errcode.Error{Code: errcode.PolicyDenied,
			Msg:  fmt.Sprintf("%s: %s", shown, config.OwnPlaceReason),
			Data: map[string]any{"path": shown, "reason": "sluice_configuration"}}
	}
	if err := refuse(p.Repo, p.Repo); err != nil {
		return err
	}
	for repo := range p.Pinned.Repos {
		if err := refuse(repo, repo); err != nil {
			return err
		}
	}
	for _, pl := range proposal.Places(p.Args) {
		if err := refuse(*pl.Path, *pl.Path); err != nil {
			return err
		}
	}
	// The paths the arguments name (a commit's, a discard's, a patch's):
	// the sealed outcome's below cover what lands, these what was asked.
	rels, _ := p.Args.FilesTouched()
	var walk func(s *proposal.Sealed)
	walk = func(s *proposal.Sealed) {
		if s == nil {
			return
		}
		rels = append(rels, s.SealedPaths()...)
		rels = append(rels, s.Checkout...)
		for _, f := range s.Kept {
			rels = append(rels, f.Path)
		}
		for i := range s.Steps {
			walk(&s.Steps[i])
		}
	}
	walk(p.Sealed)
	for _, rel := range rels {
		if rel == "" || rel == "." {
			continue
		}
		if err := refuse(filepath.Join(p.Repo, filepath.FromSlash(rel)), rel); err != nil {
			return err
		}
	}
	return nil
}

// Get implements gateway.Backend.
func (b *Intake) Get(ctx context.Context, agent, id string) (gateway.ProposalStatus, error) {
	rec, err := b.owned(ctx, agent, id)
	if st, ok, serr := b.notStored(ctx, agent, id, err); ok {
		return st, serr
	}
	if err != nil {
		return gateway.ProposalStatus{}, err
	}
	return StatusFromRecord(rec), nil
}

// owned returns proposal id if the caller made it: the same agent and, for
// a confined session, the same session (an agent outside the session,
// whatever it calls itself, cannot read, wait on or cancel the session's
// proposals, nor a session those of anyone else).
func (b *Intake) owned(ctx context.Context, agent, id string) (journal.Record, error) {
	rec, err := b.j.Get(id)
	if err != nil {
		return journal.Record{}, journal.Coded(err)
	}
	session := ""
	if c := gateway.CallerFrom(ctx); c != nil {
		session = c.Session
	}
	mine := ""
	if o := rec.Proposal.Origin; o != nil {
		mine = o.Session
	}
	if rec.Proposal.Agent != agent || mine != session {
		return journal.Record{}, journal.Coded(journal.ErrNotOwner)
	}
	return rec, nil
}

// Wait implements gateway.Backend.
func (b *Intake) Wait(ctx context.Context, agent, id string, timeout time.Duration) (gateway.ProposalStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, min(timeout, gateway.MaxWait))
	defer cancel()
	if _, err := b.owned(ctx, agent, id); err != nil {
		f := b.under(ctx, agent, id)
		if f == nil || !errors.Is(err, journal.ErrNotFound) {
			return gateway.ProposalStatus{}, err
		}
		// Being sealed, or sealed since: wait for the seal, then for the
		// proposal.
		select {
		case <-f.done:
		default:
			select {
			case <-f.done:
			case <-ctx.Done():
				return f.sealingStatus(id), nil
			}
		}
		if f.err != nil || f.st.Terminal {
			return f.st, f.err
		}
	}
	rec, err := b.j.WaitSettled(ctx, id)
	if err != nil {
		return gateway.ProposalStatus{}, journal.Coded(err)
	}
	return StatusFromRecord(rec), nil
}

// Cancel implements gateway.Backend.
func (b *Intake) Cancel(ctx context.Context, agent, id string) (gateway.ProposalStatus, error) {
	if _, err := b.owned(ctx, agent, id); err != nil {
		return gateway.ProposalStatus{}, err
	}
	rec, err := b.j.Cancel(id, agent)
	if err != nil {
		return gateway.ProposalStatus{}, journal.Coded(err)
	}
	return StatusFromRecord(rec), nil
}

// maxRestoreRepos bounds how many repositories one listing without a
// repository looks into.
const maxRestoreRepos = 20

// RestorePoints implements gateway.Backend: the restore points of repo, or, with
// no repo, of the repositories the journal has proposals for. It reads
// only.
func (b *Intake) RestorePoints(ctx context.Context, _ string, repo string) (gateway.RestorePoints, error) {
	if b.opts.RestorePoints == nil {
		return gateway.RestorePoints{
			Supported:     false,
			RestorePoints: []gateway.RestorePoint{},
			Message:       "this Sluice app does not take restore points yet, so there are none to list",
		}, nil
	}
	var repos []string
	if repo != "" {
		canon, err := b.roots().Confine(repo)
		if err != nil {
			return gateway.RestorePoints{}, confineError(err)
		}
		repos = []string{canon}
	} else {
		recs, err := b.j.List(journal.Filter{})
		if err != nil {
			return gateway.RestorePoints{}, journal.Coded(err)
		}
		seen := map[string]bool{}
		for _, r := range recs {
			if p := r.Proposal.Repo; !seen[p] && len(repos) < maxRestoreRepos {
				seen[p] = true
				repos = append(repos, p)
			}
		}
	}
	out := gateway.RestorePoints{Supported: true, RestorePoints: []gateway.RestorePoint{}}
	for _, r := range repos {
		list, err := b.opts.RestorePoints.ListRestorePoints(ctx, r)
		if err != nil {
			if repo == "" {
				// A repository that was moved or deleted since its
				// proposals does not hide the others.
				continue
			}
			return gateway.RestorePoints{}, badRequest("restore points cannot be listed: " + err.Error())
		}
		for _, rp := range list {
			refs := map[string]string{}
			for _, ref := range rp.Refs {
				refs[ref.Ref] = ref.SHA
			}
			out.RestorePoints = append(out.RestorePoints, gateway.RestorePoint{ID: rp.ID, ProposalID: rp.ProposalID, Repo: rp.Repo,
				CreatedAt: proposal.At(rp.CreatedAt).String(), Refs: refs})
		}
	}
	sort.SliceStable(out.RestorePoints, func(i, j int) bool { return out.RestorePoints[i].CreatedAt > out.RestorePoints[j].CreatedAt })
	return out, nil
}

// StatusFromRecord is the wire form of a journal record.
func StatusFromRecord(rec journal.Record) gateway.ProposalStatus {
	p := rec.Proposal
	st := gateway.ProposalStatus{
		ProposalID: p.ID, Status: rec.State, Op: p.Op, Agent: p.Agent, Repo: p.Repo,
		Digest: p.Digest, ShortDigest: proposal.ShortDigest(p.Digest), Risk: p.Risk().String(),
		Destructive: p.Destructive(), Pinned: p.Pinned,
		CreatedAt: p.CreatedAt.String(), ExpiresAt: p.ExpiresAt.String(), UpdatedAt: rec.UpdatedAt.String(),
		Version: rec.Version, Terminal: rec.State.Terminal(), Done: rec.State == proposal.Completed,
	}
	if d := rec.Decision; d != nil {
		st.Decision = &gateway.Decision{Approved: d.Approved, By: d.By, Note: d.Note, Auto: d.Auto, At: d.At.String()}
		st.AutoApproved = d.Auto && d.Approved
		for _, c := range d.Comments {
			st.Decision.Comments = append(st.Decision.Comments, gateway.Comment{Path: c.Path, Line: c.Line, Side: c.Side, Note: c.Note})
		}
	}
	if o := rec.Outcome; o != nil {
		st.Outcome = &gateway.Outcome{Code: o.Code, Message: o.Message, RestorePoint: o.RestorePoint, At: o.At.String()}
	}
	return st
}

// StackContext is ctx for sealing p: when p is a commit stacked on
// another proposal (CommitArgs.Below), that proposal is the base it is
// sealed on while it has not landed (see seal.WithBelow). Only the same
// agent's proposals in the same repository, from the same confined
// session if any, can be stacked on; one that ended without landing
// leaves nothing to stack on.
func StackContext(ctx context.Context, j *journal.Journal, p proposal.Proposal) (context.Context, error) {
	belowID := p.StackedOn()
	if belowID == "" {
		return ctx, nil
	}
	rec, err := j.Get(belowID)
	if errors.Is(err, journal.ErrNotFound) {
		return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: "there is no proposal " + belowID + " to stack this commit on"}
	}
	if err != nil {
		return nil, err
	}
	below := rec.Proposal
	if below.Agent != p.Agent || below.Repo != p.Repo || below.Origin.SessionID() != p.Origin.SessionID() {
		return nil, &errcode.Error{Code: errcode.PolicyDenied, Msg: "a commit can be stacked only on a proposal of the same agent in the same repository"}
	}
	switch rec.State {
	case proposal.Pending, proposal.Approved, proposal.Executing:
		return seal.WithBelow(ctx, below), nil
	case proposal.Completed:
		return ctx, nil
	}
	return nil, &errcode.Error{Code: errcode.ProposalTerminal, Data: map[string]string{"below": belowID, "state": string(rec.State)},
		Msg: "proposal " + belowID + ", below this one, is " + string(rec.State) + " and will not land: there is nothing to stack on; propose on the branch as it is"}
}
