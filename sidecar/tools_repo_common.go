package sidecar

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
)

// gitTools is the read-only git toolset; the allowed roots are the
// sidecar's, and the runner is gitx's process-wide one.
type gitTools struct {
	s *Sidecar
}

// errNoRoots explains an empty roots list, which would otherwise read as
// a plain path_outside_roots.
var errNoRoots = &errcode.Error{Code: errcode.PathOutsideRoots,
	Msg: "no allowed roots are configured: ask the person to add the folder that holds their repositories to Sluice's allowed roots (`sluice roots add DIR`, the Sluice app's first screen, or allowedRoots in config.json; SLUICE_ALLOWED_ROOTS given to the app is saved there too)"}

// runner returns the hardened runner once the roots are known to be
// usable: without them it fails as checkRoots does, and without git with
// an unsupported error that says why git cannot be used.
func (g *gitTools) runner() (*gitx.Runner, error) {
	if err := g.s.checkRoots(); err != nil {
		return nil, err
	}
	r, err := gitx.Default()
	if err != nil {
		var ge *errcode.Error
		if errors.As(err, &ge) {
			return nil, err
		}
		return nil, &errcode.Error{Code: errcode.Unsupported, Msg: fmt.Sprintf("git cannot be used: %v", err)}
	}
	return r, nil
}

// open confines repoPath to the roots and opens the repository; every
// single-repository tool starts here.
func (g *gitTools) open(ctx context.Context, repoPath string) (*gitx.Repo, error) {
	r, err := g.runner()
	if err != nil {
		return nil, err
	}
	return r.Open(ctx, g.s.conf().roots, repoPath)
}

// checkRevs validates the non-empty revision arguments, given as name,
// value pairs, in order, before anything runs.
func checkRevs(nameValue ...string) error {
	for i := 0; i+1 < len(nameValue); i += 2 {
		if v := nameValue[i+1]; v != "" {
			if err := gitx.CheckRev(nameValue[i], v); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkRoots fails when no usable roots are configured.
func (s *Sidecar) checkRoots() error { return s.conf().checkRoots() }

// checkRoots fails when v has no usable roots.
func (v *confView) checkRoots() error {
	switch {
	case v.rootsErr != nil:
		return &errcode.Error{Code: errcode.PathOutsideRoots, Msg: "the allowed roots configuration is invalid: " + v.rootsErr.Error()}
	case len(v.roots) == 0:
		return errNoRoots
	}
	return nil
}

// RepoIn is the input of tools that need only a repository.
type RepoIn struct {
	RepoPath string `json:"repoPath" jsonschema:"the repository or a folder in it"`
}

// GitLimits are the bounds of the git toolset, reported by
// sluice_capabilities.
type GitLimits struct {
	GitVersion              string `json:"gitVersion,omitempty" jsonschema:"version of the git binary the sidecar runs"`
	TimeoutSeconds          int    `json:"timeoutSeconds" jsonschema:"longest a single git process may run before it is killed"`
	MaxOutputBytes          int64  `json:"maxOutputBytes" jsonschema:"largest output a git process may produce before the call fails with output_limit"`
	DiffDefaultBytes        int    `json:"diffDefaultBytes" jsonschema:"diff_text maxBytes when not given"`
	DiffMaxBytes            int    `json:"diffMaxBytes" jsonschema:"largest diff_text maxBytes"`
	HistoryMaxLimit         int    `json:"historyMaxLimit" jsonschema:"largest repo_history page"`
	StatusMaxLimit          int    `json:"statusMaxLimit" jsonschema:"most paths repo_status returns"`
	ConflictMaxBytesPerSide int    `json:"conflictMaxBytesPerSide" jsonschema:"largest conflict_read maxBytesPerSide"`
	SemanticMaxFiles        int    `json:"semanticMaxFiles" jsonschema:"most files diff_semantic looks at"`
	FleetMaxRepos           int    `json:"fleetMaxRepos" jsonschema:"most repositories a fleet call looks at"`
}

// gitLimits describes the git toolset's limits; nil when it is not among
// the enabled toolsets.
func gitLimits(enabled []string) *GitLimits {
	if !slices.Contains(enabled, "git") {
		return nil
	}
	l := &GitLimits{
		TimeoutSeconds:          int(gitx.DefaultTimeout.Seconds()),
		MaxOutputBytes:          gitx.DefaultMaxOutput,
		DiffDefaultBytes:        gitx.DefaultDiffBytes,
		DiffMaxBytes:            gitx.MaxDiffBytes,
		HistoryMaxLimit:         gitx.MaxHistoryLimit,
		StatusMaxLimit:          maxStatusLimit,
		ConflictMaxBytesPerSide: gitx.MaxConflictSideBytes,
		SemanticMaxFiles:        gitx.MaxSemanticFiles,
		FleetMaxRepos:           gitx.MaxFleetRepos,
	}
	if r, err := gitx.Default(); err == nil {
		l.GitVersion = r.Version().String()
	}
	return l
}
