package doctor

import (
	"context"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/workspace/dockerrt"
)

// checkWorkspace checks what workspace runs need: the pinned image is
// present in the Engine under exactly its ID, and the configured runtime
// is one the Engine has. Workspaces are optional, so nothing pinned is a
// warning; something pinned that cannot work is a failure.
func checkWorkspace(ctx context.Context, cfg *config.Config) []Result {
	img := Result{Name: "workspace image"}
	rtr := Result{Name: "workspace runtime"}
	if cfg.WorkspaceImage == "" {
		img.Status, img.Detail, img.Hint = Warn, "none pinned: workspaces are off", "sluice workspace image use NAME[:TAG] (or pull NAME@sha256:DIGEST)"
		return []Result{img}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	d, err := dockerrt.New(ctx)
	if err != nil {
		img.Status, img.Detail, img.Hint = Warn, cfg.WorkspaceImage+" pinned, not checked: the Docker Engine is not reachable", "start dockerd"
		return []Result{img}
	}
	defer d.Close()
	if im, err := d.ResolveImage(ctx, cfg.WorkspaceImage); err != nil {
		img.Status, img.Detail, img.Hint = Fail, cfg.WorkspaceImage+" is pinned but "+err.Error(),
			"load or pull that image again, or pin another: sluice workspace image use NAME[:TAG]"
	} else {
		names := strings.Join(append(append([]string{}, im.Tags...), im.Digests...), ", ")
		if names == "" {
			names = "no name"
		}
		img.Status, img.Detail = OK, im.ID+" ("+names+")"
	}
	info, err := d.CheckRuntime(ctx, cfg.WorkspaceRuntime)
	switch {
	case err != nil:
		rtr.Status, rtr.Detail, rtr.Hint = Fail, err.Error(), "register it with the Engine (build/scripts/setup.sh test does so for runsc) or change workspaceRuntime"
	case info.NoNetwork:
		rtr.Status, rtr.Detail = OK, info.Name+" (no network at all: egress grants are refused)"
	default:
		rtr.Status, rtr.Detail = OK, info.Name
	}
	return []Result{img, rtr}
}
