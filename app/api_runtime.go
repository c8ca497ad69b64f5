package app

import (
	"context"
	"errors"
	"time"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
)

// WorkspaceRuntimeView is the settings screen's choice of the OCI runtime
// workspace runs use: runc (the Engine's usual default) or runsc (gVisor),
// or any other the Engine has.
type WorkspaceRuntimeView struct {
	// Saved is workspaceRuntime in config.json ("" for the Engine's
	// default).
	Saved string `json:"saved"`
	// Running is what this app runs workspaces with ("" likewise).
	Running string `json:"running"`
	// Runtimes are the Engine's, each with whether it is the default and
	// whether it runs without a network (then no egress grant can work).
	Runtimes []RuntimeChoice `json:"runtimes"`
	// EngineError says why the Engine's runtimes are not listed.
	EngineError string `json:"engineError,omitempty"`
	// RestartRequired: the app and the agents' sidecars read config.json
	// when they start, so Saved applies to those started after it.
	RestartRequired bool `json:"restartRequired"`
	// OverriddenByEnv: SLUICE_WORKSPACE_RUNTIME is set for this app.
	OverriddenByEnv bool `json:"overriddenByEnv"`
}

// RuntimeChoice is one runtime of the Engine.
type RuntimeChoice struct {
	Name      string `json:"name"`
	Default   bool   `json:"default"`
	NoNetwork bool   `json:"noNetwork"`
}

// WorkspaceRuntime describes the saved and running runtime and the
// Engine's runtimes.
func (api *API) WorkspaceRuntime() (WorkspaceRuntimeView, error) {
	saved, err := config.Load()
	if err != nil {
		return WorkspaceRuntimeView{}, err
	}
	running := api.app.current().WorkspaceRuntime
	v := WorkspaceRuntimeView{Saved: saved.WorkspaceRuntime, Running: running, Runtimes: []RuntimeChoice{},
		RestartRequired: saved.WorkspaceRuntime != running, OverriddenByEnv: config.WorkspaceRuntimeFromEnv()}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	d, err := dockerFor(ctx)
	if err != nil {
		v.EngineError = err.Error()
		return v, nil
	}
	defer d.Close()
	names, def, err := d.EngineRuntimes(ctx)
	if err != nil {
		v.EngineError = err.Error()
		return v, nil
	}
	for _, n := range names {
		c := RuntimeChoice{Name: n, Default: n == def}
		if info, err := d.CheckRuntime(ctx, n); err == nil {
			c.NoNetwork = info.NoNetwork
		}
		v.Runtimes = append(v.Runtimes, c)
	}
	return v, nil
}

// UseWorkspaceRuntime saves name ("" for the Engine's default) as
// workspaceRuntime in config.json, after checking that the Engine has it;
// audited as the person's choice. A name that is not a runtime name, or
// that the Engine lacks, is refused and nothing is written.
func (api *API) UseWorkspaceRuntime(name string) (WorkspaceRuntimeView, error) {
	saved, err := config.Load()
	if err != nil {
		return WorkspaceRuntimeView{}, err
	}
	probe := *saved
	if err := probe.CheckWorkspaceRuntime(name); err != nil {
		return WorkspaceRuntimeView{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: err.Error()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	d, err := dockerFor(ctx)
	if err != nil {
		return WorkspaceRuntimeView{}, err
	}
	defer d.Close()
	if _, err := d.CheckRuntime(ctx, name); err != nil {
		return WorkspaceRuntimeView{}, err
	}
	if _, err := api.app.ledger.Append(audit.Entry{EventType: "workspace_runtime_set", Approval: "owner:" + api.kind, Result: "ok",
		Data: map[string]any{"runtime": name}}); err != nil {
		return WorkspaceRuntimeView{}, &errcode.Error{Code: errcode.AuditFailed, Msg: "the runtime was not changed because the audit ledger could not be written"}
	}
	if err := saved.SaveWorkspaceRuntime(name); err != nil {
		if errors.Is(err, config.ErrInvalid) {
			return WorkspaceRuntimeView{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: err.Error()}
		}
		return WorkspaceRuntimeView{}, err
	}
	return api.WorkspaceRuntime()
}
