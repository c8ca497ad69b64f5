package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// Confined sessions at the gateway. `sluice run` (the launcher, running as
// the person, outside any sandbox) registers a session with the gateway's
// own token; the app makes the session's private copy and mints a token
// for it. That token is the session's identity: the session's sidecar
// presents it, and the app stamps every proposal made with it with the
// session's Origin (confined, runtime, network), which the card, the
// decision and the ledger then carry. A session token reaches the
// proposal, workspace and runtime routes only (routes_runtime.go says why
// the runtime routes): it cannot register or end sessions,
// and like every gateway credential it can never decide.

// Caller is who a request came from when it carries a session's token.
type Caller struct {
	Session string
	Agent   string
	// Repo is the session's repository (canonical): the only one its
	// proposals may name.
	Repo   string
	Origin *proposal.Origin
}

type callerKey struct{}

// CallerFrom returns the session a request's context belongs to; nil for
// a request made with the gateway's own token.
func CallerFrom(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey{}).(*Caller)
	return c
}

// WithCaller is ctx for a request of session c (the app's own submit of a
// session's leftover changes goes through the backend this way).
func WithCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// Sessions is the app's side of confined sessions.
type Sessions interface {
	// Authenticate returns the running session a token belongs to.
	Authenticate(token string) (*Caller, bool)
	// Register starts a session: its record, its private copy, its token.
	Register(ctx context.Context, req SessionRequest) (SessionGrant, error)
	// End says the session's launcher is done; what the agent left in its
	// copy and never proposed is offered as one card. token is the
	// session's: while the launcher runs, only it ends the session.
	End(ctx context.Context, id, token string) (SessionEnd, error)
}

// SessionRequest is the body of POST /v1/sessions.
type SessionRequest struct {
	// Client is a known client (claude-code, …); Command names the program
	// of `sluice run -- COMMAND` instead.
	Client  string `json:"client,omitempty"`
	Command string `json:"command,omitempty"`
	// Dir is where the launcher runs; its repository is the session's.
	Dir     string `json:"dir"`
	Runtime string `json:"runtime"`
	// ModelHosts are the client's model hosts (its table's, and the
	// endpoint its base-URL variable names); AllowHosts the person's
	// grants for this session (--allow-host), each audited.
	ModelHosts []string `json:"modelHosts,omitempty"`
	AllowHosts []string `json:"allowHosts,omitempty"`
	// LauncherPID is the launcher's process: the session runs while it
	// does.
	LauncherPID int `json:"launcherPid"`
}

// SessionGrant is the answer: where everything is and the session's token
// (shown once, never stored but as a hash).
type SessionGrant struct {
	ID    string `json:"id"`
	Token string `json:"token"`
	Agent string `json:"agent"`
	// Repo is the person's repository; Copy the private copy that takes
	// its path inside; Origin the directory the session's sidecar sees the
	// person's repository at; Objects the person's object directory.
	Repo    string `json:"repo"`
	Copy    string `json:"copy"`
	Origin  string `json:"origin"`
	Objects string `json:"objects"`
	// Home is the program's confined HOME.
	Home    string   `json:"home"`
	Base    string   `json:"base"`
	Branch  string   `json:"branch,omitempty"`
	Network []string `json:"network"`
	Files   int      `json:"files"`
	// Image is the image (by ID) a docker or runsc session runs in.
	Image string `json:"image,omitempty"`
	// Hide are the app's own places (its config and state directories,
	// its audit key), which the sandbox hides wherever they are: the
	// launcher's environment may name others.
	Hide []string `json:"hide,omitempty"`
}

// SessionEndRequest is the body of POST /v1/sessions/{id}/end: the
// session's token, which its launcher holds.
type SessionEndRequest struct {
	Token string `json:"token"`
}

// SessionEnd is the answer of POST /v1/sessions/{id}/end.
type SessionEnd struct {
	// Leftover is the proposal that holds what the agent left and never
	// proposed ("" when it left nothing); Files how many files.
	Leftover string `json:"leftover,omitempty"`
	Files    int    `json:"files,omitempty"`
	Message  string `json:"message"`
}

// SessionRoutes are the session routes.
var SessionRoutes = []string{
	"POST /v1/sessions",
	"POST /v1/sessions/{id}/end",
}

// sessionReachable are the routes a session's token reaches.
func sessionReachable(pattern string) bool {
	return slices.Contains(ProposalRoutes, pattern) || slices.Contains(WorkspaceRoutes, pattern) ||
		slices.Contains(RuntimeRoutes, pattern) || pattern == "GET /v1/health"
}

func (s *Server) handleSessions(h Sessions) {
	s.Handle(SessionRoutes[0], func(w http.ResponseWriter, r *http.Request) {
		if h == nil {
			WriteError(w, http.StatusNotImplemented, errcode.Unsupported, "this Sluice app does not start confined sessions", nil)
			return
		}
		var req SessionRequest
		if !decodeBody(w, r, &req, "session request") {
			return
		}
		g, err := h.Register(r.Context(), req)
		if err != nil {
			s.fail(w, err)
			return
		}
		WriteJSON(w, http.StatusCreated, g)
	})
	s.Handle(SessionRoutes[1], func(w http.ResponseWriter, r *http.Request) {
		if h == nil {
			WriteError(w, http.StatusNotImplemented, errcode.Unsupported, "this Sluice app does not start confined sessions", nil)
			return
		}
		id := r.PathValue("id")
		if !proposal.ValidSessionID(id) {
			WriteError(w, http.StatusBadRequest, errcode.InvalidArgument, "session id must match ^[A-Za-z0-9_-]{1,64}$", nil)
			return
		}
		var req SessionEndRequest
		if !decodeBody(w, r, &req, "session end") {
			return
		}
		res, err := h.End(r.Context(), id, req.Token)
		if err != nil {
			s.fail(w, err)
			return
		}
		WriteJSON(w, http.StatusOK, res)
	})
}

// sessionTimeout bounds registering a session: making the private copy of
// a large repository.
const sessionTimeout = 5 * time.Minute

// RegisterSession asks the app to start a confined session.
func (c *Client) RegisterSession(ctx context.Context, req SessionRequest) (SessionGrant, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return SessionGrant{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, sessionTimeout)
	defer cancel()
	var g SessionGrant
	err = c.Do(ctx, http.MethodPost, "/v1/sessions", bytes.NewReader(body), &g)
	return g, err
}

// EndSession tells the app a session's launcher is done; token is the
// session's, which proves it.
func (c *Client) EndSession(ctx context.Context, id, token string) (SessionEnd, error) {
	if !proposal.ValidSessionID(id) {
		return SessionEnd{}, badArgument("session id must match ^[A-Za-z0-9_-]{1,64}$")
	}
	body, err := json.Marshal(SessionEndRequest{Token: token})
	if err != nil {
		return SessionEnd{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, sessionTimeout)
	defer cancel()
	var res SessionEnd
	err = c.Do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/end", bytes.NewReader(body), &res)
	return res, err
}

// sessionToken reports whether a bearer token has the form of a session's.
func sessionToken(tok string) bool { return strings.HasPrefix(tok, "sluice_session_") }
