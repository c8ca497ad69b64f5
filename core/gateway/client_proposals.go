package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// Per-call time limits. Short, so that a hung app shows up as
// gateway_unavailable rather than as a tool call that never returns;
// a submit may carry a 4 MiB patch and waits for an fsync.
const (
	submitTimeout = 15 * time.Second
	callTimeout   = 5 * time.Second
	// waitSlack is added to a long-poll's own timeout for the answer to
	// arrive.
	waitSlack = 5 * time.Second
)

func badArgument(msg string) *APIError {
	return &APIError{Status: http.StatusBadRequest, Detail: ErrorDetail{Code: errcode.InvalidArgument, Message: msg}}
}

func checkAgent(agent string) error {
	if !proposal.ValidAgent(agent) {
		return badArgument("agent name must match ^[A-Za-z0-9._:-]{1,128}$")
	}
	return nil
}

// checkAgentAndID validates both before either reaches a URL.
func checkAgentAndID(agent, id string) error {
	if err := checkAgent(agent); err != nil {
		return err
	}
	if !proposal.ValidID(id) {
		return badArgument("proposal id must match " + proposal.IDPattern)
	}
	return nil
}

// SubmitProposal sends p on behalf of agent. The app re-validates
// everything, digest included, and answers with the stored proposal's
// status (Replayed when an idempotency key matched an earlier one).
func (c *Client) SubmitProposal(ctx context.Context, agent string, p proposal.Proposal) (ProposalStatus, error) {
	if err := checkAgent(agent); err != nil {
		return ProposalStatus{}, err
	}
	body, err := json.Marshal(p)
	if err != nil {
		return ProposalStatus{}, err
	}
	timeout := submitTimeout
	if c.SubmitTimeout > 0 {
		timeout = c.SubmitTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var st ProposalStatus
	err = c.do(ctx, agent, http.MethodPost, "/v1/proposals", bytes.NewReader(body), &st)
	return st, err
}

// GetProposal returns the current status of one of agent's proposals.
func (c *Client) GetProposal(ctx context.Context, agent, id string) (ProposalStatus, error) {
	if err := checkAgentAndID(agent, id); err != nil {
		return ProposalStatus{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var st ProposalStatus
	err := c.do(ctx, agent, http.MethodGet, "/v1/proposals/"+url.PathEscape(id), nil, &st)
	return st, err
}

// WaitProposal long-polls up to timeout (at most MaxWait) for the proposal
// to settle and returns its status then, settled or not.
func (c *Client) WaitProposal(ctx context.Context, agent, id string, timeout time.Duration) (ProposalStatus, error) {
	if err := checkAgentAndID(agent, id); err != nil {
		return ProposalStatus{}, err
	}
	timeout = max(0, min(timeout, MaxWait))
	ctx, cancel := context.WithTimeout(ctx, timeout+waitSlack)
	defer cancel()
	var st ProposalStatus
	ms := strconv.FormatInt(timeout.Milliseconds(), 10) + "ms"
	err := c.do(ctx, agent, http.MethodGet, "/v1/proposals/"+url.PathEscape(id)+"/wait?timeout="+ms, nil, &st)
	return st, err
}

// CancelProposal withdraws one of agent's pending proposals.
func (c *Client) CancelProposal(ctx context.Context, agent, id string) (ProposalStatus, error) {
	if err := checkAgentAndID(agent, id); err != nil {
		return ProposalStatus{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var st ProposalStatus
	err := c.do(ctx, agent, http.MethodPost, "/v1/proposals/"+url.PathEscape(id)+"/cancel", nil, &st)
	return st, err
}

// RestorePoints lists the restore points of repo (empty for all).
func (c *Client) RestorePoints(ctx context.Context, agent, repo string) (RestorePoints, error) {
	if err := checkAgent(agent); err != nil {
		return RestorePoints{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	path := "/v1/restore-points"
	if repo != "" {
		path += "?" + url.Values{"repo": {repo}}.Encode()
	}
	var rp RestorePoints
	err := c.do(ctx, agent, http.MethodGet, path, nil, &rp)
	return rp, err
}
