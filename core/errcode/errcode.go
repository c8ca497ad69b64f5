// Package errcode is Sluice's one vocabulary of failures: a stable Code
// for every failure a caller can act on, and Error, which carries one.
//
// Every package that fails in a way a person or a model can act on
// returns an *Error with one of the codes below; the boundaries map them
// with tables and nothing else: the MCP result (sidecar: the error object
// and the next step a model is told), the gateway's HTTP status
// (core/gateway) and the UI's status (app). A code never changes meaning
// once released: agents and scripts branch on it.
//
// Each code says when it happens and what the caller can do.
package errcode

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is a stable failure code. Its text is what the wire carries.
type Code string

// Requests that cannot be used as they are.
const (
	// InvalidArgument: the request is malformed, or does not fit the
	// repository it names (a path that is not a submodule, a branch name
	// git refuses). Nothing changed. Correct it and call again.
	InvalidArgument Code = "invalid_argument"
	// PathOutsideRoots: a path (or the git directory it leads to) is
	// outside the folders the person allowed. Nothing was read. Only the
	// person can allow another folder.
	PathOutsideRoots Code = "path_outside_roots"
	// NotARepository: the path is not inside a git repository, or is a
	// bare one where a working tree is needed. Name a folder inside one.
	NotARepository Code = "not_a_repository"
	// OutputLimit: the answer would exceed its size limit. Narrow the
	// request (paths, a limit) and call again.
	OutputLimit Code = "output_limit"
	// Timeout: the operation ran past its deadline and was stopped;
	// nothing it would have written was kept. Narrow it and call again.
	Timeout Code = "timeout"
	// TooLarge: a request body is over the gateway's limit.
	TooLarge Code = "too_large"
	// Unsupported: this installation does not do what was asked (no
	// workspace image, an old git, a custom merge driver). Ask the person,
	// or do without.
	Unsupported Code = "unsupported"
)

// Who may ask.
const (
	// Unauthorized: the caller did not prove who it is (no or a wrong
	// token, no session). Log in again.
	Unauthorized Code = "unauthorized"
	// Forbidden: the caller is known but may not do this (another agent's
	// proposal or workspace, a foreign Host or Origin).
	Forbidden Code = "forbidden"
	// PolicyDenied: the person's policy refuses this proposal. Propose a
	// change the policy allows, or ask the person.
	PolicyDenied Code = "policy_denied"
)

// Proposals and their lifecycle.
const (
	// NotFound: no such route or thing.
	NotFound Code = "not_found"
	// ProposalNotFound: no proposal has this id (or it is another
	// agent's). Use an id a proposal returned.
	ProposalNotFound Code = "proposal_not_found"
	// ProposalTerminal: the proposal has already ended (approved and run,
	// rejected, cancelled, expired); it cannot be decided or cancelled.
	ProposalTerminal Code = "proposal_terminal"
	// ProposalRefused: the app would not take the proposal (the agent's
	// pending cap, a reused id, a body over the limit); the data says
	// why. Change that and propose again.
	ProposalRefused Code = "proposal_refused"
	// Conflict: an id or idempotency key already names something else.
	Conflict Code = "conflict"
	// TooManyPending: the agent has as many pending proposals as it may;
	// wait for decisions or cancel some.
	TooManyPending Code = "too_many_pending"
	// DigestMismatch: what was approved is not what is stored (or a
	// decision named another digest). Nothing ran; look at the card again.
	DigestMismatch Code = "digest_mismatch"
	// NotApproved: an execution was asked for a proposal that is not
	// approved.
	NotApproved Code = "not_approved"
	// ConfirmationRequired: the change can lose work, and approving it
	// needs the confirmation word typed.
	ConfirmationRequired Code = "confirmation_required"
	// PolicyChanged: the policy file changed since the rules were shown;
	// nothing was changed. Look again and retry.
	PolicyChanged Code = "policy_changed"
	// InvalidPolicy: the policy file cannot be read or is not the one
	// configured. Fix or restore it.
	InvalidPolicy Code = "invalid_policy"
	// RuleNotFound: no trust rule has this id.
	RuleNotFound Code = "rule_not_found"
	// DestructiveNotTrusted: a trust rule may not approve a change that
	// can lose work.
	DestructiveNotTrusted Code = "destructive_not_trusted"
)

