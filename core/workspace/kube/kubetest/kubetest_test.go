package kubetest

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sluicehq/sluice/core/workspace/workspacetest"
)

func TestMain(m *testing.M) { Main(m) }

func newClient(t *testing.T, c *Cluster) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestControlPlane_AnswersReadyzAndKeepsAConfigMap(t *testing.T) {
	cfg := ControlPlane(t)
	t.Logf("control plane: etcd + API server ready in %s, with the controller manager started %s",
		startTimings.etcdAndAPIServer.Round(time.Millisecond), startTimings.total.Round(time.Millisecond))
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil || string(body) != "ok" {
		t.Fatalf("/readyz = %q, %v; want ok", body, err)
	}
	ns := Namespace(t, cfg)
	want := map[string]string{"greeting": "hello", "n": "42"}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kubetest"}, Data: want,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "kubetest", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Data) != fmt.Sprint(want) {
		t.Fatalf("config map reads back %v, want %v", got.Data, want)
	}
}

// TokenRequest needs the service-account signing key; the token it gives
// must then authenticate as that account.
func TestControlPlane_IssuesServiceAccountTokens(t *testing.T) {
	cfg := ControlPlane(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := Namespace(t, cfg)
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "agent", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest: %v", err)
	}
	if tr.Status.Token == "" {
		t.Fatal("TokenRequest returned no token")
	}
	rev, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{
		Spec: authnv1.TokenReviewSpec{Token: tr.Status.Token},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:" + ns + ":agent"; !rev.Status.Authenticated || rev.Status.User.Username != want {
		t.Fatalf("token review: authenticated=%v user=%q error=%q; want %q",
			rev.Status.Authenticated, rev.Status.User.Username, rev.Status.Error, want)
	}
}

// The quota admission plugin refuses a pod over a namespace's quota once
// the controller manager has recorded the quota's usage.
func TestControlPlane_EnforcesResourceQuota(t *testing.T) {
	cfg := ControlPlane(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := Namespace(t, cfg)
	if _, err := cs.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "one-pod"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the quota's status", func() (bool, error) {
		q, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, "one-pod", metav1.GetOptions{})
		return err == nil && len(q.Status.Hard) > 0, nil
	})
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "localhost/none:1"}}},
		}
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod("first"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the first pod is within the quota: %v", err)
	}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, pod("second"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota") {
		t.Fatalf("second pod: err = %v, want Forbidden: exceeded quota", err)
	}
}

// recTB records a Skip or Fatal instead of ending the real test, so that
// what the harness does without binaries or a cluster can be checked.
type recTB struct {
	testing.TB
	mu       sync.Mutex
	skipped  bool
	fatal    bool
	messages []string
}

func (r *recTB) Helper() {}
func (r *recTB) record(skip bool, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.skipped, r.fatal = skip, !skip
	r.messages = append(r.messages, msg)
	runtime.Goexit()
}
func (r *recTB) Skip(args ...any)                { r.record(true, fmt.Sprint(args...)) }
func (r *recTB) Skipf(f string, args ...any)     { r.record(true, fmt.Sprintf(f, args...)) }
func (r *recTB) Fatal(args ...any)               { r.record(false, fmt.Sprint(args...)) }
func (r *recTB) Fatalf(f string, args ...any)    { r.record(false, fmt.Sprintf(f, args...)) }
func (r *recTB) Errorf(f string, args ...any)    { r.record(false, fmt.Sprintf(f, args...)) }
func (r *recTB) Logf(format string, args ...any) {}

