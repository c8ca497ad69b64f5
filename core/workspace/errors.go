package workspace

import (
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrNotFound: no workspace has this id (or it was destroyed).
	ErrNotFound = &errcode.Error{Code: errcode.WorkspaceNotFound, Msg: "no such workspace"}
	// ErrLocked: another operation holds the workspace; nothing was done.
	ErrLocked = &errcode.Error{Code: errcode.WorkspaceLocked, Msg: "the workspace is busy with another operation; try again when it finishes"}
	// ErrInvalidID: a workspace id does not match proposal.IDPattern (its
	// handoff's ref is refs/sluice/proposals/<id>).
	ErrInvalidID = &errcode.Error{Code: errcode.InvalidArgument, Msg: "workspace id must match " + proposal.IDPattern}
	// ErrPathOutside: a file path is absolute, contains "..", or resolves
	// (through a symlink) outside the workspace tree.
	ErrPathOutside = &errcode.Error{Code: errcode.PathOutsideRoots, Msg: "the path is outside the workspace"}
	// ErrNotReady: the workspace is sealed, being destroyed or half-created
	// and takes no more edits or runs.
	ErrNotReady = &errcode.Error{Code: errcode.InvalidArgument, Msg: "the workspace is not open for changes"}
	// ErrNoRuntime: runs need a container runtime and none is configured.
	ErrNoRuntime = &errcode.Error{Code: errcode.Unsupported, Msg: "no container runtime is configured; install Docker Engine to run commands in workspaces"}
	// ErrEgressDenied: a run asked for network egress that no human granted.
	ErrEgressDenied = &errcode.Error{Code: errcode.EgressDenied, Msg: "network egress has not been granted to this workspace"}
	// ErrSecretNotGranted: a revoke names no secret granted to the
	// workspace; nothing was changed (its Data names it).
	ErrSecretNotGranted = &errcode.Error{Code: errcode.NotFound, Msg: "no secret of this name is granted to the workspace; nothing was revoked"}
	// ErrUnsupportedOS: the operation needs Linux or another Unix.
	ErrUnsupportedOS = &errcode.Error{Code: errcode.Unsupported, Msg: "workspaces are not supported on this operating system"}
)

// LimitData is the Data of an error caused by a cap.
type LimitData struct {
	Limit string `json:"limit"`
	Max   int64  `json:"max"`
}
