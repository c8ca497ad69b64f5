package kube

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
	"github.com/sluicehq/sluice/core/workspace/kube/kubetest"
)

func TestMain(m *testing.M) {
	// client-go reports the end of a cancelled stream through klog, which
	// would land in the middle of a benchmark's line; errors come back as
	// values.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	klog.SetLogger(logr.Discard())
	kubetest.Main(m)
}

// fakeImage is a digest-pinned reference no node has: with only a control
// plane nothing pulls it.
const fakeImage = "localhost/sluice/busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func newRuntime(t testing.TB, cfg *rest.Config, o Options) *Runtime {
	t.Helper()
	r, err := NewForConfig(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func adminClient(t testing.TB, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func randomID(t testing.TB) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// onPlane is a test's own namespace on the control plane, with an admin
// client and a runtime there.
type onPlane struct {
	cfg *rest.Config // the admin's
	ns  string
	cs  kubernetes.Interface
	r   *Runtime
}

// newOnPlane starts (or joins) the control plane, makes a namespace for
// the test and a runtime in it with o.
func newOnPlane(t testing.TB, o Options) onPlane {
	t.Helper()
	cfg := kubetest.ControlPlane(t)
	o.Namespace = kubetest.Namespace(t, cfg)
	return onPlane{cfg: cfg, ns: o.Namespace, cs: adminClient(t, cfg), r: newRuntime(t, cfg, o)}
}

// proxiedConfig is a config that reaches the API server through a proxy:
// serve answers each request, upstream forwards one as the admin. It
// speaks JSON, so that serve can change a body on its way (rewriteJSON).
func proxiedConfig(t testing.TB, admin *rest.Config, serve func(w http.ResponseWriter, req *http.Request, upstream http.Handler)) *rest.Config {
	t.Helper()
	tr, err := rest.TransportFor(admin)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(admin.Host)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = tr
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { serve(w, req, rp) }))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}}
}

// rewriteJSON reads req's body into v, calls edit and sends v on as the
// body. A body that is not v is answered 400 and false returned.
func rewriteJSON(w http.ResponseWriter, req *http.Request, v any, edit func()) bool {
	body, _ := io.ReadAll(req.Body)
	if err := json.Unmarshal(body, v); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	edit()
	body, _ = json.Marshal(v)
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	req.Header.Set("Content-Type", "application/json")
	return true
}

// testSpec is a run's spec with a secret in its environment and a tree
// with one file.
func testSpec(t testing.TB, image string) workspace.ContainerSpec {
	t.Helper()
	dir := t.TempDir()
	tree := filepath.Join(dir, "tree")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	user := "65534:65534"
	if os.Getuid() != 0 {
		user = strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid())
	}
	id := "Run-" + randomID(t)
	return workspace.ContainerSpec{
		WorkspaceID: "ws-" + randomID(t),
		RunID:       id,
		StoreKey:    "store/" + randomID(t),
		Image:       image,
		Argv:        []string{"echo", "hello"},
		Env:         []string{"PATH=" + containerPath, "HOME=/tmp", "LANG=C.UTF-8", "PLAIN=visible", "TOKEN=s3cret-value"},
		SecretEnv:   []string{"TOKEN"},
		User:        user,
		TreePath:    tree,
		Limits:      workspace.DefaultLimits,
	}
}

// waitFor polls cond until it holds; the deadline is a backstop only.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runAsync starts Run and returns its result channel and cancel.
type runResult struct {
	st  workspace.ExitStatus
	err error
}

func runAsync(r *Runtime, spec workspace.ContainerSpec) (<-chan runResult, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	c := make(chan runResult, 1)
	go func() {
		st, err := r.Run(ctx, spec, &limitBuffer{max: 1 << 20}, &limitBuffer{max: 1 << 20})
		c <- runResult{st, err}
	}()
	return c, cancel
}

// awaitPod waits for the run's pod to exist and returns it.
func awaitPod(t testing.TB, cs kubernetes.Interface, ns, name string, done <-chan runResult) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(t, "the run's pod", func() bool {
		select {
		case res := <-done:
			t.Fatalf("Run ended before its pod was seen: %+v %v", res.st, res.err)
		default:
		}
		p, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			pod = p
		}
		return err == nil
	})
	return pod
}

// revokeGrants does what revoking every grant in ns does: each
// workspace's Secret (which lives with its grants, not with a run) is
// deleted through PutSecrets.
func revokeGrants(t testing.TB, cfg *rest.Config, ns string) {
	t.Helper()
	ctx := context.Background()
	l, err := adminClient(t, cfg).CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: labelManagedBy + "=" + managedBy})
	if err != nil {
		t.Fatal(err)
	}
	r := newRuntime(t, cfg, Options{Namespace: ns})
	for _, s := range l.Items {
		if isWSSecretName(s.Name) {
			if err := r.PutSecrets(ctx, s.Annotations[workspace.LabelStore], s.Annotations[workspace.LabelWorkspace], nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// egressSpec is testSpec for a granted run of r (whose EgressProxy is
// 10.1.2.3): its proxy variable is the run's own secret.
func egressSpec(t testing.TB, image string) workspace.ContainerSpec {
	s := testSpec(t, image)
	s.Network = egressNetwork
	s.Env = append(s.Env, "HTTPS_PROXY=http://run:pw@10.1.2.3:3128")
	s.SecretEnv = append(s.SecretEnv, "HTTPS_PROXY")
	return s
}

// assertNothingLabelled checks that no pod, Secret or NetworkPolicy managed
// by Sluice is left in ns.
func assertNothingLabelled(t testing.TB, cs kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	lo := metav1.ListOptions{LabelSelector: labelManagedBy + "=" + managedBy}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, lo)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := cs.CoreV1().Secrets(ns).List(ctx, lo)
	if err != nil {
		t.Fatal(err)
	}
	pols, err := cs.NetworkingV1().NetworkPolicies(ns).List(ctx, lo)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(pods.Items) + len(secrets.Items) + len(pols.Items); n != 0 {
		t.Fatalf("%d pods, %d secrets, %d network policies left labelled", len(pods.Items), len(secrets.Items), len(pols.Items))
	}
}

func wantCode(t testing.TB, err error, code errcode.Code, contains ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", code)
	}
	if got := errcode.Of(err); got != code {
		t.Fatalf("code %s (%v), want %s", got, err, code)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Fatalf("error %q does not name %q", err, c)
		}
	}
}