// outcome runs f as a test body on a recTB and says how it ended.
func outcome(t *testing.T, f func(tb testing.TB)) *recTB {
	r := &recTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func TestControlPlane_MissingBinaries_SkipsOrFails(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-binaries")
	for _, require := range []string{"", "1"} {
		t.Run("require="+require, func(t *testing.T) {
			t.Setenv("SLUICE_REQUIRE_E2E", require)
			p := &plane{binDir: missing}
			r := outcome(t, func(tb testing.TB) {
				p.config(tb)
				tb.Fatal("returned a config without binaries")
			})
			if require == "1" && !r.fatal || require == "" && !r.skipped {
				t.Fatalf("skipped=%v failed=%v (%q); want a %s", r.skipped, r.fatal, r.messages,
					map[string]string{"": "skip", "1": "failure"}[require])
			}
			if msg := strings.Join(r.messages, " "); !strings.Contains(msg, missing) || !strings.Contains(msg, "kube-apiserver") {
				t.Fatalf("message %q does not name the directory and the missing binary", msg)
			}
			if p.dir != "" || len(p.procs) != 0 {
				t.Fatalf("started something without binaries: dir %q, %d processes", p.dir, len(p.procs))
			}
		})
	}
}

func TestImportImage_NoDockerEngine_SkipsOrFails(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-engine.sock"))
	for _, require := range []string{"", "1"} {
		t.Run("require="+require, func(t *testing.T) {
			t.Setenv("SLUICE_REQUIRE_E2E", require)
			c := &Cluster{Base: t.TempDir()}
			r := outcome(t, func(tb testing.TB) {
				c.ImportImage(tb, workspacetest.ImageRef)
				tb.Fatal("ImportImage returned without an Engine")
			})
			msg := strings.Join(r.messages, " ")
			if r.skipped != (require == "") || !strings.Contains(msg, "needs the Docker Engine") {
				t.Fatalf("skipped=%v (%q); want skipped=%v saying it needs the Docker Engine", r.skipped, msg, require == "")
			}
		})
	}
}

func TestNode_NoneStarted_SkipsOrFails(t *testing.T) {
	cases := []struct {
		name, unavailableEnv, require, host string
		wantSkip                            bool
		wantIn                              string
	}{
		{"host cannot (told)", "not root", "1", "", true, "does not allow one: not root"},
		{"host cannot (checked)", "", "1", "no cgroup hierarchy", true, "does not allow one: no cgroup hierarchy"},
		{"host can, not required", "", "", "", true, "none was started"},
		{"host can, required", "", "1", "", false, "none was started"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SLUICE_K8S_UNAVAILABLE", tc.unavailableEnv)
			t.Setenv("SLUICE_REQUIRE_E2E", tc.require)
			r := outcome(t, func(tb testing.TB) {
				noNode(tb, func() string { return tc.host })
				tb.Fatal("noNode returned")
			})
			msg := strings.Join(r.messages, " ")
			if r.skipped != tc.wantSkip || !strings.Contains(msg, tc.wantIn) {
				t.Fatalf("skipped=%v (%q); want skipped=%v with %q", r.skipped, msg, tc.wantSkip, tc.wantIn)
			}
		})
	}
}

// Asking the real script: this host's answer is either "" or a reason, and
// a run that is told the host cannot (with-cluster.sh) never asks.
func TestNode_HostReason_FromClusterScript(t *testing.T) {
	if _, err := clusterScript(); err != nil {
		t.Fatal(err)
	}
	r := hostReason()
	t.Logf("this host: %q", r)
	if strings.Contains(r, "usage:") || strings.Contains(r, "not found") {
		t.Fatalf("cluster.sh check did not run: %q", r)
	}
}

func TestNode_BusyboxPodRunsAndLogs(t *testing.T) {
	c := Node(t)
	cs := newClient(t, c)
	ns := Namespace(t, c.Config)
	word := fmt.Sprintf("kubetest-%d", time.Now().UnixNano())
	runPod(t, cs, ns, "busybox", c.Busybox, []string{"sh", "-c", "echo said " + word + "; sleep 3600"})
	waitPod(t, cs, ns, "busybox", corev1.PodRunning)
	waitFor(t, time.Minute, "the pod's log", func() (bool, error) {
		b, err := cs.CoreV1().Pods(ns).GetLogs("busybox", &corev1.PodLogOptions{}).DoRaw(context.Background())
		return err == nil && strings.Contains(string(b), "said "+word), nil
	})
}

