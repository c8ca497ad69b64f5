package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// AgentHeader carries the agent's sanitized name on proposal routes. All
// sidecars share one gateway token, so this is attribution (whose
// proposal, for the card and for cancel), not authentication: a process
// holding the token can claim any name.
const AgentHeader = "X-Sluice-Agent"

// IdentityHeader says how the sidecar knows the name in AgentHeader:
// "token" when it is the name of an HTTP token (or a connector's token)
// that the sidecar authenticated. Without it the name is only what the MCP
// client declared about itself, which any program can declare. Like
// AgentHeader it is as good as the gateway token that carries it: it
// separates a program that calls itself X through a sidecar from the
// holder of X's token, not a process that holds the gateway token itself.
// A confined session's requests are known by their own token instead.
const IdentityHeader = "X-Sluice-Identity"

type tokenIdentityKey struct{}

// WithTokenIdentity is ctx for a request whose agent name is an
// authenticated HTTP token's.
func WithTokenIdentity(ctx context.Context) context.Context {
	return context.WithValue(ctx, tokenIdentityKey{}, true)
}

// TokenIdentityFrom reports whether ctx's request named its agent by an
// authenticated HTTP token.
func TokenIdentityFrom(ctx context.Context) bool {
	v, _ := ctx.Value(tokenIdentityKey{}).(bool)
	return v
}

// MaxWait is the longest long-poll of the wait route. It stays under the
// 60 s tool timeout of common MCP clients.
const MaxWait = 50 * time.Second

// Backend serves the proposal routes. The app implements it (see
// core/intake). It has no way to approve or reject: deciding is an
// in-process API of the app, reachable from its UI only.
type Backend interface {
	// Submit stores p for agent; a replay of an idempotent request returns
	// the stored proposal with Replayed set.
	Submit(ctx context.Context, agent string, p proposal.Proposal) (ProposalStatus, error)
	// Get returns the current status of one of agent's proposals.
	Get(ctx context.Context, agent, id string) (ProposalStatus, error)
	// Wait blocks up to timeout for the proposal to settle and returns its
	// status then, settled or not.
	Wait(ctx context.Context, agent, id string, timeout time.Duration) (ProposalStatus, error)
	// Cancel withdraws one of agent's pending proposals.
	Cancel(ctx context.Context, agent, id string) (ProposalStatus, error)
	// RestorePoints lists restore points of a repository.
	RestorePoints(ctx context.Context, agent, repo string) (RestorePoints, error)
}

// StatusSealing is the status of a proposal whose outcome the app is
// still computing (a very large change outlasts a submit's answer): it
// has no card yet, its id is known, and a wait follows it until it is
// stored (pending, or approved by a rule) or refused.
const StatusSealing proposal.State = "sealing"

// ProposalStatus is the wire form of a proposal and its lifecycle state.
type ProposalStatus struct {
	ProposalID  string          `json:"proposalId"`
	Status      proposal.State  `json:"status"`
	Op          proposal.Op     `json:"op"`
	Agent       string          `json:"agent"`
	Repo        string          `json:"repo"`
	Digest      string          `json:"digest"`
	ShortDigest string          `json:"shortDigest"`
	Risk        string          `json:"risk"`
	Destructive bool            `json:"destructive"`
	Pinned      proposal.Pinned `json:"pinned"`
	CreatedAt   string          `json:"createdAt"`
	ExpiresAt   string          `json:"expiresAt"`
	UpdatedAt   string          `json:"updatedAt"`
	Version     uint64          `json:"version"`
	// Terminal: nothing more will happen to the proposal.
	Terminal bool `json:"terminal"`
	// Done is true only for completed: approved or executing is not done.
	Done bool `json:"done"`
	// Replayed: an idempotent submit returned an earlier proposal.
	Replayed bool `json:"replayed,omitempty"`
	// AutoApproved: a policy rule approved it without a card.
	AutoApproved bool        `json:"autoApproved,omitempty"`
	Decision     *Decision   `json:"decision,omitempty"`
	Outcome      *Outcome    `json:"outcome,omitempty"`
	Collisions   []Collision `json:"collisions,omitempty"`
}

