package gateway

import (
	"net/http"
	"strings"
	"testing"
)

func startHealthServer(t *testing.T) (*Server, string) {
	t.Helper()
	tok, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Listen(Options{Token: tok, AppVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Shutdown(t.Context()) })
	return s, tok
}

func healthRequest(t *testing.T, s *Server, mutate func(*http.Request)) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+s.Addr()+"/v1/health", nil)
	if err != nil {
		t.Fatal(err)
	}
	mutate(req)
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestServer_Health_Table(t *testing.T) {
	s, tok := startHealthServer(t)
	port := s.Addr()[strings.LastIndex(s.Addr(), ":"):]
	for _, tc := range []struct {
		name   string
		mutate func(*http.Request)
		want   int
	}{
		{"with token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }, 200},
		{"no token", func(r *http.Request) {}, 401},
		{"wrong token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+strings.Repeat("0", 64)) }, 401},
		{"basic auth", func(r *http.Request) { r.SetBasicAuth("x", tok) }, 401},
		{"rebinding host", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+tok)
			r.Host = "attacker.example" + port
		}, 403},
		{"localhost name", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+tok)
			r.Host = "localhost" + port
		}, 403},
		{"browser origin", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+tok)
			r.Header.Set("Origin", "http://"+s.Addr())
		}, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := healthRequest(t, s, tc.mutate); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestClient_Health_ThroughEndpointFile(t *testing.T) {
	s, tok := startHealthServer(t)
	path := t.TempDir() + "/sluice/gateway.json"
	if err := WriteEndpoint(path, Endpoint{Addr: s.Addr(), Token: tok, PID: 1, AppVersion: "test"}); err != nil {
		t.Fatal(err)
	}
	c, err := NewClientFromEndpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Health(t.Context())
	if err != nil || h.Status != "ok" || h.AppVersion != "test" || h.API != APIVersion {
		t.Fatalf("health: %+v %v", h, err)
	}
}

func TestListen_NonLoopback_Refused(t *testing.T) {
	tok, _ := NewToken()
	for _, addr := range []string{"0.0.0.0:0", ":0", "localhost:0", "192.0.2.10:0", "[::]:0"} {
		if s, err := Listen(Options{Addr: addr, Token: tok}); err == nil {
			s.Shutdown(t.Context())
			t.Errorf("Listen(%q): want an error", addr)
		}
	}
}
