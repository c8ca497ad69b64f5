package engine

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/doctor"
	"github.com/sluicehq/sluice/core/workspace/kube/kubetest"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// kubeconfigFor writes a kubeconfig file that reaches the API server as rc
// does, as a person's would.
func kubeconfigFor(t *testing.T, rc *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthority: rc.CAFile, CertificateAuthorityData: rc.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificate: rc.CertFile, ClientCertificateData: rc.CertData,
		ClientKey: rc.KeyFile, ClientKeyData: rc.KeyData, Token: rc.BearerToken}
	kc.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "x"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func kubeConfig(kubeconfig, namespace, image, runtimeClass string) *config.Config {
	cfg := &config.Config{WorkspaceRuntime: config.RuntimeKubernetes}
	cfg.Kubernetes = config.Kubernetes{Kubeconfig: kubeconfig, Namespace: namespace, Image: image, RuntimeClassName: runtimeClass}
	return cfg
}

// With workspaceRuntime kubernetes, the app's doctor checks the cluster
// and not the Docker Engine, and each thing that cannot work is a failure
// naming it: an unreachable cluster, a missing namespace, a missing
// RuntimeClass, an image that is not pinned by digest.
func TestChecks_Kubernetes(t *testing.T) {
	digest := "ws@sha256:" + strings.Repeat("ab", 32)
	t.Run("no cluster", func(t *testing.T) {
		rs := Checks(context.Background(), kubeConfig(filepath.Join(t.TempDir(), "missing"), "ws", digest, ""))
		if len(rs) != 1 || rs[0].Name != "k8s cluster" || rs[0].Status != doctor.Fail {
			t.Fatalf("results: %+v", rs)
		}
	})
	rc := kubetest.ControlPlane(t)
	kc := kubeconfigFor(t, rc)
	t.Run("no namespace", func(t *testing.T) {
		got := byName(Checks(context.Background(), kubeConfig(kc, "no-such-namespace", digest, "")))
		if got["k8s cluster"].Status != doctor.OK || got["k8s namespace"].Status != doctor.Fail || !strings.Contains(got["k8s namespace"].Detail, "no-such-namespace") {
			t.Fatalf("results: %+v", got)
		}
		if _, ok := got["docker"]; ok {
			t.Fatalf("the Docker Engine was checked for a cluster runtime: %+v", got)
		}
	})
	t.Run("runtime class and image", func(t *testing.T) {
		ns := kubetest.Namespace(t, rc)
		got := byName(Checks(context.Background(), kubeConfig(kc, ns, "ws:latest", "gvisor-missing")))
		if got["k8s namespace"].Status != doctor.OK {
			t.Fatalf("namespace: %+v", got)
		}
		if r := got["k8s runtimeclass"]; r.Status != doctor.Fail || !strings.Contains(r.Detail, "gvisor-missing") {
			t.Errorf("runtime class: %+v", r)
		}
		if r := got["k8s image"]; r.Status != doctor.Fail {
			t.Errorf("an unpinned image: %+v", r)
		}
		fails := 0
		for name, r := range got {
			if strings.HasPrefix(name, "k8s ") && r.Status == doctor.Fail {
				fails++
			}
		}
		if fails != 2 {
			t.Errorf("%d failures, want the RuntimeClass and the image alone (an admin has every permission): %+v", fails, got)
		}
	})
}
