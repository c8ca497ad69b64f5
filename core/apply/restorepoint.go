package apply

import (
	"context"

	"github.com/sluicehq/sluice/core/restorepoint"
)

// The executor takes, ends and restores restore points; what one records
// and how it is read are core/restorepoint's, which the sidecar reads
// without linking the executor. These names keep the executor's code
// short.
type (
	RestorePoint  = restorepoint.RestorePoint
	EndState      = restorepoint.EndState
	RefState      = restorepoint.RefState
	ConfigSection = restorepoint.ConfigSection
	ConfigKV      = restorepoint.ConfigKV
	WorktreeState = restorepoint.WorktreeState
	Conflict      = restorepoint.Conflict
	Details       = restorepoint.Details
)

// Restore point kinds, end outcomes and where they live, as
// core/restorepoint names them.
const (
	RestorePrefix = restorepoint.RestorePrefix
	KindProposal  = restorepoint.KindProposal
	KindRestore   = restorepoint.KindRestore
	EndCompleted  = restorepoint.EndCompleted
	EndFailed     = restorepoint.EndFailed
	EndRestored   = restorepoint.EndRestored
)

// present is rc as the restorepoint.State a restore's checks compare a
// restore point with: read at rc's moment (see readCache), so that the
// checks and the undo point see the same repository.
type present struct{ rc *repoCtx }

func (p present) RefStates(ctx context.Context, refs []string) ([]RefState, error) {
	return p.rc.refStates(ctx, refs)
}

func (p present) ConfigSections(ctx context.Context, branches []string) ([]ConfigSection, error) {
	return p.rc.configSections(ctx, branches)
}

func (p present) Worktree(ctx context.Context, path string, like WorktreeState) (WorktreeState, error) {
	wt, err := p.rc.worktreeAt(ctx, path)
	if err != nil {
		return WorktreeState{}, err
	}
	st, _, err := p.rc.stateOf(ctx, wt, depthOf(like), keepNothing, "", false, like.Paths)
	return st, err
}

func (p present) Changed(ctx context.Context, path string) (bool, bool, error) {
	wt, err := p.rc.worktreeAt(ctx, path)
	if err != nil {
		return false, false, nil
	}
	clean, err := p.rc.clean(ctx, wt)
	return true, !clean, err
}
