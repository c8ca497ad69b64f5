package kube

import (
	"context"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/core/errcode"
)

// TestPrepare_RuntimeNameIsTheConfiguredClassOnly: a run's spec cannot
// move its pod to another RuntimeClass than the configured one (runc
// instead of gVisor), nor pick one when none is configured.
func TestPrepare_RuntimeNameIsTheConfiguredClassOnly(t *testing.T) {
	down := &rest.Config{Host: "https://127.0.0.1:1"}
	r := newRuntime(t, down, Options{Namespace: "ws", RuntimeClassName: "gvisor"})
	spec := testSpec(t, fakeImage)
	for _, name := range []string{"", "gvisor"} {
		spec.RuntimeName = name
		o, err := r.prepare(spec)
		if err != nil {
			t.Fatalf("RuntimeName %q: %v", name, err)
		}
		if got := ptrStr(o.pod.Spec.RuntimeClassName); got != "gvisor" {
			t.Fatalf("RuntimeName %q: the pod's RuntimeClass is %q", name, got)
		}
	}
	spec.RuntimeName = "runc"
	_, err := r.prepare(spec)
	wantCode(t, err, errcode.InvalidArgument, `"runc"`, `"gvisor"`)
	_, err = r.Run(context.Background(), spec, &limitBuffer{max: 1}, &limitBuffer{max: 1})
	wantCode(t, err, errcode.InvalidArgument, `"runc"`)

	// None configured: the cluster's default, and no spec picks one.
	r = newRuntime(t, down, Options{Namespace: "ws"})
	_, err = r.prepare(spec)
	wantCode(t, err, errcode.InvalidArgument, `"runc"`)
	_, err = r.CheckRuntime(context.Background(), "runc")
	wantCode(t, err, errcode.InvalidArgument, `"runc"`)
	spec.RuntimeName = ""
	o, err := r.prepare(spec)
	if err != nil || o.pod.Spec.RuntimeClassName != nil {
		t.Fatalf("no RuntimeClass configured: %v %v", err, o.pod.Spec.RuntimeClassName)
	}
}
