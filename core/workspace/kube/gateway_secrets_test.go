package kube

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/workspace"
)

// viaGateway is a sidecar's runs carried out by the app on the cluster:
// the app's store on this runtime serving the real runtime routes in
// process, and a sidecar's Manager on the same store whose runs go through
// them (gateway.Runtime, as the sidecar binary's do), with a hook that can
// change a spec on its way, as a sidecar serving a compromised agent could.
type viaGateway struct {
	r      *Runtime
	cs     kubernetes.Interface
	ns     string
	app    *workspace.Manager
	side   *workspace.Manager
	copies *countingCopies

	mu     sync.Mutex
	tamper func(*workspace.ContainerSpec)
}

// countingCopies is the runtime's own SecretCopies, counting the
// Manager's writes of each workspace's copy.
type countingCopies struct {
	*Runtime
	mu   sync.Mutex
	puts map[string]int
}

func (c *countingCopies) PutSecrets(ctx context.Context, storeKey, id string, values map[string]string) error {
	c.mu.Lock()
	c.puts[id]++
	c.mu.Unlock()
	return c.Runtime.PutSecrets(ctx, storeKey, id, values)
}

func (c *countingCopies) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.puts[id]
}

// tamperingRuntime is the sidecar's runtime: the gateway's, and the hook.
type tamperingRuntime struct {
	*gateway.Runtime
	v *viaGateway
}

func (t tamperingRuntime) Run(ctx context.Context, spec workspace.ContainerSpec, stdout, stderr io.Writer) (workspace.ExitStatus, error) {
	t.v.mu.Lock()
	f := t.v.tamper
	t.v.mu.Unlock()
	if f != nil {
		spec.Env = slices.Clone(spec.Env)
		spec.SecretEnv = slices.Clone(spec.SecretEnv)
		f(&spec)
	}
	return t.Runtime.Run(ctx, spec, stdout, stderr)
}

