package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/core/workspace/kube/kubetest"
)

// faultProxy stands between the runtime and a real API server and fails
// the first request of each kind it was told to, the way a loaded or
// restarting server does; everything else passes through unchanged.
type faultProxy struct {
	mu     sync.Mutex
	faults map[string]func(w http.ResponseWriter)
	hit    map[string]int
}

func status(code int, reason string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"injected","reason":"` + reason + `","code":` + strconv.Itoa(code) + `}`))
	}
}

// dropConnection closes the connection without an answer.
func dropConnection(w http.ResponseWriter) {
	c, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		c.Close()
	}
}

func (f *faultProxy) key(r *http.Request) string {
	parts := strings.Split(r.URL.Path, "/")
	res := parts[len(parts)-1]
	if res != "exec" && res != "attach" &&
		(r.Method == http.MethodDelete || strings.Contains(r.URL.Path, "/pods/") || strings.Contains(r.URL.Path, "/networkpolicies/")) {
		res = parts[len(parts)-2]
	}
	verb := r.Method
	if r.URL.Query().Get("watch") == "true" {
		verb = "WATCH"
	}
	return verb + " " + res
}

func newFaultProxy(t *testing.T, admin *rest.Config, faults map[string]func(http.ResponseWriter)) (*faultProxy, *rest.Config) {
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
	rp.FlushInterval = -1
	f := &faultProxy{faults: faults, hit: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := f.key(r)
		f.mu.Lock()
		fault := f.faults[k]
		if fault != nil {
			delete(f.faults, k)
			f.hit[k]++
		}
		f.mu.Unlock()
		if fault != nil {
			fault(w)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return f, &rest.Config{Host: srv.URL}
}

// TestFaults_RetriedAndRelisted: a 503 on the pod's create, a dropped
// connection on the NetworkPolicy's create and a 500 on the pod's delete
// are retried; a watch answered 410 Gone (its version too old) starts over
// from a fresh list and still sees the run's end.
func TestFaults_RetriedAndRelisted(t *testing.T) {
	admin := kubetest.ControlPlane(t)
	ns := kubetest.Namespace(t, admin)
	cs := adminClient(t, admin)
	f, cfg := newFaultProxy(t, admin, map[string]func(http.ResponseWriter){
		"POST pods":            status(503, "ServiceUnavailable"),
		"POST networkpolicies": dropConnection,
		"WATCH pods":           status(410, "Expired"),
		"DELETE pods":          status(500, "InternalError"),
	})
	r := newRuntime(t, cfg, Options{Namespace: ns})
	ctx := context.Background()
	name := createPod(t, r, testSpec(t, fakeImage))
	setStatus(t, cs, ns, name, runningStatus)
	endC := make(chan error, 1)
	go func() {
		_, err := r.awaitEnd(ctx, name)
		endC <- err
	}()
	waitFor(t, "the watch's 410", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.hit["WATCH pods"] == 1
	})
	setStatus(t, cs, ns, name, func(st *corev1.PodStatus) {
		st.ContainerStatuses[1].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
	})
	if err := <-endC; err != nil {
		t.Fatalf("the run's end after a 410: %v", err)
	}
	if err := r.Remove(ctx, name); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, n := range map[string]int{"POST pods": 1, "POST networkpolicies": 1, "WATCH pods": 1, "DELETE pods": 1} {
		if f.hit[k] != n {
			t.Errorf("fault %q hit %d times, want %d (left: %v)", k, f.hit[k], n, f.faults)
		}
	}
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
		t.Fatal("the pod is still there")
	}
	assertNothingLabelled(t, cs, ns)
}

// TestNodeFaults_CopyStreamRetried: the copy into the pod whose stream
// breaks off (the connection dropped) is made again, and the run goes on.
func TestNodeFaults_CopyStreamRetried(t *testing.T) {
	e := onNode(t)
	c := kubetest.Node(t)
	f, cfg := newFaultProxy(t, c.Config, map[string]func(http.ResponseWriter){"GET exec": dropConnection})
	r := newRuntime(t, cfg, Options{Namespace: e.ns, ImagePullPolicy: "Never"})
	spec := e.spec(t, "cat", "a.txt")
	var out lineWriter
	st, err := r.Run(context.Background(), spec, &out, &lineWriter{})
	if err != nil || st.ExitCode != 0 || out.String() != "a\n" {
		t.Fatalf("%+v %v %q", st, err, out.String())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hit["GET exec"] != 1 {
		t.Fatalf("the fault was hit %d times", f.hit["GET exec"])
	}
}
