package workspace

import (
	"context"

	"github.com/sluicehq/sluice/core/errcode"
)

// StopReport says what Stop did.
type StopReport struct {
	ID string `json:"id"`
	// RunsStopped counts the run containers that were ended (verified
	// gone).
	RunsStopped int `json:"runsStopped"`
}

// Stop ends every command running in the workspace now, wherever it was
// started: a run in this process is cancelled, and every container of the
// workspace (a sidecar's run included) is removed, so the run ends as
// interrupted. The workspace itself stays as it is, its files, commits,
// grants and run records included, and takes more runs. Stop needs the
// container runtime; a workspace that runs nothing is left untouched.
func (m *Manager) Stop(ctx context.Context, id string) (*StopReport, error) {
	if _, err := m.readMeta(id); err != nil {
		return nil, err
	}
	m.stopped(id)
	if m.opts.Runtime == nil {
		return nil, &errcode.Error{Code: errcode.Unsupported, Msg: "the container runtime is not reachable, so no run can be stopped (and none can be running under this Sluice)"}
	}
	// The copy of the workspace's secrets is no run: it stays with the
	// grants.
	mine := func(c ContainerInfo) bool { return c.WorkspaceID == id && !c.Kept }
	n, err := m.removeContainers(ctx, mine)
	rep := &StopReport{ID: id, RunsStopped: n}
	if err != nil {
		return rep, err
	}
	left, err := m.opts.Runtime.Containers(ctx, m.storeKey)
	if err != nil {
		return rep, err
	}
	for _, c := range left {
		if mine(c) {
			return rep, &errcode.Error{Code: errcode.Internal, Msg: "a container of the workspace is still present after it was stopped"}
		}
	}
	if n > 0 {
		m.log.Info("workspace: runs stopped", "workspace", id, "containers", n)
	}
	return rep, nil
}
