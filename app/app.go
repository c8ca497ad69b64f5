package app

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/core/apply"
	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/intake"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/oauth"
	"github.com/sluicehq/sluice/core/policy"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/workspace"
)

// App is one running instance of Sluice: configuration, the gateway that
// sidecars talk to, and the event stream the UI listens to.
type App struct {
	cfg *config.Config
	// live is config.json as it is now: the allowed roots and the
	// workspace image, runtime and expiry follow it (see current).
	live    *config.Live
	log     *slog.Logger
	gw      *gateway.Server
	gwDone  chan error
	events  *Bus
	started time.Time
	ledger  *audit.Ledger
	// auditPub verifies the ledger in the audit view; nil when signing is
	// turned off.
	auditPub ed25519.PublicKey
	journal  *journal.Journal
	// rules holds the policy file and applies changes to it.
	rules    *rulebook
	executor *apply.Executor
	// workspaces is nil when no workspace image is configured.
	workspaces *workspace.Manager
	// sessions are the confined agent sessions.
	sessions *sessions
	// runCtx bounds executions; it ends when the app closes.
	runCtx context.Context
	diffs  diffCache
	// pending watches the refs pending proposals are pinned to (see
	// watchPending).
	pending *pendingWatch
	// notifications can be paused from the tray and the settings.
	notifications atomic.Bool
	notifier      atomic.Pointer[notifierBox]
	// oauth is the authorization server of `sluice remote`; nil when no
	// remote listener runs (the consent page and the connector list then
	// have nothing to show).
	oauth atomic.Pointer[oauth.Server]
	// stop ends the background work (journal maintenance, event bridge).
	stop   context.CancelFunc
	bgDone sync.WaitGroup

	readyOnce sync.Once
	ready     chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// Start creates the private directories, opens the audit ledger and the
// journal (recovering what a crash left), starts the gateway on a random
// loopback port and publishes gateway.json. Any failure stops start-up:
// Sluice does not run without its record.
// executorOnStep is the OnStep of the executor of every app started after
// it is set (apply.Options): tests stop an execution at a named point to
// look at what the app does meanwhile. Nothing else sets it.
var executorOnStep func(step string)

func Start(cfg *config.Config, log *slog.Logger) (_ *App, err error) {
	if err := cfg.EnsureDirs(); err != nil {
		return nil, err
	}
	var cleanup []func()
	defer func() {
		if err != nil {
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i]()
			}
		}
	}()
	// The ledger first: an app that cannot keep the record does not start
	// (and a configured key that is missing or unsafe is never replaced by
	// unsigned entries).
	ledger, pub, err := audit.SetupFor(cfg).Open()
	if err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { ledger.Close() })
	if _, err := ledger.Append(audit.Entry{EventType: "app_started", Result: "ok", Summary: "sluice " + config.Version}); err != nil {
		return nil, fmt.Errorf("audit ledger: %w", err)
	}
	var pol *policy.Policy
	if cfg.PolicyFile != "" {
		// Fail closed: a policy the person configured is never skipped
		// (Load refuses a missing file, where ReadFile reads it as empty).
		if _, err := policy.Load(cfg.PolicyFile); err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		// The file's rules are audited with its digest whenever they are
		// not the ones Sluice last applied (edited while it was not running).
		f, err := policy.ReadFile(cfg.PolicyFile)
		if err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		if err := notePolicyFile(cfg, ledger, f, "policy_loaded"); err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		pol = f.Policy
	}
	// Roots, the workspace image and the pending expiry follow config.json
	// while the app runs: a root the person adds (here or with `sluice
	// roots add`) is allowed on the next request, here and in every
	// sidecar, without a restart. A file that stops loading keeps the
	// last good values here (the sidecars refuse to guess and say why).
	live := config.NewLive(cfg)
	roots := func() gitx.Roots { return gitx.Roots(live.Current().Config.AllowedRoots) }
	j, err := journal.Open(cfg.JournalFile(), journal.Options{
		Recorder:  journalRecorder{ledger},
		Retention: cfg.Retention,
		// The expiry a sidecar gives a proposal follows config.json, which
		// may change while the app runs: the journal accepts any the
		// settings allow.
		PendingExpiry: config.MaxPendingExpiry,
	})
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	cleanup = append(cleanup, func() { j.Close() })
	ss, err := openSessions(cfg, log, ledger, j, live)
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	// With no allowed roots nothing can be proposed, and nothing is
	// executed until the person allows a folder (the UI explains how);
	// the executor asks for the roots each time, so one added later works.
	exec, err := apply.New(apply.Options{Journal: j, RootsFunc: roots, Logger: log, Sessions: ss, OnStep: executorOnStep})
	if err != nil {
		return nil, fmt.Errorf("executor: %w", err)
	}
	revalidate := exec.Revalidate
	// Recovery before anything runs: interrupted executions are never
	// re-run blindly; approved ones run only if their pins still hold.
	rec, err := j.Recover(revalidate)
	if err != nil {
		return nil, fmt.Errorf("journal recovery: %w", err)
	}
	if n := len(rec.NeedsReconciliation); n > 0 {
		log.Warn("executions were interrupted and need a person's look", "count", n, "ids", rec.NeedsReconciliation)
		if exec != nil {
			logLeftLocks(exec, j, rec.NeedsReconciliation, log)
		}
	}
	token, err := gateway.NewToken()
	if err != nil {
		return nil, err
	}
	wsm := openWorkspaceStore(cfg, log)
	var handoff gateway.WorkspaceHandoff
	if wsm != nil {
		cleanup = append(cleanup, func() { wsm.Close() })
		handoff = workspaceHandoff{m: wsm, inRepo: exec.InRepo}
	}
	// The app is made after the backend: a proposal that comes before it
	// waits for a person.
	var made atomic.Pointer[App]
	holdAuto := func(_ context.Context, p proposal.Proposal) string {
		if a := made.Load(); a != nil {
			return a.holdAuto(p)
		}
		return "the app is starting"
	}
	backend := intake.New(j, intake.Options{RootsFunc: roots, Policy: pol, Logger: log,
		RestorePoints: restoreLister(exec), Sealer: sealer(exec), OwnPlaces: cfg.OwnPlaces(), HoldAuto: holdAuto})
	ss.exec, ss.backend = exec, backend
	var gwBackend gateway.Backend = backend
	if wsm != nil {
		gwBackend = handoffBackend{Backend: backend, h: workspaceHandoff{m: wsm, inRepo: exec.InRepo}, j: j}
	}
	gw, err := gateway.Listen(gateway.Options{
		Token:      token,
		AppVersion: config.Version,
		Logger:     log,
		Backend:    gwBackend,
		Handoff:    handoff,
		Sessions:   ss,
		Runtime:    runtimeHost(wsm, live),
	})
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	a := &App{cfg: cfg, live: live, log: log, gw: gw, gwDone: make(chan error, 1), events: NewBus(), started: time.Now(),
		ready: make(chan struct{}), ledger: ledger, auditPub: pub, journal: j, stop: stop,
		rules:    &rulebook{path: cfg.PolicyFile, backend: backend, now: time.Now},
		executor: exec, workspaces: wsm, sessions: ss, runCtx: ctx, pending: newPendingWatch()}
	made.Store(a)
	ss.changed = func() { a.events.Publish(Event{Name: "session:changed"}) }
	a.notifications.Store(cfg.Notifications)
	go func() { a.gwDone <- gw.Serve() }()
	a.bgDone.Add(5)
	go func() {
		defer a.bgDone.Done()
		a.watchPending(ctx)
	}()
	go func() {
		defer a.bgDone.Done()
		ss.tend(ctx, sessionTendEvery)
	}()
	go func() {
		defer a.bgDone.Done()
		j.Maintain(ctx, 5*time.Second, func(err error) { log.Error("journal maintenance", "err", err) })
	}()
	go func() {
		defer a.bgDone.Done()
		a.tendSealed(ctx, backend)
	}()
	go func() {
		defer a.bgDone.Done()
		a.bridgeJournal(ctx)
	}()
	if wsm != nil {
		a.bgDone.Add(2)
		go func() {
			defer a.bgDone.Done()
			a.reconcileWorkspaces(ctx)
		}()
		go func() {
			defer a.bgDone.Done()
			a.watchWorkspaces(ctx)
		}()
	}
	// Approved before the restart and still valid: they run now.
	for _, id := range rec.Revalidated {
		a.execute(id)
	}
	ep := gateway.Endpoint{Addr: gw.Addr(), Token: token, PID: os.Getpid(), AppVersion: config.Version}
	if err := gateway.WriteEndpoint(cfg.GatewayFile(), ep); err != nil {
		stop()
		gw.Shutdown(context.Background())
		<-a.gwDone
		a.bgDone.Wait()
		return nil, fmt.Errorf("publish gateway: %w", err)
	}
	log.Info("gateway listening", "addr", gw.Addr(), "file", cfg.GatewayFile())
	return a, nil
}

