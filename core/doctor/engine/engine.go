// Package engine holds the doctor's checks of the Docker Engine that
// workspaces run on: the app's doctor runs them; the sidecar's, which links
// no container client, checks the same through the app's gateway.
package engine

import (
	"context"
	"strings"
	"time"

	"github.com/docker/docker/client"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/doctor"
	"github.com/sluicehq/sluice/core/workspace/dockerrt"
)

// Checks is doctor.Options.Engine for the app: the Engine answers, the
// pinned image is in it, and the configured OCI runtime is one of its; or,
// with workspaceRuntime kubernetes, the cluster's checks (kube.go).
func Checks(ctx context.Context, cfg *config.Config) []doctor.Result {
	if cfg.OnKubernetes() {
		return kubeChecks(ctx, cfg)
	}
	return append([]doctor.Result{checkDocker(ctx)}, checkWorkspace(ctx, cfg)...)
}

// checkWorkspace checks what workspace runs need: the pinned image is
// present in the Engine under exactly its ID, and the configured runtime
// is one the Engine has. Workspaces are optional, so nothing pinned is a
// warning; something pinned that cannot work is a failure.
func checkWorkspace(ctx context.Context, cfg *config.Config) []doctor.Result {
	img := doctor.Result{Name: "workspace image"}
	rtr := doctor.Result{Name: "workspace runtime"}
	if cfg.WorkspaceImage == "" {
		img.Status, img.Detail, img.Hint = doctor.Warn, "none pinned: workspaces are off", "sluice workspace image use NAME[:TAG] (or pull NAME@sha256:DIGEST)"
		return []doctor.Result{img}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	d, err := dockerrt.New(ctx)
	if err != nil {
		img.Status, img.Detail, img.Hint = doctor.Warn, cfg.WorkspaceImage+" pinned, not checked: the Docker Engine is not reachable", "start dockerd"
		return []doctor.Result{img}
	}
	defer d.Close()
	if im, err := d.ResolveImage(ctx, cfg.WorkspaceImage); err != nil {
		img.Status, img.Detail, img.Hint = doctor.Fail, cfg.WorkspaceImage+" is pinned but "+err.Error(),
			"load or pull that image again, or pin another: sluice workspace image use NAME[:TAG]"
	} else {
		names := strings.Join(append(append([]string{}, im.Tags...), im.Digests...), ", ")
		if names == "" {
			names = "no name"
		}
		img.Status, img.Detail = doctor.OK, im.ID+" ("+names+")"
	}
	info, err := d.CheckRuntime(ctx, cfg.WorkspaceRuntime)
	switch {
	case err != nil:
		rtr.Status, rtr.Detail, rtr.Hint = doctor.Fail, err.Error(), "register it with the Engine (build/scripts/setup.sh test does so for runsc) or change workspaceRuntime"
	case info.NoNetwork:
		rtr.Status, rtr.Detail = doctor.OK, info.Name+" (no network at all: egress grants are refused)"
	default:
		rtr.Status, rtr.Detail = doctor.OK, info.Name
	}
	return []doctor.Result{img, rtr}
}

func checkDocker(ctx context.Context) doctor.Result {
	r := doctor.Result{Name: "docker engine"}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		r.Status, r.Detail, r.Hint = doctor.Warn, err.Error(), "workspaces need a Docker Engine"
		return r
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	ping, err := cli.Ping(ctx)
	if err != nil {
		r.Status, r.Detail, r.Hint = doctor.Warn, "not reachable: "+err.Error(), "install docker.io and start dockerd; only workspaces need it"
		return r
	}
	r.Status, r.Detail = doctor.OK, "API "+ping.APIVersion+" at "+cli.DaemonHost()
	return r
}
