package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// HandoffResult says where a sealed workspace's commits now are in the
// person's repository.
type HandoffResult struct {
	// Ref is refs/sluice/proposals/<workspace id>.
	Ref string `json:"ref"`
	// SHA is the workspace's head commit, which Ref points at.
	SHA string `json:"sha"`
}

// WorkspaceHandoff moves a sealed workspace's commits into the person's
// repository under a refs/sluice/ ref. The sidecar never writes to a
// repository, so it asks the app to. Nothing about a proposal is decided
// here: the ref is only the source a later proposal names, and the
// person's branches, index and working tree are untouched.
type WorkspaceHandoff interface {
	Handoff(ctx context.Context, agent, workspaceID, repo string) (HandoffResult, error)
}

// HandoffRequest is the body of POST /v1/workspaces/{id}/handoff.
type HandoffRequest struct {
	// Repo is the repository the workspace was created from (absolute).
	Repo string `json:"repo"`
}

// WorkspaceRoutes are the workspace routes, for documentation and for the
// test that proves none of them decides.
var WorkspaceRoutes = []string{
	"POST /v1/workspaces/{id}/handoff",
}

func (s *Server) handleWorkspaces(h WorkspaceHandoff) {
	s.Handle(WorkspaceRoutes[0], func(w http.ResponseWriter, r *http.Request) {
		agent, ok := agentOf(w, r)
		if !ok {
			return
		}
		id := r.PathValue("id")
		if !proposal.ValidID(id) {
			WriteError(w, http.StatusBadRequest, errcode.InvalidArgument, "workspace id must match "+proposal.IDPattern, nil)
			return
		}
		var req HandoffRequest
		if !decodeBody(w, r, &req, "handoff request") {
			return
		}
		if req.Repo == "" {
			WriteError(w, http.StatusBadRequest, errcode.InvalidArgument, "repo is required", nil)
			return
		}
		if h == nil {
			WriteError(w, http.StatusNotImplemented, errcode.Unsupported,
				"workspaces are not configured in the Sluice app: set workspaceImage in config.json (or SLUICE_WORKSPACE_IMAGE) to an image ID and restart it", nil)
			return
		}
		res, err := h.Handoff(r.Context(), agent, id, req.Repo)
		if err != nil {
			s.fail(w, err)
			return
		}
		WriteJSON(w, http.StatusOK, res)
	})
}

// handoffTimeout bounds a handoff: a fetch of the workspace's objects into
// the person's repository, checked object by object.
const handoffTimeout = 60 * time.Second

// WorkspaceHandoff asks the app to fetch a sealed workspace's commits
// into repo under refs/sluice/proposals/<id>.
func (c *Client) WorkspaceHandoff(ctx context.Context, agent, workspaceID, repo string) (HandoffResult, error) {
	if err := checkAgent(agent); err != nil {
		return HandoffResult{}, err
	}
	if !proposal.ValidID(workspaceID) {
		return HandoffResult{}, badArgument("workspace id must match " + proposal.IDPattern)
	}
	body, err := json.Marshal(HandoffRequest{Repo: repo})
	if err != nil {
		return HandoffResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, handoffTimeout)
	defer cancel()
	var res HandoffResult
	err = c.do(ctx, agent, http.MethodPost, "/v1/workspaces/"+url.PathEscape(workspaceID)+"/handoff", bytes.NewReader(body), &res)
	return res, err
}
