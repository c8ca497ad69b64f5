package app

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
)

// Cookie and header names of the headless UI.
const (
	sessionCookie = "sluice_session"
	csrfHeader    = "X-Sluice-CSRF"
	sessionTTL    = 12 * time.Hour
)

// Web serves the UI and its JSON API on a loopback address for machines
// without a display. Access needs a session opened with a single-use login
// token that `sluice serve` prints; the gateway's sidecar token opens
// nothing here.
type Web struct {
	app    *App
	api    *API
	assets fs.FS
	log    *slog.Logger
	ln     net.Listener
	srv    *http.Server

	// control is the secret in web.json with which `sluice login` asks
	// for a fresh login link.
	control string
	// sessionsPath keeps the sessions across restarts ("" keeps none).
	sessionsPath string
	// closing ends the event streams when Shutdown begins: they would
	// otherwise hold it until its deadline.
	closing chan struct{}

	mu       sync.Mutex
	logins   map[[32]byte]time.Time // sha256 of outstanding login tokens → expiry
	sessions map[[32]byte]*session  // keyed by sha256(session id)
}

type session struct {
	csrf    string
	expires time.Time
}

// ErrNotLoopback is returned for a listen address that is not a loopback IP
// literal.
var ErrNotLoopback = errors.New("the UI only listens on a loopback address (127.0.0.1 or [::1])")

// NewWeb binds addr (loopback only; port 0 picks one) and returns the
// server with a fresh login token. Sessions opened earlier on this
// machine (kept in the state directory) still work, so that a tab left
// open across a restart reconnects.
func NewWeb(a *App, assets fs.FS, addr string) (*Web, string, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrNotLoopback, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return nil, "", ErrNotLoopback
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	w := &Web{app: a, api: &API{app: a, kind: "web"}, assets: assets, log: a.log, ln: ln,
		control: randomHex(32), sessionsPath: sessionsFile(a.cfg),
		logins: map[[32]byte]time.Time{}, sessions: map[[32]byte]*session{}, closing: make(chan struct{})}
	w.loadSessions()
	token := w.NewLoginToken()
	w.srv = &http.Server{Handler: w.routes(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 90 * time.Second}
	var closeOnce sync.Once
	w.srv.RegisterOnShutdown(func() { closeOnce.Do(func() { close(w.closing) }) })
	return w, token, nil
}

// Addr is the bound address.
func (w *Web) Addr() string { return w.ln.Addr().String() }

// LoginURL is what the person opens once.
func (w *Web) LoginURL(token string) string {
	return "http://" + w.Addr() + "/login?token=" + token
}

// Serve runs until Shutdown.
func (w *Web) Serve() error {
	err := w.srv.Serve(w.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops the server.
func (w *Web) Shutdown(ctx context.Context) error { return w.srv.Shutdown(ctx) }

func (w *Web) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", w.login)
	mux.HandleFunc("POST /login/new", w.newLoginLink)
	mux.HandleFunc("GET /api/session", w.authed(w.sessionInfo))
	w.registerUIRoutes(mux)
	// The bytes themselves, for an <img> in the browser (see serveImage):
	// not JSON, so not a call of the UI's API.
	mux.HandleFunc("GET /api/proposals/{id}/blob/{blob}", w.authed(func(rw http.ResponseWriter, r *http.Request) {
		ct, data, err := w.api.proposalBlob(r.PathValue("id"), r.PathValue("blob"))
		serveImage(rw, ct, data, err)
	}))
	mux.HandleFunc("GET /api/events", w.authed(w.eventStream))
	mux.HandleFunc("/api/", func(rw http.ResponseWriter, r *http.Request) {
		writeAPIError(rw, http.StatusNotFound, errcode.NotFound, "no such API route")
	})
	mux.Handle("/", w.static())
	return w.guard(mux)
}

// guard applies what every request shares: the Host header must be the
// address we listen on (a DNS-rebinding page uses its own name), a browser
// request must come from the UI's own origin, and responses carry headers
// that keep the UI out of frames and off other origins' scripts.
func (w *Web) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Host != w.Addr() {
			writeAPIError(rw, http.StatusForbidden, errcode.Forbidden, "host not allowed")
			return
		}
		if reason := w.foreignOrigin(r); reason != "" {
			writeAPIError(rw, http.StatusForbidden, errcode.Forbidden, reason)
			return
		}
		h := rw.Header()
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		next.ServeHTTP(rw, r)
	})
}

