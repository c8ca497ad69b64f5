package kube

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
	"github.com/sluicehq/sluice/core/workspace/kube/kubetest"
)

// In these tests there is no node: the test plays the kubelet, writing
// the pod's status through the status subresource as a kubelet would
// (a container waiting on its image, a pod evicted, a container OOM
// killed), and checks the runtime's typed outcome.

// setStatus writes the pod's status as the kubelet would.
func setStatus(t testing.TB, cs kubernetes.Interface, ns, name string, edit func(*corev1.PodStatus)) {
	t.Helper()
	ctx := context.Background()
	for {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		edit(&p.Status)
		_, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if err == nil {
			return
		}
		t.Logf("status update: %v (again)", err)
	}
}

func runningStatus(st *corev1.PodStatus) {
	st.Phase = corev1.PodRunning
	st.ContainerStatuses = []corev1.ContainerStatus{
		{Name: containerKeeper, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}},
		{Name: containerRun, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}},
	}
}

// TestRun_ImageMissing: a container waiting with ErrImageNeverPull (or
// ImagePullBackOff) ends the run with an error naming the image, and the
// run's objects are deleted.
func TestRun_ImageMissing(t *testing.T) {
	cfg := kubetest.ControlPlane(t)
	ns := kubetest.Namespace(t, cfg)
	cs := adminClient(t, cfg)
	r := newRuntime(t, cfg, Options{Namespace: ns, ImagePullPolicy: "Never"})
	for _, reason := range []string{"ErrImageNeverPull", "ImagePullBackOff"} {
		spec := testSpec(t, fakeImage)
		done, cancel := runAsync(r, spec)
		name := podName(spec.RunID)
		awaitPod(t, cs, ns, name, done)
		setStatus(t, cs, ns, name, func(st *corev1.PodStatus) {
			st.Phase = corev1.PodPending
			st.ContainerStatuses = []corev1.ContainerStatus{{Name: containerRun, Image: fakeImage,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "image not present"}}}}
		})
		res := <-done
		cancel()
		wantCode(t, res.err, errcode.Unsupported, fakeImage, reason)
		revokeGrants(t, cfg, ns)
		assertNothingLabelled(t, cs, ns)
	}
}

// TestRun_EvictedOrPastDeadlineBeforeStart: a pod the node failed (evicted,
// past its active deadline) is a typed error naming that.
func TestRun_EvictedOrPastDeadlineBeforeStart(t *testing.T) {
	cfg := kubetest.ControlPlane(t)
	ns := kubetest.Namespace(t, cfg)
	cs := adminClient(t, cfg)
	r := newRuntime(t, cfg, Options{Namespace: ns})
	for reason, code := range map[string]errcode.Code{"Evicted": errcode.Unavailable, "DeadlineExceeded": errcode.Timeout} {
		spec := testSpec(t, fakeImage)
		done, cancel := runAsync(r, spec)
		name := podName(spec.RunID)
		awaitPod(t, cs, ns, name, done)
		setStatus(t, cs, ns, name, func(st *corev1.PodStatus) {
			st.Phase, st.Reason, st.Message = corev1.PodFailed, reason, "The node was low on resource: ephemeral-storage."
		})
		res := <-done
		cancel()
		want := "evicted"
		if reason == "DeadlineExceeded" {
			want = "deadline"
		}
		wantCode(t, res.err, code, want)
		revokeGrants(t, cfg, ns)
		assertNothingLabelled(t, cs, ns)
	}
}

