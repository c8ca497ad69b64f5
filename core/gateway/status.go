package gateway

import (
	"net/http"

	"github.com/sluicehq/sluice/core/errcode"
)

// statuses is the HTTP status of each code a backend answers with: the
// one place the gateway maps the error vocabulary (core/errcode) to HTTP.
var statuses = errcode.Statuses{
	errcode.Unauthorized:      http.StatusUnauthorized,
	errcode.Forbidden:         http.StatusForbidden,
	errcode.PolicyDenied:      http.StatusForbidden,
	errcode.PathOutsideRoots:  http.StatusForbidden,
	errcode.NotFound:          http.StatusNotFound,
	errcode.ProposalNotFound:  http.StatusNotFound,
	errcode.WorkspaceNotFound: http.StatusNotFound,
	errcode.ProposalTerminal:  http.StatusConflict,
	errcode.Conflict:          http.StatusConflict,
	errcode.WorkspaceLocked:   http.StatusConflict,
	errcode.TooLarge:          http.StatusRequestEntityTooLarge,
	errcode.TooManyPending:    http.StatusTooManyRequests,
	errcode.Internal:          http.StatusInternalServerError,
	errcode.GitFailed:         http.StatusInternalServerError,
	errcode.Unsupported:       http.StatusNotImplemented,
	errcode.Unavailable:       http.StatusServiceUnavailable,
	errcode.AuditFailed:       http.StatusServiceUnavailable,
	// An outcome that cannot be produced: the proposal is well formed, the
	// repository's state refuses it (protocol.md, "sealing").
	errcode.MergeConflict:       http.StatusUnprocessableEntity,
	errcode.PatchDoesNotApply:   http.StatusUnprocessableEntity,
	errcode.NothingToCommit:     http.StatusUnprocessableEntity,
	errcode.UnrelatedHistories:  http.StatusUnprocessableEntity,
	errcode.DirtyWorktree:       http.StatusUnprocessableEntity,
	errcode.OperationInProgress: http.StatusUnprocessableEntity,
	errcode.NothingDeleted:      http.StatusUnprocessableEntity,
	errcode.StaleBase:           http.StatusUnprocessableEntity,
	errcode.HookFailed:          http.StatusUnprocessableEntity,
	errcode.BranchCheckedOut:    http.StatusUnprocessableEntity,
	errcode.RefExists:           http.StatusUnprocessableEntity,
	errcode.RepoLocked:          http.StatusUnprocessableEntity,
	errcode.DigestMismatch:      http.StatusUnprocessableEntity,
}

// statusOf is the HTTP status of an answer with code.
func statusOf(code errcode.Code) int { return statuses.Of(code) }