// foreignOrigin says why a request came from a page other than the UI, or
// "" when it did not. The session cookie is SameSite=Strict and state
// changes need the CSRF token; this is the third, independent wall: a
// browser names the page that sent a request in Origin (every POST, every
// cross-origin fetch) and in Sec-Fetch-Site, and anything but the UI's own
// origin is refused before a session is even looked at. "same-site" is
// refused too: another port on 127.0.0.1 is the same site but a different
// origin, and any local program can serve a page there. A request without
// either header (curl, the tests' HTTP client) is judged by cookie and
// token alone; "none" is a navigation the person started (a typed or pasted
// URL, the login link).
func (w *Web) foreignOrigin(r *http.Request) string {
	if o, ok := r.Header["Origin"]; ok {
		if len(o) != 1 || o[0] != "http://"+w.Addr() {
			return "cross-origin request refused"
		}
	}
	if sfs, ok := r.Header["Sec-Fetch-Site"]; ok {
		if len(sfs) != 1 || (sfs[0] != "same-origin" && sfs[0] != "none") {
			return "cross-site request refused"
		}
	}
	return ""
}

func (w *Web) login(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		loginProbe(rw)
		return
	}
	if !w.takeLogin(r.URL.Query().Get("token")) {
		// The link a person used once already, opened again in the
		// browser that holds its session, just goes on to the UI.
		if w.sessionOf(r) != nil {
			http.Redirect(rw, r, "/", http.StatusSeeOther)
			return
		}
		w.loginRecovery(rw)
		return
	}
	id := randomHex(32)
	w.mu.Lock()
	w.sessions[sha256.Sum256([]byte(id))] = &session{csrf: randomHex(32), expires: time.Now().Add(sessionTTL)}
	w.saveSessionsLocked()
	w.mu.Unlock()
	http.SetCookie(rw, &http.Cookie{
		Name: sessionCookie, Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: int(sessionTTL / time.Second),
	})
	http.Redirect(rw, r, "/", http.StatusSeeOther)
}

type ctxKey struct{}

// sessionOf is the live session r's cookie names, or nil.
func (w *Web) sessionOf(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	key := sha256.Sum256([]byte(c.Value))
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.sessions[key]
	if s != nil && time.Now().After(s.expires) {
		delete(w.sessions, key)
		s = nil
	}
	return s
}

// authed requires a live session cookie.
func (w *Web) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		s := w.sessionOf(r)
		if s == nil {
			writeAPIError(rw, http.StatusUnauthorized, errcode.Unauthorized, "no session: run `sluice login` for a login link")
			return
		}
		next(rw, r.WithContext(context.WithValue(r.Context(), ctxKey{}, s)))
	}
}

// csrf requires the session's CSRF token in X-Sluice-CSRF on state changes.
func (w *Web) csrf(next http.HandlerFunc) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		s, _ := r.Context().Value(ctxKey{}).(*session)
		got := r.Header.Get(csrfHeader)
		if s == nil || got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) != 1 {
			writeAPIError(rw, http.StatusForbidden, errcode.Forbidden, "missing or wrong "+csrfHeader+" header")
			return
		}
		next(rw, r)
	}
}

func (w *Web) sessionInfo(rw http.ResponseWriter, r *http.Request) {
	s := r.Context().Value(ctxKey{}).(*session)
	writeJSON(rw, http.StatusOK, map[string]string{"csrf": s.csrf})
}

