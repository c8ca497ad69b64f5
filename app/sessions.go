package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/core/apply"
	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/connect"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/presence"
	"github.com/sluicehq/sluice/core/proposal"
	confined "github.com/sluicehq/sluice/core/session"
	"github.com/sluicehq/sluice/core/workspace"
)

// sessions is the app's side of confined sessions: it registers them
// (record, private copy, token), knows their tokens at the gateway, hands
// the executor their copies, notices when a launcher is gone, and offers
// what a session's agent left and never proposed as one card.
type sessions struct {
	cfg     *config.Config
	log     *slog.Logger
	store   *confined.Store
	ledger  *audit.Ledger
	journal *journal.Journal
	roots   gitx.Roots
	// exec and backend are set once they exist (Start).
	exec    *apply.Executor
	backend *gateway.JournalBackend
	now     func() time.Time
	// changed is told when the list of sessions changed (the UI re-reads).
	changed func()

	// mu serialises ending sessions, so a launcher's own end and the
	// watcher's never offer one session's leftovers twice.
	mu sync.Mutex
}

func openSessions(cfg *config.Config, log *slog.Logger, ledger *audit.Ledger, j *journal.Journal, roots gitx.Roots) (*sessions, error) {
	st, err := confined.OpenStore(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	if err := st.Sweep(); err != nil {
		log.Warn("sessions: removing unfinished session directories", "err", err)
	}
	return &sessions{cfg: cfg, log: log, store: st, ledger: ledger, journal: j, roots: roots, now: time.Now, changed: func() {}}, nil
}

var commandName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Register implements gateway.Sessions.
func (ss *sessions) Register(ctx context.Context, req gateway.SessionRequest) (gateway.SessionGrant, error) {
	if len(ss.roots) == 0 {
		return gateway.SessionGrant{}, errNoRoots
	}
	if req.Runtime == "" {
		req.Runtime = confined.RuntimeBubblewrap
	}
	switch req.Runtime {
	case confined.RuntimeBubblewrap:
	case confined.RuntimeDocker, confined.RuntimeRunsc:
		if ss.cfg.WorkspaceImage == "" {
			return gateway.SessionGrant{}, errcode.New(errcode.Unsupported, "a session under %s runs in the workspace image; choose one first: sluice workspace image use NAME[:TAG]", req.Runtime)
		}
	default:
		return gateway.SessionGrant{}, errcode.New(errcode.InvalidArgument, "runtime %q is not one of bubblewrap, docker, runsc", req.Runtime)
	}
	var agent, name string
	switch {
	case req.Client != "" && req.Command == "":
		a, ok := connect.AgentByName(req.Client)
		if !ok {
			return gateway.SessionGrant{}, errcode.New(errcode.InvalidArgument, "unknown client %q (known: %s); run any other program with `sluice run -- COMMAND`", req.Client, strings.Join(connect.AgentNames(), ", "))
		}
		agent, name = a.Client, a.Client
	case req.Command != "" && req.Client == "":
		if !commandName.MatchString(req.Command) {
			return gateway.SessionGrant{}, errcode.New(errcode.InvalidArgument, "the command's name must be 1–64 characters of A-Z a-z 0-9 . _ -")
		}
		agent, name = req.Command, "cmd-"+req.Command
	default:
		return gateway.SessionGrant{}, errcode.New(errcode.InvalidArgument, "name either a client or a command")
	}
	model, err := workspace.NormalizeEgress(req.ModelHosts)
	if err != nil {
		return gateway.SessionGrant{}, err
	}
	granted, err := workspace.NormalizeEgress(req.AllowHosts)
	if err != nil {
		return gateway.SessionGrant{}, err
	}
	network := slices.Clone(model)
	for _, h := range granted {
		if !slices.Contains(network, h) {
			network = append(network, h)
		}
	}
	if len(network) > proposal.MaxOriginHosts {
		return gateway.SessionGrant{}, errcode.New(errcode.InvalidArgument, "a session may reach at most %d hosts", proposal.MaxOriginHosts)
	}
	start := presence.ProcessStart(req.LauncherPID)
	if req.LauncherPID <= 0 || start == 0 {
		return gateway.SessionGrant{}, errcode.New(errcode.InvalidArgument, "launcherPid is not a running process")
	}
	id := confined.NewID()
	token, hash, err := confined.NewToken()
	if err != nil {
		return gateway.SessionGrant{}, err
	}
	if err := ss.store.Prepare(id); err != nil {
		return gateway.SessionGrant{}, err
	}
	gitHome, err := ss.store.GitHome()
	if err != nil {
		ss.store.Discard(id)
		return gateway.SessionGrant{}, err
	}
	r, err := gitx.Default()
	if err != nil {
		ss.store.Discard(id)
		return gateway.SessionGrant{}, err
	}
	c, err := confined.MakeCopy(ctx, r, ss.roots, req.Dir, ss.store.CopyDir(id), gitHome)
	if err != nil {
		ss.store.Discard(id)
		return gateway.SessionGrant{}, err
	}
	s := &confined.Session{
		ID: id, Agent: agent, Repo: c.Repo, Objects: c.Objects, Base: c.Base, Branch: c.Branch,
		Runtime: req.Runtime, Network: network, Granted: granted, State: confined.StateRunning,
		LauncherPID: req.LauncherPID, LauncherStart: start, TokenHash: hash, StartedAt: ss.now().UTC(),
	}
	if req.Runtime != confined.RuntimeBubblewrap {
		s.Image = ss.cfg.WorkspaceImage
	}
	if req.Client != "" {
		s.Client = agent
	} else {
		s.Command = req.Command
	}
	// On the record first: a session the ledger does not know never runs.
	if err := ss.audit(s, "session_started", "ok", fmt.Sprintf("%s in a confined session (%s; network: %s)", s.Name(), s.Runtime, strings.Join(s.Network, ", ")), nil); err != nil {
		ss.store.Discard(id)
		return gateway.SessionGrant{}, err
	}
	for _, h := range granted {
		if err := ss.audit(s, "session_egress_granted", "ok", "the person allowed "+h+" for this session", map[string]any{"host": h}); err != nil {
			ss.store.Discard(id)
			return gateway.SessionGrant{}, err
		}
	}
	if err := ss.store.Save(s); err != nil {
		ss.store.Discard(id)
		return gateway.SessionGrant{}, err
	}
	ss.log.Info("confined session started", "session", id, "agent", agent, "files", c.Files)
	ss.changed()
	return gateway.SessionGrant{
		ID: id, Token: token, Agent: agent, Repo: s.Repo, Copy: ss.store.CopyDir(id), Origin: ss.store.OriginDir(id),
		Objects: s.Objects, Home: ss.store.HomeDir(name), Base: s.Base, Branch: s.Branch, Network: network, Files: c.Files,
		Image: s.Image,
	}, nil
}

func (ss *sessions) audit(s *confined.Session, event, result, summary string, data map[string]any) error {
	if data == nil {
		data = map[string]any{}
	}
	data["session"] = s.ID
	data["runtime"] = s.Runtime
	if s.Image != "" {
		data["image"] = s.Image
	}
	_, err := ss.ledger.Append(audit.Entry{EventType: event, SessionID: s.Agent, RepoScope: audit.RepoScope(s.Repo),
		Result: result, Summary: summary, Data: data})
	if err != nil {
		return errcode.Wrap(errcode.AuditFailed, err, "the audit ledger cannot be written, so the session does not run: %v", err)
	}
	return nil
}

// Authenticate implements gateway.Sessions.
func (ss *sessions) Authenticate(token string) (*gateway.Caller, bool) {
	s, ok := ss.store.ByToken(token)
	if !ok {
		return nil, false
	}
	return &gateway.Caller{Session: s.ID, Agent: s.Agent, Repo: s.Repo, Origin: s.Origin()}, true
}

// Copy implements apply.SessionCopies.
func (ss *sessions) Copy(id string) (string, string, error) {
	s, err := ss.store.Get(id)
	if err != nil {
		return "", "", err
	}
	if s.State == confined.StateClosed {
		return "", "", errors.New("the session is closed and its copy removed")
	}
	return ss.store.CopyDir(id), s.Base, nil
}

// End implements gateway.Sessions: the session's launcher is done (or
// gone). What its agent left in the copy and never proposed is offered as
// one card; when it left nothing, the copy goes.
func (ss *sessions) End(ctx context.Context, id string) (gateway.SessionEnd, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, err := ss.store.Get(id)
	if err != nil {
		return gateway.SessionEnd{}, err
	}
	if s.State == confined.StateRunning {
		// A container outlives a launcher that died: it goes first, so
		// that nothing writes to the copy while it is read.
		if s.Runtime != confined.RuntimeBubblewrap {
			if err := removeSessionContainers(ctx, id); err != nil {
				return gateway.SessionEnd{}, err
			}
		}
		if s, err = ss.store.Update(id, func(s *confined.Session) error {
			s.State, s.EndedAt = confined.StateEnded, ss.now().UTC()
			return nil
		}); err != nil {
			return gateway.SessionEnd{}, err
		}
		if err := ss.audit(s, "session_ended", "ok", s.Name()+"'s confined session ended", nil); err != nil {
			ss.log.Error("sessions: audit of a session's end", "session", id, "err", err)
		}
		ss.changed()
	}
	switch {
	case s.State == confined.StateClosed:
		return gateway.SessionEnd{Message: "the session is closed: nothing of it is waiting"}, nil
	case s.Leftover != "":
		return gateway.SessionEnd{Leftover: s.Leftover, Files: s.LeftoverFiles,
			Message: fmt.Sprintf("the session left changes in %d file(s); they wait for you in Sluice", s.LeftoverFiles)}, nil
	}
	return ss.offer(ctx, s)
}

// offer offers what session s left and never proposed; with nothing left
// it removes the copy.
func (ss *sessions) offer(ctx context.Context, s *confined.Session) (gateway.SessionEnd, error) {
	if ss.exec == nil || ss.backend == nil {
		return gateway.SessionEnd{}, errcode.New(errcode.Unavailable, "the Sluice app is still starting")
	}
	recs, err := ss.journal.List(journal.Filter{})
	if err != nil {
		return gateway.SessionEnd{}, err
	}
	var proposed []*proposal.Sealed
	for _, r := range recs {
		if o := r.Proposal.Origin; o != nil && o.Session == s.ID && !o.Leftover {
			proposed = append(proposed, r.Proposal.Sealed)
		}
	}
	left, err := ss.exec.SessionLeftover(ctx, s.Repo, ss.store.CopyDir(s.ID), s.Base, proposed)
	if err != nil {
		ss.note(s.ID, "its copy could not be read: "+err.Error())
		return gateway.SessionEnd{}, err
	}
	if len(left) == 0 {
		if err := ss.store.RemoveCopy(s.ID); err != nil {
			return gateway.SessionEnd{}, err
		}
		ss.changed()
		return gateway.SessionEnd{Message: "the session left no change it did not propose"}, nil
	}
	id, err := ss.proposeLeftover(ctx, s, left)
	if errcode.IsCode(err, errcode.NothingToCommit) {
		// What it left is what the branch has already.
		if err := ss.store.RemoveCopy(s.ID); err != nil {
			return gateway.SessionEnd{}, err
		}
		ss.changed()
		return gateway.SessionEnd{Message: "the session's changes are already on the branch"}, nil
	}
	if err != nil {
		ss.note(s.ID, "its changes could not be offered: "+err.Error())
		return gateway.SessionEnd{}, err
	}
	if _, err := ss.store.Update(s.ID, func(x *confined.Session) error {
		x.Leftover, x.LeftoverFiles, x.Note = id, len(left), ""
		return nil
	}); err != nil {
		return gateway.SessionEnd{}, err
	}
	ss.changed()
	return gateway.SessionEnd{Leftover: id, Files: len(left),
		Message: fmt.Sprintf("the session left changes in %d file(s) that it never proposed; they wait for you in Sluice as one card", len(left))}, nil
}

func (ss *sessions) note(id, note string) {
	if _, err := ss.store.Update(id, func(s *confined.Session) error { s.Note = note; return nil }); err != nil {
		ss.log.Warn("sessions: note", "session", id, "err", err)
	}
}

// proposeLeftover makes the leftover card: a commit of those paths, their
// content from the copy, on the branch the person has checked out, made
// by Sluice for the session (its origin says so).
func (ss *sessions) proposeLeftover(ctx context.Context, s *confined.Session, paths []string) (string, error) {
	r, err := gitx.Default()
	if err != nil {
		return "", err
	}
	repo, err := r.Open(ctx, ss.roots, s.Repo)
	if err != nil {
		return "", err
	}
	head, err := repo.ResolveCommit(ctx, "HEAD", "HEAD")
	if err != nil {
		return "", err
	}
	args := &proposal.CommitArgs{Message: fmt.Sprintf("Changes left by %s's confined session %s", s.Name(), s.ID), Paths: paths}
	if len(paths) > proposal.MaxPaths {
		args = &proposal.CommitArgs{Message: args.Message, StageAll: true}
	}
	now := ss.now()
	p := proposal.Proposal{
		ID: strings.ReplaceAll(uuid.NewString(), "-", ""), Op: proposal.OpCommit, Repo: s.Repo,
		Pinned: proposal.Pinned{Refs: map[string]string{"HEAD": head}}, Args: args,
		Reason: fmt.Sprintf("%s's confined session ended with changes in %d file(s) that it never proposed. Sluice kept its copy; approving commits them on the branch you have checked out and updates those files in your checkout. Rejecting lets them go.",
			s.Name(), len(paths)),
		Agent: s.Agent, IdempotencyKey: "session-leftover-" + s.ID + "-" + fmt.Sprint(now.UnixMilli()),
		CreatedAt: proposal.At(now), ExpiresAt: proposal.At(now.Add(ss.cfg.PendingExpiry)),
	}
	if err := p.Seal(); err != nil {
		return "", err
	}
	o := s.Origin()
	o.Leftover = true
	st, err := ss.backend.Submit(gateway.WithCaller(ctx, &gateway.Caller{Session: s.ID, Agent: s.Agent, Repo: s.Repo, Origin: o}), s.Agent, p)
	if err != nil {
		return "", err
	}
	return st.ProposalID, nil
}

// tend watches the sessions: a running one whose launcher is gone ends
// (its leftovers offered), and an ended one whose leftover card was
// decided closes (approved and carried out, or rejected: the person
// decided). A leftover card that expired is offered again at the next
// start, and from the Sessions screen at any time.
func (ss *sessions) tend(ctx context.Context, every time.Duration) {
	ss.reofferExpired(ctx)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		ss.tendOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (ss *sessions) tendOnce(ctx context.Context) {
	list, err := ss.store.List()
	if err != nil {
		ss.log.Warn("sessions: list", "err", err)
	}
	for _, s := range list {
		if ctx.Err() != nil {
			return
		}
		switch s.State {
		case confined.StateRunning:
			if !s.LauncherAlive() {
				if _, err := ss.End(ctx, s.ID); err != nil {
					ss.log.Warn("sessions: ending a session whose launcher is gone", "session", s.ID, "err", err)
				}
			}
		case confined.StateEnded:
			if s.Leftover == "" {
				continue
			}
			rec, err := ss.journal.Get(s.Leftover)
			if err != nil {
				continue
			}
			if rec.State == proposal.Completed || rec.State == proposal.Rejected {
				if err := ss.store.RemoveCopy(s.ID); err != nil {
					ss.log.Warn("sessions: removing a copy", "session", s.ID, "err", err)
					continue
				}
				ss.changed()
			}
		}
	}
}

// reofferExpired offers again, at start, the leftovers whose card expired
// while nobody decided.
func (ss *sessions) reofferExpired(ctx context.Context) {
	list, _ := ss.store.List()
	for _, s := range list {
		if s.State != confined.StateEnded || s.Leftover == "" {
			continue
		}
		if rec, err := ss.journal.Get(s.Leftover); err == nil && rec.State == proposal.Expired {
			if _, err := ss.Reoffer(ctx, s.ID); err != nil {
				ss.log.Warn("sessions: offering a session's changes again", "session", s.ID, "err", err)
			}
		}
	}
}

// Reoffer offers an ended session's leftovers again, when their card
// ended without being carried out (expired, withdrawn, failed).
func (ss *sessions) Reoffer(ctx context.Context, id string) (gateway.SessionEnd, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, err := ss.store.Get(id)
	if err != nil {
		return gateway.SessionEnd{}, err
	}
	if s.State != confined.StateEnded {
		return gateway.SessionEnd{}, errcode.New(errcode.Conflict, "only an ended session with changes kept can offer them again")
	}
	if s.Leftover != "" {
		if rec, err := ss.journal.Get(s.Leftover); err == nil && !rec.State.Terminal() {
			return gateway.SessionEnd{Leftover: s.Leftover, Files: s.LeftoverFiles, Message: "its card is still open"}, nil
		}
	}
	if s, err = ss.store.Update(id, func(x *confined.Session) error { x.Leftover, x.LeftoverFiles = "", 0; return nil }); err != nil {
		return gateway.SessionEnd{}, err
	}
	return ss.offer(ctx, s)
}

// Stop ends a running session from the app: its launcher is asked to stop
// (SIGTERM), which stops the agent and ends the session as usual.
func (ss *sessions) Stop(id string) error {
	s, err := ss.store.Get(id)
	if err != nil {
		return err
	}
	if s.State != confined.StateRunning || !s.LauncherAlive() {
		return errcode.New(errcode.Conflict, "the session is not running")
	}
	if err := syscall.Kill(s.LauncherPID, syscall.SIGTERM); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot stop the session: %v", err)
	}
	if err := ss.audit(s, "session_stop_requested", "ok", "the person stopped "+s.Name()+"'s confined session", nil); err != nil {
		ss.log.Error("sessions: audit of a stop", "session", id, "err", err)
	}
	return nil
}

// removeSessionContainers removes what a session's container left.
func removeSessionContainers(ctx context.Context, id string) error {
	d, err := workspace.NewDocker(ctx)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.RemoveSessionContainers(ctx, id)
}
