package workspace

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sluicehq/sluice/core/errcode"
)

// recordRunning writes the running record of spec's run as its Run does,
// with a fresh key of the run in spec.
func recordRunning(t *testing.T, m *Manager, spec *ContainerSpec) {
	t.Helper()
	key, err := newRunKey()
	if err != nil {
		t.Fatal(err)
	}
	spec.RunKey = key
	rec := RunResult{ID: spec.RunID, WorkspaceID: spec.WorkspaceID, Argv: spec.Argv, StartedAt: time.Now(), Running: true, KeyHash: runKeyHash(key)}
	if err := m.saveRun(&rec); err != nil {
		t.Fatal(err)
	}
}

// acceptSetup is a store with agent-a's workspace made from a
// repository, the run policy of an image, and specs of runs of argv in
// that workspace, as its Run would make them (no record written).
func acceptSetup(t *testing.T) (*Manager, *Workspace, RunPolicy, func(argv ...string) ContainerSpec) {
	t.Helper()
	m := newManager(t, false)
	repo, _ := makeRepo(t)
	w, err := m.Create(context.Background(), CreateRequest{Source: Source{Kind: SourceRepo, Path: repo}, Agent: "agent-a"})
	if err != nil {
		t.Fatal(err)
	}
	img := "sha256:" + strings.Repeat("a", 64)
	lim, _ := Limits{}.withDefaults(m.opts.Limits)
	return m, w, RunPolicy{Image: img}, func(argv ...string) ContainerSpec {
		spec := m.containerSpec(w, uuid.NewString(), argv, lim, runEnv(nil, nil, ""), "")
		spec.Image = img
		return spec
	}
}

