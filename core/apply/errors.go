package apply

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Stable codes of execution and restore failures. They end up in the
// journal's Outcome.Code, in the audit ledger and, for the ones an agent
// can act on, in proposal_wait's error.
const (
	// CodeStaleBase: a pinned ref moved since the proposal was made (or
	// lost the compare-and-swap while it ran). Nothing changed.
	CodeStaleBase = "stale_base"
	// CodeDigestMismatch: the stored proposal is not what was approved.
	CodeDigestMismatch = "digest_mismatch"
	// CodeNotApproved: Execute was asked to run a proposal that is not in
	// the approved state.
	CodeNotApproved = "not_approved"
	// CodeMergeConflict: a merge or rebase does not apply cleanly; the
	// conflicting files are listed and nothing in the checkout changed.
	CodeMergeConflict = "merge_conflict"
	// CodeUnrelatedHistories: the two sides of a merge or rebase share no
	// commit.
	CodeUnrelatedHistories = "unrelated_histories"
	// CodePatchDoesNotApply: git apply refused the patch; nothing changed.
	CodePatchDoesNotApply = "patch_does_not_apply"
	// CodeHookFailed: one of the person's commit hooks refused the commit;
	// its output is in the message.
	CodeHookFailed = "hook_failed"
	// CodeNothingToCommit: the commit would be empty.
	CodeNothingToCommit = "nothing_to_commit"
	// CodeDirtyWorktree: the checkout that would change has uncommitted
	// changes (or untracked files in the way); nothing was touched.
	CodeDirtyWorktree = "dirty_worktree"
	// CodeOperationInProgress: a merge, rebase, cherry-pick, revert or
	// bisect is in progress in the checkout, or its index has conflicts.
	CodeOperationInProgress = "operation_in_progress"
	// CodeCheckedOut: the branch is checked out where Sluice may not or
	// cannot move it.
	CodeCheckedOut = "branch_checked_out"
	// CodeRefExists: a branch to be created already exists.
	CodeRefExists = "ref_exists"
	// CodePushRejected: the remote refused the push.
	CodePushRejected = "push_rejected"
	// CodeNothingDeleted: no branch of a deletion was safe to delete.
	CodeNothingDeleted = "nothing_deleted"
	// CodeRestoreConflict: refs or files changed after the restore point
	// was taken; restoring would overwrite that work unless forced.
	CodeRestoreConflict = "restore_conflict"
	// CodeRestorePointNotFound: no restore point has this id here.
	CodeRestorePointNotFound = "restore_point_not_found"
	// CodeGitFailed: git failed for another reason; its stderr is in the
	// data.
	CodeGitFailed = "git_failed"
	// CodeUnsupported: the request needs something this executor does not
	// do (a worktree fingerprint, custom merge drivers, an old git).
	CodeUnsupported = "unsupported"
	// CodeInvalidArgument: the proposal or request is malformed for this
	// repository (a path that is not a submodule, a repository outside the
	// allowed roots).
	CodeInvalidArgument = "invalid_argument"
	// CodeInternal: a bug or an environment failure (journal closed, disk
	// full).
	CodeInternal = "internal"
)

// Error is an execution or restore failure with a stable code. errors.Is
// matches two *Errors with the same code, so the sentinels below work on
// any error that carries details.
type Error struct {
	Code string
	Msg  string
	// Data is structured detail: for stale_base a map of ref → current
	// SHA ("" when the ref is gone); for merge_conflict the conflicting
	// files; for restore_conflict the changes made after the restore
	// point; for git_failed a GitFailure.
	Data any
	// Err is the cause, if any.
	Err error
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return e.Code
	}
	return e.Msg
}

// ErrorCode is the stable code, for the MCP and UI boundaries.
func (e *Error) ErrorCode() string { return e.Code }

// ErrorData is the structured detail.
func (e *Error) ErrorData() any { return e.Data }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches any *Error with the same code.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Code == e.Code
}

// Sentinels for errors.Is. They carry only a code.
var (
	ErrStaleBase          = &Error{Code: CodeStaleBase}
	ErrDigestMismatch     = &Error{Code: CodeDigestMismatch}
	ErrNotApproved        = &Error{Code: CodeNotApproved}
	ErrMergeConflict      = &Error{Code: CodeMergeConflict}
	ErrHookFailed         = &Error{Code: CodeHookFailed}
	ErrDirtyWorktree      = &Error{Code: CodeDirtyWorktree}
	ErrRestoreConflict    = &Error{Code: CodeRestoreConflict}
	ErrRestorePointAbsent = &Error{Code: CodeRestorePointNotFound}
)

// CodeOf returns the stable code of err: its own when it has one, else
// internal.
func CodeOf(err error) string {
	var c interface{ ErrorCode() string }
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	return CodeInternal
}

func newErr(code, format string, a ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, a...)}
}

// GitFailure is the Data of a git_failed error.
type GitFailure struct {
	Command  string `json:"command"`
	ExitCode int    `json:"exitCode"`
	Stderr   string `json:"stderr,omitempty"`
}

// staleBase builds the stale_base error for refs whose current SHA is not
// the expected one. current maps ref → SHA now ("" when gone).
func staleBase(moved map[string]string, expected map[string]string) *Error {
	keys := make([]string, 0, len(moved))
	for k := range moved {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		now := moved[k]
		if now == "" {
			now = "gone"
		} else {
			now = short(now)
		}
		parts = append(parts, fmt.Sprintf("%s was %s, now %s", k, short(expected[k]), now))
	}
	return &Error{Code: CodeStaleBase, Data: moved,
		Msg: "the repository moved since the proposal was made, so nothing was changed: " + strings.Join(parts, "; ")}
}

// short abbreviates a SHA for messages.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// clip bounds text put into messages and outcomes, cutting on a line
// boundary where it can and saying so.
func clip(s string, max int) string {
	s = strings.TrimSpace(s)
	if len(s) <= max {
		return s
	}
	cut := s[:max]
	if i := strings.LastIndexByte(cut, '\n'); i > max/2 {
		cut = cut[:i]
	}
	return cut + "\n… (truncated)"
}