// Decision is who decided a proposal.
type Decision struct {
	Approved bool   `json:"approved"`
	By       string `json:"by"`
	Note     string `json:"note,omitempty"`
	Auto     bool   `json:"auto,omitempty"`
	At       string `json:"at"`
	// Comments are a rejection's notes on the proposal's files and lines.
	Comments []Comment `json:"comments,omitempty"`
}

// Comment is a person's note on a file of a proposal (Line 0) or on one
// line of it: Line is in the new version of the file (Side "new"), or in
// the old one for a line the proposal deletes (Side "old").
type Comment struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Side string `json:"side,omitempty"`
	Note string `json:"note"`
}

// Outcome is how a proposal ended.
type Outcome struct {
	Code         errcode.Code `json:"code,omitempty"`
	Message      string       `json:"message,omitempty"`
	RestorePoint string       `json:"restorePoint,omitempty"`
	At           string       `json:"at"`
}

// Collision is another pending proposal touching some of the same files.
type Collision struct {
	ProposalID string   `json:"proposalId"`
	Agent      string   `json:"agent"`
	Files      []string `json:"files"`
}

// RestorePoints is the answer of GET /v1/restore-points.
type RestorePoints struct {
	// Supported is false when this app cannot list restore points; the
	// list is then empty and Message says why.
	Supported     bool           `json:"supported"`
	RestorePoints []RestorePoint `json:"restorePoints"`
	Message       string         `json:"message,omitempty"`
}

// RestorePoint is a snapshot taken before an approved proposal ran.
type RestorePoint struct {
	ID         string            `json:"id"`
	ProposalID string            `json:"proposalId"`
	Repo       string            `json:"repo"`
	CreatedAt  string            `json:"createdAt"`
	Refs       map[string]string `json:"refs,omitempty"`
}

// ProposalRoutes are the proposal routes, for documentation and for the
// test that proves none of them decides.
var ProposalRoutes = []string{
	"POST /v1/proposals",
	"GET /v1/proposals/{id}",
	"GET /v1/proposals/{id}/wait",
	"POST /v1/proposals/{id}/cancel",
	"GET /v1/restore-points",
}

func (s *Server) handleProposals(b Backend) {
	h := proposalHandlers{b: b, s: s}
	s.Handle(ProposalRoutes[0], h.submit)
	s.Handle(ProposalRoutes[1], h.get)
	s.Handle(ProposalRoutes[2], h.wait)
	s.Handle(ProposalRoutes[3], h.cancel)
	s.Handle(ProposalRoutes[4], h.restorePoints)
}

type proposalHandlers struct {
	b Backend
	s *Server
}

// agent reads AgentHeader; it must already be sanitized. A confined
// session's requests speak as the session's agent only.
func agentOf(w http.ResponseWriter, r *http.Request) (string, bool) {
	a := r.Header.Get(AgentHeader)
	if !proposal.ValidAgent(a) {
		WriteError(w, http.StatusBadRequest, errcode.InvalidArgument, AgentHeader+" must match ^[A-Za-z0-9._:-]{1,128}$", nil)
		return "", false
	}
	if c := CallerFrom(r.Context()); c != nil && a != c.Agent {
		WriteError(w, http.StatusForbidden, errcode.Forbidden, "a confined session speaks as its own agent only", nil)
		return "", false
	}
	return a, true
}

// idOf validates the {id} path value before it is used anywhere.
func idOf(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if !proposal.ValidID(id) {
		WriteError(w, http.StatusBadRequest, errcode.InvalidArgument, "proposal id must match "+proposal.IDPattern, nil)
		return "", false
	}
	return id, true
}

