package workspace

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sluicehq/sluice/core/errcode"
)

// A run the app carries out for a sidecar is admitted only while its
// workspace is held by the Run that wrote its running record; it is then
// the workspace's active run, which Stop cancels, and a second run of the
// same workspace is refused.
func TestAcceptRunNeedsTheRunsLock(t *testing.T) {
	m := newManager(t, false)
	repo, _ := makeRepo(t)
	w, err := m.Create(context.Background(), CreateRequest{Source: Source{Kind: SourceRepo, Path: repo}, Agent: "agent-a"})
	if err != nil {
		t.Fatal(err)
	}
	img := "sha256:" + strings.Repeat("a", 64)
	pol := RunPolicy{Image: img}
	lim, _ := Limits{}.withDefaults(m.opts.Limits)
	spec := m.containerSpec(w, uuid.NewString(), []string{"true"}, lim, runEnv(nil, nil, ""), "")
	spec.Image = img
	ctx := context.Background()

	// Seal or Destroy holds the workspace: no run of it is in progress.
	unlock, err := m.lockWS(w.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.AcceptRun(ctx, "agent-a", spec, pol); !errcode.IsCode(err, errcode.Forbidden) {
		t.Fatalf("accepted while another operation holds the workspace: %v", err)
	}
	unlock()

	// The running record alone, with nobody holding the workspace (its
	// process died), is not a run in progress.
	rec := RunResult{ID: spec.RunID, WorkspaceID: w.ID, Argv: spec.Argv, StartedAt: time.Now(), Running: true}
	if err := m.saveRun(&rec); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.AcceptRun(ctx, "agent-a", spec, pol); !errcode.IsCode(err, errcode.Forbidden) {
		t.Fatalf("accepted while nobody holds the workspace: %v", err)
	}

	// The Run holding the workspace, its record written: admitted.
	unlock, err = m.lockWS(w.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	other := spec
	other.RunID = uuid.NewString()
	if _, _, err := m.AcceptRun(ctx, "agent-a", other, pol); !errcode.IsCode(err, errcode.Forbidden) {
		t.Fatalf("accepted a run that is not the one recorded running: %v", err)
	}
	runCtx, release, err := m.AcceptRun(ctx, "agent-a", spec, pol)
	if err != nil {
		t.Fatalf("the run in progress was refused: %v", err)
	}
	if _, _, err := m.AcceptRun(ctx, "agent-a", spec, pol); !errors.Is(err, ErrLocked) {
		t.Fatalf("a second run of the workspace: %v", err)
	}
	if runCtx.Err() != nil {
		t.Fatal("the run's context ended before Stop")
	}
	_, _ = m.Stop(ctx, w.ID) // no runtime: it cancels the run, then says it cannot list containers
	select {
	case <-runCtx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not cancel the run the app carries out")
	}
	release()
	m.mu.Lock()
	left := m.active[w.ID]
	m.mu.Unlock()
	if left != nil {
		t.Fatal("the run is still listed after release")
	}
}
