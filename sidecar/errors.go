package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
)

// Stable error codes a model can act on (DESIGN §3).

// ToolError is the error object of a failed tool call's result: the wire
// form of an *errcode.Error (asToolError).
type ToolError struct {
	Code    errcode.Code `json:"code" jsonschema:"stable error code, e.g. invalid_argument, path_outside_roots, stale_base"`
	Message string       `json:"message" jsonschema:"what went wrong, for the model"`
	Data    any          `json:"data,omitempty" jsonschema:"details that help to act on the error"`
}

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

// nextSteps name, per code, what a model can do next. A message that does
// not already say it gets it appended (withNextStep), so that every error a
// model can act on ends in an action rather than a dead end; the cue is
// short because it is read only when the call failed.
var nextSteps = map[errcode.Code]string{
	errcode.InvalidArgument:     "correct it and call again",
	errcode.PathOutsideRoots:    "sluice_capabilities lists the allowed roots; ask the person to add a folder outside them",
	errcode.NotARepository:      "name a folder inside a git repository (fleet_radar finds them)",
	errcode.GatewayUnavailable:  "ask the person to start Sluice, then retry",
	errcode.AuditFailed:         "Sluice is running but cannot write its audit ledger (its log says why: a full disk, a damaged file); ask the person to fix that, then retry",
	errcode.ProposalNotFound:    "use a proposalId that a propose_* tool returned in this session",
	errcode.ProposalRefused:     "change what the message names and propose again",
	errcode.ProposalTerminal:    "proposal_status shows how it ended; propose again if the change is still wanted",
	errcode.StaleBase:           "read the repository again and propose against its current state",
	errcode.PolicyDenied:        "propose a change the policy allows, or ask the person",
	errcode.GitFailed:           "repo_brief shows the repository's state; check the arguments against it",
	errcode.OutputLimit:         "narrow the request (paths, limit or maxBytes) and call again",
	errcode.Timeout:             "narrow the request and call again",
	errcode.WorkspaceLocked:     "workspace_status shows what holds it; call again when it is done",
	errcode.WorkspaceNotFound:   "workspace_create makes a new one",
	errcode.EgressDenied:        "workspace runs have no network; ask the person if the command needs one",
	errcode.Unsupported:         "sluice_capabilities says what this installation supports",
	errcode.MergeConflict:       "repo_conflict_preflight shows the conflicts; resolve them on a branch and propose again",
	errcode.PatchDoesNotApply:   "read the files again (diff_text) and make the patch against them",
	errcode.NothingToCommit:     "worktree_changes shows what is uncommitted",
	errcode.UnrelatedHistories:  "the two share no commit: choose another source",
	errcode.DirtyWorktree:       "worktree_changes lists the uncommitted changes; commit or discard them first",
	errcode.OperationInProgress: "conflict_read shows the operation in progress; it must be finished or aborted first",
	errcode.NothingDeleted:      "repo_refs shows which branches are merged and where they are checked out",
}

// nextStepCue recognises a message that already names what to do: a Sluice
// tool, the person, or a retry.
var nextStepCue = regexp.MustCompile(`ask the person|retry|again|\b(repo|diff|worktree|commit|conflict|submodule|fleet|agents|safety|restore|propose|proposal|workspace|sluice|toolset)_[a-z_]+`)

// withNextStep returns te with its code's next step appended when the
// message does not name one. te itself is not changed (some are shared).
func withNextStep(te *ToolError) *ToolError {
	step, ok := nextSteps[te.Code]
	if !ok || nextStepCue.MatchString(te.Message) {
		return te
	}
	c := *te
	c.Message = strings.TrimRight(c.Message, ". ") + "; " + step
	return &c
}

// asToolError maps any error to a ToolError whose message names the next
// step (withNextStep). Errors without a code are internal: their message
// is kept generic so that nothing unexpected (a path, a token) leaks to
// the model.
func asToolError(err error) *ToolError {
	return withNextStep(codedToolError(err))
}

func codedToolError(err error) *ToolError {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &ToolError{Code: errcode.Timeout, Message: "the operation timed out"}
	case errors.Is(err, gateway.ErrUnavailable):
		return &ToolError{Code: errcode.GatewayUnavailable, Message: "the Sluice app is not reachable; ask the person to start Sluice, then retry"}
	}
	if e, ok := errcode.As(err); ok {
		return &ToolError{Code: e.Code, Message: err.Error(), Data: e.Data}
	}
	return &ToolError{Code: errcode.Internal, Message: "internal error: " + err.Error()}
}

