package app

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/sluicehq/sluice/core/gateway"
)

var testAssets = fstest.MapFS{"index.html": {Data: []byte("<!doctype html><title>Sluice</title>")}}

func startWeb(t *testing.T) (*App, *Web, string) {
	t.Helper()
	a := startApp(t)
	w, token, err := NewWeb(a, testAssets, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("NewWeb: %v", err)
	}
	go w.Serve()
	t.Cleanup(func() { w.Shutdown(t.Context()) })
	return a, w, token
}

func newBrowserClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

func get(t *testing.T, c *http.Client, url string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	return do(t, c, http.MethodGet, url, hdr)
}

func do(t *testing.T, c *http.Client, method, url string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestWeb_Login_OpensSessionOnce(t *testing.T) {
	_, w, token := startWeb(t)
	base := "http://" + w.Addr()
	c := newBrowserClient(t)

	resp, _ := get(t, c, base+"/api/status", nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status without session: got %d, want 401", resp.StatusCode)
	}
	resp, body := get(t, c, w.LoginURL(token), nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "<title>Sluice</title>") {
		t.Fatalf("login: got %d %q, want the UI after a redirect", resp.StatusCode, body)
	}
	var setCookie string
	for _, r := range resp.Request.Response.Header.Values("Set-Cookie") {
		setCookie = r
	}
	for _, want := range []string{"HttpOnly", "SameSite=Strict", sessionCookie + "="} {
		if !strings.Contains(setCookie, want) {
			t.Errorf("session cookie %q lacks %q", setCookie, want)
		}
	}
	resp, body = get(t, c, base+"/api/status", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status with session: got %d %s", resp.StatusCode, body)
	}
	var st Status
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.UI != "web" || st.Pending != 0 {
		t.Fatalf("status body %q: %+v %v", body, st, err)
	}

	// The same login token a second time, from another browser: refused,
	// with a page that says how to get a new link.
	other := newBrowserClient(t)
	resp, body = get(t, other, w.LoginURL(token), nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, " login</code></pre>") {
		t.Fatalf("reused login token: got %d %q, want 401 with the recovery page", resp.StatusCode, body)
	}
	resp, _ = get(t, other, base+"/api/status", nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status after refused login: got %d, want 401", resp.StatusCode)
	}
}

func TestWeb_StateChange_RequiresCSRF(t *testing.T) {
	_, w, token := startWeb(t)
	base := "http://" + w.Addr()
	c := newBrowserClient(t)
	get(t, c, w.LoginURL(token), nil)

	// Every state change, with a session but without the CSRF header.
	for _, route := range apiRoutes(t) {
		if route.method != http.MethodPost {
			continue
		}
		resp, _ := do(t, c, route.method, base+route.path, nil)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s without CSRF header: got %d, want 403", route.method, route.path, resp.StatusCode)
		}
	}
	resp, _ := do(t, c, http.MethodPost, base+"/api/ready", nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("POST without CSRF header: got %d, want 403", resp.StatusCode)
	}
	resp, _ = do(t, c, http.MethodPost, base+"/api/ready", map[string]string{csrfHeader: "wrong"})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("POST with wrong CSRF: got %d, want 403", resp.StatusCode)
	}
	_, body := get(t, c, base+"/api/session", nil)
	var s struct{ CSRF string }
	if err := json.Unmarshal([]byte(body), &s); err != nil || len(s.CSRF) < 32 {
		t.Fatalf("session body %q: %v", body, err)
	}
	resp, body = do(t, c, http.MethodPost, base+"/api/ready", map[string]string{csrfHeader: s.CSRF})
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(body) != "true" {
		t.Fatalf("POST with CSRF: got %d %q", resp.StatusCode, body)
	}
}

// apiRoutes lists every "METHOD /api/…" pattern that the server
// registers: the UI's route table, and those web.go registers by hand
// (read from its source) so that a new route cannot be forgotten here.
func apiRoutes(t *testing.T) []struct{ method, path string } {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "web.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []struct{ method, path string }
	for _, rt := range uiRoutes {
		out = append(out, struct{ method, path string }{rt.Verb, strings.ReplaceAll(rt.Path, "{id}", "00000000-0000-4000-8000-000000000000")})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "HandleFunc" {
			return true
		}
		lit, ok := call.Args[0].(*ast.BasicLit)
		if !ok {
			return true
		}
		pattern, _ := strconv.Unquote(lit.Value)
		method, path, found := strings.Cut(pattern, " ")
		if found && strings.HasPrefix(path, "/api/") {
			out = append(out, struct{ method, path string }{method, strings.ReplaceAll(path, "{id}", "00000000-0000-4000-8000-000000000000")})
		}
		return true
	})
	if len(out) < len(uiRoutes)+3 {
		t.Fatalf("found only %d API routes in web.go; the parser is looking in the wrong place", len(out))
	}
	return out
}

func TestWeb_GatewayToken_OpensNothing(t *testing.T) {
	a, w, _ := startWeb(t)
	ep, err := gateway.ReadEndpoint(a.cfg.GatewayFile())
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + w.Addr()
	c := &http.Client{}
	for _, route := range apiRoutes(t) {
		resp, _ := do(t, c, route.method, base+route.path, map[string]string{
			"Authorization": "Bearer " + ep.Token,
			"Cookie":        sessionCookie + "=" + ep.Token,
			csrfHeader:      ep.Token,
		})
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s with the gateway token: got %d, want 401", route.method, route.path, resp.StatusCode)
		}
	}
}

func TestWeb_ForeignHost_Refused(t *testing.T) {
	_, w, token := startWeb(t)
	c := newBrowserClient(t)
	for _, host := range []string{"evil.example:80", "localhost" + w.Addr()[strings.LastIndex(w.Addr(), ":"):]} {
		resp, _ := get(t, c, "http://"+w.Addr()+"/login?token="+token, map[string]string{"Host": host})
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("Host %q: got %d, want 403", host, resp.StatusCode)
		}
	}
	// The token was not consumed by the refused requests.
	resp, _ := get(t, c, w.LoginURL(token), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login after refused hosts: got %d, want 200", resp.StatusCode)
	}
}

func TestNewWeb_NonLoopback_Refused(t *testing.T) {
	a := startApp(t)
	for _, addr := range []string{"0.0.0.0:0", ":0", "example.com:80", "localhost:0", "192.0.2.1:0"} {
		if _, _, err := NewWeb(a, testAssets, addr); err == nil {
			t.Errorf("NewWeb(%q): want an error", addr)
		}
	}
}

func TestStart_GatewayFilePrivate(t *testing.T) {
	a := startApp(t)
	st, err := os.Stat(a.cfg.GatewayFile())
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("gateway.json mode %04o, want 0600", st.Mode().Perm())
	}
	for _, d := range []string{a.cfg.ConfigDir, a.cfg.StateDir} {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o700 {
			t.Errorf("%s mode %04o, want 0700", d, st.Mode().Perm())
		}
	}
	c, err := gateway.NewClientFromEndpoint(a.cfg.GatewayFile())
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Health(t.Context())
	if err != nil || h.Status != "ok" {
		t.Fatalf("health through gateway.json: %+v %v", h, err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := os.Stat(a.cfg.GatewayFile()); !os.IsNotExist(err) {
		t.Errorf("gateway.json still exists after Close: %v", err)
	}
}
