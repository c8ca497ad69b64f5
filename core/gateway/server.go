package gateway

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// MaxBodyBytes caps every request body. A proposal's patch is at most
// 4 MiB of text, which JSON escaping can roughly double (quotes, tabs,
// backslashes); the other fields fit in the rest.
const MaxBodyBytes = 9 << 20

// Health is the answer of GET /v1/health.
type Health struct {
	Status     string `json:"status"`
	AppVersion string `json:"appVersion"`
	// API is the gateway protocol version; bumped on incompatible change.
	API int `json:"api"`
}

// APIVersion of the gateway protocol.
const APIVersion = 1

// ErrorBody is every non-2xx answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail carries a stable code and a human message.
type ErrorDetail struct {
	Code    errcode.Code `json:"code"`
	Message string       `json:"message"`
	Data    any          `json:"data,omitempty"`
}

// Server is the app side of the gateway.
type Server struct {
	token      string
	sessions   Sessions
	appVersion string
	mux        *http.ServeMux
	routes     []string
	ln         net.Listener
	srv        *http.Server
	log        *slog.Logger
}

// Options configure a Server.
type Options struct {
	// Addr to listen on; must be a loopback IP literal. Port 0 picks a
	// random free port. Empty means "127.0.0.1:0".
	Addr       string
	Token      string
	AppVersion string
	Logger     *slog.Logger
	// Backend, when set, serves the proposal routes. It can only submit,
	// read, wait for and cancel proposals: deciding is not part of it.
	Backend Backend
	// Handoff, when set, serves the workspace handoff route; without it
	// the route answers unsupported.
	Handoff WorkspaceHandoff
	// Sessions, when set, registers confined sessions and knows their
	// tokens; without it the session routes answer unsupported and only
	// the gateway's own token is accepted.
	Sessions Sessions
	// Runtime, when set, serves the runtime routes (the workspace runs of
	// sidecars, with the app's runtime); with a Backend and no Runtime
	// they answer unsupported.
	Runtime *RuntimeHost
}

// Listen binds the gateway's socket. Routes are registered with Handle
// before Serve is called.
func Listen(opts Options) (*Server, error) {
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if _, err := parseLoopbackListenAddr(addr); err != nil {
		return nil, err
	}
	if len(opts.Token) < 32 {
		return nil, errors.New("gateway: token must be at least 32 characters")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gateway: listen %s: %w", addr, err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Server{token: opts.Token, sessions: opts.Sessions, appVersion: opts.AppVersion, mux: http.NewServeMux(), ln: ln, log: log}
	s.Handle("GET /v1/health", s.health)
	if opts.Backend != nil {
		s.handleProposals(opts.Backend)
		s.handleWorkspaces(opts.Handoff)
		s.handleSessions(opts.Sessions)
	}
	if opts.Backend != nil || opts.Runtime != nil {
		s.handleRuntime(opts.Runtime)
	}
	// Unknown paths answer in the gateway's JSON error shape too.
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, http.StatusNotFound, errcode.NotFound, "no such route", nil)
	})
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 5 * time.Second,
		// Writes may wait for a long-poll (proposal wait, ≤ 50 s).
		WriteTimeout:   70 * time.Second,
		IdleTimeout:    90 * time.Second,
		MaxHeaderBytes: 16 << 10,
	}
	return s, nil
}

// Addr is the bound address, e.g. "127.0.0.1:41234".
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Handle registers an authenticated route ("METHOD /v1/path/{id}").
func (s *Server) Handle(pattern string, h http.HandlerFunc) {
	s.routes = append(s.routes, pattern)
	s.mux.HandleFunc(pattern, h)
}

// Routes lists every registered route pattern, so that tests can prove
// properties of all of them (none decides a proposal).
func (s *Server) Routes() []string { return slices.Clone(s.routes) }

// Serve serves until Shutdown.
func (s *Server) Serve() error {
	err := s.srv.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting and waits for in-flight requests up to ctx.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// ServeHTTP applies the checks every route shares, in an order that leaks
// nothing: Host first (a rebinding page learns nothing else), then Origin,
// then the token, then the body cap.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.hostAllowed(r.Host) {
		WriteError(w, http.StatusForbidden, errcode.Forbidden, "host not allowed", nil)
		return
	}
	// Sidecars never send Origin; browsers always do on cross-origin
	// requests and on every POST. Any Origin means a page is talking to us.
	if r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Site") != "" {
		WriteError(w, http.StatusForbidden, errcode.Forbidden, "browser requests are not accepted", nil)
		return
	}
	caller, ok := s.authorize(r.Header.Get("Authorization"))
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sluice-gateway"`)
		WriteError(w, http.StatusUnauthorized, errcode.Unauthorized, "missing or invalid bearer token", nil)
		return
	}
	if caller != nil {
		// A session's token reaches the proposal, workspace and runtime routes
		// only, as that session.
		if _, pattern := s.mux.Handler(r); !sessionReachable(pattern) {
			WriteError(w, http.StatusForbidden, errcode.Forbidden, "a confined session's token cannot use this route", nil)
			return
		}
		r = r.WithContext(WithCaller(r.Context(), caller))
	} else if r.Header.Get(IdentityHeader) == proposal.IdentityToken {
		r = r.WithContext(WithTokenIdentity(r.Context()))
	}
	if r.ContentLength > MaxBodyBytes {
		WriteError(w, http.StatusRequestEntityTooLarge, errcode.TooLarge, "request body too large", nil)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	// A path with "..", "." or empty segments is never sent by a client;
	// refusing it here keeps the router from redirecting it elsewhere.
	if p := r.URL.Path; p == "" || path.Clean(p) != p {
		WriteError(w, http.StatusBadRequest, errcode.InvalidArgument, "malformed path", nil)
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) hostAllowed(host string) bool {
	// Only the exact address we listen on; a DNS name (even "localhost")
	// could be rebound to us by a hostile page.
	return host == s.Addr()
}

// authorize accepts the gateway's own token (no caller) or a running
// confined session's (its caller).
func (s *Server) authorize(h string) (*Caller, bool) {
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return nil, false
	}
	if subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) == 1 {
		return nil, true
	}
	if s.sessions != nil && sessionToken(tok) {
		return s.sessions.Authenticate(tok)
	}
	return nil, false
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, Health{Status: "ok", AppVersion: s.appVersion, API: APIVersion})
}

// WriteJSON answers with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// WriteError answers with the gateway's error shape.
func WriteError(w http.ResponseWriter, status int, code errcode.Code, msg string, data any) {
	WriteJSON(w, status, ErrorBody{Error: ErrorDetail{Code: code, Message: msg, Data: data}})
}
