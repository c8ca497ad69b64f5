package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/core/workspace/kube/kubetest"
)

// TestNodeFaults_TimeoutBeforeTheGateOpened: the attach to the run
// container is held back (as on a loaded API server) until either a kill
// is exec'd into the pod or the runtime gives the attach up. The run's
// time runs out before its gate opened: the program never starts, the run
// is reported timed out (not failed), and the pod is deleted.
func TestNodeFaults_TimeoutBeforeTheGateOpened(t *testing.T) {
	e := onNode(t)
	c := kubetest.Node(t)
	tr, err := rest.TransportFor(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = tr
	rp.FlushInterval = -1
	killed, ended := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	attaches := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch {
		case strings.HasSuffix(req.URL.Path, "/exec") && slices.Contains(req.URL.Query()["command"], "kill -9 -1"):
			once.Do(func() { close(killed) })
		case strings.HasSuffix(req.URL.Path, "/attach"):
			mu.Lock()
			attaches++
			mu.Unlock()
			select {
			case <-killed:
			case <-req.Context().Done():
				return
			case <-ended:
				// The runtime gave the attach up; a dialer that does not
				// close its connection on cancel still waits for an answer.
				status(503, "ServiceUnavailable")(w)
				return
			}
		}
		rp.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	var endOnce sync.Once
	endHeld := func() { endOnce.Do(func() { close(ended) }) }
	t.Cleanup(endHeld)
	r := newRuntime(t, &rest.Config{Host: srv.URL}, Options{Namespace: e.ns, ImagePullPolicy: "Never"})
	spec := e.spec(t, "sh", "-c", "echo started; sleep 600")
	spec.Limits.Timeout = time.Second
	var out lineWriter
	st, err := r.Run(context.Background(), spec, &out, &lineWriter{})
	endHeld()
	if err != nil || !st.TimedOut || st.ExitCode == 0 {
		t.Fatalf("%+v %v", st, err)
	}
	if out.String() != "" {
		t.Fatalf("the program ran: %q", out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if attaches == 0 {
		t.Fatal("the run never attached")
	}
}
