package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"sync"
	"sync/atomic"

	"fyne.io/systray"
	"github.com/wailsapp/wails/v2"
	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
	wruntime "github.com/wailsapp/wails/v2/pkg/runtime"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/journal"
)

// runDesktop opens the Wails window with a tray icon and desktop
// notifications. Closing the window hides it: Sluice stays in the tray and
// the gateway keeps accepting proposals until "Quit".
func runDesktop(assets fs.FS, stderr io.Writer) int {
	log := newLogger(stderr)
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	persistEnvOverrides(cfg, log)
	a, err := Start(cfg, log)
	if errors.Is(err, journal.ErrLocked) {
		return runBlockedDesktop(assets, cfg, log, stderr)
	}
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	defer a.Close()
	api := &API{app: a, kind: "desktop"}

	// The window's context arrives in OnStartup; the tray and the
	// notification clicks wait for it.
	var (
		wctx    context.Context
		wctxSet = make(chan struct{})
		once    sync.Once
	)
	show := func(proposalID string) {
		<-wctxSet
		wruntime.WindowShow(wctx)
		wruntime.WindowUnminimise(wctx)
		if proposalID != "" {
			wruntime.EventsEmit(wctx, "ui:focus", FocusEvent{ID: proposalID})
		}
	}
	if n, err := newDBusNotifier(func(id string) { show(id) }); err != nil {
		log.Warn("desktop notifications unavailable", "err", err)
	} else {
		a.SetNotifier(n)
		defer n.Close()
	}

	tray := &tray{app: a, show: func() { show("") }, quit: func() {
		<-wctxSet
		wruntime.Quit(wctx)
	}, ready: make(chan struct{})}
	start, end := systray.RunWithExternalLoop(tray.onReady, func() {})
	start()
	defer end()
	tray.settle()

	err = wails.Run(&options.App{
		Title:             "Sluice",
		Width:             1100,
		Height:            760,
		MinWidth:          400, // beside an editor: the UI has a narrow layout
		MinHeight:         480,
		HideWindowOnClose: true,
		AssetServer:       &assetserver.Options{Assets: assets},
		Bind:              []any{api},
		ErrorFormatter:    FormatError,
		OnStartup: func(ctx context.Context) {
			once.Do(func() {
				wctx = ctx
				close(wctxSet)
			})
			// Bridge the app's events into the window; Wails runtime calls
			// are only valid with the context it hands us here. The
			// window's title carries the pending count, as a browser tab's
			// does (a webview's document.title names no window).
			ch, _ := a.events.Subscribe()
			wruntime.WindowSetTitle(ctx, windowTitle(a.pendingCount()))
			go func() {
				for ev := range ch {
					wruntime.EventsEmit(ctx, ev.Name, ev.Data)
					if countChanges(ev.Name) {
						wruntime.WindowSetTitle(ctx, windowTitle(a.pendingCount()))
					}
				}
			}()
		},
	})
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	return 0
}

// blockedWindow is what a window opened while another Sluice holds the
// journal knows: why it cannot run, and how to reach the running one.
type blockedWindow struct {
	message string
	serving bool
	cfg     *config.Config
	log     *slog.Logger
	open    func(url string)
}

// OpenRunning opens the running `sluice serve` in the browser with a fresh
// login link; only a window that found another Sluice running has it.
func (api *API) OpenRunning() (string, error) {
	b := api.blocked
	if b == nil || !b.serving {
		return "", &errcode.Error{Code: errcode.Unsupported, Msg: "no other Sluice serves a web UI"}
	}
	url, err := requestLoginLink(context.Background(), b.cfg)
	if err != nil {
		return "", &errcode.Error{Code: errcode.Unavailable, Msg: err.Error()}
	}
	b.open(url)
	b.log.Info("opened the running web UI in the browser")
	return "opened", nil
}

// runBlockedDesktop opens a window that says another Sluice holds the
// journal (a `sluice serve`, or a desktop window started earlier) and,
// for a web UI, offers to open it. A person who double-clicked the app
// sees why nothing else happens, not only a line in a terminal.
func runBlockedDesktop(assets fs.FS, cfg *config.Config, log *slog.Logger, stderr io.Writer) int {
	msg := runningInstance(cfg)
	fmt.Fprintln(stderr, "sluice:", msg)
	_, serr := readUIEndpoint(UIEndpointFile(cfg))
	var wctx atomic.Pointer[context.Context]
	b := &blockedWindow{message: msg, serving: serr == nil, cfg: cfg, log: log, open: func(url string) {
		if ctx := wctx.Load(); ctx != nil {
			wruntime.BrowserOpenURL(*ctx, url)
		}
	}}
	err := wails.Run(&options.App{
		Title:          "Sluice is already running",
		Width:          640,
		Height:         360,
		AssetServer:    &assetserver.Options{Assets: assets},
		Bind:           []any{&API{kind: "desktop", blocked: b}},
		ErrorFormatter: FormatError,
		OnStartup:      func(ctx context.Context) { wctx.Store(&ctx) },
	})
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
	}
	return 1
}
