package app

import (
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// API is what the UI can call. Its exported methods are bound into the
// desktop window by Wails (window.go.app.API.*) and served as JSON by the
// headless server, so both front ends see the same behaviour. Every method
// returns (T, error); errors reach the UI as {code, message} (see
// FormatError).
type API struct {
	app  *App
	kind string // "desktop" or "web"
	// blocked is set in a window opened while another Sluice holds the
	// journal: it has no app, and says so.
	blocked *blockedWindow
}

// Status is the app's overview for the UI.
type Status struct {
	Version      string   `json:"version"`
	UI           string   `json:"ui"`
	GatewayAddr  string   `json:"gatewayAddr"`
	Pending      int      `json:"pending"`
	AllowedRoots []string `json:"allowedRoots"`
	SidecarPath  string   `json:"sidecarPath"`
	StartedAt    string   `json:"startedAt"`
}

// Status reports the app's state.
func (api *API) Status() (Status, error) {
	if b := api.blocked; b != nil {
		b.log.Info("window told another Sluice is running", "message", b.message)
		code := errcode.AlreadyRunning
		if b.serving {
			code = errcode.AlreadyServing
		}
		return Status{}, &errcode.Error{Code: code, Msg: b.message}
	}
	a := api.app
	roots := append([]string{}, a.current().AllowedRoots...)
	pending, err := a.countPending()
	if err != nil {
		return Status{}, err
	}
	return Status{
		Version:      config.Version,
		UI:           api.kind,
		GatewayAddr:  a.GatewayAddr(),
		Pending:      pending,
		AllowedRoots: roots,
		SidecarPath:  sidecarPath(),
		StartedAt:    a.started.UTC().Format(time.RFC3339),
	}, nil
}

// Ready is called by the front end once it has rendered; it lets tests and
// the tray know the window is alive.
func (api *API) Ready() (bool, error) {
	if api.blocked != nil {
		return true, nil
	}
	api.app.markReady(api.kind)
	return true, nil
}

// UIError is how every error reaches the front end: the wire form of an
// *errcode.Error.
type UIError struct {
	Code    errcode.Code `json:"code"`
	Message string       `json:"message"`
}

// FormatError maps an error to {code, message}. It is the Wails
// ErrorFormatter and the headless server's error encoder. A journal
// sentinel that reaches it uncoded gets the code journal.Coded gives it
// at every boundary.
func FormatError(err error) any {
	err = journal.Coded(err)
	return UIError{Code: errcode.Of(err), Message: err.Error()}
}

// Shown is called by the front end with the ids of the cards it has on
// screen, and which screen: "pending" (the cards waiting for a decision)
// or "proposal" (one proposal's page, where a notification's click leads).
// It is logged, so that a person reading the log (and the end-to-end
// tests) can tell a proposal reached the window.
func (api *API) Shown(screen string, ids []string) (bool, error) {
	if screen != "pending" && screen != "proposal" {
		return false, &errcode.Error{Code: errcode.InvalidArgument, Msg: "screen is pending or proposal"}
	}
	if len(ids) > 1000 {
		return false, &errcode.Error{Code: errcode.InvalidArgument, Msg: "too many ids"}
	}
	valid := ids[:0:0]
	for _, id := range ids {
		if proposal.ValidID(id) {
			valid = append(valid, id)
		}
	}
	api.app.log.Info("cards shown", "ui", api.kind, "screen", screen, "count", len(valid), "ids", strings.Join(valid, ","))
	return true, nil
}
