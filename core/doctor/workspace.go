package doctor

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/gateway"
)

// checkWorkspace checks what workspace runs need as a sidecar runs them:
// through the app, whose runtime must have the pinned image under exactly
// its ID and the configured OCI runtime. Workspaces are optional, so
// nothing pinned, or no app to ask, is a warning; something pinned that
// cannot work is a failure.
func checkWorkspace(ctx context.Context, cfg *config.Config) []Result {
	img := Result{Name: "workspace image"}
	rtr := Result{Name: "workspace runtime"}
	if cfg.WorkspaceImage == "" {
		img.Status, img.Detail, img.Hint = Warn, "none pinned: workspaces are off", "sluice workspace image use NAME[:TAG] (or pull NAME@sha256:DIGEST)"
		return []Result{img}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := gateway.NewClientFromEndpoint(cfg.GatewayFile())
	var rt *gateway.Runtime
	if err == nil {
		rt, err = gateway.NewRuntime(ctx, c)
	}
	if err != nil {
		img.Status, img.Detail, img.Hint = Warn, cfg.WorkspaceImage+" pinned, not checked: "+err.Error(), "start the app: workspace runs go through it"
		return []Result{img}
	}
	if err := rt.CheckImage(ctx, cfg.WorkspaceImage); err != nil {
		img.Status, img.Detail, img.Hint = Fail, cfg.WorkspaceImage+" is pinned but "+err.Error(),
			"load or pull that image again, or pin another: sluice workspace image use NAME[:TAG]"
	} else {
		img.Status, img.Detail = OK, cfg.WorkspaceImage+" (checked by the app's "+rt.Name()+" runtime)"
	}
	info, err := rt.CheckRuntime(ctx, cfg.WorkspaceRuntime)
	switch {
	case err != nil:
		rtr.Status, rtr.Detail, rtr.Hint = Fail, err.Error(), "register it with the app's runtime or change workspaceRuntime"
	case info.NoNetwork:
		rtr.Status, rtr.Detail = OK, info.Name+" (no network at all: egress grants are refused)"
	default:
		rtr.Status, rtr.Detail = OK, info.Name
	}
	return []Result{img, rtr}
}
