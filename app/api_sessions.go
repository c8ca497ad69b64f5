package app

import (
	"context"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
	confined "github.com/sluicehq/sluice/core/session"
)

// SessionView is one confined session as the Sessions screen shows it.
type SessionView struct {
	ID string `json:"id"`
	// Agent is what the session runs (a client's name, or a command),
	// which its proposals are made as.
	Agent    string   `json:"agent"`
	Repo     string   `json:"repo"`
	RepoName string   `json:"repoName"`
	Runtime  string   `json:"runtime"`
	Network  []string `json:"network"`
	// Granted are the hosts the person allowed on top of the client's own.
	Granted []string `json:"granted"`
	// State is running, ended (its copy kept) or closed.
	State     string `json:"state"`
	StartedAt string `json:"startedAt"`
	EndedAt   string `json:"endedAt,omitempty"`
	// Proposals is how many proposals the session's agent made.
	Proposals int `json:"proposals"`
	// Leftover is the card of what the session left and never proposed;
	// LeftoverState where it is.
	Leftover      string `json:"leftover,omitempty"`
	LeftoverFiles int    `json:"leftoverFiles,omitempty"`
	LeftoverState string `json:"leftoverState,omitempty"`
	// CanOffer: its changes are kept, no card of it is open, and the last
	// offer failed or its card ended without the person deciding on them
	// (expired, failed, withdrawn): they can be offered again.
	CanOffer bool   `json:"canOffer"`
	Note     string `json:"note,omitempty"`
}

// Sessions lists the confined sessions, running ones first, newest first.
func (api *API) Sessions() ([]SessionView, error) {
	ss := api.app.sessions
	list, err := ss.store.List()
	if err != nil && len(list) == 0 {
		return nil, err
	}
	ids := make([]string, len(list))
	for i, s := range list {
		ids[i] = s.ID
	}
	// The journal's index by session: a count and two keys per session,
	// not every record.
	standing, err := api.app.journal.Sessions(ids)
	if err != nil {
		return nil, err
	}
	out := []SessionView{}
	for _, running := range []bool{true, false} {
		for _, s := range list {
			if (s.State == confined.StateRunning) != running {
				continue
			}
			v := SessionView{ID: s.ID, Agent: s.Agent, Repo: s.Repo, RepoName: filepath.Base(s.Repo),
				Runtime: s.Runtime, Network: nonNil(s.Network), Granted: nonNil(s.Granted), State: string(s.State),
				StartedAt: s.StartedAt.UTC().Format(time.RFC3339), Proposals: standing[s.ID].Proposals, Leftover: s.Leftover,
				LeftoverFiles: s.LeftoverFiles, Note: s.Note}
			if !s.EndedAt.IsZero() {
				v.EndedAt = s.EndedAt.UTC().Format(time.RFC3339)
			}
			if s.Leftover != "" {
				if rec, err := api.app.journal.Get(s.Leftover); err == nil {
					v.LeftoverState = string(rec.State)
				}
			}
			v.CanOffer = ss.offerable(s, openCardOf(standing[s.ID]))
			out = append(out, v)
		}
	}
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// StopSession stops a running session: its agent is stopped and the
// session ends as when the agent exits (what it left is offered).
func (api *API) StopSession(id string) (bool, error) {
	if !proposal.ValidSessionID(id) {
		return false, errcode.New(errcode.InvalidArgument, "a session id is 1–64 characters of A-Z a-z 0-9 _ -")
	}
	if err := api.app.sessions.Stop(id, "owner:"+api.kind); err != nil {
		return false, err
	}
	return true, nil
}

// OfferSessionChanges offers an ended session's kept changes again, as a
// new card, when the last one ended without landing them.
func (api *API) OfferSessionChanges(id string) (SessionOffer, error) {
	if !proposal.ValidSessionID(id) {
		return SessionOffer{}, errcode.New(errcode.InvalidArgument, "a session id is 1–64 characters of A-Z a-z 0-9 _ -")
	}
	ctx, cancel := context.WithTimeout(api.app.runCtx, 2*time.Minute)
	defer cancel()
	res, err := api.app.sessions.Reoffer(ctx, id)
	if err != nil {
		return SessionOffer{}, err
	}
	return SessionOffer{Proposal: res.Leftover, Files: res.Files, Message: res.Message}, nil
}

// SessionOffer is what offering a session's changes did.
type SessionOffer struct {
	Proposal string `json:"proposal,omitempty"`
	Files    int    `json:"files,omitempty"`
	Message  string `json:"message"`
}