// eventStream is Server-Sent Events of the app's bus.
func (w *Web) eventStream(rw http.ResponseWriter, r *http.Request) {
	fl, ok := rw.(http.Flusher)
	if !ok {
		writeAPIError(rw, http.StatusInternalServerError, errcode.Internal, "streaming unsupported")
		return
	}
	ch, cancel := w.app.events.Subscribe()
	defer cancel()
	h := rw.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	rw.WriteHeader(http.StatusOK)
	// A restarted server is back within a second or two on the same
	// port: the browser should not wait its default few seconds.
	fmt.Fprint(rw, "retry: 1000\n: connected\n\n")
	fl.Flush()
	ping := time.NewTicker(20 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-w.closing:
			return
		case <-ping.C:
			fmt.Fprint(rw, ": ping\n\n")
			fl.Flush()
		case ev, ok := <-ch:
			if !ok {
				return
			}
			b, _ := json.Marshal(ev.Data)
			fmt.Fprintf(rw, "event: %s\ndata: %s\n\n", ev.Name, b)
			fl.Flush()
		}
	}
}

// static serves the embedded front end; unknown paths without a file
// extension get index.html so that client-side routes survive a reload.
func (w *Web) static() http.Handler {
	files := http.FileServerFS(w.assets)
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		p := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
		if p == "" {
			p = "index.html"
		}
		if _, err := fs.Stat(w.assets, p); err != nil {
			if path.Ext(p) != "" {
				http.NotFound(rw, r)
				return
			}
			r = r.Clone(r.Context())
			r.URL.Path = "/"
		}
		files.ServeHTTP(rw, r)
	})
}

// jsonCall answers with fn's result, or its error as {code, message} with
// a status that fits the code.
func jsonCall[T any](rw http.ResponseWriter, fn func() (T, error)) {
	v, err := fn()
	if err != nil {
		ue, _ := FormatError(err).(UIError)
		writeJSON(rw, statusFor(ue.Code), map[string]any{"error": ue})
		return
	}
	writeJSON(rw, http.StatusOK, v)
}

// statuses is the HTTP status of each code the UI's API answers with:
// the one place the web UI maps the error vocabulary (core/errcode) to
// HTTP.
var statuses = errcode.Statuses{
	errcode.ProposalNotFound: http.StatusNotFound,
	errcode.RuleNotFound:     http.StatusNotFound,
	errcode.ProposalTerminal: http.StatusConflict,
	errcode.DigestMismatch:   http.StatusConflict,
	errcode.RestoreConflict:  http.StatusConflict,
	errcode.StaleBase:        http.StatusConflict,
	errcode.PolicyChanged:    http.StatusConflict,
	errcode.Internal:         http.StatusInternalServerError,
	errcode.AuditFailed:      http.StatusInternalServerError,
	errcode.Unsupported:      http.StatusNotImplemented,
}

func statusFor(code errcode.Code) int { return statuses.Of(code) }

// maxDecisionBody bounds a decision's JSON (id, digest, note, confirm).
const maxDecisionBody = 16 << 10

// maxRejectBody bounds a decision that may carry a rejection's comments:
// up to journal.MaxComments notes of journal.MaxCommentBytes each, with
// their paths, escaped as JSON may escape them.
const maxRejectBody = 4 << 20

// decodeBodyMax reads a JSON body of at most max bytes strictly (unknown
// fields refused).
func decodeBodyMax(rw http.ResponseWriter, r *http.Request, v any, max int64) bool {
	dec := json.NewDecoder(http.MaxBytesReader(rw, r.Body, max))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeAPIError(rw, http.StatusBadRequest, errcode.InvalidArgument, "request body: "+err.Error())
		return false
	}
	return true
}

func writeJSON(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(status)
	enc := json.NewEncoder(rw)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeAPIError(rw http.ResponseWriter, status int, code errcode.Code, msg string) {
	writeJSON(rw, status, map[string]any{"error": UIError{Code: code, Message: msg}})
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}
