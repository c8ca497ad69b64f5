package workspace

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/core/errcode"
)

// stuckCopies keeps workspaces' secret copies as a cluster would, except
// that it cannot change the copy of one workspace (stuck): its removal
// fails every time, as a cluster refuses one Secret.
type stuckCopies struct {
	mu    sync.Mutex
	stuck string
	data  map[string]map[string]string
}

func (c *stuckCopies) PutSecrets(_ context.Context, _, id string, v map[string]string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id == c.stuck {
		return errcode.New(errcode.Forbidden, "the cluster refuses to change %s's Secret", id)
	}
	if len(v) == 0 {
		delete(c.data, id)
	} else {
		c.data[id] = v
	}
	return nil
}

func (c *stuckCopies) SecretCopies(context.Context, string) ([]SecretCopy, error) { return nil, nil }

// A revoked secret's copy that cannot be removed holds back the runs of
// its own workspace only: another workspace's pod can reference nothing
// but its own workspace's Secret, so its run starts (the copy is tried
// again before it, and by the sweep).
func TestSecretCopies_StuckCopyHoldsOnlyItsWorkspace(t *testing.T) {
	c := &stuckCopies{data: map[string]map[string]string{}}
	m := newManager(t, false, func(o *Options) { o.SecretCopies = c })
	ctx := context.Background()
	a, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceFresh}, Agent: "test"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceFresh}, Agent: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Grant(a.ID, "A_TOKEN", "value-a-1234"); err != nil {
		t.Fatal(err)
	}
	c.stuck = a.ID
	rev, err := m.RevokeSecret(a.ID, "A_TOKEN")
	if err != nil || !rev.CopyLeft {
		t.Fatalf("revoke with the copy stuck: %+v %v", rev, err)
	}
	if !m.copyMarked(a.ID) {
		t.Fatal("the stuck copy is not remembered")
	}
	if err := m.syncBeforeRun(ctx, b.ID); err != nil {
		t.Fatalf("a run of another workspace was held back by the stuck copy: %v", err)
	}
	if err := m.syncBeforeRun(ctx, a.ID); err == nil {
		t.Fatal("a run of the workspace whose revoked secret is still in the cluster would start")
	}
	// Once the cluster takes the removal, the next run's sync finishes it.
	c.stuck = ""
	if err := m.syncBeforeRun(ctx, b.ID); err != nil || m.copyMarked(a.ID) {
		t.Fatalf("the copy was not removed before the next run: %v, marked %v", err, m.copyMarked(a.ID))
	}
	if _, ok := c.data[a.ID]; ok {
		t.Fatal("the revoked value is still in the copy")
	}
}

// A run the app carries out writes the workspace's copy with the values
// its spec carries; a revoke that came meanwhile (the sidecar holding the
// workspace died) could be undone by that write. AcceptRun marks the copy,
// so the next sync after the run brings it back to the grants.
func TestAcceptRun_MarksTheCopyForTheSyncAfterIt(t *testing.T) {
	c := &stuckCopies{data: map[string]map[string]string{}}
	m := newManager(t, false, func(o *Options) { o.SecretCopies = c })
	repo, _ := makeRepo(t)
	ctx := context.Background()
	w, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceRepo, Path: repo}, Agent: "agent-a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Grant(w.ID, "A_TOKEN", "value-a-1234"); err != nil {
		t.Fatal(err)
	}
	img := "sha256:" + strings.Repeat("a", 64)
	lim, _ := Limits{}.withDefaults(m.opts.Limits)
	secrets := map[string]string{"A_TOKEN": "value-a-1234"}
	spec := m.containerSpec(w, uuid.NewString(), []string{"true"}, lim, runEnv(nil, secrets, ""), "")
	spec.Image, spec.SecretEnv = img, sortedKeys(secrets)
	unlock, err := m.lockWS(w.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	recordRunning(t, m, &spec)
	_, _, release, err := m.AcceptRun(ctx, "agent-a", spec, RunPolicy{Image: img})
	if err != nil {
		t.Fatalf("AcceptRun: %v", err)
	}
	if !m.copyMarked(w.ID) {
		t.Fatal("an admitted run with granted secrets left the copy unmarked")
	}
	// The grant revoked in the store while the runtime's write of the
	// old values lands after it.
	doc, err := m.readSecrets(w.ID)
	if err != nil {
		t.Fatal(err)
	}
	delete(doc.Secrets, "A_TOKEN")
	if err := m.writeSecrets(w.ID, doc); err != nil {
		t.Fatal(err)
	}
	c.data[w.ID] = secrets
	release()
	unlock()
	if err := m.SyncSecretCopies(ctx); err != nil {
		t.Fatal(err)
	}
	if v, ok := c.data[w.ID]; ok || m.copyMarked(w.ID) {
		t.Fatalf("after the run's sync the copy holds %v (marked %v), want nothing", v, m.copyMarked(w.ID))
	}
}