// gatewayToolError is a gateway answer as the model meets it. The app's
// code passes through (an audit failure, an outcome that cannot be sealed,
// a policy's refusal: the app coded each once, for every boundary), except
// the few that say something about the request or the transport rather
// than the proposal, which become the code a model acts on.
func gatewayToolError(err error) error {
	var api *gateway.APIError
	if !errors.As(err, &api) {
		return err
	}
	d := api.Detail
	te := &errcode.Error{Code: d.Code, Msg: d.Message, Data: d.Data}
	switch d.Code {
	case errcode.TooManyPending:
		te.Code, te.Data = errcode.ProposalRefused, map[string]string{"reason": string(d.Code)}
	case errcode.Forbidden, errcode.Conflict:
		te.Code = errcode.ProposalRefused
	case errcode.TooLarge:
		te.Code = errcode.InvalidArgument
	case errcode.Unauthorized:
		te.Code, te.Msg = errcode.GatewayUnavailable, "the Sluice app refused this sidecar's token (it may have restarted); restart the MCP server, then retry"
	case errcode.Unavailable:
		// The app answered, but it is shutting down.
		te.Code = errcode.GatewayUnavailable
	case errcode.NotFound:
		te.Code, te.Msg = errcode.GatewayUnavailable, "the Sluice app does not know this request; it may be a different version than this sidecar"
	case errcode.Internal:
		te.Msg = "the Sluice app failed: " + d.Message
	}
	return te
}

// handlerFunc is the shape of every tool implementation in this package:
// it returns its output or an error, and registerTool turns errors into
// structured tool results.
type handlerFunc[In, Out any] func(ctx context.Context, req *mcp.CallToolRequest, in In) (Out, error)

// addTool registers a tool whose failures become isError results with a
// structured error, and whose protocol faults (a *jsonrpc.Error) stay
// JSON-RPC errors.
func addTool[In, Out any, P errorSetter[Out]](s *mcp.Server, t *mcp.Tool, h handlerFunc[In, Out]) {
	registerTool[In, Out, P](s, t, h, nil)
}

// outcomeStep is the extra step of a tool whose result carries an outcome
// (a proposal's). Its isError results show the whole output, whose status
// the model acts on, not only the error.
type outcomeStep[Out any] struct {
	// failure is the error a successful call's outcome stands for, or nil;
	// with it set, such an outcome is an isError result too. A nil failure
	// reports every outcome as a success.
	failure func(Out) *ToolError
}

// registerTool is the one path from a handler to an MCP result: the
// output as it is, a failure as an isError result with a structured
// error, a protocol fault (a *jsonrpc.Error) as a JSON-RPC error.
// outcome, when not nil, adds the step for results that carry one.
func registerTool[In, Out any, P errorSetter[Out]](s *mcp.Server, t *mcp.Tool, h handlerFunc[In, Out], outcome *outcomeStep[Out]) {
	call := func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		out, err := h(ctx, req, in)
		if err != nil {
			if isProtocolError(err) {
				var zero Out
				return nil, zero, err
			}
			var failed Out
			te := asToolError(err)
			P(&failed).setError(te)
			return errorResult(failed, te, outcome != nil), failed, nil
		}
		if outcome != nil && outcome.failure != nil {
			if te := outcome.failure(out); te != nil {
				P(&out).setError(te)
				return errorResult(out, te, true), out, nil
			}
		}
		return nil, out, nil
	}
	if in, out, ok := tableSchemas(t.Name); ok {
		// The schemas as the derivation would make them (tableSchemas),
		// resolved on the tool's first call (lazyToolHandler).
		fullOutputs.Store(t.Name, fullSchemaOf[Out])
		t.InputSchema, t.OutputSchema = in, out
		s.AddTool(t, lazyToolHandler(t.Name, in, out, call))
		return
	}
	if t.OutputSchema == nil {
		t.OutputSchema = compactOutputSchema[Out](t.Name)
	}
	mcp.AddTool(s, t, call)
}

// errorResult is the isError result of a call that failed with te: its
// text is the error alone, or the whole output when whole is set.
func errorResult[Out any](out Out, te *ToolError, whole bool) *mcp.CallToolResult {
	var v any = map[string]any{"error": te}
	if whole {
		v = out
	}
	text, _ := json.Marshal(v)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}
}