// current is the configuration as config.json says now (the allowed
// roots, the workspace image and runtime, the pending expiry); a.cfg is
// what the app started with (its directories and the rest).
func (a *App) current() *config.Config {
	if a.live == nil {
		return a.cfg
	}
	return a.live.Current().Config
}

// allowed is the allowed roots as they are now.
func (a *App) allowed() gitx.Roots { return gitx.Roots(a.current().AllowedRoots) }

// Close stops the gateway and withdraws gateway.json. It is safe to call
// more than once.
func (a *App) Close() error {
	a.closeOnce.Do(func() {
		gateway.RemoveEndpoint(a.cfg.GatewayFile(), os.Getpid())
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := a.gw.Shutdown(ctx)
		if gerr := <-a.gwDone; gerr != nil && !errors.Is(gerr, context.Canceled) {
			err = errors.Join(err, gerr)
		}
		a.stop()
		a.bgDone.Wait()
		err = errors.Join(err, a.journal.Close())
		if a.workspaces != nil {
			err = errors.Join(err, a.workspaces.Close())
		}
		a.events.Close()
		if _, aerr := a.ledger.Append(audit.Entry{EventType: "app_stopped", Result: "ok"}); aerr != nil {
			err = errors.Join(err, aerr)
		}
		a.closeErr = errors.Join(err, a.ledger.Close())
	})
	return a.closeErr
}