func TestNode_GVisorPodRunsUnderGVisor(t *testing.T) {
	c := Node(t)
	if c.GVisor == "" {
		t.Skip("the cluster was started without gVisor (SLUICE_K8S_GVISOR=0)")
	}
	cs := newClient(t, c)
	ns := Namespace(t, c.Config)
	pod := podSpec("sandboxed", c.Busybox, []string{"sh", "-c", "dmesg; sleep 3600"})
	pod.Spec.RuntimeClassName = &c.GVisor
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, cs, ns, "sandboxed", corev1.PodRunning)
	// gVisor's own kernel writes this; the host's never does.
	waitFor(t, time.Minute, "gVisor's kernel log in the pod's log", func() (bool, error) {
		b, err := cs.CoreV1().Pods(ns).GetLogs("sandboxed", &corev1.PodLogOptions{}).DoRaw(context.Background())
		return err == nil && strings.Contains(string(b), "Starting gVisor"), nil
	})
}

func TestNode_ImportImage_GivesARefAPodRuns(t *testing.T) {
	c := Node(t)
	ctx := context.Background()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := workspacetest.EnsureImage(ctx, cli); err != nil {
		t.Fatalf("the test image: %v", err)
	}
	ref := c.ImportImage(t, workspacetest.ImageRef)
	if !strings.HasPrefix(ref, "docker.io/sluice-test/busybox@sha256:") || len(ref) != len("docker.io/sluice-test/busybox@sha256:")+64 {
		t.Fatalf("ImportImage = %q, want docker.io/sluice-test/busybox@sha256:<64 hex>", ref)
	}
	if again := c.ImportImage(t, workspacetest.ImageRef); again != ref {
		t.Fatalf("a second import gave %q, the first %q", again, ref)
	}
	cs := newClient(t, c)
	ns := Namespace(t, c.Config)
	runPod(t, cs, ns, "imported", ref, []string{"/bin/sh", "-c", "echo imported image runs"})
	waitPod(t, cs, ns, "imported", corev1.PodSucceeded)
	b, err := cs.CoreV1().Pods(ns).GetLogs("imported", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || !strings.Contains(string(b), "imported image runs") {
		t.Fatalf("log %q, %v", b, err)
	}
}

func runPod(t *testing.T, cs *kubernetes.Clientset, ns, name, image string, cmd []string) {
	t.Helper()
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), podSpec(name, image, cmd), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func podSpec(name, image string, cmd []string) *corev1.Pod {
	grace := int64(1)
	no := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			Containers: []corev1.Container{{
				Name: "main", Image: image, ImagePullPolicy: corev1.PullNever, Command: cmd,
			}},
		},
	}
}

// waitPod waits for the pod to reach phase; a pod that ends elsewhere or
// whose container cannot start (its image missing, say) fails at once.
func waitPod(t *testing.T, cs *kubernetes.Clientset, ns, name string, phase corev1.PodPhase) {
	t.Helper()
	var last *corev1.Pod
	waitFor(t, 2*time.Minute, fmt.Sprintf("pod %s to be %s", name, phase), func() (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		if p.Status.Phase == phase {
			return true, nil
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return false, fmt.Errorf("the pod ended %s: %s", p.Status.Phase, podStates(p))
		}
		for _, st := range p.Status.ContainerStatuses {
			if w := st.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" {
				return false, fmt.Errorf("container %s waits: %s: %s", st.Name, w.Reason, w.Message)
			}
		}
		return false, nil
	}, func() string { return podStates(last) })
}

func podStates(p *corev1.Pod) string {
	if p == nil {
		return "no pod"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s", p.Status.Phase)
	for _, st := range p.Status.ContainerStatuses {
		fmt.Fprintf(&b, "; %s: %+v", st.Name, st.State)
	}
	return b.String()
}

// waitFor polls cond until it holds; an error from cond says the wait is
// hopeless and ends it at once. d is a backstop only.
func waitFor(t *testing.T, d time.Duration, what string, cond func() (bool, error), state ...func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("waiting for %s: not after %s", what, d)
			for _, f := range state {
				msg += " (" + f() + ")"
			}
			t.Fatal(msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
