package app

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/gateway"
)

// App is one running instance of Sluice: configuration, the gateway that
// sidecars talk to, and the event stream the UI listens to.
type App struct {
	cfg     *config.Config
	log     *slog.Logger
	gw      *gateway.Server
	gwDone  chan error
	events  *Bus
	started time.Time
	ledger  *audit.Ledger
	// auditPub verifies the ledger in the audit view; nil when signing is
	// turned off.
	auditPub ed25519.PublicKey

	readyOnce sync.Once
	ready     chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// Start creates the private directories, starts the gateway on a random
// loopback port and publishes gateway.json.
func Start(cfg *config.Config, log *slog.Logger) (*App, error) {
	if err := cfg.EnsureDirs(); err != nil {
		return nil, err
	}
	// The ledger first: an app that cannot keep the record does not start
	// (and a configured key that is missing or unsafe is never replaced by
	// unsigned entries).
	ledger, pub, err := audit.SetupFor(cfg).Open()
	if err != nil {
		return nil, err
	}
	if _, err := ledger.Append(audit.Entry{EventType: "app_started", Result: "ok", Summary: "sluice " + config.Version}); err != nil {
		ledger.Close()
		return nil, fmt.Errorf("audit ledger: %w", err)
	}
	token, err := gateway.NewToken()
	if err != nil {
		ledger.Close()
		return nil, err
	}
	gw, err := gateway.Listen(gateway.Options{Token: token, AppVersion: config.Version, Logger: log})
	if err != nil {
		ledger.Close()
		return nil, err
	}
	a := &App{cfg: cfg, log: log, gw: gw, gwDone: make(chan error, 1), events: NewBus(), started: time.Now(), ready: make(chan struct{}), ledger: ledger, auditPub: pub}
	go func() { a.gwDone <- gw.Serve() }()
	ep := gateway.Endpoint{Addr: gw.Addr(), Token: token, PID: os.Getpid(), AppVersion: config.Version}
	if err := gateway.WriteEndpoint(cfg.GatewayFile(), ep); err != nil {
		gw.Shutdown(context.Background())
		return nil, fmt.Errorf("publish gateway: %w", err)
	}
	log.Info("gateway listening", "addr", gw.Addr(), "file", cfg.GatewayFile())
	return a, nil
}

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

// sidecarPath is the sluice-sidecar binary next to this executable, which
// is what a person's agent configuration should point at.
func sidecarPath() string {
	exe, err := os.Executable()
	if err != nil {
		return "sluice-sidecar"
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	p := filepath.Join(filepath.Dir(exe), "sluice-sidecar")
	if _, err := os.Stat(p); err != nil {
		return "sluice-sidecar"
	}
	return p
}
