package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
)

// loginTTL is how long a login link works if nobody opens it: long enough
// to copy it from a terminal into a browser, short enough that one found
// later in a scrollback or a shell history opens nothing.
const loginTTL = 15 * time.Minute

// maxSessions bounds the sessions kept (and persisted); the oldest go
// first.
const maxSessions = 32

// uiEndpoint is web.json: where a running `sluice serve` listens, and the
// secret with which `sluice login` asks it for a fresh login link. It sits
// beside gateway.json (0600 in the private config directory) and is
// withdrawn when the server stops.
type uiEndpoint struct {
	URL     string `json:"url"`
	PID     int    `json:"pid"`
	Control string `json:"control"`
}

// UIEndpointFile is where `sluice serve` publishes web.json.
func UIEndpointFile(cfg *config.Config) string { return filepath.Join(cfg.ConfigDir, "web.json") }

// Publish writes web.json so that `sluice login` finds this server.
func (w *Web) Publish(path string) error {
	b, err := json.MarshalIndent(uiEndpoint{URL: "http://" + w.Addr(), PID: os.Getpid(), Control: w.control}, "", "  ")
	if err != nil {
		return err
	}
	if err := config.EnsurePrivateDir(filepath.Dir(path)); err != nil {
		return err
	}
	return config.WriteFileAtomic(path, append(b, '\n'), 0o600)
}

// Withdraw removes web.json if it still names this server.
func (w *Web) Withdraw(path string) {
	if ep, err := readUIEndpoint(path); err == nil && ep.Control == w.control {
		os.Remove(path)
	}
}

func readUIEndpoint(path string) (uiEndpoint, error) {
	var ep uiEndpoint
	st, err := os.Lstat(path)
	if err != nil {
		return ep, err
	}
	if !st.Mode().IsRegular() || (config.PrivateModeEnforced && st.Mode().Perm()&0o077 != 0) || st.Size() > 16<<10 {
		return ep, fmt.Errorf("%s must be a private regular file (0600)", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ep, err
	}
	if err := json.Unmarshal(b, &ep); err != nil {
		return ep, fmt.Errorf("%s: %w", path, err)
	}
	return ep, nil
}

// NewLoginToken mints a single-use login token that works for loginTTL.
// Several may be outstanding: each `sluice login` adds one.
func (w *Web) NewLoginToken() string {
	token := randomHex(32)
	now := time.Now()
	w.mu.Lock()
	for h, exp := range w.logins {
		if now.After(exp) {
			delete(w.logins, h)
		}
	}
	w.logins[sha256.Sum256([]byte(token))] = now.Add(loginTTL)
	w.mu.Unlock()
	return token
}

// takeLogin consumes token if it is outstanding and fresh.
func (w *Web) takeLogin(token string) bool {
	if token == "" {
		return false
	}
	sum := sha256.Sum256([]byte(token))
	w.mu.Lock()
	defer w.mu.Unlock()
	exp, ok := w.logins[sum]
	if !ok {
		return false
	}
	// Single use: a token that leaked through history or a screen share
	// after the person logged in opens nothing.
	delete(w.logins, sum)
	return time.Now().Before(exp)
}

// loginProbe answers a request for a login link that is not a GET: the
// HEAD a mail scanner, chat preview or link checker sends before (or
// instead of) the person's click. It consumes nothing, opens no session
// and says nothing about the token, so the person's own GET still logs in.
func loginProbe(rw http.ResponseWriter) {
	rw.Header().Set("Allow", "GET")
	rw.Header().Set("Cache-Control", "no-store")
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.WriteHeader(http.StatusOK)
}

// newLoginLink answers `sluice login`: a fresh login URL, for a caller
// that holds the control secret from web.json. A browser never gets here:
// the route refuses any request that names a page (Origin,
// Sec-Fetch-Site), so only a program of the person's own can ask.
func (w *Web) newLoginLink(rw http.ResponseWriter, r *http.Request) {
	if _, ok := r.Header["Origin"]; ok {
		writeAPIError(rw, http.StatusForbidden, errcode.Forbidden, "not from a browser")
		return
	}
	if _, ok := r.Header["Sec-Fetch-Site"]; ok {
		writeAPIError(rw, http.StatusForbidden, errcode.Forbidden, "not from a browser")
		return
	}
	got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	gs, ws := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(w.control))
	if got == "" || subtle.ConstantTimeCompare(gs[:], ws[:]) != 1 {
		writeAPIError(rw, http.StatusUnauthorized, errcode.Unauthorized, "wrong control token")
		return
	}
	writeJSON(rw, http.StatusOK, map[string]any{"url": w.LoginURL(w.NewLoginToken()), "expiresInSeconds": int(loginTTL / time.Second)})
}

