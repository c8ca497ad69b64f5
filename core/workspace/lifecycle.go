package workspace

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// SealResult is what Seal did.
type SealResult struct {
	Base     string    `json:"base"`
	Head     string    `json:"head"`
	Changed  bool      `json:"changed"`
	Findings []Finding `json:"findings"`
	// Refused is set when a finding refuses the handoff; the workspace then
	// stays open (nothing is revoked) so the change can be fixed.
	Refused bool `json:"refused"`
}

// Seal commits what is left in the tree, runs the handoff checks on
// base..head and, unless they refuse, closes the workspace to changes and
// revokes its secrets and egress grants. The caller turns a sealed
// workspace into a proposal with FetchInto.
func (m *Manager) Seal(ctx context.Context, id, message string) (*SealResult, error) {
	w, unlock, err := m.open(id, true, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if message == "" {
		message = "Workspace changes"
	}
	cr, err := m.commitLocked(ctx, w, message)
	var pr *PathsRefused
	if errors.As(err, &pr) {
		// Nothing was committed or sealed: the findings go back and the
		// workspace stays open for the edits that fix them.
		m.touch(w, true)
		return &SealResult{Base: w.Base, Head: w.Head, Changed: w.Head != w.Base, Findings: pr.Findings, Refused: true}, nil
	}
	if err != nil {
		return nil, err
	}
	res := &SealResult{Base: w.Base, Head: w.Head, Changed: w.Head != w.Base}
	if res.Findings, err = m.handoffLocked(ctx, w, "", ""); err != nil {
		return nil, err
	}
	res.Refused = Refused(res.Findings)
	if res.Refused {
		if !cr.Changed {
			m.touch(w, true)
		}
		return res, nil
	}
	if err := m.revokeAllLocked(ctx, w); err != nil {
		return nil, err
	}
	w.State = StateSealed
	w.LastUsedAt = m.now()
	if err := m.writeMeta(w); err != nil {
		return nil, err
	}
	return res, nil
}

// Unseal opens a sealed workspace to edits again: its handoff was refused
// by the app, so no card will decide it, and the agent must be able to
// fix what was refused. The secrets and egress grants the seal revoked
// stay revoked; the person grants them again if they are needed. An open
// workspace stays as it is.
func (m *Manager) Unseal(id string) error {
	w, unlock, err := m.open(id, true, false)
	if err != nil {
		return err
	}
	defer unlock()
	if w.State != StateSealed {
		return nil
	}
	w.State = StateReady
	w.LastUsedAt = m.now()
	if err := m.writeMeta(w); err != nil {
		return err
	}
	m.log.Info("workspace: unsealed after a refused handoff", "workspace", id)
	return nil
}

// DestroyReport is the proof of a destruction.
type DestroyReport struct {
	ID                string `json:"id"`
	ContainersRemoved int    `json:"containersRemoved"`
	// ContainersGone and TreeRemoved are verified after the fact: an
	// inspect of every container answered not found, and the workspace
	// directory no longer exists.
	ContainersGone bool `json:"containersGone"`
	TreeRemoved    bool `json:"treeRemoved"`
}

// destroyLockWait is how long Destroy waits for an operation in flight
// (whose run it has cancelled) to let go of the workspace.
const destroyLockWait = 30 * time.Second

// Destroy stops any run of the workspace, removes its containers, revokes
// its secrets and deletes its directory, then verifies each step.
func (m *Manager) Destroy(ctx context.Context, id string) (*DestroyReport, error) {
	if !proposal.ValidID(id) {
		return nil, ErrInvalidID
	}
	m.stopped(id)
	deadline := time.Now().Add(destroyLockWait)
	var unlock func()
	var err error
	for {
		unlock, err = m.lockWS(id, true)
		if !errors.Is(err, ErrLocked) || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, &errcode.Error{Code: errcode.Timeout, Msg: "destroy was cancelled while waiting for the workspace", Err: ctx.Err()}
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err != nil {
		return nil, err
	}
	defer unlock()
	return m.destroyLocked(ctx, id)
}

func (m *Manager) destroyLocked(ctx context.Context, id string) (*DestroyReport, error) {
	rep := &DestroyReport{ID: id}
	copied := m.copyMarked(id)
	if w, err := m.readMeta(id); err == nil {
		copied = copied || len(w.Secrets) > 0
		w.State = StateDestroying
		if err := m.writeMeta(w); err != nil {
			return nil, err
		}
	}
	// Secrets go first: whatever fails later, they are gone. Their copy
	// (SecretCopies) is marked before, so that one left by a failure
	// below is removed later.
	if copied {
		if err := m.markCopy(id); err != nil {
			return nil, err
		}
	}
	if err := m.writeSecrets(id, &secretsDoc{Version: 1}); err != nil {
		return nil, err
	}
	if m.opts.Runtime != nil {
		n, err := m.removeContainers(ctx, func(c ContainerInfo) bool { return c.WorkspaceID == id })
		rep.ContainersRemoved = n
		if err != nil {
			return rep, err
		}
		left, err := m.opts.Runtime.Containers(ctx, m.storeKey)
		if err != nil {
			return rep, err
		}
		for _, c := range left {
			if c.WorkspaceID == id {
				return rep, &errcode.Error{Code: errcode.Internal, Msg: "a container of the workspace is still present after removal"}
			}
		}
	}
	rep.ContainersGone = true
	if copied {
		// Removed with the containers when the runtime lists it; this
		// verifies (or, without a runtime, tries) and clears the mark.
		if err := m.syncCopy(ctx, id); err != nil && !errors.Is(err, errNoCopyKeeper) {
			m.log.Warn("workspace: the cluster's copy of the destroyed workspace's secrets could not be removed yet; it is removed before the next run and at start-up", "workspace", id, "err", err)
		}
	}
	if err := m.removeWorkspaceDir(id); err != nil {
		return rep, err
	}
	if _, err := os.Lstat(m.dir(id)); !errors.Is(err, os.ErrNotExist) {
		return rep, &errcode.Error{Code: errcode.Internal, Msg: "the workspace directory is still present after removal", Err: err}
	}
	rep.TreeRemoved = true
	m.mu.Lock()
	delete(m.admitted, id)
	m.mu.Unlock()
	m.log.Info("workspace: destroyed", "workspace", id, "containers", rep.ContainersRemoved)
	return rep, nil
}

// removeContainers force-removes (and verifies) this store's containers
// that match.
func (m *Manager) removeContainers(ctx context.Context, match func(ContainerInfo) bool) (int, error) {
	list, err := m.opts.Runtime.Containers(ctx, m.storeKey)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, c := range list {
		if !match(c) {
			continue
		}
		if err := m.opts.Runtime.Remove(ctx, c.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	if len(errs) > 0 {
		return n, errs[0]
	}
	return n, nil
}

// Expire destroys the workspaces whose idle lease has run out. Workspaces
// busy with an operation are left for the next call.
func (m *Manager) Expire(ctx context.Context) ([]string, error) {
	list, err := m.List()
	if err != nil {
		return nil, err
	}
	now := m.now()
	var gone []string
	for _, w := range list {
		if w.State == StateCreating || !now.After(w.ExpiresAt()) {
			continue
		}
		unlock, err := m.lockWS(w.ID, true)
		if err != nil {
			continue
		}
		// Re-read under the lock: it may have been used meanwhile.
		cur, err := m.readMeta(w.ID)
		if err != nil || !now.After(cur.ExpiresAt()) {
			unlock()
			continue
		}
		_, err = m.destroyLocked(ctx, w.ID)
		unlock()
		if err != nil {
			return gone, err
		}
		gone = append(gone, w.ID)
	}
	return gone, nil
}

// ReconcileReport says what Reconcile cleaned up.
type ReconcileReport struct {
	RemovedContainers []string `json:"removedContainers"`
	RemovedWorkspaces []string `json:"removedWorkspaces"`
	// SecretCopiesSynced are the workspaces whose secret copies were
	// checked against their grants (and put right where they differed).
	SecretCopiesSynced []string `json:"secretCopiesSynced,omitempty"`
}

// Reconcile runs at start-up: it removes workspaces that were half
// created or half destroyed when Sluice stopped, and every container of
// this store that no operation owns (its workspace is gone or destroyed,
// or it is a run container left behind by a crash). Workspaces busy with
// an operation are left alone.
func (m *Manager) Reconcile(ctx context.Context) (*ReconcileReport, error) {
	rep := &ReconcileReport{RemovedContainers: []string{}, RemovedWorkspaces: []string{}}
	if err := m.reconcileDirs(ctx, rep); err != nil {
		return rep, err
	}
	if m.opts.Runtime == nil {
		return rep, nil
	}
	list, err := m.opts.Runtime.Containers(ctx, m.storeKey)
	if err != nil {
		return rep, err
	}
	for _, c := range list {
		if c.Kept {
			// A living workspace's copy follows its grants (below); one
			// whose workspace is gone goes.
			if _, err := m.readMeta(c.WorkspaceID); !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrInvalidID) {
				continue
			}
		}
		if proposal.ValidID(c.WorkspaceID) {
			m.mu.Lock()
			running := m.active[c.WorkspaceID] != nil
			m.mu.Unlock()
			if running {
				continue
			}
			if unlock, err := m.lockWS(c.WorkspaceID, true); errors.Is(err, ErrLocked) {
				continue // an operation (another process's run) owns it
			} else if err == nil {
				unlock()
			}
		}
		if err := m.opts.Runtime.Remove(ctx, c.ID); err != nil {
			return rep, err
		}
		rep.RemovedContainers = append(rep.RemovedContainers, c.ID)
	}
	if err := m.reconcileCopies(ctx, rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// reconcileDirs removes the workspace directories a crash left half
// made (no lock, no metadata) or half destroyed.
func (m *Manager) reconcileDirs(ctx context.Context, rep *ReconcileReport) error {
	m.dirMu.Lock()
	defer m.dirMu.Unlock()
	ents, err := os.ReadDir(m.root)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot list workspaces")
	}
	for _, e := range ents {
		id := e.Name()
		if !e.IsDir() || !proposal.ValidID(id) {
			continue
		}
		unlock, err := m.lockWS(id, true)
		if errors.Is(err, ErrLocked) {
			continue
		}
		var w *Workspace
		if err == nil {
			w, err = m.readMeta(id)
		}
		if err == nil && w.State != StateCreating && w.State != StateDestroying {
			// A crash inside ReplaceTree leaves a sibling of the tree.
			// Best effort: one that cannot be removed now is tried again
			// at the next start and goes with the workspace at the latest.
			_ = CleanTreeLeftovers(m.treeDir(id))
			unlock()
			continue
		}
		// No lock file, no metadata, or an unfinished state.
		if _, derr := m.destroyLocked(ctx, id); derr != nil {
			if unlock != nil {
				unlock()
			}
			return derr
		}
		if unlock != nil {
			unlock()
		}
		rep.RemovedWorkspaces = append(rep.RemovedWorkspaces, id)
	}
	return nil
}
