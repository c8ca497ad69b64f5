package app

import (
	"context"
	"io"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/gateway"
	confined "github.com/sluicehq/sluice/core/session"
	"github.com/sluicehq/sluice/core/workspace"
	"github.com/sluicehq/sluice/core/workspace/dockerrt"
	"github.com/sluicehq/sluice/core/workspace/kube"
)

// openWorkspaceRuntime is the container runtime workspace runs use: the
// app's own (stopping runs, sweeping containers) and every sidecar's,
// whose runs the app carries out over the gateway. It is the one place
// that chooses it.
func openWorkspaceRuntime(ctx context.Context, cfg *config.Config) (workspace.Runtime, error) {
	if cfg.OnKubernetes() {
		k := cfg.Kubernetes
		rt, err := kube.New(ctx, kube.Options{Kubeconfig: k.Kubeconfig, Context: k.Context, Namespace: k.Namespace,
			RuntimeClassName: k.RuntimeClassName, ImagePullPolicy: k.ImagePullPolicy, EgressProxy: k.EgressProxy, PodUIDs: k.PodUIDs})
		if err != nil {
			return nil, err
		}
		return rt, nil
	}
	d, err := dockerrt.New(ctx)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// sessionEngine starts a confined session's container in the Docker Engine.
type sessionEngine struct{ d *dockerrt.Docker }

func (e sessionEngine) StartSession(ctx context.Context, s workspace.SessionContainerSpec, in io.Reader, out, errOut io.Writer) (confined.ContainerRun, error) {
	c, err := e.d.StartSession(ctx, s, in, out, errOut)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// kubeSessionEngine starts a confined session's pod in the configured
// cluster.
type kubeSessionEngine struct{ r *kube.Runtime }

func (e kubeSessionEngine) StartSession(ctx context.Context, s workspace.SessionContainerSpec, in io.Reader, out, errOut io.Writer) (confined.ContainerRun, error) {
	c, err := e.r.StartSession(ctx, s, in, out, errOut)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// kubeSessionLimits are a session pod's agent container's: requests equal
// limits on a cluster, so a session reserves what it may use (the keeper
// adds half a CPU and 64 MiB).
var kubeSessionLimits = workspace.Limits{MemoryBytes: 2 << 30, CPUs: 1, PIDs: 4096, TmpfsBytes: 512 << 20}

// runtimeHost serves the sidecars' runs with the store's runtime, under
// the image and OCI runtime config.json holds now (the app and every
// sidecar follow it); nil without a store or a runtime, and the routes
// then answer unsupported.
func runtimeHost(m *workspace.Manager, live *config.Live) *gateway.RuntimeHost {
	if m == nil || m.Runtime() == nil {
		return nil
	}
	return &gateway.RuntimeHost{Runtime: m.Runtime(), Store: m, Policy: func() workspace.RunPolicy {
		cfg := live.Current().Config
		return workspace.RunPolicy{Image: cfg.WorkspaceRunImage(), RuntimeName: cfg.WorkspaceOCIRuntime()}
	}}
}
