package gateway

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
)

func TestClient_New_RefusesNonLoopbackLiterals(t *testing.T) {
	for _, addr := range []string{
		"localhost:8080",         // a name a resolver could answer with anything
		"https://127.0.0.1:8080", // a scheme
		"http://127.0.0.1:8080",  // a scheme
		"10.0.0.1:8080",          // not loopback
		"192.168.0.10:80",        // not loopback
		"0.0.0.0:80",             // unspecified
		"127.0.0.1:8080/v1",      // a path
		"127.0.0.1",              // no port
		"[::1]",                  // no port
		"127.0.0.1:0",            // port 0
		"127.0.0.1:http",         // named port
		"[fe80::1%lo]:80",        // zone
		"[::ffff:10.0.0.1]:80",   // mapped non-loopback
		"user@127.0.0.1:80",      // userinfo
		"",                       // nothing
		"127.0.0.1:8080?x=1",     // query
	} {
		if _, err := NewClient(addr, "token"); !errors.Is(err, ErrBadAddr) {
			t.Errorf("NewClient(%q) = %v, want ErrBadAddr", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:8080", "127.1.2.3:1", "[::1]:65535"} {
		if _, err := NewClient(addr, "token"); err != nil {
			t.Errorf("NewClient(%q) = %v", addr, err)
		}
	}
}

func TestClient_IgnoresProxyVariables(t *testing.T) {
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"status":"ok","appVersion":"proxy","api":1}`))
	}))
	defer proxy.Close()
	for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		t.Setenv(v, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	s, tok := startHealthServer(t)
	c, err := NewClient(s.Addr(), tok)
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Health(t.Context())
	if err != nil || h.AppVersion != "test" {
		t.Fatalf("Health = %+v, %v", h, err)
	}
	if n := proxied.Load(); n != 0 {
		t.Fatalf("the proxy saw %d requests", n)
	}
}

func TestClient_NeverFollowsRedirects(t *testing.T) {
	var followed atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		followed.Add(1)
	}))
	defer target.Close()
	for _, code := range []int{301, 302, 303, 307, 308} {
		redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/v1/health", code)
		}))
		c, err := NewClient(strings.TrimPrefix(redirector.URL, "http://"), "token")
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Health(t.Context())
		redirector.Close()
		var apiErr *APIError
		if err == nil || (!errors.As(err, &apiErr) && !errors.Is(err, ErrUnavailable)) {
			t.Fatalf("%d: Health = %v, want an error", code, err)
		}
	}
	if n := followed.Load(); n != 0 {
		t.Fatalf("the client followed %d redirects", n)
	}
}

// clientOfNothing is a client for a loopback port nothing listens on.
func clientOfNothing(t *testing.T) *Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := NewClient(addr, "token")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClient_GatewayDown_IsUnavailable(t *testing.T) {
	c := clientOfNothing(t)
	if _, err := c.GetProposal(t.Context(), "agent-a", "p1"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("GetProposal with the app down = %v, want ErrUnavailable", err)
	}
	if _, err := c.Health(t.Context()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Health with the app down = %v", err)
	}
}

// The client refuses a bad id or agent itself: it points at a port
// nothing listens on, so anything it sent would come back unavailable.
func TestClient_ValidatesIDsBeforeSending(t *testing.T) {
	c := clientOfNothing(t)
	for _, tc := range []struct{ agent, id string }{
		{"agent-a", "../x"}, {"agent-a", "a/b"}, {"agent-a", "a?b"}, {"agent-a", "a b"}, {"agent-a", ""}, {"bad agent", "p1"},
	} {
		_, err := c.GetProposal(t.Context(), tc.agent, tc.id)
		var apiErr *APIError
		if !errors.As(err, &apiErr) || apiErr.Detail.Code != errcode.InvalidArgument {
			t.Errorf("GetProposal(%q, %q) = %v, want invalid_argument without a request", tc.agent, tc.id, err)
		}
	}
}

// TestClient_Do_AnswerLostOnlyAfterTheRequestWasSent: a connection that
// breaks after the request was sent is ErrAnswerLost (the app may have
// acted on it); a refused dial is unavailable without it (the app never
// saw the request). Both stay ErrUnavailable.
func TestClient_Do_AnswerLostOnlyAfterTheRequestWasSent(t *testing.T) {
	var seen atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	c, err := NewClient(srv.Listener.Addr().String(), "t")
	if err != nil {
		t.Fatal(err)
	}
	err = c.Do(t.Context(), http.MethodPost, "/v1/proposals", strings.NewReader("{}"), nil)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrAnswerLost) || seen.Load() == 0 {
		t.Fatalf("connection closed after the request: %v (seen %d); want unavailable and answer lost", err, seen.Load())
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err = NewClient(addr, "t")
	if err != nil {
		t.Fatal(err)
	}
	err = c.Do(t.Context(), http.MethodPost, "/v1/proposals", strings.NewReader("{}"), nil)
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrAnswerLost) {
		t.Fatalf("refused dial: %v; want unavailable, not answer lost", err)
	}
}
