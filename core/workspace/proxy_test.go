package workspace

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// upstream is a host-side HTTP server that answers with its name.
func upstream(t *testing.T, name string) (hostport string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Proxy-Authorization") != "" {
			http.Error(w, "proxy credentials leaked upstream", http.StatusTeapot)
			return
		}
		fmt.Fprint(w, "hello from "+name)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

type denialLog struct {
	mu sync.Mutex
	ds []Denial
}

func (l *denialLog) add(d Denial) { l.mu.Lock(); l.ds = append(l.ds, d); l.mu.Unlock() }
func (l *denialLog) all() []Denial {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Denial(nil), l.ds...)
}

func proxyClient(proxyURL string, user, pass string) *http.Client {
	u, _ := url.Parse(proxyURL)
	u.User = url.UserPassword(user, pass)
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), DisableKeepAlives: true}}
}

func TestProxy_Allowlist(t *testing.T) {
	allowed := upstream(t, "allowed")
	other := upstream(t, "other")
	var log denialLog
	p := NewProxy(log.add)
	srv := httptest.NewServer(p)
	defer srv.Close()
	g, err := p.Register("ws1", "run1", []string{allowed})
	if err != nil {
		t.Fatal(err)
	}
	user, pass := g.Credentials()
	c := proxyClient(srv.URL, user, pass)

	get := func(c *http.Client, target string) (int, string) {
		t.Helper()
		resp, err := c.Get("http://" + target + "/x")
		if err != nil {
			t.Fatalf("GET %s: %v", target, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(c, allowed); code != 200 || body != "hello from allowed" {
		t.Fatalf("allowed host: %d %q", code, body)
	}
	if code, body := get(c, other); code != http.StatusForbidden || !strings.Contains(body, "egress_denied") {
		t.Fatalf("other host: %d %q, want 403 egress_denied", code, body)
	}
	// Same host, another port: exact host:port matching.
	host, _, _ := net.SplitHostPort(allowed)
	if code, _ := get(c, net.JoinHostPort(host, "1")); code != http.StatusForbidden {
		t.Fatalf("other port: %d, want 403", code)
	}
	// Wrong or missing credentials.
	if code, _ := get(proxyClient(srv.URL, user, "wrong"), allowed); code != http.StatusProxyAuthRequired {
		t.Fatalf("wrong token: %d, want 407", code)
	}
	if code, _ := get(proxyClient(srv.URL, "ws2", pass), allowed); code != http.StatusProxyAuthRequired {
		t.Fatalf("token of another workspace: %d, want 407", code)
	}

	// CONNECT tunnels follow the same list.
	if code := connect(t, srv.URL, user, pass, allowed); code != 200 {
		t.Fatalf("CONNECT allowed: %d", code)
	}
	if code := connect(t, srv.URL, user, pass, other); code != http.StatusForbidden {
		t.Fatalf("CONNECT other: %d, want 403", code)
	}

	// A direct (non-proxy) request is refused.
	req, _ := http.NewRequest("GET", srv.URL+"/", nil)
	req.SetBasicAuth(user, pass)
	req.Header.Set("Proxy-Authorization", req.Header.Get("Authorization"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("origin-form request: %d, want 403", resp.StatusCode)
	}

	denied := g.Denials()
	if len(denied) != 4 {
		t.Fatalf("denials recorded for the run: %+v", denied)
	}
	if denied[0].Host != other || denied[0].WorkspaceID != "ws1" || denied[0].RunID != "run1" {
		t.Fatalf("first denial %+v", denied[0])
	}
	if n := len(log.all()); n != 6 { // 4 of the run + 2 without valid credentials
		t.Fatalf("OnDeny saw %d denials: %+v", n, log.all())
	}

	// After the run, its credentials are worthless.
	g.Revoke()
	if code, _ := get(c, allowed); code != http.StatusProxyAuthRequired {
		t.Fatalf("after revoke: %d, want 407", code)
	}
}

// connect sends a CONNECT for target and, when it is accepted, speaks
// HTTP through the tunnel.
func connect(t *testing.T, proxyURL, user, pass, target string) int {
	t.Helper()
	u, _ := url.Parse(proxyURL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := &http.Request{Method: "CONNECT", URL: &url.URL{Opaque: target}, Host: target, Header: http.Header{}}
	req.SetBasicAuth(user, pass)
	req.Header.Set("Proxy-Authorization", req.Header.Get("Authorization"))
	req.Header.Del("Authorization")
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		return resp.StatusCode
	}
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target)
	inner, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("through the tunnel: %v", err)
	}
	b, _ := io.ReadAll(inner.Body)
	if !strings.HasPrefix(string(b), "hello from") {
		t.Fatalf("through the tunnel: %q", b)
	}
	return 200
}

func TestNormalizeEgress(t *testing.T) {
	good, err := NormalizeEgress([]string{"Example.COM", "api.example.com:8443", "127.0.0.1:9000", "[::1]:80", "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(good, ",") != "example.com,api.example.com:8443,127.0.0.1:9000,[::1]:80" {
		t.Fatalf("normalized: %v", good)
	}
	for _, bad := range []string{"", "*.example.com", "http://example.com", "example.com/path", "user@example.com", "example.com:0", "example.com:99999", "-x.com", "exa mple.com"} {
		if _, err := NormalizeEgress([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
