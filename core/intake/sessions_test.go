package intake

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// oneSession is the app's side of sessions, reduced to one running
// session with a known token (the app's real one is tested in app/).
type oneSession struct {
	token string
	c     gateway.Caller
}

func (o *oneSession) Authenticate(tok string) (*gateway.Caller, bool) {
	if tok != o.token {
		return nil, false
	}
	c := o.c
	return &c, true
}

func (o *oneSession) Register(context.Context, gateway.SessionRequest) (gateway.SessionGrant, error) {
	return gateway.SessionGrant{}, errcode.New(errcode.Unsupported, "not in this test")
}

func (o *oneSession) End(context.Context, string, string) (gateway.SessionEnd, error) {
	return gateway.SessionEnd{Message: "ended"}, nil
}

// sessionEnv is a gateway with one confined session.
func sessionEnv(t *testing.T) (*env, *gateway.Client, *oneSession) {
	t.Helper()
	e := newEnv(t, envOptions{})
	dbPath := filepath.Join(e.root, "journal2.db")
	j, err := journal.Open(dbPath, journal.Options{Recorder: e.rec})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	backend := New(j, Options{Roots: gitx.Roots{e.root}, Logger: quiet})
	s := &oneSession{token: "sluice_session_" + strings.Repeat("ab", 32),
		c: gateway.Caller{Session: "s1", Agent: "claude-code", Repo: e.repo, Origin: &proposal.Origin{Session: "s1", Runtime: "bubblewrap", Network: []string{"api.anthropic.com:443"}}}}
	token, _ := gateway.NewToken()
	srv, err := gateway.Listen(gateway.Options{Token: token, AppVersion: "test", Backend: backend, Sessions: s, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	t.Cleanup(func() {
		srv.Shutdown(context.Background())
		j.Close()
		checkDB(t, dbPath)
	})
	e.j, e.backend, e.srv, e.token = j, backend, srv, token
	if e.client, err = gateway.NewClient(srv.Addr(), token); err != nil {
		t.Fatal(err)
	}
	sc, err := gateway.NewClient(srv.Addr(), s.token)
	if err != nil {
		t.Fatal(err)
	}
	return e, sc, s
}

// A proposal made with a session's token carries the session's origin,
// stamped by the app from the token; the same agent name outside the
// session gets none, and neither side can read, wait on or cancel the
// other's proposals.
func TestSessions_TokenStampsOrigin_OwnershipBySession(t *testing.T) {
	e, sc, _ := sessionEnv(t)
	p := e.branchProposal(t, "claude-code")
	st, err := sc.SubmitProposal(t.Context(), "claude-code", p)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := e.j.Get(st.ProposalID)
	if err != nil {
		t.Fatal(err)
	}
	o := rec.Proposal.Origin
	if o == nil || o.Session != "s1" || o.Runtime != "bubblewrap" || len(o.Network) != 1 {
		t.Fatalf("stored origin %+v, want the session's", o)
	}
	if err := rec.Proposal.Validate(); err != nil {
		t.Fatalf("the digest does not cover the origin as stored: %v", err)
	}
	// The same name with the gateway's own token: not the session.
	if _, err := e.client.GetProposal(t.Context(), "claude-code", st.ProposalID); !errcode.IsCode(err, errcode.Forbidden) {
		t.Fatalf("an agent outside the session read the session's proposal: %v", err)
	}
	if _, err := e.client.CancelProposal(t.Context(), "claude-code", st.ProposalID); !errcode.IsCode(err, errcode.Forbidden) {
		t.Fatalf("an agent outside the session cancelled the session's proposal: %v", err)
	}
	out := e.branchProposal(t, "claude-code")
	ost, err := e.client.SubmitProposal(t.Context(), "claude-code", out)
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := e.j.Get(ost.ProposalID); rec.Proposal.Origin != nil {
		t.Fatalf("a proposal outside any session carries an origin: %+v", rec.Proposal.Origin)
	}
	if _, err := sc.GetProposal(t.Context(), "claude-code", ost.ProposalID); !errcode.IsCode(err, errcode.Forbidden) {
		t.Fatalf("the session read a proposal made outside it: %v", err)
	}
	if got, err := sc.GetProposal(t.Context(), "claude-code", st.ProposalID); err != nil || got.ProposalID != st.ProposalID {
		t.Fatalf("the session cannot read its own proposal: %v", err)
	}
}

// A session speaks as its own agent only, reaches the proposal and
// workspace routes only, and no client sets an origin itself.
func TestSessions_TokenLimits(t *testing.T) {
	e, sc, s := sessionEnv(t)
	p := e.branchProposal(t, "codex")
	var api *gateway.APIError
	if _, err := sc.SubmitProposal(t.Context(), "codex", p); !errors.As(err, &api) || api.Status != http.StatusForbidden {
		t.Fatalf("a session submitted as another agent: %v", err)
	}
	code, body := raw(t, e.srv.Addr(), strings.Join([]string{"POST /v1/sessions HTTP/1.1", "Host: " + e.srv.Addr(),
		"Authorization: Bearer " + s.token, "Content-Length: 2", "Connection: close"}, "\r\n")+"\r\n\r\n{}")
	if code != http.StatusForbidden {
		t.Fatalf("a session's token registered a session: %d %s", code, body)
	}
	code, _ = raw(t, e.srv.Addr(), strings.Join([]string{"GET /v1/health HTTP/1.1", "Host: " + e.srv.Addr(),
		"Authorization: Bearer sluice_session_" + strings.Repeat("cd", 32), "Connection: close"}, "\r\n")+"\r\n\r\n")
	if code != http.StatusUnauthorized {
		t.Fatalf("an unknown session token was accepted: %d", code)
	}
	// No client sets an origin: not the gateway's token, not a session's
	// (claiming another session, or its own with a wider network).
	for _, f := range []struct {
		client *gateway.Client
		agent  string
		origin proposal.Origin
	}{
		{e.client, "agent-a", proposal.Origin{Session: "s1", Runtime: "bubblewrap"}},
		{sc, "claude-code", proposal.Origin{Session: "s2", Runtime: "bubblewrap"}},
		{sc, "claude-code", proposal.Origin{Session: "s1", Runtime: "bubblewrap", Network: []string{"evil.example:443"}}},
	} {
		forged := e.branchProposal(t, f.agent)
		o := f.origin
		forged.Origin = &o
		reseal(t, &forged)
		if _, err := f.client.SubmitProposal(t.Context(), f.agent, forged); !errcode.IsCode(err, errcode.InvalidArgument) || !strings.Contains(err.Error(), "origin") {
			t.Fatalf("a proposal that came with its own origin %+v was accepted: %v", o, err)
		}
		if _, err := e.j.Get(forged.ID); !errors.Is(err, journal.ErrNotFound) {
			t.Fatalf("the forged proposal was stored: %v", err)
		}
	}
	// A session's token cannot end a session, its own included.
	code, body = raw(t, e.srv.Addr(), strings.Join([]string{"POST /v1/sessions/s1/end HTTP/1.1", "Host: " + e.srv.Addr(),
		"Authorization: Bearer " + s.token, "Content-Length: 2", "Connection: close"}, "\r\n")+"\r\n\r\n{}")
	if code != http.StatusForbidden {
		t.Fatalf("a session's token ended a session: %d %s", code, body)
	}
}

// A session proposes for its own repository only: its copy is of that
// one, and nothing of another repository is its to change.
func TestSessions_OwnRepositoryOnly(t *testing.T) {
	e, sc, _ := sessionEnv(t)
	other := filepath.Join(e.root, "other")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	elsewhere := e.branchProposal(t, "claude-code")
	elsewhere.Repo = other
	reseal(t, &elsewhere)
	if _, err := sc.SubmitProposal(t.Context(), "claude-code", elsewhere); !errcode.IsCode(err, errcode.PolicyDenied) {
		t.Fatalf("a session proposed for another repository: %v", err)
	}
	pinned := e.branchProposal(t, "claude-code")
	pinned.Op, pinned.Args = proposal.OpBranchDelete, &proposal.BranchDeleteArgs{Branches: []string{"old"}, OtherRepos: []proposal.RepoBranches{{Repo: other, Branches: []string{"old"}}}}
	pinned.Pinned = proposal.Pinned{Refs: map[string]string{"refs/heads/old": sha}, Repos: map[string]map[string]string{other: {"refs/heads/old": sha}}}
	reseal(t, &pinned)
	if _, err := sc.SubmitProposal(t.Context(), "claude-code", pinned); !errcode.IsCode(err, errcode.PolicyDenied) {
		t.Fatalf("a session's proposal reached into another repository: %v", err)
	}
	for _, id := range []string{elsewhere.ID, pinned.ID} {
		if _, err := e.j.Get(id); !errors.Is(err, journal.ErrNotFound) {
			t.Fatalf("%s was stored: %v", id, err)
		}
	}
	// The gateway's own token (an agent Sluice did not start) is not
	// limited this way.
	plain := e.branchProposal(t, "claude-code")
	plain.Repo = other
	reseal(t, &plain)
	if _, err := e.client.SubmitProposal(t.Context(), "claude-code", plain); err != nil {
		t.Fatalf("an unconfined agent's proposal for another repository: %v", err)
	}
}
