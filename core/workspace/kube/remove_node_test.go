package kube

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
	"github.com/sluicehq/sluice/core/workspace/kube/kubetest"
)

// TestNodeFaults_RemovalFailsAfterTheTreeCameBack: the run's NetworkPolicy
// cannot be deleted (the API server refuses it once) after the run's tree came
// back. The run is not reported failed: its status comes back with an
// error saying its changes were applied and its objects were not all
// removed, and the Manager records it as it went.
func TestNodeFaults_RemovalFailsAfterTheTreeCameBack(t *testing.T) {
	e := onNode(t)
	c := kubetest.Node(t)
	f, cfg := newFaultProxy(t, c.Config, map[string]func(http.ResponseWriter){"DELETE networkpolicies": status(403, "Forbidden")})
	r := newRuntime(t, cfg, Options{Namespace: e.ns, ImagePullPolicy: "Never"})
	ctx := context.Background()
	deletePolicies := func() {
		l, err := e.cs.NetworkingV1().NetworkPolicies(e.ns).List(ctx, metav1.ListOptions{LabelSelector: labelManagedBy + "=" + managedBy})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range l.Items {
			if err := e.cs.NetworkingV1().NetworkPolicies(e.ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(deletePolicies)

	spec := e.spec(t, "sh", "-c", "echo new > new.txt")
	st, err := r.Run(ctx, spec, &lineWriter{}, &lineWriter{})
	wantCode(t, err, errcode.Internal, "applied", "could not all be removed")
	if !errors.Is(err, workspace.ErrRunNotRemoved) || st.ExitCode != 0 || st.ContainerID == "" {
		t.Fatalf("%+v %v", st, err)
	}
	if b, err := os.ReadFile(filepath.Join(spec.TreePath, "new.txt")); err != nil || string(b) != "new\n" {
		t.Fatalf("the tree did not come back: %q %v", b, err)
	}
	if _, err := e.cs.NetworkingV1().NetworkPolicies(e.ns).Get(ctx, st.ContainerID, metav1.GetOptions{}); err != nil {
		t.Fatalf("the NetworkPolicy whose deletion was refused is gone: %v", err)
	}
	deletePolicies()

	// Through the Manager: the run is recorded, its result returned.
	state, conf := t.TempDir(), t.TempDir()
	for _, d := range []string{state, conf} {
		if err := os.Chmod(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	m, err := workspace.Open(workspace.Options{StateDir: state, ConfigDir: conf, Runtime: r, Image: e.image,
		Limits: workspace.Limits{MemoryBytes: 64 << 20, CPUs: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.Create(ctx, workspace.CreateRequest{Source: workspace.Source{Kind: workspace.SourceFresh, GitInit: true}, Agent: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Grant(w.ID, "API_TOKEN", "tok-secret-123456"); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.faults["DELETE networkpolicies"] = status(403, "Forbidden")
	f.mu.Unlock()
	res, err := m.Run(ctx, w.ID, workspace.RunRequest{Argv: []string{"sh", "-c", "echo out > out.txt; echo done"}})
	if err != nil || res.ExitCode != 0 || !strings.Contains(res.Stdout, "done") {
		t.Fatalf("the run: %+v %v", res, err)
	}
	runs, err := m.Runs(w.ID)
	if err != nil || len(runs) != 1 || runs[0].ID != res.ID {
		t.Fatalf("the run is not recorded: %+v %v", runs, err)
	}
	if fc, err := m.ReadFile(ctx, w.ID, "out.txt", workspace.ReadOptions{}); err != nil || fc.Content != "out\n" {
		t.Fatalf("out.txt: %+v %v", fc, err)
	}
	f.mu.Lock()
	hits := f.hit["DELETE networkpolicies"]
	f.mu.Unlock()
	if hits != 2 {
		t.Fatalf("the refusal was hit %d times, want 2", hits)
	}
	// What was left is removed as any leftover is.
	if _, err := m.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
}
