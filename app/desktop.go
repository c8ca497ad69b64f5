package app

import (
	"context"
	"fmt"
	"io"
	"io/fs"

	"github.com/wailsapp/wails/v2"
	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
	wruntime "github.com/wailsapp/wails/v2/pkg/runtime"

	"github.com/sluicehq/sluice/core/config"
)

// runDesktop opens the Wails window. The gateway runs for the life of the
// process, whatever the window does.
func runDesktop(assets fs.FS, stderr io.Writer) int {
	log := newLogger(stderr)
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	a, err := Start(cfg, log)
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	defer a.Close()
	api := &API{app: a, kind: "desktop"}
	err = wails.Run(&options.App{
		Title:          "Sluice",
		Width:          1100,
		Height:         760,
		MinWidth:       720,
		MinHeight:      480,
		AssetServer:    &assetserver.Options{Assets: assets},
		Bind:           []any{api},
		ErrorFormatter: FormatError,
		OnStartup: func(ctx context.Context) {
			// Bridge the app's events into the window; Wails runtime calls
			// are only valid with the context it hands us here.
			ch, _ := a.events.Subscribe()
			go func() {
				for ev := range ch {
					wruntime.EventsEmit(ctx, ev.Name, ev.Data)
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