func newViaGateway(t *testing.T, o Options) *viaGateway {
	t.Helper()
	p := newOnPlane(t, o)
	v := &viaGateway{r: p.r, cs: p.cs, ns: p.ns}
	v.copies = &countingCopies{Runtime: v.r, puts: map[string]int{}}
	state, conf := privateDirs(t)
	v.app = kubeManager(t, state, conf, v.r, v.copies)
	tok, err := gateway.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.Listen(gateway.Options{Token: tok, Runtime: &gateway.RuntimeHost{Runtime: v.r, Store: v.app,
		Policy: func() workspace.RunPolicy { return workspace.RunPolicy{Image: fakeImage} }}})
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve()
	t.Cleanup(func() { g.Shutdown(context.Background()) })
	c, err := gateway.NewClient(g.Addr(), tok)
	if err != nil {
		t.Fatal(err)
	}
	grt, err := gateway.NewRuntime(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	side, err := workspace.Open(workspace.Options{StateDir: state, ConfigDir: conf, Image: fakeImage, Runtime: tamperingRuntime{Runtime: grt, v: v}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { side.Close() })
	v.side = side
	return v
}

func (v *viaGateway) setTamper(f func(*workspace.ContainerSpec)) {
	v.mu.Lock()
	v.tamper = f
	v.mu.Unlock()
}

// runPod starts a sidecar's run of workspace id through the app and
// returns its pod, made and never started (only a control plane), and a
// function that cancels the run and waits until the app has removed it.
func (v *viaGateway) runPod(t *testing.T, id string) (*corev1.Pod, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(gateway.WithAgent(context.Background(), "agent-a"))
	t.Cleanup(cancel) // a failed check ends the run too
	done := make(chan error, 1)
	go func() {
		_, err := v.side.Run(ctx, id, workspace.RunRequest{Argv: []string{"true"}})
		done <- err
	}()
	var pod *corev1.Pod
	waitFor(t, "the run's pod", func() bool {
		select {
		case err := <-done:
			t.Fatalf("the run ended before its pod was seen: %v", err)
		default:
		}
		l, err := v.cs.CoreV1().Pods(v.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil || len(l.Items) == 0 {
			return false
		}
		pod = &l.Items[0]
		return true
	})
	return pod, func() {
		t.Helper()
		cancel()
		if err := <-done; err == nil {
			t.Fatal("a cancelled run reported success")
		}
		waitFor(t, "the cancelled run's pod to go", func() bool {
			l, err := v.cs.CoreV1().Pods(v.ns).List(context.Background(), metav1.ListOptions{})
			return err == nil && len(l.Items) == 0
		})
	}
}

// wsSecretData is the workspace's Secret's data, nil when there is none.
func (v *viaGateway) wsSecretData(t *testing.T, id string) map[string]string {
	t.Helper()
	s, err := v.cs.CoreV1().Secrets(v.ns).Get(context.Background(), wsSecretName(id), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, b := range s.Data {
		out[k] = string(b)
	}
	return out
}

// TestGateway_RunsGetTheAppsGrantedValues: a sidecar's run reaches the
// cluster through the gateway and AcceptRun with the granted secrets'
// values the app's store holds. A sidecar that sends another value under a
// granted name (here the one the person has since replaced) does not get
// it into the workspace's Secret nor into the pod, which takes the name by
// reference from that Secret and holds no value; a revoked secret is in
// neither, and a sidecar naming it back is refused before anything is
// made. The app marks the copy for the sync after a run only when a
// granted secret is in it: an egress-only run, whose secret variables are
// its own proxy credentials, costs the next sync no cluster call.
func TestGateway_RunsGetTheAppsGrantedValues(t *testing.T) {
	v := newViaGateway(t, Options{EgressProxy: "127.0.0.1"})
	ctx := context.Background()
	create := func() *workspace.Workspace {
		t.Helper()
		w, err := v.side.Create(ctx, workspace.CreateRequest{Source: workspace.Source{Kind: workspace.SourceFresh}, Agent: "agent-a"})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}

	// An egress-only run: its pod takes the proxy variables from the
	// run's own Secret, and the copy is not marked.
	egress := create()
	if err := v.app.GrantEgress(egress.ID, []string{"example.com:443"}); err != nil {
		t.Fatal(err)
	}
	pod, stop := v.runPod(t, egress.ID)
	refs := secretRefs(pod)
	if len(refs) != 4 || slices.ContainsFunc(refs, func(r string) bool {
		return !strings.Contains(r, "_PROXY<-"+pod.Name+"/") && !strings.Contains(r, "_proxy<-"+pod.Name+"/")
	}) {
		t.Fatalf("the egress-only run's pod takes %v, want the proxy variables from its own Secret", refs)
	}
	stop()
	if err := v.app.SyncSecretCopies(ctx); err != nil {
		t.Fatal(err)
	}
	if n := v.copies.count(egress.ID); n != 0 {
		t.Fatalf("the sync after an egress-only run wrote its workspace's copy %d times, want none", n)
	}

	// A granted secret the sidecar claims another value for.
	w := create()
	for _, g := range [][2]string{{"A_TOKEN", "value-a-replaced"}, {"A_TOKEN", "value-a-granted"}, {"B_TOKEN", "value-b-1234"}} {
		if err := v.app.Grant(w.ID, g[0], g[1]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := v.app.RevokeSecret(w.ID, "B_TOKEN"); err != nil {
		t.Fatal(err)
	}
	v.setTamper(func(s *workspace.ContainerSpec) {
		for i, kv := range s.Env {
			if strings.HasPrefix(kv, "A_TOKEN=") {
				s.Env[i] = "A_TOKEN=value-a-replaced"
			}
		}
	})
	before := v.copies.count(w.ID)
	pod, stop = v.runPod(t, w.ID)
	if refs := secretRefs(pod); !slices.Equal(refs, []string{"A_TOKEN<-" + wsSecretName(w.ID) + "/A_TOKEN"}) {
		t.Fatalf("the run's pod takes %v", refs)
	}
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		for _, e := range c.Env {
			if strings.Contains(e.Value, "value-") {
				t.Fatalf("the pod spec holds a secret value: %s=%s", e.Name, e.Value)
			}
		}
	}
	if got := v.wsSecretData(t, w.ID); len(got) != 1 || got["A_TOKEN"] != "value-a-granted" {
		t.Fatalf("during the run the workspace's Secret holds %v, want the granted A_TOKEN only", got)
	}
	stop()
	if err := v.app.SyncSecretCopies(ctx); err != nil {
		t.Fatal(err)
	}
	if n := v.copies.count(w.ID) - before; n != 1 {
		t.Fatalf("the sync after a run with a granted secret wrote its copy %d times, want once", n)
	}

	// The revoked secret claimed back: refused, nothing made.
	v.setTamper(func(s *workspace.ContainerSpec) {
		s.Env = append(s.Env, "B_TOKEN=value-b-1234")
		s.SecretEnv = append(s.SecretEnv, "B_TOKEN")
		slices.Sort(s.SecretEnv)
	})
	_, err := v.side.Run(gateway.WithAgent(ctx, "agent-a"), w.ID, workspace.RunRequest{Argv: []string{"true"}})
	wantCode(t, err, errcode.Forbidden, "granted secrets")
	if l, err := v.cs.CoreV1().Pods(v.ns).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Fatalf("pods after the refusal: %v", err)
	}
	if got := v.wsSecretData(t, w.ID); len(got) != 1 || got["A_TOKEN"] != "value-a-granted" {
		t.Fatalf("after the refusal the workspace's Secret holds %v", got)
	}

	v.setTamper(nil)
	for _, id := range []string{egress.ID, w.ID} {
		if _, err := v.app.Destroy(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	assertNothingLabelled(t, v.cs, v.ns)
}

// secretRefs are the run container's variables taken from a Secret, as
// NAME<-SECRET/KEY, in the pod's order.
func secretRefs(pod *corev1.Pod) []string {
	var out []string
	for _, c := range pod.Spec.Containers {
		if c.Name != "run" {
			continue
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				out = append(out, e.Name+"<-"+e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key)
			}
		}
	}
	return out
}