// What the repository's state refuses. The executor checks before it
// writes: with each of these, nothing in the repository changed.
const (
	// StaleBase: a pinned ref moved since the proposal was made (or lost
	// the compare-and-swap while it ran); the data maps each ref to its
	// current commit ("" when gone). Read again and propose against the
	// current state.
	StaleBase Code = "stale_base"
	// MergeConflict: a merge or rebase does not apply cleanly; the data
	// lists the conflicting files.
	MergeConflict Code = "merge_conflict"
	// UnrelatedHistories: the two sides of a merge or rebase share no
	// commit. Choose another source.
	UnrelatedHistories Code = "unrelated_histories"
	// PatchDoesNotApply: git apply refused the patch; the data holds the
	// failing hunk. Read the files again and make the patch against them.
	PatchDoesNotApply Code = "patch_does_not_apply"
	// HookFailed: one of the person's commit hooks refused the commit; its
	// output is in the message.
	HookFailed Code = "hook_failed"
	// NothingToCommit: the commit (or merge, rebase, discard) would change
	// nothing.
	NothingToCommit Code = "nothing_to_commit"
	// DirtyWorktree: the checkout that would change has uncommitted
	// changes or untracked files in the way; the data lists them. Commit
	// or discard them first.
	DirtyWorktree Code = "dirty_worktree"
	// OperationInProgress: a merge, rebase, cherry-pick, revert or bisect
	// is in progress in the checkout, or its index has conflicts. Finish or
	// abort it first.
	OperationInProgress Code = "operation_in_progress"
	// BranchCheckedOut: the branch is checked out where Sluice may not or
	// cannot move it.
	BranchCheckedOut Code = "branch_checked_out"
	// RefExists: a branch to be created already exists.
	RefExists Code = "ref_exists"
	// PushRejected: the remote refused the push.
	PushRejected Code = "push_rejected"
	// NothingDeleted: no branch of a deletion was safe to delete.
	NothingDeleted Code = "nothing_deleted"
	// RepoLocked: git's lock files are in the repository, so nothing was
	// run; the data lists them. Wait for the git that holds them, or
	// remove the ones an interrupted execution left from its card.
	RepoLocked Code = "repo_locked"
	// RestoreConflict: refs or files changed after the restore point was
	// taken; restoring would overwrite that work unless forced. The data
	// lists the changes.
	RestoreConflict Code = "restore_conflict"
	// RestorePointNotFound: no restore point has this id here.
	RestorePointNotFound Code = "restore_point_not_found"
	// GitFailed: git failed for another reason; the data holds the
	// command, its exit code and its stderr.
	GitFailed Code = "git_failed"
)

// How a proposal ended without running, in its outcome.
const (
	// Expired: no decision came before the proposal's pending time ran
	// out. Propose again if the change is still wanted.
	Expired Code = "expired"
	// Interrupted: the app stopped while the proposal ran; it needs the
	// person's look (reconciliation) and is never run again blindly.
	Interrupted Code = "interrupted"
	// RevalidationFailed: an approved proposal could not be checked again
	// after a restart, so it did not run.
	RevalidationFailed Code = "revalidation_failed"
)

// Workspaces.
const (
	// WorkspaceNotFound: no workspace has this id (or it is another
	// agent's). Create a new one.
	WorkspaceNotFound Code = "workspace_not_found"
	// WorkspaceLocked: another operation holds the workspace; call again
	// when it is done.
	WorkspaceLocked Code = "workspace_locked"
	// EgressDenied: a workspace command tried to reach the network, which
	// workspaces do not have.
	EgressDenied Code = "egress_denied"
)

// The app itself.
const (
	// Unavailable: the app is shutting down or its journal is closed.
	Unavailable Code = "unavailable"
	// GatewayUnavailable: the sidecar cannot reach the app. Start Sluice,
	// then retry.
	GatewayUnavailable Code = "gateway_unavailable"
	// AuditFailed: the audit ledger could not be written, so the action
	// was not taken. The app's log says why (a full disk, a damaged file).
	AuditFailed Code = "audit_failed"
	// AlreadyRunning: another Sluice app runs for this person; its window
	// is the one to use.
	AlreadyRunning Code = "already_running"
	// AlreadyServing: another Sluice runs as `sluice serve`; its web UI is
	// the one to use.
	AlreadyServing Code = "already_serving"
	// Internal: a bug or an environment failure. The log has the detail;
	// the caller is told nothing more, so that no host detail leaks.
	Internal Code = "internal"
)

// Error is a failure with a stable code. errors.Is matches an *Error
// against a sentinel *Error (Is), so sentinels work on copies that carry
// details.
type Error struct {
	Code Code
	// Msg is what went wrong, for the person or the model that reads it.
	// It never holds a host detail the caller did not give.
	Msg string
	// Data is structured detail the caller can act on: for stale_base a
	// map of ref to current commit, for merge_conflict the files, for
	// git_failed the command, its exit code and stderr.
	Data any
	// Err is the cause, kept for logs and errors.Is; it is not part of
	// Error().
	Err error
}

// New returns an *Error with a formatted message.
func New(code Code, format string, a ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, a...)}
}

// Wrap returns an *Error with a formatted message and cause.
func Wrap(code Code, err error, format string, a ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, a...), Err: err}
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return string(e.Code)
	}
	return e.Msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches a target *Error with the same code and, unless the target's
// message is empty, the same message: a code-only sentinel matches every
// error with its code, one with a message only that failure.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Msg == "" || t.Msg == e.Msg)
}

// Of returns the code of the first *Error in err's chain, or Internal
// when there is none.
func Of(err error) Code {
	if e, ok := As(err); ok {
		return e.Code
	}
	return Internal
}

// As returns the first *Error in err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// IsCode reports whether the first *Error in err's chain has code.
func IsCode(err error, code Code) bool {
	e, ok := As(err)
	return ok && e.Code == code
}

// GitFailure is the Data of a git_failed error: enough to see what git
// said, bounded so that a noisy failure cannot flood a context.
type GitFailure struct {
	Command  string `json:"command"`
	ExitCode int    `json:"exitCode"`
	Stderr   string `json:"stderr,omitempty"`
}

// Statuses is a boundary's table of the HTTP status of each code (the
// gateway's, the web UI's). A code it does not name is a 400: the request
// cannot be used as it is.
type Statuses map[Code]int

// Of is the HTTP status of code.
func (s Statuses) Of(code Code) int {
	if st, ok := s[code]; ok {
		return st
	}
	return http.StatusBadRequest
}
