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
	"github.com/sluicehq/sluice/core/intake"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/presence"
	"github.com/sluicehq/sluice/core/proposal"
	confined "github.com/sluicehq/sluice/core/session"
	"github.com/sluicehq/sluice/core/workspace"
	"github.com/sluicehq/sluice/core/workspace/dockerrt"
	"github.com/sluicehq/sluice/core/workspace/kube"
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
	// live is config.json as it is now: roots, image and expiry follow it.
	live *config.Live
	// exec and backend are set once they exist (Start).
	exec    *apply.Executor
	backend *intake.Intake
	now     func() time.Time
	// changed is told when the list of sessions changed (the UI re-reads).
	changed func()

	// mu serialises ending sessions and offering their changes, so a
	// launcher's own end, the watcher and the person never offer one
	// session's changes twice, nor remove a copy while it is read.
	mu sync.Mutex
	// lastFail is when an offer of a session's changes last failed
	// (tend tries again after retryAfter); sealing holds the sessions
	// whose offer waits for their proposals being sealed (tend tries
	// again at once).
	failMu   sync.Mutex
	lastFail map[string]time.Time
	sealing  map[string]bool
}

func openSessions(cfg *config.Config, log *slog.Logger, ledger *audit.Ledger, j *journal.Journal, live *config.Live) (*sessions, error) {
	st, err := confined.OpenStore(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	if err := st.Sweep(); err != nil {
		log.Warn("sessions: removing unfinished session directories", "err", err)
	}
	return &sessions{cfg: cfg, log: log, store: st, ledger: ledger, journal: j, live: live, now: time.Now, changed: func() {}}, nil
}

// current is the configuration as config.json says now.
func (ss *sessions) current() *config.Config { return ss.live.Current().Config }

// allowed is the allowed roots as they are now.
func (ss *sessions) allowed() gitx.Roots { return gitx.Roots(ss.current().AllowedRoots) }

var commandName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Register implements gateway.Sessions.
func (ss *sessions) Register(ctx context.Context, req gateway.SessionRequest) (gateway.SessionGrant, error) {
	if len(ss.allowed()) == 0 {
		return gateway.SessionGrant{}, errNoRoots
	}
	if req.Runtime == "" {
		req.Runtime = confined.RuntimeBubblewrap
	}
	switch req.Runtime {
	case confined.RuntimeBubblewrap:
	case confined.RuntimeDocker, confined.RuntimeRunsc:
		if ss.current().WorkspaceImage == "" {
			return gateway.SessionGrant{}, errcode.New(errcode.Unsupported, "a session under %s runs in the workspace image; choose one first: sluice workspace image use NAME[:TAG]", req.Runtime)
		}
	case confined.RuntimeKubernetes:
		if c := ss.current(); !c.OnKubernetes() || c.Kubernetes.SessionImage == "" {
			return gateway.SessionGrant{}, errcode.New(errcode.Unsupported, `a session on Kubernetes runs in the cluster of config.json ("workspaceRuntime": "kubernetes") from its session image (kubernetes.sessionImage, digest-pinned, with the agent's CLI in it); neither is configured`)
		}
	default:
		return gateway.SessionGrant{}, errcode.New(errcode.InvalidArgument, "runtime %q is not one of bubblewrap, docker, runsc, kubernetes", req.Runtime)
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
	c, err := confined.MakeCopy(ctx, r, ss.allowed(), req.Dir, ss.store.CopyDir(id), gitHome)
	if err != nil {
		ss.store.Discard(id)
		return gateway.SessionGrant{}, err
	}
	s := &confined.Session{
		ID: id, Agent: agent, Repo: c.Repo, Objects: c.Objects, Base: c.Base, Branch: c.Branch,
		Runtime: req.Runtime, Network: network, Granted: granted, State: confined.StateRunning,
		LauncherPID: req.LauncherPID, LauncherStart: start, TokenHash: hash, StartedAt: ss.now().UTC(),
	}
	if req.Runtime == confined.RuntimeKubernetes {
		s.Image = ss.current().Kubernetes.SessionImage
	} else if req.Runtime != confined.RuntimeBubblewrap {
		s.Image = ss.current().WorkspaceImage
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
		Image: s.Image, Hide: sluiceDirs(ss.cfg),
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

// End implements gateway.Sessions: the session's launcher is done. A
// running session is ended by its launcher only, which proves it with the
// session's token (an agent outside the session holds the gateway's token
// too); one whose launcher is gone ends by itself (tend).
func (ss *sessions) End(ctx context.Context, id, token string) (gateway.SessionEnd, error) {
	s, err := ss.store.Get(id)
	if err != nil {
		return gateway.SessionEnd{}, err
	}
	if s.State == confined.StateRunning && !s.Matches(token) && s.LauncherAlive() {
		return gateway.SessionEnd{}, errcode.New(errcode.Forbidden, "a running session is ended by its own launcher")
	}
	return ss.endSession(ctx, id, s.Matches(token))
}

// end ends session id. What its agent left in the copy is offered as one
// card; with nothing left and no card of it open, the copy goes.
func (ss *sessions) end(ctx context.Context, id string) (gateway.SessionEnd, error) {
	return ss.endSession(ctx, id, false)
}

// endSession ends session id; byLauncher says its own launcher asks, once
// its runtime is done: a pod's launcher has read the copy back and
// removed the pod (a launcher whose last read-back failed keeps the pod
// and does not ask), so the cluster is not needed then.
func (ss *sessions) endSession(ctx context.Context, id string, byLauncher bool) (gateway.SessionEnd, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, err := ss.store.Get(id)
	if err != nil {
		return gateway.SessionEnd{}, err
	}
	if s.State == confined.StateRunning {
		// A container outlives a launcher that died: it goes first, so
		// that nothing writes to the copy while it is read.
		if s.Runtime == confined.RuntimeKubernetes && !byLauncher {
			// Its pod holds the agent's latest files: they come back into
			// the copy first. When they cannot (the pod was gone, or what
			// it held was refused), the copy is older than what the agent
			// left: nothing of it is offered.
			if err := ss.endSessionPod(ctx, id); errors.Is(err, kube.ErrFilesNotBack) {
				return ss.closeUnread(id, err)
			} else if err != nil {
				return gateway.SessionEnd{}, err
			}
		} else if s.Runtime != confined.RuntimeKubernetes && s.Runtime != confined.RuntimeBubblewrap {
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

// stillSealing is what a session's note says while its offer waits for
// its agent's proposals being sealed.
const stillSealing = "still being sealed"

// settled reports whether a card of a session needs nothing more of its
// changes: it landed, or the person rejected them. A card sent back
// because it went stale rejected no change (it is offered again against
// the new state), and one that expired, failed or was withdrawn decided
// nothing either.
func settled(r journal.Record) bool {
	switch r.State {
	case proposal.Completed:
		return true
	case proposal.Rejected:
		return r.Outcome == nil || r.Outcome.Code != errcode.StaleBase
	}
	return false
}

// sentBack reports whether r was sent back as stale.
func sentBack(r journal.Record) bool {
	return r.State == proposal.Rejected && r.Outcome != nil && r.Outcome.Code == errcode.StaleBase
}

// offer offers what session s left and nothing covers: a card of the
// session covers its files while it is open, once it landed and once the
// person rejected it. A leftover card that is still open (one made just
// before a crash took its id from the record) is the session's card
// again. With nothing to offer and no card open, the copy goes and the
// session closes; while a card is open, the copy stays for it.
// The caller holds ss.mu.
func (ss *sessions) offer(ctx context.Context, s *confined.Session) (gateway.SessionEnd, error) {
	if ss.exec == nil || ss.backend == nil {
		return gateway.SessionEnd{}, errcode.New(errcode.Unavailable, "the Sluice app is still starting")
	}
	// A proposal still being sealed covers its files once it is stored:
	// offered before, they would be on two cards. tend offers the rest
	// when none is left (the record names no card until then).
	n := ss.backend.CloseSession(s.ID)
	ss.failMu.Lock()
	waited := ss.sealing[s.ID]
	if n > 0 {
		if ss.sealing == nil {
			ss.sealing = map[string]bool{}
		}
		ss.sealing[s.ID] = true
	} else {
		delete(ss.sealing, s.ID)
	}
	ss.failMu.Unlock()
	if n > 0 {
		// Said on the Sessions screen too, while it lasts.
		msg := fmt.Sprintf("%d proposal(s) of the session are %s; what it left besides is offered once they are stored", n, stillSealing)
		if !strings.Contains(s.Note, stillSealing) {
			ss.note(s.ID, msg)
			ss.changed()
		}
		return gateway.SessionEnd{Message: msg}, nil
	}
	if waited && strings.Contains(s.Note, stillSealing) {
		ss.note(s.ID, "")
		s.Note = ""
	}
	cards, err := ss.cardsOf(s.ID, nil)
	if err != nil {
		return gateway.SessionEnd{}, err
	}
	var covered []*proposal.Sealed
	open := false
	for _, r := range cards {
		if !r.State.Terminal() && r.Proposal.Origin.Leftover {
			files := 0
			if r.Proposal.Sealed != nil {
				files = len(r.Proposal.Sealed.Files)
			}
			if _, err := ss.store.Update(s.ID, func(x *confined.Session) error {
				x.Leftover, x.LeftoverFiles = r.Proposal.ID, files
				return nil
			}); err != nil {
				return gateway.SessionEnd{}, err
			}
			ss.changed()
			return gateway.SessionEnd{Leftover: r.Proposal.ID, Files: files, Message: "its card is still open"}, nil
		}
		if !r.State.Terminal() {
			open = true
		}
		if !r.State.Terminal() || settled(r) {
			covered = append(covered, r.Proposal.Sealed)
		}
	}
	left, err := ss.exec.SessionLeftover(ctx, s.Repo, ss.store.CopyDir(s.ID), s.Base, covered)
	if err != nil {
		ss.note(s.ID, "its copy could not be read: "+err.Error())
		return gateway.SessionEnd{}, err
	}
	// A name no proposal may carry (a .git component, invalid UTF-8)
	// stays in the copy, named, rather than keep the rest from the card.
	var named, odd []string
	for _, p := range left {
		if proposal.ValidPath(p) {
			named = append(named, p)
		} else {
			odd = append(odd, fmt.Sprintf("%q", p))
		}
	}
	note := ""
	if len(odd) > 0 {
		note = "files whose names no proposal may carry stay in its copy: " + strings.Join(odd[:min(len(odd), 10)], ", ")
	}
	if len(named) == 0 {
		if open || len(odd) > 0 {
			ss.note(s.ID, note)
			return gateway.SessionEnd{Message: "the session's proposals still wait for you in Sluice; its copy is kept for them"}, nil
		}
		if err := ss.store.RemoveCopy(s.ID); err != nil {
			return gateway.SessionEnd{}, err
		}
		ss.changed()
		return gateway.SessionEnd{Message: "the session left no change it did not propose"}, nil
	}
	id, err := ss.proposeLeftover(ctx, s, named)
	if errcode.IsCode(err, errcode.NothingToCommit) {
		// What it left is what the branch has already.
		if open {
			return gateway.SessionEnd{Message: "the session's proposals still wait for you in Sluice; its copy is kept for them"}, nil
		}
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
		x.Leftover, x.LeftoverFiles, x.Note = id, len(named), note
		return nil
	}); err != nil {
		return gateway.SessionEnd{}, err
	}
	ss.changed()
	return gateway.SessionEnd{Leftover: id, Files: len(named),
		Message: fmt.Sprintf("the session left changes in %d file(s) that it never proposed; they wait for you in Sluice as one card", len(named))}, nil
}

// cardsOf are the records of session id's proposals (its leftover cards
// included); from recs when given, else from the journal.
func (ss *sessions) cardsOf(id string, recs []journal.Record) ([]journal.Record, error) {
	if recs == nil {
		var err error
		if recs, err = ss.journal.List(journal.Filter{}); err != nil {
			return nil, err
		}
	}
	var out []journal.Record
	for _, r := range recs {
		if o := r.Proposal.Origin; o != nil && o.Session == id {
			out = append(out, r)
		}
	}
	return out, nil
}

// openCards says, per session, which of its cards are still open (the
// journal keeps open records indexed, so this does not read the history).
func (ss *sessions) openCards(ids ...string) (map[string]openCard, error) {
	standing, err := ss.journal.Sessions(ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]openCard, len(standing))
	for id, st := range standing {
		out[id] = openCardOf(st)
	}
	return out, nil
}

func openCardOf(st journal.SessionStanding) openCard {
	return openCard{agent: st.OpenAgent, leftover: st.OpenLeftover}
}

// openCard is what a session has open: a card of its agent's, a card of
// what it left.
type openCard struct{ agent, leftover bool }

var openStates = []proposal.State{proposal.Pending, proposal.Approved, proposal.Executing, proposal.NeedsReconciliation}

// offerable reports whether ended session s's kept changes can be offered
// again by the person: no card of it is open, and its last offer failed,
// or its card ended without the person deciding on the changes (expired,
// failed, withdrawn). open is what openCards says of it.
func (ss *sessions) offerable(s *confined.Session, open openCard) bool {
	if s.State != confined.StateEnded || open != (openCard{}) {
		return false
	}
	if s.Leftover == "" {
		return true
	}
	rec, err := ss.journal.Get(s.Leftover)
	return err == nil && rec.State.Terminal() && !settled(rec)
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
	repo, err := r.Open(ctx, ss.allowed(), s.Repo)
	if err != nil {
		return "", err
	}
	head, err := repo.ResolveCommit(ctx, "HEAD", "HEAD")
	if err != nil {
		return "", err
	}
	args := &proposal.CommitArgs{Message: fmt.Sprintf("Changes left by %s's confined session %s", s.Name(), s.ID), Paths: paths}
	what := fmt.Sprintf("changes in %d file(s) that nothing of it carries", len(paths))
	if len(paths) > proposal.MaxPaths {
		// More files than a proposal names: the card holds every change
		// of the copy since it was made (it lists each file).
		args = &proposal.CommitArgs{Message: args.Message, StageAll: true}
		what = fmt.Sprintf("changes in %d file(s) that nothing of it carries (more than a card names one by one, so the card holds every change of its copy, those it proposed included)", len(paths))
	}
	now := ss.now()
	p := proposal.Proposal{
		ID: strings.ReplaceAll(uuid.NewString(), "-", ""), Op: proposal.OpCommit, Repo: s.Repo,
		Pinned: proposal.Pinned{Refs: map[string]string{"HEAD": head}}, Args: args,
		Reason: fmt.Sprintf("%s's confined session ended with %s. Sluice kept its copy; approving commits them on the branch you have checked out and updates those files in your checkout. Rejecting lets them go.",
			s.Name(), what),
		Agent: s.Agent, IdempotencyKey: "session-leftover-" + s.ID + "-" + fmt.Sprint(now.UnixMilli()),
		CreatedAt: proposal.At(now), ExpiresAt: proposal.At(now.Add(ss.current().PendingExpiry)),
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
// (its leftovers offered). An ended one is looked at again once none of
// its cards is open: when its leftover card landed or was rejected, what
// else is left is offered or the session closes; when the card was sent
// back as stale, the changes are offered again against the new state; an
// offer that failed is tried again. A leftover card that expired or
// failed waits for the person (Offer again on the Sessions screen) or the
// next start.
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

// retryAfter spaces the tries of an offer that failed.
const retryAfter = time.Minute

func (ss *sessions) tendOnce(ctx context.Context) {
	list, err := ss.store.List()
	if err != nil {
		ss.log.Warn("sessions: list", "err", err)
	}
	var open map[string]openCard
	ids := make([]string, len(list))
	for i, s := range list {
		ids[i] = s.ID
	}
	for _, s := range list {
		if ctx.Err() != nil {
			return
		}
		switch s.State {
		case confined.StateRunning:
			if !s.LauncherAlive() {
				if _, err := ss.end(ctx, s.ID); err != nil {
					ss.log.Warn("sessions: ending a session whose launcher is gone", "session", s.ID, "err", err)
				}
			}
		case confined.StateEnded:
			if open == nil {
				if open, err = ss.openCards(ids...); err != nil {
					ss.log.Warn("sessions: open cards", "err", err)
					return
				}
			}
			if !ss.due(s, open[s.ID]) {
				continue
			}
			if _, err := ss.offerAgain(ctx, s.ID, false); err != nil {
				ss.failed(s.ID)
				ss.log.Warn("sessions: offering what a session left", "session", s.ID, "err", err)
			}
		}
	}
}

// due reports whether tend looks at ended session s now, open being its
// open cards: an offer that waits for the session's proposals being
// sealed, and a leftover card the record does not name (made just before
// a crash), are taken up at once; otherwise nothing is done while a card of
// it is open, and then when its offer never happened (or failed, and not
// in the last retryAfter), or its leftover card landed, was rejected or
// was sent back.
func (ss *sessions) due(s *confined.Session, open openCard) bool {
	ss.failMu.Lock()
	sealing := ss.sealing[s.ID]
	ss.failMu.Unlock()
	if sealing || s.Leftover == "" && open.leftover {
		return true
	}
	if open != (openCard{}) {
		return false
	}
	if s.Leftover == "" {
		ss.failMu.Lock()
		defer ss.failMu.Unlock()
		return ss.now().Sub(ss.lastFail[s.ID]) >= retryAfter
	}
	rec, err := ss.journal.Get(s.Leftover)
	return err == nil && (settled(rec) || sentBack(rec))
}

func (ss *sessions) failed(id string) {
	ss.failMu.Lock()
	defer ss.failMu.Unlock()
	if ss.lastFail == nil {
		ss.lastFail = map[string]time.Time{}
	}
	ss.lastFail[id] = ss.now()
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

// Reoffer offers an ended session's kept changes again, at the person's
// word, when its card ended without them deciding on the changes
// (expired, failed, withdrawn) or its last offer failed.
func (ss *sessions) Reoffer(ctx context.Context, id string) (gateway.SessionEnd, error) {
	return ss.offerAgain(ctx, id, true)
}

// offerAgain offers session id's changes again; asked says the person
// asked (the card must be offerable), else tend found it due.
func (ss *sessions) offerAgain(ctx context.Context, id string, asked bool) (gateway.SessionEnd, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, err := ss.store.Get(id)
	if err != nil {
		return gateway.SessionEnd{}, err
	}
	if s.State != confined.StateEnded {
		return gateway.SessionEnd{}, errcode.New(errcode.Conflict, "only an ended session with its changes kept can offer them again")
	}
	if asked {
		open, err := ss.openCards(id)
		if err != nil {
			return gateway.SessionEnd{}, err
		}
		if !ss.offerable(s, open[id]) {
			return gateway.SessionEnd{}, errcode.New(errcode.Conflict, "the session's changes wait on a card that is open, or the person decided them already")
		}
	}
	// The old card stays the session's until a new one exists (offer
	// records it).
	return ss.offer(ctx, s)
}

// Stop ends a running session from the app: its launcher is asked to stop
// (SIGTERM), which stops the agent and ends the session as usual.
func (ss *sessions) Stop(id, by string) error {
	s, err := ss.store.Get(id)
	if err != nil {
		return err
	}
	if s.State != confined.StateRunning || !s.LauncherAlive() {
		return errcode.New(errcode.Conflict, "the session is not running")
	}
	// On the record first: the end it causes follows it in the ledger.
	if err := ss.audit(s, "session_stop_requested", "ok", "the person stopped "+s.Name()+"'s confined session", map[string]any{"by": by}); err != nil {
		return err
	}
	if err := syscall.Kill(s.LauncherPID, syscall.SIGTERM); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot stop the session: %v", err)
	}
	return nil
}

// removeSessionContainers removes what a session's container left.
// closeUnread closes a session whose pod's files did not come back: its
// copy is removed, not offered, and why is on record.
func (ss *sessions) closeUnread(id string, why error) (gateway.SessionEnd, error) {
	note := "what the agent left in its pod could not be read back, so nothing of it is offered: " + why.Error()
	s, err := ss.store.Update(id, func(s *confined.Session) error {
		s.State, s.EndedAt, s.Note = confined.StateEnded, ss.now().UTC(), note
		return nil
	})
	if err != nil {
		return gateway.SessionEnd{}, err
	}
	if err := ss.audit(s, "session_ended", "error", s.Name()+"'s confined session ended; "+note, nil); err != nil {
		ss.log.Error("sessions: audit of a session's end", "session", id, "err", err)
	}
	if ss.backend != nil {
		ss.backend.CloseSession(id)
	}
	if err := ss.store.RemoveCopy(id); err != nil {
		return gateway.SessionEnd{}, err
	}
	ss.changed()
	return gateway.SessionEnd{Message: note}, nil
}

// endSessionPod reads a session pod's files back into the copy (when the
// pod still runs) and deletes its objects, with the app's cluster
// settings.
func (ss *sessions) endSessionPod(ctx context.Context, id string) error {
	cfg := ss.current()
	if !cfg.OnKubernetes() {
		return errcode.New(errcode.Unsupported, "the session ran on Kubernetes, which config.json no longer configures: its pod (if any is left) cannot be reached from here")
	}
	k := cfg.Kubernetes
	rt, err := kube.New(ctx, kube.Options{Kubeconfig: k.Kubeconfig, Context: k.Context, Namespace: k.Namespace,
		RuntimeClassName: k.RuntimeClassName, ImagePullPolicy: k.ImagePullPolicy, PodUIDs: k.PodUIDs, Logger: ss.log})
	if err != nil {
		return err
	}
	return rt.EndSession(ctx, id, ss.store.CopyDir(id))
}

func removeSessionContainers(ctx context.Context, id string) error {
	d, err := dockerrt.New(ctx)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.RemoveSessionContainers(ctx, id)
}
