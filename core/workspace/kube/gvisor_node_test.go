package kube

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/workspace/kube/kubetest"
)

// TestNode_RunUnderGVisor: with the RuntimeClass configured, a run is a
// pod under gVisor (its kernel log is gVisor's), with the same hardening
// and the same results as under runc: output, exit code, the tree back.
// The cluster make test starts registers gVisor (containerd 2 with
// gVisor's shim); started without it, the test says so and skips.
func TestNode_RunUnderGVisor(t *testing.T) {
	c := kubetest.Node(t)
	if c.GVisor == "" {
		t.Skip("the cluster was started without gVisor (SLUICE_K8S_GVISOR=0)")
	}
	e := onNode(t)
	r := newRuntime(t, c.Config, Options{Namespace: e.ns, ImagePullPolicy: "Never", RuntimeClassName: c.GVisor})
	ctx := context.Background()
	info, err := r.CheckRuntime(ctx, "")
	if err != nil || !strings.HasPrefix(info.Name, c.GVisor) {
		t.Fatalf("CheckRuntime: %+v %v", info, err)
	}
	spec := e.spec(t, "sh", "-c", "dmesg | head -3; echo made > made.txt; exit 3")
	spec.Limits.PIDs = 256
	var out, errOut bytes.Buffer
	st, err := r.Run(ctx, spec, &out, &errOut)
	if err != nil {
		t.Fatalf("Run: %v (stderr %q)", err, errOut.String())
	}
	if st.ExitCode != 3 || !strings.Contains(out.String(), "gVisor") {
		t.Fatalf("exit %d; the run's kernel log does not say gVisor: %q / %q", st.ExitCode, out.String(), errOut.String())
	}
	if b, err := os.ReadFile(filepath.Join(spec.TreePath, "made.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("the file the run made did not come back: %q %v", b, err)
	}
}
