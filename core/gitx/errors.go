package gitx

import (
	"errors"
	"fmt"
)

// Stable error codes. They are the MCP error codes of DESIGN §3 that a read
// can produce; the sidecar passes them through unchanged.
const (
	CodeInvalidArgument  = "invalid_argument"
	CodePathOutsideRoots = "path_outside_roots"
	CodeNotARepository   = "not_a_repository"
	CodeGitFailed        = "git_failed"
	CodeOutputLimit      = "output_limit"
	CodeTimeout          = "timeout"
	CodeUnsupported      = "unsupported"
)

// Sentinel errors callers branch on with errors.Is (which matches on code
// and message, so a copy carrying extra Data still matches).
var (
	// ErrNotARepository: the path is inside the roots but no repository
	// contains it (below the root that allows it).
	ErrNotARepository = &Error{Code: CodeNotARepository, Msg: "repoPath is not inside a git repository"}
	// ErrBare: the tool needs a working tree and the repository is bare.
	ErrBare = &Error{Code: CodeUnsupported, Msg: "the repository is bare: it has no working tree"}
	// ErrGitNotFound: no usable git binary on an absolute PATH entry.
	ErrGitNotFound = &Error{Code: CodeUnsupported, Msg: "git was not found on PATH; install git 2.31 or newer"}
	// ErrTimeout: git did not finish within the call's time limit; its
	// whole process group was killed.
	ErrTimeout = &Error{Code: CodeTimeout, Msg: "git did not finish in time and was stopped"}
)

// invalidArg builds an invalid_argument error naming the argument (never
// echoing a path outside the repository).
func invalidArg(format string, a ...any) *Error {
	return &Error{Code: CodeInvalidArgument, Msg: fmt.Sprintf(format, a...)}
}

// unsupported builds an unsupported error.
func unsupported(format string, a ...any) *Error {
	return &Error{Code: CodeUnsupported, Msg: fmt.Sprintf(format, a...)}
}

// GitFailure is the Data of a git_failed error: enough for a model to see
// what git said, bounded so that a noisy failure cannot flood a context.
type GitFailure struct {
	Command  string `json:"command"`
	ExitCode int    `json:"exitCode"`
	Stderr   string `json:"stderr,omitempty"`
}

// OutputLimit is the Data of an output_limit error.
type OutputLimit struct {
	LimitBytes int64  `json:"limitBytes"`
	Hint       string `json:"hint,omitempty"`
}

// IsCode reports whether err is a gitx *Error with the given code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}
