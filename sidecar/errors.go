package sidecar

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/gateway"
)

// Stable error codes a model can act on (DESIGN §3).
const (
	CodeInvalidArgument    = "invalid_argument"
	CodePathOutsideRoots   = "path_outside_roots"
	CodeNotARepository     = "not_a_repository"
	CodeGatewayUnavailable = "gateway_unavailable"
	CodeProposalNotFound   = "proposal_not_found"
	CodeProposalRefused    = "proposal_refused"
	CodeProposalTerminal   = "proposal_terminal"
	CodeStaleBase          = "stale_base"
	CodePolicyDenied       = "policy_denied"
	CodeGitFailed          = "git_failed"
	CodeOutputLimit        = "output_limit"
	CodeTimeout            = "timeout"
	CodeWorkspaceLocked    = "workspace_locked"
	CodeWorkspaceNotFound  = "workspace_not_found"
	CodeEgressDenied       = "egress_denied"
	CodeUnsupported        = "unsupported"
	CodeInternal           = "internal"
	// The outcome of a proposal is sealed when it arrives; one that cannot
	// be produced is refused with one of these before any card opens.
	CodeMergeConflict       = "merge_conflict"
	CodePatchDoesNotApply   = "patch_does_not_apply"
	CodeNothingToCommit     = "nothing_to_commit"
	CodeUnrelatedHistories  = "unrelated_histories"
	CodeDirtyWorktree       = "dirty_worktree"
	CodeOperationInProgress = "operation_in_progress"
	CodeNothingDeleted      = "nothing_deleted"
)

// ToolError is the structured error of a failed tool call.
type ToolError struct {
	Code    string `json:"code" jsonschema:"stable error code, e.g. invalid_argument, path_outside_roots, stale_base"`
	Message string `json:"message" jsonschema:"what went wrong, for the model"`
	Data    any    `json:"data,omitempty" jsonschema:"details that help to act on the error"`
}

func (e *ToolError) Error() string { return e.Code + ": " + e.Message }

// ErrorCode lets ToolError pass through asToolError unchanged.
func (e *ToolError) ErrorCode() string { return e.Code }

// ErrorField is embedded in every tool's Out type. It is set only when the
// result has isError: true.
type ErrorField struct {
	Error *ToolError `json:"error,omitempty" jsonschema:"set only when the call failed (isError is true)"`
}

func (f *ErrorField) setError(e *ToolError) { f.Error = e }

// errorSetter is implemented by pointers to Out types that embed ErrorField.
type errorSetter[T any] interface {
	*T
	setError(*ToolError)
}

// coded is implemented by core errors that carry a stable code.
type coded interface{ ErrorCode() string }

// dataCarrier is implemented by core errors that carry structured details
// (for example the current SHAs of a stale_base).
type dataCarrier interface{ ErrorData() any }

// asToolError maps any error to a ToolError. Errors without a code are
// internal: their message is kept generic so that nothing unexpected (a
// path, a token) leaks to the model.
func asToolError(err error) *ToolError {
	var te *ToolError
	if errors.As(err, &te) {
		return te
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &ToolError{Code: CodeTimeout, Message: "the operation timed out"}
	case errors.Is(err, gateway.ErrUnavailable):
		return &ToolError{Code: CodeGatewayUnavailable, Message: "the Sluice app is not reachable; ask the person to start Sluice, then retry"}
	}
	var c coded
	if errors.As(err, &c) {
		t := &ToolError{Code: c.ErrorCode(), Message: err.Error()}
		var d dataCarrier
		if errors.As(err, &d) {
			t.Data = d.ErrorData()
		}
		return t
	}
	return &ToolError{Code: CodeInternal, Message: "internal error: " + err.Error()}
}

// handlerFunc is the shape of every tool implementation in this package:
// it returns its output or an error, and addTool turns errors into
// structured tool results.
type handlerFunc[In, Out any] func(ctx context.Context, req *mcp.CallToolRequest, in In) (Out, error)

// addTool registers a tool whose failures become isError results with a
// structured error, and whose protocol faults (a *jsonrpc.Error) stay
// JSON-RPC errors.
func addTool[In, Out any, P errorSetter[Out]](s *mcp.Server, t *mcp.Tool, h handlerFunc[In, Out]) {
	if t.OutputSchema == nil {
		t.OutputSchema = compactOutputSchema[Out](t.Name)
	}
	noteTool(s, t.Name)
	mcp.AddTool(s, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		out, err := h(ctx, req, in)
		if err == nil {
			return nil, out, nil
		}
		if isProtocolError(err) {
			var zero Out
			return nil, zero, err
		}
		te := asToolError(err)
		var failed Out
		P(&failed).setError(te)
		text, _ := json.Marshal(map[string]any{"error": te})
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}, failed, nil
	})
}