func (h proposalHandlers) submit(w http.ResponseWriter, r *http.Request) {
	agent, ok := agentOf(w, r)
	if !ok {
		return
	}
	var p proposal.Proposal
	if !decodeBody(w, r, &p, "proposal") {
		return
	}
	st, err := h.b.Submit(r.Context(), agent, p)
	if err != nil {
		h.fail(w, err)
		return
	}
	code := http.StatusCreated
	if st.Replayed {
		code = http.StatusOK
	}
	WriteJSON(w, code, st)
}

// onProposal runs fn for the agent and proposal id a request names, and
// answers with the status it returns; the id and the agent are checked
// first.
func (h proposalHandlers) onProposal(w http.ResponseWriter, r *http.Request, fn func(agent, id string) (ProposalStatus, error)) {
	agent, ok := agentOf(w, r)
	if !ok {
		return
	}
	id, ok := idOf(w, r)
	if !ok {
		return
	}
	st, err := fn(agent, id)
	if err != nil {
		h.fail(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, st)
}

func (h proposalHandlers) get(w http.ResponseWriter, r *http.Request) {
	h.onProposal(w, r, func(agent, id string) (ProposalStatus, error) { return h.b.Get(r.Context(), agent, id) })
}

func (h proposalHandlers) wait(w http.ResponseWriter, r *http.Request) {
	timeout, err := ParseWaitTimeout(r.URL.Query().Get("timeout"))
	if err != nil {
		WriteError(w, http.StatusBadRequest, errcode.InvalidArgument, err.Error(), nil)
		return
	}
	h.onProposal(w, r, func(agent, id string) (ProposalStatus, error) { return h.b.Wait(r.Context(), agent, id, timeout) })
}

// ParseWaitTimeout reads the wait route's timeout: whole seconds ("30") or
// a Go duration ("1500ms"); empty means MaxWait; longer than MaxWait is
// cut to MaxWait.
func ParseWaitTimeout(v string) (time.Duration, error) {
	if v == "" {
		return MaxWait, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.Atoi(v)
		if nerr != nil {
			return 0, fmt.Errorf("timeout %q is neither whole seconds nor a duration", v)
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 {
		return 0, fmt.Errorf("timeout %q is negative", v)
	}
	return min(d, MaxWait), nil
}

func (h proposalHandlers) cancel(w http.ResponseWriter, r *http.Request) {
	h.onProposal(w, r, func(agent, id string) (ProposalStatus, error) { return h.b.Cancel(r.Context(), agent, id) })
}

func (h proposalHandlers) restorePoints(w http.ResponseWriter, r *http.Request) {
	agent, ok := agentOf(w, r)
	if !ok {
		return
	}
	rp, err := h.b.RestorePoints(r.Context(), agent, r.URL.Query().Get("repo"))
	if err != nil {
		h.fail(w, err)
		return
	}
	if rp.RestorePoints == nil {
		rp.RestorePoints = []RestorePoint{}
	}
	WriteJSON(w, http.StatusOK, rp)
}

func (h proposalHandlers) fail(w http.ResponseWriter, err error) { h.s.fail(w, err) }

// fail writes a backend error: its code, with the status the table gives
// it (statusOf), when it has one; else, and for an internal one, a logged
// internal error whose detail stays in the log.
func (s *Server) fail(w http.ResponseWriter, err error) {
	if e, ok := errcode.As(err); ok && e.Code != errcode.Internal {
		WriteError(w, statusOf(e.Code), e.Code, e.Msg, e.Data)
		return
	}
	s.log.Error("gateway: backend failed", "err", err)
	WriteError(w, http.StatusInternalServerError, errcode.Internal, "internal error", nil)
}

// decodeBody decodes exactly one JSON value of the request into v,
// refusing unknown fields and trailing data, and writes the error (413 for
// a body over the limit) when it cannot.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, what string) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			WriteError(w, http.StatusRequestEntityTooLarge, errcode.TooLarge, "request body too large", nil)
			return false
		}
		WriteError(w, http.StatusBadRequest, errcode.InvalidArgument, "malformed "+what+": "+err.Error(), nil)
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		WriteError(w, http.StatusBadRequest, errcode.InvalidArgument, "trailing data after the "+what, nil)
		return false
	}
	return true
}
