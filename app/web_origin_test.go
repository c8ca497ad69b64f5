package app

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// loggedIn opens a session in c and returns its CSRF token.
func loggedIn(t *testing.T, w *Web, token string, c *http.Client) string {
	t.Helper()
	if resp, body := get(t, c, w.LoginURL(token), nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("login: %d %s", resp.StatusCode, body)
	}
	_, body := get(t, c, "http://"+w.Addr()+"/api/session", nil)
	var s struct{ CSRF string }
	if err := json.Unmarshal([]byte(body), &s); err != nil || s.CSRF == "" {
		t.Fatalf("session body %q: %v", body, err)
	}
	return s.CSRF
}

func postJSON(t *testing.T, c *http.Client, url, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// statusOf sends a request and reads the body only of a refusal: an
// accepted GET /api/events is a stream that never ends.
func statusOf(t *testing.T, c *http.Client, method, url string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		return resp.StatusCode, resp.Header.Get("Content-Type")
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// foreignHeaders are what a page other than the UI makes a browser send.
var foreignHeaders = []map[string]string{
	{"Origin": "http://evil.example"},
	{"Origin": "null"},
	{"Sec-Fetch-Site": "cross-site"},
	// Another port on 127.0.0.1 is the same site, not the same origin.
	{"Sec-Fetch-Site": "same-site"},
	{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
}

func TestWeb_ForeignOrigin_RefusedOnEveryRoute(t *testing.T) {
	_, w, token := startWeb(t)
	base := "http://" + w.Addr()
	c := newBrowserClient(t)
	csrf := loggedIn(t, w, token, c)

	for _, route := range apiRoutes(t) {
		for _, foreign := range foreignHeaders {
			hdr := map[string]string{csrfHeader: csrf}
			for k, v := range foreign {
				hdr[k] = v
			}
			status, body := statusOf(t, c, route.method, base+route.path, hdr)
			if status != http.StatusForbidden || !strings.Contains(body, `"forbidden"`) {
				t.Errorf("%s %s with %v, a session and its CSRF token: got %d %s, want 403 forbidden", route.method, route.path, foreign, status, body)
			}
		}
	}
}

func TestWeb_ForeignOrigin_StateChangeChangesNothing(t *testing.T) {
	a, w, token := startWeb(t)
	base := "http://" + w.Addr()
	c := newBrowserClient(t)
	csrf := loggedIn(t, w, token, c)
	dir := t.TempDir()
	b, _ := json.Marshal(map[string]string{"dir": dir})
	body := string(b)

	for _, foreign := range foreignHeaders {
		hdr := map[string]string{csrfHeader: csrf}
		for k, v := range foreign {
			hdr[k] = v
		}
		resp, out := postJSON(t, c, base+"/api/roots", body, hdr)
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("POST /api/roots with %v: got %d %s, want 403", foreign, resp.StatusCode, out)
		}
		s, err := (&API{app: a, kind: "web"}).Settings()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(s.AllowedRoots, dir) {
			t.Fatalf("POST /api/roots with %v was refused but added the root: %v", foreign, s.AllowedRoots)
		}
	}

	// The UI's own origin, as a browser sends it on its own POSTs, works.
	resp, out := postJSON(t, c, base+"/api/roots", body, map[string]string{
		csrfHeader: csrf, "Origin": base, "Sec-Fetch-Site": "same-origin",
	})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/roots from the UI's origin: got %d %s", resp.StatusCode, out)
	}
	var s SettingsView
	if err := json.Unmarshal([]byte(out), &s); err != nil || len(s.AllowedRoots) == 0 {
		t.Fatalf("settings after adding a root: %q %v", out, err)
	}
}

func TestWeb_ForeignOrigin_LoginTokenNotConsumed(t *testing.T) {
	_, w, token := startWeb(t)
	c := newBrowserClient(t)
	for _, foreign := range foreignHeaders {
		resp, _ := get(t, c, w.LoginURL(token), foreign)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("login with %v: got %d, want 403", foreign, resp.StatusCode)
		}
	}
	// A navigation the person starts (pasting the printed link) is "none".
	resp, _ := get(t, c, w.LoginURL(token), map[string]string{"Sec-Fetch-Site": "none"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login after refused foreign requests: got %d, want 200", resp.StatusCode)
	}
}
