package sidecar

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/core/gateway"
)

// TestGatewayClients_OneConnectionUntilTheEndpointChanges: an agent's
// calls to the app go over one kept-alive connection while gateway.json
// names the same address and token; a new token (a restarted app) makes
// a new client.
func TestGatewayClients_OneConnectionUntilTheEndpointChanges(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("{}"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "sluice", "gateway.json")
	write := func(token string) {
		if err := gateway.WriteEndpoint(path, gateway.Endpoint{Addr: srv.Listener.Addr().String(), Token: token}); err != nil {
			t.Fatal(err)
		}
	}
	write("first")
	g := &gatewayClients{}
	var first *gateway.Client
	for range 3 {
		c, err := g.client(path, "")
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = c
		}
		if err := c.Do(context.Background(), http.MethodGet, "/v1/health", nil, &struct{}{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("three calls opened %d connections to the app, want 1", n)
	}
	write("second")
	c, err := g.client(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if c == first {
		t.Fatal("a new token in gateway.json kept the old client")
	}
	if c, err := g.client(path, "session-token"); err != nil || c == first {
		t.Fatalf("a session's own token: %v, same client %v", err, c == first)
	}
}
