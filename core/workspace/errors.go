package workspace

import (
	"errors"
	"fmt"
)

// Stable error codes (DESIGN §3). The sidecar and the app pass them through
// unchanged, so they never change meaning.
const (
	CodeInvalidArgument  = "invalid_argument"
	CodePathOutsideRoots = "path_outside_roots"
	CodeNotARepository   = "not_a_repository"
	CodeNotFound         = "workspace_not_found"
	CodeLocked           = "workspace_locked"
	CodeEgressDenied     = "egress_denied"
	CodeGitFailed        = "git_failed"
	CodeTimeout          = "timeout"
	CodeOutputLimit      = "output_limit"
	CodeUnsupported      = "unsupported"
	CodeInternal         = "internal"
)

// Error is a workspace failure with a stable code. Messages never contain a
// host path that the caller did not give: a model must not learn the
// layout of the host by probing.
type Error struct {
	Code string
	Msg  string
	Data any
	// Err is the underlying cause, kept for logs and errors.Is; it is not
	// part of Error() so that host details do not reach a model.
	Err error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap exposes the cause to errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// ErrorCode is the stable code used at the MCP and UI boundaries.
func (e *Error) ErrorCode() string { return e.Code }

// ErrorData carries structured details, if any.
func (e *Error) ErrorData() any { return e.Data }

// Is makes errors.Is match on code and message, so that sentinel errors
// still match when a copy carries extra Data or a cause.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return t.Code == e.Code && t.Msg == e.Msg
}

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrNotFound: no workspace has this id (or it was destroyed).
	ErrNotFound = &Error{Code: CodeNotFound, Msg: "no such workspace"}
	// ErrLocked: another operation holds the workspace; nothing was done.
	ErrLocked = &Error{Code: CodeLocked, Msg: "the workspace is busy with another operation; try again when it finishes"}
	// ErrInvalidID: a workspace id does not match ^[A-Za-z0-9_-]{1,128}$.
	ErrInvalidID = &Error{Code: CodeInvalidArgument, Msg: "workspace id must match ^[A-Za-z0-9_-]{1,128}$"}
	// ErrPathOutside: a file path is absolute, contains "..", or resolves
	// (through a symlink) outside the workspace tree.
	ErrPathOutside = &Error{Code: CodePathOutsideRoots, Msg: "the path is outside the workspace"}
	// ErrNotReady: the workspace is sealed, being destroyed or half-created
	// and takes no more edits or runs.
	ErrNotReady = &Error{Code: CodeInvalidArgument, Msg: "the workspace is not open for changes"}
	// ErrNoRuntime: runs need a container runtime and none is configured.
	ErrNoRuntime = &Error{Code: CodeUnsupported, Msg: "no container runtime is configured; install Docker Engine to run commands in workspaces"}
	// ErrEgressDenied: a run asked for network egress that no human granted.
	ErrEgressDenied = &Error{Code: CodeEgressDenied, Msg: "network egress has not been granted to this workspace"}
	// ErrUnsupportedOS: the operation needs Linux or another Unix.
	ErrUnsupportedOS = &Error{Code: CodeUnsupported, Msg: "workspaces are not supported on this operating system"}
)

func invalidArg(format string, a ...any) *Error {
	return &Error{Code: CodeInvalidArgument, Msg: fmt.Sprintf(format, a...)}
}

func internal(err error, format string, a ...any) *Error {
	return &Error{Code: CodeInternal, Msg: fmt.Sprintf(format, a...), Err: err}
}

// GitFailure is the Data of a git_failed error: enough to see what git
// said, bounded so a noisy failure cannot flood a context.
type GitFailure struct {
	Command  string `json:"command"`
	ExitCode int    `json:"exitCode"`
	Stderr   string `json:"stderr,omitempty"`
}

// LimitData is the Data of an error caused by a cap.
type LimitData struct {
	Limit string `json:"limit"`
	Max   int64  `json:"max"`
}

// IsCode reports whether err is a workspace *Error with the given code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// CodeOf returns the stable code of err: its own (or that of any error in
// its chain with an ErrorCode method, such as gitx's) when it has one, else
// internal.
func CodeOf(err error) string {
	var e interface{ ErrorCode() string }
	if errors.As(err, &e) {
		return e.ErrorCode()
	}
	return CodeInternal
}
