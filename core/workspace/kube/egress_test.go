package kube

import (
	"strconv"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/core/errcode"
)

// A granted run's NetworkPolicy allows the configured proxy IP and the
// port its own proxy variables name (each process serving workspaces has
// its own), and a run whose proxy is elsewhere, or unnamed, is refused.
func TestPolicy_EgressToTheRunsOwnProxyPort(t *testing.T) {
	r := newRuntime(t, &rest.Config{Host: "https://127.0.0.1:1"}, Options{Namespace: "ns", EgressProxy: "10.1.2.3"})
	for _, port := range []int32{3128, 40123} {
		spec := testSpec(t, fakeImage)
		spec.Network = egressNetwork
		spec.Env = append(spec.Env, "HTTP_PROXY=http://run:pw@10.1.2.3:1", "HTTPS_PROXY=http://run:pw@10.1.2.3:"+strconv.Itoa(int(port)))
		o, err := r.objects(spec)
		if err != nil {
			t.Fatal(err)
		}
		eg := o.policy.Spec.Egress
		if len(eg) != 1 || eg[0].To[0].IPBlock.CIDR != "10.1.2.3/32" || len(eg[0].Ports) != 1 || eg[0].Ports[0].Port.IntVal != port {
			t.Fatalf("port %d: egress rules %+v", port, eg)
		}
	}
	for name, proxy := range map[string]string{
		"another IP": "HTTPS_PROXY=http://run:pw@10.9.9.9:3128",
		"a name":     "HTTPS_PROXY=http://run:pw@proxy.example:3128",
		"no port":    "HTTPS_PROXY=http://run:pw@10.1.2.3",
		"none":       "NO_PROXY=x",
	} {
		spec := testSpec(t, fakeImage)
		spec.Network = egressNetwork
		spec.Env = append(spec.Env, proxy)
		if _, err := r.objects(spec); errcode.Of(err) != errcode.InvalidArgument {
			t.Errorf("%s: got %v, want invalid_argument", name, err)
		}
	}
	// Without a proxy IP, no run reaches the egress network at all.
	bare := newRuntime(t, &rest.Config{Host: "https://127.0.0.1:1"}, Options{Namespace: "ns"})
	spec := testSpec(t, fakeImage)
	spec.Network = egressNetwork
	spec.Env = append(spec.Env, "HTTPS_PROXY=http://run:pw@10.1.2.3:3128")
	if _, err := bare.prepare(spec); errcode.Of(err) != errcode.Unsupported {
		t.Fatalf("egress without a proxy: %v", err)
	}
}
