package kubetest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is the single-node cluster make test starts around the suite
// (build/scripts/with-cluster.sh).
type Cluster struct {
	Base       string       // SLUICE_K8S_BASE: the cluster's directory
	Kubeconfig string       // an admin kubeconfig
	Config     *rest.Config // the same, for client-go; each Node call gets its own copy
	Node       string       // the node's name
	// Busybox is an image every pod can run without a pull: the host's
	// static busybox with its applets, imported when the node started.
	Busybox string
	// GVisor is the RuntimeClass whose pods run under gVisor ("gvisor"),
	// "" when the cluster was started without it (SLUICE_K8S_GVISOR=0).
	GVisor string

	containerd string // the node's containerd socket, for ImportImage
	ctrPath    string // a ctr that speaks to that containerd
}

var node struct {
	once sync.Once
	c    *Cluster
	err  error
}

// Node returns the cluster make test started, or skips t saying why there
// is none: the host does not allow one (not root, no cgroup v1, no mount
// namespaces, …), or none was started. Under SLUICE_REQUIRE_E2E=1 a host
// that can run one but has none started fails t. A cluster that was
// started but does not answer fails t.
func Node(t testing.TB) *Cluster {
	t.Helper()
	base := os.Getenv("SLUICE_K8S_BASE")
	if base == "" {
		noNode(t, hostReason)
	}
	node.once.Do(func() { node.c, node.err = loadCluster(base) })
	if node.err != nil {
		t.Fatalf("kubetest: the Kubernetes cluster under SLUICE_K8S_BASE=%s: %v", base, node.err)
	}
	c := *node.c
	c.Config = rest.CopyConfig(node.c.Config)
	return &c
}

// noNode skips or fails t when no cluster was started; hostReason says why
// this host cannot run one ("" if it can).
func noNode(t testing.TB, hostReason func() string) {
	t.Helper()
	// with-cluster.sh already checked the host and passes the reason on.
	if r := os.Getenv("SLUICE_K8S_UNAVAILABLE"); r != "" {
		t.Skip("no Kubernetes node: this host does not allow one: " + r)
	}
	if r := hostReason(); r != "" {
		t.Skip("no Kubernetes node: this host does not allow one: " + r)
	}
	unavailable(t, "no Kubernetes node: none was started (SLUICE_K8S_BASE is not set; make test starts one through build/scripts/with-cluster.sh)")
}

// hostReason asks build/k8s/cluster.sh check, the one place that knows
// what the node needs, why this host cannot run it.
func hostReason() string {
	script, err := clusterScript()
	if err != nil {
		return err.Error()
	}
	out, err := exec.Command(script, "check").Output()
	if err != nil {
		if r := strings.TrimSpace(string(out)); r != "" {
			return r
		}
		return fmt.Sprintf("%s check: %v", script, err)
	}
	return ""
}

// clusterScript finds build/k8s/cluster.sh above the working directory (go
// test runs a package's tests in its directory).
func clusterScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "build", "k8s", "cluster.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("build/k8s/cluster.sh not found above the working directory")
		}
		dir = parent
	}
}

// loadCluster reads what cluster.sh start wrote under base (env.sh and the
// admin kubeconfig) and checks that the API server answers and the node is
// Ready.
func loadCluster(base string) (*Cluster, error) {
	env, err := readEnvFile(filepath.Join(base, "env.sh"))
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		Base:       base,
		Kubeconfig: env["KUBECONFIG"],
		Node:       env["SLUICE_K8S_NODE"],
		Busybox:    env["SLUICE_K8S_BUSYBOX_IMAGE"],
		GVisor:     env["SLUICE_K8S_GVISOR"],
		containerd: env["SLUICE_K8S_CONTAINERD"],
		ctrPath:    env["SLUICE_K8S_CTR"],
	}
	if c.ctrPath == "" {
		c.ctrPath = "ctr"
	}
	if c.Kubeconfig == "" || c.Node == "" || c.containerd == "" {
		return nil, fmt.Errorf("%s/env.sh lacks KUBECONFIG, SLUICE_K8S_NODE or SLUICE_K8S_CONTAINERD", base)
	}
	c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	c.Config.QPS, c.Config.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil || string(body) != "ok" {
		return nil, fmt.Errorf("the API server is not ready: %v %s", err, body)
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, c.Node, getOpts)
	if err != nil {
		return nil, err
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == "Ready" && cond.Status != "True" {
			return nil, fmt.Errorf("node %s is not Ready: %s", c.Node, cond.Message)
		}
	}
	return c, nil
}

// readEnvFile parses the `export K=V` lines cluster.sh writes.
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env, sc.Err()
}