// GatewayAddr is where sidecars reach this app.
func (a *App) GatewayAddr() string { return a.gw.Addr() }

// Events is the stream the UI subscribes to.
func (a *App) Events() *Bus { return a.events }

// markReady records that a front end has loaded and called in.
func (a *App) markReady(kind string) {
	a.readyOnce.Do(func() {
		a.log.Info("frontend ready", "ui", kind)
		close(a.ready)
	})
}

// sidecarPath is the sluice-sidecar that agent configurations should point
// at: $SLUICE_SIDECAR when set, else the one next to this executable, else
// the one on PATH.
func sidecarPath() string {
	if p := os.Getenv("SLUICE_SIDECAR"); p != "" && filepath.IsAbs(p) {
		return p
	}
	exe, err := os.Executable()
	if err != nil {
		return "sluice-sidecar"
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	p := filepath.Join(filepath.Dir(exe), "sluice-sidecar")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if p, err := exec.LookPath("sluice-sidecar"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return "sluice-sidecar"
}

// setNotifications turns desktop notifications on or off for this run.
func (a *App) setNotifications(on bool) {
	a.notifications.Store(on)
	a.events.Publish(Event{Name: "app:notifications", Data: on})
}

// notifyCreated shows a desktop notification for a new pending proposal.
func (a *App) notifyCreated(id string) {
	box := a.notifier.Load()
	if box == nil || !a.notifications.Load() {
		return
	}
	rec, err := a.journal.Get(id)
	if err != nil || rec.State != "pending" {
		return
	}
	title, body := noteText(rec)
	if err := box.n.Notify(title, body, id); err != nil {
		a.log.Warn("desktop notification failed", "err", err)
	}
}

type notifierBox struct{ n Notifier }

// SetNotifier installs the desktop notifier (the window has one; the
// headless UI has none).
func (a *App) SetNotifier(n Notifier) { a.notifier.Store(&notifierBox{n}) }

// pendingCount is the number of proposals waiting. A failed count shows as
// zero in the tray and is logged.
func (a *App) pendingCount() int {
	n, err := a.countPending()
	if err != nil {
		a.log.Warn("count pending proposals", "err", err)
	}
	return n
}

// countPending counts the keys of the journal's pending index: no record
// is read.
func (a *App) countPending() (int, error) {
	return a.journal.Count(proposal.Pending)
}

// execute runs an approved proposal in the background. The journal
// records how it ends (completed or failed, with the restore point); a
// crash leaves it executing, and the next start-up marks it
// needs_reconciliation.
func (a *App) execute(id string) {
	if a.executor == nil {
		return
	}
	a.bgDone.Add(1)
	go func() {
		defer a.bgDone.Done()
		if _, err := a.executor.Execute(a.runCtx, id); err != nil {
			a.log.Warn("execution did not complete", "proposal", id, "err", err)
		}
		// What landed moved a branch: the cards pinned to it are checked
		// again now, not at the next look.
		a.pending.wake()
	}()
}

// restoreLister avoids handing the intake a typed nil.
func restoreLister(e *apply.Executor) intake.RestorePointLister {
	if e == nil {
		return nil
	}
	return e
}

// The executor keeps a sealed outcome's objects while the intake stores
// the proposal (intake.PreKeeper).
var _ intake.PreKeeper = (*apply.Executor)(nil)

// sealer avoids handing the intake a typed nil.
func sealer(e *apply.Executor) intake.Sealer {
	if e == nil {
		return nil
	}
	return e
}

// sessionTendEvery is how often the app looks for confined sessions whose
// launcher is gone (a process check each, no file read but session.json).
const sessionTendEvery = 2 * time.Second

// errNoRoots answers safety requests when no roots are allowed.
var errNoRoots = &errcode.Error{Code: errcode.PathOutsideRoots, Msg: "no repository roots are allowed yet; add one in Settings"}