// loginRecovery is the page a used, stale or wrong login link opens: a
// person followed a link and needs to know what to do next, not a status
// code.
func (w *Web) loginRecovery(rw http.ResponseWriter) {
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(http.StatusUnauthorized)
	fmt.Fprintf(rw, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sluice · this login link no longer works</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#1b1f24;background:#fff}
code{background:#eef1f4;padding:.1rem .35rem;border-radius:4px;font-size:.95em}pre{background:#eef1f4;padding:.75rem 1rem;border-radius:6px}</style>
</head><body><main>
<h1 id="login-expired">This login link no longer works</h1>
<p>Each login link opens Sluice once, within %d minutes. This one was already used, has expired, or belongs to an earlier run of Sluice.</p>
<p>For a new link, run this in a terminal on this machine:</p>
<pre><code>%s</code></pre>
<p>It prints a fresh link for the Sluice that is serving at <code>%s</code>.</p>
</main></body></html>
`, int(loginTTL/time.Minute), html.EscapeString(loginCommand()), html.EscapeString("http://"+w.Addr()))
}

// persistedSession is one session as web-sessions.json keeps it: the
// session id only as its hash, so that the file opens nothing by itself.
type persistedSession struct {
	IDHash  string    `json:"idSha256"`
	CSRF    string    `json:"csrf"`
	Expires time.Time `json:"expires"`
}

// sessionsFile keeps the browser sessions across restarts, so that a tab
// left open reconnects to the restarted server on the same port.
func sessionsFile(cfg *config.Config) string { return filepath.Join(cfg.StateDir, "web-sessions.json") }

// loadSessions reads the sessions a previous run kept; an unreadable file
// means no sessions (the person logs in again), never a failed start.
func (w *Web) loadSessions() {
	if w.sessionsPath == "" {
		return
	}
	b, err := os.ReadFile(w.sessionsPath)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			w.log.Warn("browser sessions not restored", "err", err)
		}
		return
	}
	var list []persistedSession
	if err := json.Unmarshal(b, &list); err != nil {
		w.log.Warn("browser sessions not restored", "file", w.sessionsPath, "err", err)
		return
	}
	now := time.Now()
	for _, p := range list {
		var key [32]byte
		if n, err := hex.Decode(key[:], []byte(p.IDHash)); err != nil || n != 32 || p.CSRF == "" || now.After(p.Expires) {
			continue
		}
		w.sessions[key] = &session{csrf: p.CSRF, expires: p.Expires}
	}
}

// saveSessionsLocked writes the live sessions (atomically, 0600); w.mu is
// held.
func (w *Web) saveSessionsLocked() {
	if w.sessionsPath == "" {
		return
	}
	now := time.Now()
	list := make([]persistedSession, 0, len(w.sessions))
	for k, s := range w.sessions {
		if now.After(s.expires) {
			delete(w.sessions, k)
			continue
		}
		list = append(list, persistedSession{IDHash: hex.EncodeToString(k[:]), CSRF: s.csrf, Expires: s.expires})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Expires.After(list[j].Expires) })
	for len(list) > maxSessions {
		last := list[len(list)-1]
		var key [32]byte
		hex.Decode(key[:], []byte(last.IDHash))
		delete(w.sessions, key)
		list = list[:len(list)-1]
	}
	b, _ := json.Marshal(list)
	if err := config.WriteFileAtomic(w.sessionsPath, b, 0o600); err != nil {
		w.log.Warn("browser sessions not saved; a restart will ask for a new login", "err", err)
	}
}

// runLogin is `sluice login`: it asks the running `sluice serve` for a
// fresh one-time login link and prints it.
func runLogin(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: sluice login")
		return 2
	}
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	url, err := requestLoginLink(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	fmt.Fprintf(stdout, "Login: %s\n(works once, within %d minutes)\n", url, int(loginTTL/time.Minute))
	return 0
}

// errNotServing is what `sluice login` says when no UI server answers.
//
//lint:ignore ST1005 Sluice is the product's name, and this sentence is shown to the person as written.
var errNotServing = errors.New("Sluice isn't running: start it with `sluice serve` (or `sluice` for the desktop window)")

func requestLoginLink(ctx context.Context, cfg *config.Config) (string, error) {
	ep, err := readUIEndpoint(UIEndpointFile(cfg))
	if errors.Is(err, os.ErrNotExist) {
		if gep, gerr := gateway.ReadEndpoint(cfg.GatewayFile()); gerr == nil && gatewayAnswers(ctx, gep) {
			//lint:ignore ST1005 Sluice is the product's name, and this sentence is shown to the person as written.
			return "", fmt.Errorf("Sluice is running as the desktop window (pid %d), which needs no login link: open it from its tray icon", gep.PID)
		}
		return "", errNotServing
	}
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(ep.URL, "http://") || config.CheckLoopbackAddr(strings.TrimPrefix(ep.URL, "http://")) != nil {
		return "", fmt.Errorf("%s names %q, which is not a loopback address", UIEndpointFile(cfg), ep.URL)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL+"/login/new", bytes.NewReader(nil))
	req.Header.Set("Authorization", "Bearer "+ep.Control)
	c := &http.Client{Transport: &http.Transport{Proxy: nil}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		return "", errNotServing
	}
	defer resp.Body.Close()
	var body struct {
		URL   string   `json:"url"`
		Error *UIError `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body); err != nil || resp.StatusCode != http.StatusOK || body.URL == "" {
		if body.Error != nil {
			return "", fmt.Errorf("the server at %s refused a login link: %s", ep.URL, body.Error.Message)
		}
		return "", fmt.Errorf("the server at %s answered %s", ep.URL, resp.Status)
	}
	return body.URL, nil
}

// gatewayAnswers reports whether the app that published gep is up.
func gatewayAnswers(ctx context.Context, gep gateway.Endpoint) bool {
	c, err := gateway.NewClient(gep.Addr, gep.Token)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err = c.Health(ctx)
	return err == nil
}

// runningInstance describes the Sluice that holds the journal, for the
// message that a second start gives instead of "journal locked": the web
// UI's address (with how to get in), or the desktop window's pid.
func runningInstance(cfg *config.Config) string {
	if ep, err := readUIEndpoint(UIEndpointFile(cfg)); err == nil {
		return fmt.Sprintf("Sluice is already running as `sluice serve` (pid %d) at %s: run `%s` for a login link, or stop that one first", ep.PID, ep.URL, loginCommand())
	}
	if gep, err := gateway.ReadEndpoint(cfg.GatewayFile()); err == nil {
		return fmt.Sprintf("Sluice is already running as the desktop window (pid %d): open it from its tray icon, or quit it there first", gep.PID)
	}
	return "Sluice is already running on this machine (another process has its journal open); stop it first"
}
