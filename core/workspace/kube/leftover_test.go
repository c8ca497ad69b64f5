package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/core/errcode"
)

// TestRun_LeftoverSecretIsNotReused: a Secret of the run's name that is
// not the run's (left by an earlier run under the same run ID, holding
// other values) refuses the run, and stays as it was.
func TestRun_LeftoverSecretIsNotReused(t *testing.T) {
	p := newOnPlane(t, Options{EgressProxy: "10.1.2.3"})
	ns, cs, r := p.ns, p.cs, p.r
	spec := egressSpec(t, fakeImage)
	o, err := r.prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	left := o.secret.DeepCopy()
	left.Annotations[annotationNonce] = "an-earlier-run"
	left.Data = map[string][]byte{"HTTPS_PROXY": []byte("another-runs-value")}
	if _, err := cs.CoreV1().Secrets(ns).Create(context.Background(), left, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The deadline is a backstop: a run that took the Secret would wait
	// for a pod that never starts here.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = r.Run(ctx, spec, &limitBuffer{max: 1}, &limitBuffer{max: 1})
	wantCode(t, err, errcode.Conflict, "Secret", "not this run's")
	got, err := cs.CoreV1().Secrets(ns).Get(context.Background(), left.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the leftover Secret was deleted: %v", err)
	}
	if string(got.Data["HTTPS_PROXY"]) != "another-runs-value" {
		t.Fatalf("the leftover Secret changed: %q", got.Data["HTTPS_PROXY"])
	}
	if _, err := cs.CoreV1().Pods(ns).Get(context.Background(), left.Name, metav1.GetOptions{}); err == nil {
		t.Fatal("a pod was made for the run")
	}
}

// TestCreate_StoredPodOfARetriedCreateIsChecked: the pod's first create is
// stored (changed on its way, as a mutating webhook would) but answered
// 503; the retry finds it already there. It is the run's (its nonce), and
// is checked as stored: refused.
func TestCreate_StoredPodOfARetriedCreateIsChecked(t *testing.T) {
	p := newOnPlane(t, Options{})
	var once sync.Once
	r := newRuntime(t, proxiedConfig(t, p.cfg, func(w http.ResponseWriter, req *http.Request, upstream http.Handler) {
		first := false
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/pods") {
			once.Do(func() { first = true })
		}
		if !first {
			upstream.ServeHTTP(w, req)
			return
		}
		var pod corev1.Pod
		if !rewriteJSON(w, req, &pod, func() {
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}) {
			return
		}
		rec := httptest.NewRecorder()
		upstream.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			http.Error(w, "the first create was not stored: "+rec.Body.String(), http.StatusBadRequest)
			return
		}
		status(503, "ServiceUnavailable")(w)
	}), Options{Namespace: p.ns, EgressProxy: "10.1.2.3"})
	o, err := r.prepare(egressSpec(t, fakeImage))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := r.create(context.Background(), o)
	wantCode(t, err, errcode.Forbidden, "changed the run's pod", "emptyDir")
	if !ours.has("pods") || !ours.has("secrets") || !ours.has("networkpolicies") {
		t.Fatalf("the run's own objects are not all marked its: %v", ours)
	}
	if err := r.Remove(context.Background(), o.pod.Name); err != nil {
		t.Fatal(err)
	}
	assertNothingLabelled(t, p.cs, p.ns)
}

// TestCreate_RuntimeClassSchedulingIsAllowed: the API server merges the
// RuntimeClass's nodeSelector and tolerations into the stored pod; those,
// and only those, pass the check of the stored pod.
func TestCreate_RuntimeClassSchedulingIsAllowed(t *testing.T) {
	p := newOnPlane(t, Options{})
	cfg, ns, cs := p.cfg, p.ns, p.cs
	ctx := context.Background()
	rc := runtimeClass("sched-"+ns, "runsc")
	rc.Scheduling = &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "gvisor"},
		Tolerations: []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpEqual, Value: "gvisor", Effect: corev1.TaintEffectNoSchedule}}}
	if _, err := cs.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.NodeV1().RuntimeClasses().Delete(context.Background(), rc.Name, metav1.DeleteOptions{}) })
	r := newRuntime(t, cfg, Options{Namespace: ns, RuntimeClassName: rc.Name})
	o, err := r.prepare(testSpec(t, fakeImage))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.create(ctx, o); err != nil {
		t.Fatalf("the pod with its RuntimeClass's scheduling is refused: %v", err)
	}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, o.pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.NodeSelector["sandbox"] != "gvisor" || !needsScheduling(&pod.Spec) {
		t.Fatalf("the API server did not merge the RuntimeClass's scheduling: %v %v", pod.Spec.NodeSelector, pod.Spec.Tolerations)
	}
	if err := r.Remove(ctx, o.pod.Name); err != nil {
		t.Fatal(err)
	}
}
