package app

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/sluicehq/sluice/core/workspace/kube/kubetest"
	"github.com/sluicehq/sluice/core/workspace/workspacetest"
)

// Under `sluice run --runtime kubernetes` the agent runs in a pod of the
// real single-node cluster make test starts, from a session image that
// carries its CLI: the same scenario as under Bubblewrap and Docker (the
// escape probes, the project's test in the copy, a proposal made over MCP
// through the pod's link, its card approved in Chromium, the ledger).
func TestConfined_ClaudeCode_Kubernetes(t *testing.T) {
	a := claudeCode()
	a.runtime = "kubernetes"
	driveConfined(t, a)
}

// withKubernetes points the person's Sluice at the test cluster: the
// workspace image and the session image imported into its node, a
// namespace of the test's own, and a kubeconfig of the person's.
func withKubernetes() machineOption { return func(m *machine) { m.kube = true } }

// pinCluster writes the person's config.json for the cluster (before the
// app starts) and checks, when the test ends, that nothing of the
// session is left in the namespace.
func (m *machine) pinCluster() {
	m.t.Helper()
	cl := kubetest.Node(m.t)
	needWorkspaceDocker(m.t)
	wsImage := cl.ImportImage(m.t, workspacetest.ImageRef)
	sessionImage := cl.ImportImage(m.t, ensureClaudeImage(m.t, m.uid, m.gid))
	m.ns = kubetest.Namespace(m.t, cl.Config)
	// The person's own kubeconfig, with the certificates in it (the
	// cluster's files are root's).
	kc, err := clientcmd.LoadFromFile(cl.Kubeconfig)
	if err != nil {
		m.t.Fatal(err)
	}
	if err := clientcmdapi.FlattenConfig(kc); err != nil {
		m.t.Fatal(err)
	}
	kubeconfig := filepath.Join(m.base, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		m.t.Fatal(err)
	}
	conf := map[string]any{"workspaceRuntime": "kubernetes", "kubernetes": map[string]any{
		"kubeconfig": kubeconfig, "namespace": m.ns, "image": wsImage, "sessionImage": sessionImage, "imagePullPolicy": "Never"}}
	dir := filepath.Join(m.home, ".config", "sluice")
	if err := writeJSONFile(filepath.Join(dir, "config.json"), conf); err != nil {
		m.t.Fatal(err)
	}
	m.chown(m.base)
	k, err := kubernetes.NewForConfig(cl.Config)
	if err != nil {
		m.t.Fatal(err)
	}
	m.cleanup = append(m.cleanup, func() {
		if m.t.Failed() {
			return
		}
		pods, err := k.CoreV1().Pods(m.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=sluice"})
		if err != nil {
			m.t.Error(err)
		} else if len(pods.Items) > 0 {
			m.t.Errorf("%d pods of Sluice's are left in the namespace after the session", len(pods.Items))
		}
	})
}

var claudeImageMu sync.Mutex

// ensureClaudeImage is the agent image with Claude Code's native program
// at /usr/local/bin/claude, in the Docker Engine (to import into the
// cluster), tagged by a hash of its content.
func ensureClaudeImage(t testing.TB, uid, gid int) string {
	t.Helper()
	claudeImageMu.Lock()
	defer claudeImageMu.Unlock()
	claude, err := filepath.EvalSymlinks(filepath.Join(os.Getenv("SLUICE_TOOLS_DIR"), "node_modules", ".bin", "claude"))
	if err != nil {
		t.Fatalf("Claude Code in SLUICE_TOOLS_DIR: %v", err)
	}
	name := confinedUser
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		name = u.Username
	}
	ref, _ := importRootfs(t, "sluice-test/agent-claude", agentRootfsWith(t, name, uid, gid, map[string]string{"/usr/local/bin/claude": claude}))
	return ref
}
