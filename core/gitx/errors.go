package gitx

import (
	"github.com/sluicehq/sluice/core/errcode"
)

// Sentinel errors callers branch on with errors.Is (which matches on code
// and message, so a copy carrying extra Data still matches).
var (
	// ErrNotARepository: the path is inside the roots but no repository
	// contains it (below the root that allows it).
	ErrNotARepository = &errcode.Error{Code: errcode.NotARepository, Msg: "repoPath is not inside a git repository"}
	// ErrBare: the tool needs a working tree and the repository is bare.
	ErrBare = &errcode.Error{Code: errcode.Unsupported, Msg: "the repository is bare: it has no working tree"}
	// ErrGitNotFound: no usable git binary on an absolute PATH entry.
	ErrGitNotFound = &errcode.Error{Code: errcode.Unsupported, Msg: "git was not found on PATH; install git 2.31 or newer"}
	// ErrTimeout: git did not finish within the call's time limit; its
	// whole process group was killed.
	ErrTimeout = &errcode.Error{Code: errcode.Timeout, Msg: "git did not finish in time and was stopped"}
)

// OutputLimit is the Data of an output_limit error.
type OutputLimit struct {
	LimitBytes int64  `json:"limitBytes"`
	Hint       string `json:"hint,omitempty"`
}
