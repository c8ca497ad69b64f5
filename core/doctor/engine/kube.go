package engine

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/doctor"
	"github.com/sluicehq/sluice/core/workspace/kube"
)

// kubeTimeout bounds the cluster's checks: its probe pod included, which
// may have to pull the image.
const kubeTimeout = 4 * time.Minute

// kubeChecks checks the cluster workspaces run on with workspaceRuntime
// kubernetes: the API server, the namespace, every permission the runtime
// needs, the RuntimeClass and the image (a probe pod made as a run's),
// and says what the API cannot show.
func kubeChecks(ctx context.Context, cfg *config.Config) []doctor.Result {
	ctx, cancel := context.WithTimeout(ctx, kubeTimeout)
	defer cancel()
	k := cfg.Kubernetes
	rt, err := kube.New(ctx, kube.Options{Kubeconfig: k.Kubeconfig, Context: k.Context, Namespace: k.Namespace,
		RuntimeClassName: k.RuntimeClassName, ImagePullPolicy: k.ImagePullPolicy, EgressProxy: k.EgressProxy, PodUIDs: k.PodUIDs})
	if err != nil {
		return []doctor.Result{{Name: "k8s cluster", Status: doctor.Fail, Detail: err.Error(),
			Hint: "check kubernetes.kubeconfig and kubernetes.context in config.json and that the API server is reachable"}}
	}
	var out []doctor.Result
	for _, f := range rt.Doctor(ctx, k.Image) {
		st := doctor.OK
		switch f.Status {
		case "warn":
			st = doctor.Warn
		case "fail":
			st = doctor.Fail
		}
		out = append(out, doctor.Result{Name: "k8s " + f.Name, Status: st, Detail: f.Detail, Hint: f.Hint})
	}
	if k.SessionImage != "" {
		f := rt.DoctorSessionImage(ctx, k.SessionImage)
		st := doctor.OK
		if f.Status == "fail" {
			st = doctor.Fail
		}
		out = append(out, doctor.Result{Name: "k8s " + f.Name, Status: st, Detail: f.Detail, Hint: f.Hint})
	}
	return out
}
