package app

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// recoveryPage reports whether an answer is the page a dead login link
// opens: HTML, naming the login command of the binary that serves it
// (this test binary when the server runs in this process).
func recoveryPage(resp *http.Response, body string) bool {
	return recoveryPageNaming(resp, body, loginCommand())
}

func recoveryPageNaming(resp *http.Response, body, command string) bool {
	return resp.StatusCode == http.StatusUnauthorized &&
		strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") &&
		strings.Contains(body, `id="login-expired"`) && strings.Contains(body, "<pre><code>"+html.EscapeString(command)+"</code></pre>")
}

func TestWeb_LoginLink_UsedStaleOrWrongShowsRecoveryPage(t *testing.T) {
	_, w, token := startWeb(t)
	base := "http://" + w.Addr()

	c := newBrowserClient(t)
	if resp, body := get(t, c, w.LoginURL(token), nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("first use: %d %q", resp.StatusCode, body)
	}
	// The browser that used the link opens it again: it has a session, so
	// it just goes on to the UI.
	if resp, body := get(t, c, w.LoginURL(token), nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, "<title>Sluice</title>") {
		t.Fatalf("the used link in the browser that used it: %d %q", resp.StatusCode, body)
	}

	stale := w.NewLoginToken()
	w.mu.Lock()
	for h := range w.logins {
		w.logins[h] = time.Now().Add(-time.Second)
	}
	w.mu.Unlock()
	for name, url := range map[string]string{
		"used":  w.LoginURL(token),
		"stale": w.LoginURL(stale),
		"wrong": w.LoginURL(strings.Repeat("ab", 32)),
		"empty": base + "/login",
	} {
		other := newBrowserClient(t)
		resp, body := get(t, other, url, nil)
		if !recoveryPage(resp, body) {
			t.Errorf("%s link: got %d %s %q, want the recovery page", name, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if resp, _ := get(t, other, base+"/api/status", nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s link opened a session: %d", name, resp.StatusCode)
		}
	}
}

func TestWeb_LoginNew_MintsOneTimeLinksForTheControlSecretOnly(t *testing.T) {
	a, w, _ := startWeb(t)
	path := UIEndpointFile(a.cfg)
	if err := w.Publish(path); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("web.json: %v %v", st, err)
	}
	base := "http://" + w.Addr()
	plain := &http.Client{}
	for name, hdr := range map[string]map[string]string{
		"no token":    nil,
		"wrong token": {"Authorization": "Bearer " + strings.Repeat("0", 64)},
		"from a page": {"Authorization": "Bearer " + w.control, "Origin": base},
		"fetch site":  {"Authorization": "Bearer " + w.control, "Sec-Fetch-Site": "same-origin"},
	} {
		resp, body := do(t, plain, http.MethodPost, base+"/login/new", hdr)
		if resp.StatusCode == http.StatusOK || strings.Contains(body, "/login?token=") {
			t.Errorf("%s: got %d %q, want a refusal", name, resp.StatusCode, body)
		}
	}

	url, err := requestLoginLink(t.Context(), a.cfg)
	if err != nil {
		t.Fatalf("requestLoginLink: %v", err)
	}
	url2, err := requestLoginLink(t.Context(), a.cfg)
	if err != nil || url2 == url {
		t.Fatalf("a second link: %q %v (first %q)", url2, err, url)
	}
	// Both work, each once.
	for _, u := range []string{url2, url} {
		c := newBrowserClient(t)
		if resp, body := get(t, c, u, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("minted link: %d %q", resp.StatusCode, body)
		}
		if resp, _ := get(t, c, base+"/api/status", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("status after minted link: %d", resp.StatusCode)
		}
		if resp, body := get(t, newBrowserClient(t), u, nil); !recoveryPage(resp, body) {
			t.Fatalf("minted link used twice: %d %q", resp.StatusCode, body)
		}
	}

	w.Withdraw(path)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("web.json after Withdraw: %v", err)
	}
	// No web.json, and a desktop app (this one: its gateway answers).
	if _, err := requestLoginLink(t.Context(), a.cfg); err == nil || !strings.Contains(err.Error(), "desktop window") {
		t.Fatalf("login with only the gateway up: %v", err)
	}
}

func TestWeb_Sessions_SurviveARestart(t *testing.T) {
	a, w, token := startWeb(t)
	c := newBrowserClient(t)
	get(t, c, w.LoginURL(token), nil)
	resp, body := get(t, c, "http://"+w.Addr()+"/api/session", nil)
	var s1 struct{ CSRF string }
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &s1) != nil || s1.CSRF == "" {
		t.Fatalf("session: %d %q", resp.StatusCode, body)
	}
	b, err := os.ReadFile(sessionsFile(a.cfg))
	if err != nil {
		t.Fatal(err)
	}
	for _, ck := range c.Jar.Cookies(mustURL(t, "http://"+w.Addr())) {
		if strings.Contains(string(b), ck.Value) {
			t.Fatal("web-sessions.json holds the session id itself")
		}
	}
	addr := w.Addr()
	w.Shutdown(t.Context())

	w2, _, err := NewWeb(a, testAssets, addr)
	if err != nil {
		t.Fatalf("the same address again: %v", err)
	}
	go w2.Serve()
	t.Cleanup(func() { w2.Shutdown(t.Context()) })
	resp, body = get(t, c, "http://"+addr+"/api/session", nil)
	var s2 struct{ CSRF string }
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &s2) != nil || s2.CSRF != s1.CSRF {
		t.Fatalf("the session after a restart: %d %q (csrf before %q)", resp.StatusCode, body, s1.CSRF)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestWeb_LoginLink_HeadAndOtherMethodsDoNotConsumeIt: a HEAD (a mail
// scanner's or chat preview's probe) and any method other than GET on a
// login link open no session and leave the link usable: the person's GET
// afterwards still logs in.
func TestWeb_LoginLink_HeadAndOtherMethodsDoNotConsumeIt(t *testing.T) {
	_, w, token := startWeb(t)
	base := "http://" + w.Addr()
	probe := newBrowserClient(t)
	probe.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, m := range []string{http.MethodHead, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodOptions} {
		resp, _ := do(t, probe, m, w.LoginURL(token), nil)
		if resp.StatusCode >= 300 && resp.StatusCode < 400 || len(resp.Cookies()) != 0 {
			t.Errorf("%s on the login link: %d, cookies %v; want no session and no redirect into the UI", m, resp.StatusCode, resp.Cookies())
		}
	}
	if resp, _ := get(t, probe, base+"/api/status", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a probe of the login link opened a session: /api/status %d", resp.StatusCode)
	}
	c := newBrowserClient(t)
	if resp, body := get(t, c, w.LoginURL(token), nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, "<title>Sluice</title>") {
		t.Fatalf("GET after the probes: %d %q, want the UI", resp.StatusCode, body)
	}
	if resp, _ := get(t, c, base+"/api/status", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET after the probes opened no session: /api/status %d", resp.StatusCode)
	}
}