// A run the app carries out for a sidecar is admitted only while its
// workspace is held by the Run that wrote its running record; it is then
// the workspace's active run, which Stop cancels, and a second run of the
// same workspace is refused.
func TestAcceptRunNeedsTheRunsLock(t *testing.T) {
	m, w, pol, specOf := acceptSetup(t)
	spec := specOf("true")
	ctx := context.Background()

	// Seal or Destroy holds the workspace: no run of it is in progress.
	unlock, err := m.lockWS(w.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := m.AcceptRun(ctx, "agent-a", spec, pol); !errcode.IsCode(err, errcode.Forbidden) {
		t.Fatalf("accepted while another operation holds the workspace: %v", err)
	}
	unlock()

	// The running record alone, with nobody holding the workspace (its
	// process died), is not a run in progress.
	recordRunning(t, m, &spec)
	if _, _, _, err := m.AcceptRun(ctx, "agent-a", spec, pol); !errcode.IsCode(err, errcode.Forbidden) {
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
	if _, _, _, err := m.AcceptRun(ctx, "agent-a", other, pol); !errcode.IsCode(err, errcode.Forbidden) {
		t.Fatalf("accepted a run that is not the one recorded running: %v", err)
	}
	runCtx, _, release, err := m.AcceptRun(ctx, "agent-a", spec, pol)
	if err != nil {
		t.Fatalf("the run in progress was refused: %v", err)
	}
	if _, _, _, err := m.AcceptRun(ctx, "agent-a", spec, pol); !errors.Is(err, ErrLocked) {
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

// The granted secrets' values in a sidecar's spec are not the sidecar's
// to give: the spec AcceptRun returns, the one the app runs, carries the
// store's values (here the person's new value, where the sidecar sent the
// one it replaced), and a spec that leaves a granted secret out of its
// environment or names a secret that is not granted is refused.
func TestAcceptRun_GrantedValuesAreTheStores(t *testing.T) {
	m := newManager(t, false)
	repo, _ := makeRepo(t)
	ctx := context.Background()
	w, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceRepo, Path: repo}, Agent: "agent-a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range [][2]string{{"A_TOKEN", "value-a-first"}, {"A_TOKEN", "value-a-now"}, {"B_TOKEN", "value-b-1234"}} {
		if err := m.Grant(w.ID, g[0], g[1]); err != nil {
			t.Fatal(err)
		}
	}
	img := "sha256:" + strings.Repeat("a", 64)
	pol := RunPolicy{Image: img}
	lim, _ := Limits{}.withDefaults(m.opts.Limits)
	spec := func(secrets map[string]string) ContainerSpec {
		s := m.containerSpec(w, uuid.NewString(), []string{"true"}, lim, runEnv(map[string]string{"PLAIN": "x"}, secrets, ""), "")
		s.Image, s.SecretEnv = img, sortedKeys(secrets)
		return s
	}
	unlock, err := m.lockWS(w.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	accept := func(s ContainerSpec) (ContainerSpec, error) {
		t.Helper()
		recordRunning(t, m, &s)
		_, run, release, err := m.AcceptRun(ctx, "agent-a", s, pol)
		if err == nil {
			release()
		}
		return run, err
	}

	claimed := spec(map[string]string{"A_TOKEN": "value-a-first", "B_TOKEN": "chosen-by-the-sidecar"})
	run, err := accept(claimed)
	if err != nil {
		t.Fatalf("AcceptRun: %v", err)
	}
	want := []string{"PATH=" + containerPath, "HOME=" + containerHome, "LANG=" + containerLang, "PLAIN=x", "A_TOKEN=value-a-now", "B_TOKEN=value-b-1234"}
	if !slices.Equal(run.Env, want) {
		t.Fatalf("the spec to run has the environment %q, want %q", run.Env, want)
	}
	if !slices.Equal(claimed.Env[4:], []string{"A_TOKEN=value-a-first", "B_TOKEN=chosen-by-the-sidecar"}) {
		t.Fatalf("AcceptRun changed the caller's spec: %q", claimed.Env)
	}

	lacking := spec(map[string]string{"A_TOKEN": "value-a-now", "B_TOKEN": "value-b-1234"})
	lacking.Env = slices.DeleteFunc(lacking.Env, func(kv string) bool { return strings.HasPrefix(kv, "B_TOKEN=") })
	if _, err := accept(lacking); !errcode.IsCode(err, errcode.Forbidden) {
		t.Fatalf("a spec without a granted secret in its environment: %v", err)
	}
	extra := spec(map[string]string{"A_TOKEN": "value-a-now", "B_TOKEN": "value-b-1234", "C_TOKEN": "value-c-1234"})
	if _, err := accept(extra); !errcode.IsCode(err, errcode.Forbidden) {
		t.Fatalf("a spec naming a secret that is not granted: %v", err)
	}
}

// backstop receives from c, failing the test if nothing comes within a
// minute (a backstop: what is waited for comes at once when it works).
func backstop[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("no %s within a minute", what)
		panic("unreachable")
	}
}

// A run is carried out once: a copy of the run in progress is refused at
// once (not admitted once that run ends), and so is the same run once it
// is over, while its record may still say running. A run of the
// workspace's next Run waits for the one before to be unlisted, and a
// Stop meanwhile refuses it.
func TestAcceptRun_OncePerRunAndStopWhileWaiting(t *testing.T) {
	m, w, pol, specOf := acceptSetup(t)
	ctx := context.Background()
	running := func() ContainerSpec {
		spec := specOf("true")
		recordRunning(t, m, &spec)
		return spec
	}
	unlock, err := m.lockWS(w.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()

	first := running()
	_, _, release, err := m.AcceptRun(ctx, "agent-a", first, pol)
	if err != nil {
		t.Fatal(err)
	}
	copied := first
	copied.Argv = []string{"sh", "-c", "echo forged"}
	m.waiting = func() { t.Error("a copy of the run in progress waited for that run") }
	if _, _, _, err := m.AcceptRun(ctx, "agent-a", copied, pol); !errors.Is(err, ErrLocked) {
		t.Fatalf("a copy of the run in progress: %v; want refused at once", err)
	}
	m.waiting = nil
	release()
	if _, _, _, err := m.AcceptRun(ctx, "agent-a", copied, pol); !errcode.IsCode(err, errcode.Forbidden) {
		t.Fatalf("the run again once it was over (its record still says running): %v; want forbidden", err)
	}

	// The next run waits for the one before, then is admitted.
	second := running()
	_, _, release, err = m.AcceptRun(ctx, "agent-a", second, pol)
	if err != nil {
		t.Fatal(err)
	}
	isWaiting := make(chan struct{}, 1)
	m.waiting = func() { isWaiting <- struct{}{} }
	third := running()
	type accepted struct {
		release func()
		err     error
	}
	waited := make(chan accepted, 1)
	go func() {
		_, _, rel, err := m.AcceptRun(ctx, "agent-a", third, pol)
		waited <- accepted{rel, err}
	}()
	backstop(t, isWaiting, "the next run to wait")
	release()
	a := backstop(t, waited, "the next run's admission")
	if a.err != nil {
		t.Fatalf("the next run, once the one before was unlisted: %v", a.err)
	}

	// A Stop while a run waits refuses it.
	fourth := running()
	go func() {
		_, _, rel, err := m.AcceptRun(ctx, "agent-a", fourth, pol)
		waited <- accepted{rel, err}
	}()
	backstop(t, isWaiting, "the run to wait")
	_, _ = m.Stop(ctx, w.ID) // no runtime: it cancels and counts, then says it cannot list containers
	a.release()
	if b := backstop(t, waited, "the waiting run's answer"); !errcode.IsCode(b.err, errcode.Conflict) {
		if b.release != nil {
			b.release()
		}
		t.Fatalf("a run that waited while the workspace was stopped: %v; want refused", b.err)
	}
}

// Only the spec its Run made is carried out: the run's id read from its
// record, with another command and without the run's key (or with another
// key), is refused, whether it comes before the Run's own request, while
// something else holds the workspace over a record a crash left running,
// or after the app started again.
func TestAcceptRun_OnlyWithTheRunsKey(t *testing.T) {
	m, w, pol, specOf := acceptSetup(t)
	ctx := context.Background()
	spec := specOf("go", "test", "./...")
	recordRunning(t, m, &spec)
	// Held as a Seal, or the Run itself, holds it.
	unlock, err := m.lockWS(w.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	otherKey, err := newRunKey()
	if err != nil {
		t.Fatal(err)
	}
	reopened, err := Open(m.opts)
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	for _, key := range []string{"", otherKey, spec.RunKey[:63]} {
		forged := spec
		forged.Argv, forged.RunKey = []string{"sh", "-c", "echo forged"}, key
		for _, mgr := range []*Manager{m, reopened} {
			if _, _, _, err := mgr.AcceptRun(ctx, "agent-a", forged, pol); !errcode.IsCode(err, errcode.Forbidden) {
				t.Fatalf("the run's id with key %q: %v; want forbidden", key, err)
			}
		}
	}
	_, run, release, err := m.AcceptRun(ctx, "agent-a", spec, pol)
	if err != nil {
		t.Fatalf("the run with its key: %v", err)
	}
	defer release()
	if run.RunKey != "" {
		t.Fatal("the spec to run still carries the run's key")
	}
}
