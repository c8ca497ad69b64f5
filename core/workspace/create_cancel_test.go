package workspace

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/docker/docker/client"
)

// cancelDuringCreate lets a container create reach the Engine, then ends
// the caller's context before the answer comes back: the Engine has made
// the container, and a caller whose request was cancelled never learns
// its id.
type cancelDuringCreate struct {
	next   http.RoundTripper
	armed  atomic.Bool
	cancel context.CancelFunc
}

func (c *cancelDuringCreate) RoundTrip(req *http.Request) (*http.Response, error) {
	if !c.armed.Load() || req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/containers/create") {
		return c.next.RoundTrip(req)
	}
	c.armed.Store(false)
	resp, err := c.next.RoundTrip(req.WithContext(context.WithoutCancel(req.Context())))
	c.cancel()
	if req.Context().Err() != nil {
		if resp != nil {
			resp.Body.Close()
		}
		return nil, req.Context().Err()
	}
	return resp, err
}

// TestRun_CancelledDuringCreate_LeavesNoContainer: a run cancelled while
// the Engine creates its container (a workspace destroyed, an agent gone)
// leaves no container behind: the create is not cancelled with the run,
// so its container is known and removed.
func TestRun_CancelledDuringCreate_LeavesNoContainer(t *testing.T) {
	base := needDocker(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := &cancelDuringCreate{next: base.Client().HTTPClient().Transport, cancel: cancel}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation(), client.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatal(err)
	}
	d := TestEngineWithClient(cli)
	m := newManager(t, true, func(o *Options) { o.Runtime = d })
	w, err := m.Create(context.Background(), CreateRequest{Source: Source{Kind: SourceFresh}})
	if err != nil {
		t.Fatal(err)
	}
	tr.armed.Store(true)
	if _, err := m.Run(ctx, w.ID, RunRequest{Argv: []string{"true"}}); err == nil {
		t.Fatal("a run cancelled during its create reported success")
	}
	if tr.armed.Load() {
		t.Fatal("the run made no container create")
	}
	left, err := base.Containers(context.Background(), m.StoreKey())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range left {
		if c.WorkspaceID == w.ID {
			t.Errorf("container %s (%s) was left behind by the cancelled run", c.ID, c.State)
		}
	}
}