// createPod makes a run's objects directly (as Run would) and returns the
// pod's name.
func createPod(t testing.TB, r *Runtime, spec workspace.ContainerSpec) string {
	t.Helper()
	o, err := r.prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.create(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	return o.pod.Name
}

// TestAwaitEnd_OOMAndEviction: the end of a run as the kubelet reports
// it: OOMKilled is read from the run container's terminated state, an
// eviction while the run goes on is a typed error.
func TestAwaitEnd_OOMAndEviction(t *testing.T) {
	cfg := kubetest.ControlPlane(t)
	ns := kubetest.Namespace(t, cfg)
	cs := adminClient(t, cfg)
	r := newRuntime(t, cfg, Options{Namespace: ns})
	ctx := context.Background()

	name := createPod(t, r, testSpec(t, fakeImage))
	setStatus(t, cs, ns, name, runningStatus)
	endC := make(chan error, 1)
	var exit struct {
		code int
		oom  bool
	}
	go func() {
		p, err := r.awaitEnd(ctx, name)
		if err == nil {
			exit.code, exit.oom = exitOf(p)
		}
		endC <- err
	}()
	setStatus(t, cs, ns, name, func(st *corev1.PodStatus) {
		st.ContainerStatuses[1].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}
	})
	if err := <-endC; err != nil {
		t.Fatal(err)
	}
	if exit.code != 137 || !exit.oom {
		t.Fatalf("exit %d oom %v, want 137 and OOMKilled", exit.code, exit.oom)
	}

	name2 := createPod(t, r, testSpec(t, fakeImage))
	setStatus(t, cs, ns, name2, runningStatus)
	go func() {
		_, err := r.awaitEnd(ctx, name2)
		endC <- err
	}()
	setStatus(t, cs, ns, name2, func(st *corev1.PodStatus) {
		st.Phase, st.Reason, st.Message = corev1.PodFailed, "Evicted", "Pod ephemeral local storage usage exceeds the total limit of containers 8Gi."
	})
	wantCode(t, <-endC, errcode.Unavailable, "evicted", "ephemeral local storage")

	for _, n := range []string{name, name2} {
		if err := r.Remove(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	assertNothingLabelled(t, cs, ns)
}

// TestWatchPod_ReestablishedAfterServerEndsIt: the API server ends each
// watch after a second here; the watch is made again from the last
// version seen, and a change made after several such ends is still seen.
func TestWatchPod_ReestablishedAfterServerEndsIt(t *testing.T) {
	cfg := kubetest.ControlPlane(t)
	ns := kubetest.Namespace(t, cfg)
	cs := adminClient(t, cfg)
	r := newRuntime(t, cfg, Options{Namespace: ns})
	old := watchTimeout
	watchTimeout = 1
	t.Cleanup(func() { watchTimeout = old })

	name := createPod(t, r, testSpec(t, fakeImage))
	t.Cleanup(func() { _ = r.Remove(context.Background(), name) })
	setStatus(t, cs, ns, name, runningStatus)
	before := watchStarts.Load()
	endC := make(chan error, 1)
	go func() {
		_, err := r.awaitEnd(context.Background(), name)
		endC <- err
	}()
	waitFor(t, "three watches (the server ended two)", func() bool {
		select {
		case err := <-endC:
			t.Fatalf("awaitEnd returned before the run ended: %v", err)
		default:
		}
		return watchStarts.Load()-before >= 3
	})
	setStatus(t, cs, ns, name, func(st *corev1.PodStatus) {
		st.ContainerStatuses[1].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error"}}
	})
	select {
	case err := <-endC:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the end was not seen after the watch was re-established")
	}
}

// TestContainersAndRemove_LeaveNothingLabelled: Containers lists a store's
// runs (an orphaned Secret too), Remove deletes each run's objects and
// verifies them gone, and another store's runs stay.
func TestContainersAndRemove_LeaveNothingLabelled(t *testing.T) {
	cfg := kubetest.ControlPlane(t)
	ns := kubetest.Namespace(t, cfg)
	cs := adminClient(t, cfg)
	r := newRuntime(t, cfg, Options{Namespace: ns})
	ctx := context.Background()

	a1, a2, b := testSpec(t, fakeImage), testSpec(t, fakeImage), testSpec(t, fakeImage)
	a2.StoreKey, a2.WorkspaceID = a1.StoreKey, a1.WorkspaceID
	// An orphan: a crash after the Secret was made, before the pod.
	orphan := egressSpec(t, fakeImage)
	orphan.StoreKey = a1.StoreKey
	o, err := newRuntime(t, cfg, Options{Namespace: ns, EgressProxy: "10.1.2.3"}).prepare(orphan)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, o.secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []workspace.ContainerSpec{a1, a2, b} {
		createPod(t, r, s)
	}
	// A workspace's Secret of granted secrets is listed as kept.
	if err := r.PutSecrets(ctx, a1.StoreKey, a1.WorkspaceID, map[string]string{"TOKEN": "s3cret-value"}); err != nil {
		t.Fatal(err)
	}
	list, err := r.Containers(ctx, a1.StoreKey)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]workspace.ContainerInfo{}
	for _, c := range list {
		got[c.ID] = c
	}
	kept := got[wsSecretName(a1.WorkspaceID)]
	if len(got) != 4 || got[podName(a1.RunID)].WorkspaceID != a1.WorkspaceID || got[podName(a2.RunID)].RunID != a2.RunID ||
		got[podName(orphan.RunID)].State != "orphaned" || got[podName(a1.RunID)].State != "pending" || got[podName(a1.RunID)].Kept ||
		!kept.Kept || kept.WorkspaceID != a1.WorkspaceID || kept.RunID != "" || kept.State != "kept" {
		t.Fatalf("Containers(store a): %+v", list)
	}
	all, err := r.Containers(ctx, "")
	if err != nil || len(all) != 5 {
		t.Fatalf("Containers(all): %+v %v", all, err)
	}
	for _, c := range list {
		if err := r.Remove(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
	}
	left, err := r.Containers(ctx, a1.StoreKey)
	if err != nil || len(left) != 0 {
		t.Fatalf("after Remove: %+v %v", left, err)
	}
	if rest, _ := r.Containers(ctx, b.StoreKey); len(rest) != 1 {
		t.Fatalf("another store's run was touched: %+v", rest)
	}
	if err := r.Remove(ctx, podName(b.RunID)); err != nil {
		t.Fatal(err)
	}
	assertNothingLabelled(t, cs, ns)
	wantCode(t, r.Remove(ctx, "kube-system-thing"), errcode.InvalidArgument)
}
