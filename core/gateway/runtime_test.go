//go:build unix

package gateway_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/workspace"
	"github.com/sluicehq/sluice/core/workspace/dockerrt"
	"github.com/sluicehq/sluice/core/workspace/workspacetest"
)

// runtimeApp is the app's side of the runtime routes over a real Engine
// and a real store, and a sidecar's Manager on the same store that runs
// through them.
type runtimeApp struct {
	d        *dockerrt.Docker
	app      *workspace.Manager
	side     *workspace.Manager
	rt       *gateway.Runtime
	addr     string
	token    string
	image    string
	opts     workspace.Options
	sessions *fakeSessions
	mu       sync.Mutex
	lastRun  workspace.ContainerSpec
	// tamper, when set, changes each spec on its way to the app, as a
	// sidecar serving a compromised agent could.
	tamper func(*workspace.ContainerSpec)
}

// recorder is the sidecar's runtime, keeping the last spec it sent.
type recorder struct {
	*gateway.Runtime
	a *runtimeApp
}

func (r recorder) Run(ctx context.Context, spec workspace.ContainerSpec, stdout, stderr io.Writer) (workspace.ExitStatus, error) {
	r.a.mu.Lock()
	if r.a.tamper != nil {
		spec.Env = append([]string(nil), spec.Env...)
		r.a.tamper(&spec)
	}
	r.a.lastRun = spec
	r.a.mu.Unlock()
	return r.Runtime.Run(ctx, spec, stdout, stderr)
}

// fakeSessions knows confined sessions by token: one of agent-b from the
// start, more as a test adds them. A seam of this package, faked because
// the session's record and copy do not matter here.
type fakeSessions struct {
	mu sync.Mutex
	by map[string]*gateway.Caller
}

const sessionTok = "sluice_session_0123456789abcdef0123456789abcdef"

func (f *fakeSessions) add(tok string, c *gateway.Caller) {
	f.mu.Lock()
	f.by[tok] = c
	f.mu.Unlock()
}

func (f *fakeSessions) Authenticate(tok string) (*gateway.Caller, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.by[tok]
	return c, ok
}
func (*fakeSessions) Register(context.Context, gateway.SessionRequest) (gateway.SessionGrant, error) {
	return gateway.SessionGrant{}, errcode.New(errcode.Unsupported, "no")
}
func (*fakeSessions) End(context.Context, string, string) (gateway.SessionEnd, error) {
	return gateway.SessionEnd{}, errcode.New(errcode.Unsupported, "no")
}

func newRuntimeApp(t *testing.T) *runtimeApp {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := dockerrt.New(ctx)
	if err != nil {
		if os.Getenv("SLUICE_REQUIRE_E2E") == "1" {
			t.Fatalf("Docker Engine required: %v", err)
		}
		t.Skip(err)
	}
	t.Cleanup(func() { d.Close() })
	image, err := workspacetest.EnsureImage(context.Background(), d.Client())
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	opts := workspace.Options{StateDir: filepath.Join(base, "state"), ConfigDir: filepath.Join(base, "config"), Runtime: d, Image: image}
	app, err := workspace.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	tok, err := gateway.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	sessions := &fakeSessions{by: map[string]*gateway.Caller{sessionTok: {Session: "s1", Agent: "agent-b"}}}
	g, err := gateway.Listen(gateway.Options{Token: tok, Sessions: sessions, Runtime: &gateway.RuntimeHost{Runtime: d, Store: app,
		Policy: func() workspace.RunPolicy { return workspace.RunPolicy{Image: image} }}})
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve()
	t.Cleanup(func() { g.Shutdown(context.Background()) })
	c, err := gateway.NewClient(g.Addr(), tok)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := gateway.NewRuntime(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	a := &runtimeApp{d: d, app: app, rt: rt, addr: g.Addr(), token: tok, image: image, opts: opts, sessions: sessions}
	opts.Runtime = recorder{Runtime: rt, a: a}
	side, err := workspace.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	a.side = side
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		list, _ := side.List()
		for _, w := range list {
			side.Destroy(ctx, w.ID)
		}
		if left, err := d.Containers(ctx, side.StoreKey()); err != nil || len(left) != 0 {
			t.Errorf("containers left behind: %v %v", left, err)
		}
		side.Close()
	})
	return a
}

func (a *runtimeApp) create(t *testing.T, agent string) *workspace.Workspace {
	t.Helper()
	w, err := a.side.Create(context.Background(), workspace.CreateRequest{Source: workspace.Source{Kind: workspace.SourceFresh}, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestRuntime_RunsThroughTheApp: a sidecar's runs go through the app and
// behave as they do on the Engine directly: output live and apart, the
// exit code, the output limit stopping the run, the time limit, a
// cancelled run's container removed before Run returns.
func TestRuntime_RunsThroughTheApp(t *testing.T) {
	a := newRuntimeApp(t)
	w := a.create(t, "agent-a")
	ctx := gateway.WithAgent(context.Background(), "agent-a")

	res, err := a.side.Run(ctx, w.ID, workspace.RunRequest{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || res.Stdout != "out\n" || res.Stderr != "err\n" || res.Runtime != "docker" {
		t.Fatalf("run through the app: %+v", res)
	}

	a.mu.Lock()
	tree := a.lastRun.TreePath
	a.mu.Unlock()

	// Over its memory limit, once seen running (see TestRun_MemoryLimitOOM
	// in core/workspace for why it waits): the OOM kill is reported.
	oomStarted, oomDone := make(chan struct{}), make(chan *workspace.RunResult, 1)
	var oomOnce sync.Once
	go func() {
		res, err := a.side.Run(ctx, w.ID, workspace.RunRequest{
			Argv:   []string{"sh", "-c", `echo started; while [ ! -f go ]; do sleep 0.1; done; x=$(head -c 200000000 /dev/zero | tr "\0" a); echo ${#x}`},
			Limits: workspace.Limits{MemoryBytes: 64 << 20},
			OnOutput: func(_ string, chunk []byte) {
				if strings.Contains(string(chunk), "started") {
					oomOnce.Do(func() { close(oomStarted) })
				}
			},
		})
		if err != nil {
			t.Errorf("the OOM run: %v", err)
		}
		oomDone <- res
	}()
	select {
	case <-oomStarted:
	case res := <-oomDone:
		t.Fatalf("the run ended before it was told to: %+v", res)
	}
	if err := os.WriteFile(filepath.Join(tree, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res := <-oomDone; res == nil || !res.OOMKilled || strings.Contains(res.Stdout, "200000000") {
		t.Fatalf("holding 200 MB under a 64 MiB limit through the app: %+v", res)
	}

	res, err = a.side.Run(ctx, w.ID, workspace.RunRequest{Argv: []string{"yes"}, Limits: workspace.Limits{OutputBytes: 1024}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OutputStopped || !res.Truncated {
		t.Fatalf("a run past its output limit was not stopped: %+v", res)
	}

	res, err = a.side.Run(ctx, w.ID, workspace.RunRequest{Argv: []string{"sleep", "60"}, Limits: workspace.Limits{Timeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut {
		t.Fatalf("a run past its time limit: %+v", res)
	}

	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	started := make(chan struct{})
	var once sync.Once
	go func() {
		_, err := a.side.Run(cctx, w.ID, workspace.RunRequest{Argv: []string{"sh", "-c", "echo up; sleep 60"},
			OnOutput: func(string, []byte) { once.Do(func() { close(started) }) }})
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(2 * time.Minute):
		t.Fatal("the run never started")
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled run reported success")
	}
	if left, err := a.d.Containers(context.Background(), a.side.StoreKey()); err != nil || len(left) != 0 {
		t.Fatalf("a cancelled run left its container: %v %v", left, err)
	}
}

// TestRuntime_NextRunFollowsAtOnce: a sidecar's Run ends when the app's
// end frame comes, and its next run of the workspace goes straight on,
// whatever the app's handler of the first does after that frame (here it
// is held there until the second run is over). Before, the handler
// unlisted the run only after the frame, and the next run could find it
// still listed: "the workspace is busy with another operation".
func TestRuntime_NextRunFollowsAtOnce(t *testing.T) {
	a := newRuntimeApp(t)
	w := a.create(t, "agent-a")
	ctx := gateway.WithAgent(context.Background(), "agent-a")

	second := make(chan struct{})
	var first sync.Once
	var held atomic.Bool
	defer gateway.HoldRunEnds(func() {
		first.Do(func() {
			held.Store(true)
			<-second
		})
	})()
	if _, err := a.side.Run(ctx, w.ID, workspace.RunRequest{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	res, err := a.side.Run(ctx, w.ID, workspace.RunRequest{Argv: []string{"sh", "-c", "echo second"}})
	close(second)
	if err != nil {
		t.Fatalf("the run after a run: %v", err)
	}
	if res.Stdout != "second\n" {
		t.Fatalf("the run after a run: %+v", res)
	}
	if !held.Load() {
		t.Fatal("the first run's handler was never held after its end frame")
	}
}

// dyingSidecar carries a run through the app as a sidecar that is killed
// during it would: once the run's first output frame arrives, its
// connection closes and its Run ends (a killed process's workspace lock
// goes with it).
type dyingSidecar struct {
	*gateway.Runtime
	addr, token, agent string
}

func (r dyingSidecar) Run(_ context.Context, spec workspace.ContainerSpec, _, _ io.Writer) (workspace.ExitStatus, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return workspace.ExitStatus{}, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.addr+"/v1/runtime/runs", bytes.NewReader(b))
	if err != nil {
		return workspace.ExitStatus{}, err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	req.Header.Set(gateway.AgentHeader, r.agent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return workspace.ExitStatus{}, err
	}
	defer resp.Body.Close()
	var hdr [5]byte
	if _, err := io.ReadFull(resp.Body, hdr[:]); err != nil {
		return workspace.ExitStatus{}, fmt.Errorf("no output frame: %w", err)
	}
	return workspace.ExitStatus{}, errors.New("the sidecar died")
}

// TestRuntime_NextRunAfterItsSidecarDied: a sidecar killed during a run
// lets go of the workspace at once, while the app is still ending that
// run (removing its container). The next sidecar's first run of the
// workspace waits for that and runs; before, it was refused as busy.
func TestRuntime_NextRunAfterItsSidecarDied(t *testing.T) {
	a := newRuntimeApp(t)
	w := a.create(t, "agent-a")
	ctx := gateway.WithAgent(context.Background(), "agent-a")

	opts := a.opts
	opts.Runtime = dyingSidecar{Runtime: a.rt, addr: a.addr, token: a.token, agent: "agent-a"}
	dead, err := workspace.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	if _, err := dead.Run(ctx, w.ID, workspace.RunRequest{Argv: []string{"sh", "-c", "echo up; sleep 600"}}); err == nil {
		t.Fatal("the dying sidecar's run reported success")
	}
	res, err := a.side.Run(ctx, w.ID, workspace.RunRequest{Argv: []string{"sh", "-c", "echo next"}})
	if err != nil {
		t.Fatalf("the next sidecar's first run after one died during its run: %v", err)
	}
	if res.ExitCode != 0 || res.Stdout != "next\n" {
		t.Fatalf("the next run: %+v", res)
	}
	if left, err := a.d.Containers(context.Background(), a.side.StoreKey()); err != nil || len(left) != 0 {
		t.Fatalf("the dead sidecar's run left its container: %v %v", left, err)
	}
}

// TestRuntime_ForgedSpecsAreRefused: a token holder sends specs the store
// would never make. Each is refused with a typed error, and no container
// is ever created.
func TestRuntime_ForgedSpecsAreRefused(t *testing.T) {
	a := newRuntimeApp(t)
	mine := a.create(t, "agent-a")
	theirs := a.create(t, "agent-b")
	if err := a.side.Grant(mine.ID, "API_TOKEN", "s3cret-value-for-the-run"); err != nil {
		t.Fatal(err)
	}
	ctx := gateway.WithAgent(context.Background(), "agent-a")
	if _, err := a.side.Run(ctx, mine.ID, workspace.RunRequest{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	good := a.lastRun
	a.mu.Unlock()
	otherTree := strings.Replace(good.TreePath, mine.ID, theirs.ID, 1)
	if otherTree == good.TreePath {
		t.Fatalf("the tree path %s does not name its workspace", good.TreePath)
	}
	fresh := func(f func(*workspace.ContainerSpec)) workspace.ContainerSpec {
		s := good
		s.RunID = "00000000-0000-4000-8000-000000000001"
		s.Env = append([]string(nil), good.Env...)
		s.SecretEnv = append([]string(nil), good.SecretEnv...)
		f(&s)
		return s
	}
	cases := []struct {
		name  string
		agent string
		spec  workspace.ContainerSpec
		code  errcode.Code
	}{
		{"another workspace's tree", "agent-a", fresh(func(s *workspace.ContainerSpec) { s.TreePath = otherTree }), errcode.Forbidden},
		{"the host's root as tree", "agent-a", fresh(func(s *workspace.ContainerSpec) { s.TreePath = "/" }), errcode.Forbidden},
		{"a git dir of the host", "agent-a", fresh(func(s *workspace.ContainerSpec) { s.GitDirPath = "/var/run" }), errcode.Forbidden},
		{"another agent's workspace", "agent-a", fresh(func(s *workspace.ContainerSpec) { s.WorkspaceID, s.TreePath = theirs.ID, otherTree }), errcode.WorkspaceNotFound},
		{"another agent naming my tree", "agent-b", fresh(func(s *workspace.ContainerSpec) { s.WorkspaceID = theirs.ID }), errcode.Forbidden},
		{"no such workspace", "agent-a", fresh(func(s *workspace.ContainerSpec) { s.WorkspaceID = "ws-doesnotexist" }), errcode.WorkspaceNotFound},
		{"another image", "agent-a", fresh(func(s *workspace.ContainerSpec) { s.Image = "sha256:" + strings.Repeat("0", 64) }), errcode.Forbidden},
		{"another OCI runtime", "agent-a", fresh(func(s *workspace.ContainerSpec) { s.RuntimeName = "runc" }), errcode.Forbidden},
		{"root in the container", "agent-a", fresh(func(s *workspace.ContainerSpec) { s.User = "0:0" }), errcode.Forbidden},
		{"another store", "agent-a", fresh(func(s *workspace.ContainerSpec) { s.StoreKey = "someone-else" }), errcode.Forbidden},
		{"memory above the limit", "agent-a", fresh(func(s *workspace.ContainerSpec) { s.Limits.MemoryBytes = 64 << 30 }), errcode.InvalidArgument},
		{"no time limit", "agent-a", fresh(func(s *workspace.ContainerSpec) { s.Limits.Timeout = 0 }), errcode.InvalidArgument},
		{"the host's network", "agent-a", fresh(func(s *workspace.ContainerSpec) { s.Network = "host" }), errcode.EgressDenied},
		{"a preloaded library", "agent-a", fresh(func(s *workspace.ContainerSpec) { s.Env = append(s.Env, "LD_PRELOAD=/x.so") }), errcode.Forbidden},
		{"another PATH", "agent-a", fresh(func(s *workspace.ContainerSpec) { s.Env[0] = "PATH=/tmp" }), errcode.Forbidden},
		{"a granted secret not named secret", "agent-a", fresh(func(s *workspace.ContainerSpec) { s.SecretEnv = nil }), errcode.Forbidden},
		{"a bad run id", "agent-a", fresh(func(s *workspace.ContainerSpec) { s.RunID = "../x" }), errcode.InvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := a.rt.Run(gateway.WithAgent(context.Background(), tc.agent), tc.spec, &out, &out)
			if !errcode.IsCode(err, tc.code) {
				t.Fatalf("got %v (code %s), want %s", err, errcode.Of(err), tc.code)
			}
			if out.Len() != 0 {
				t.Fatalf("a refused run produced output: %q", out.String())
			}
		})
	}

	// Fields a container spec does not have (privilege, capabilities,
	// host binds) are refused as unknown, not ignored.
	for _, extra := range []string{`"Privileged":true`, `"CapAdd":["SYS_ADMIN"]`, `"Binds":["/:/host"]`} {
		b, _ := json.Marshal(fresh(func(*workspace.ContainerSpec) {}))
		body := append(b[:len(b)-1], []byte(","+extra+"}")...)
		req, _ := http.NewRequest(http.MethodPost, "http://"+a.addr+"/v1/runtime/runs", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+a.token)
		req.Header.Set(gateway.AgentHeader, "agent-a")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var eb gateway.ErrorBody
		json.NewDecoder(resp.Body).Decode(&eb)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || eb.Error.Code != errcode.InvalidArgument {
			t.Fatalf("a spec with %s: %d %+v", extra, resp.StatusCode, eb)
		}
	}

	// Only this store's containers are listed or removed.
	if _, err := a.rt.Containers(context.Background(), "someone-else"); !errcode.IsCode(err, errcode.Forbidden) {
		t.Fatalf("listing another store: %v", err)
	}
	outsider := good
	outsider.StoreKey, outsider.TreePath, outsider.GitDirPath = "someone-else", t.TempDir(), ""
	cfg, hc, nc := a.d.ContainerConfig(outsider)
	made, err := a.d.Client().ContainerCreate(context.Background(), cfg, hc, nc, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.d.Remove(context.Background(), made.ID) })
	if err := a.rt.Remove(context.Background(), made.ID); err != nil {
		t.Fatalf("Remove of another store's container: %v", err)
	}
	if _, err := a.d.Client().ContainerInspect(context.Background(), made.ID); err != nil {
		t.Fatalf("another store's container was removed: %v", err)
	}

	// Nothing was created for any refused spec, and the store's records
	// are as they were: one run.
	if left, err := a.d.Containers(context.Background(), a.side.StoreKey()); err != nil || len(left) != 0 {
		t.Fatalf("containers after the refusals: %v %v", left, err)
	}
	for _, id := range []string{mine.ID, theirs.ID} {
		w, err := a.side.Get(id)
		if err != nil || w.State != workspace.StateReady {
			t.Fatalf("%s after the refusals: %+v %v", id, w, err)
		}
	}
	if w, _ := a.side.Get(mine.ID); w.Runs != 1 {
		t.Fatalf("runs recorded: %d, want 1", w.Runs)
	}
}

// TestRuntime_GrantedSecretValuesAreTheApps: a sidecar that sends another
// value under a granted name (one of its choosing, or the value the person
// has since replaced) does not give it to the run: the container gets the
// value the app's store holds. A sidecar naming a revoked secret is refused.
func TestRuntime_GrantedSecretValuesAreTheApps(t *testing.T) {
	a := newRuntimeApp(t)
	w := a.create(t, "agent-a")
	for _, g := range [][2]string{{"API_TOKEN", "value-the-person-replaced"}, {"API_TOKEN", "value-granted-now"}, {"OLD_TOKEN", "value-old-1234"}} {
		if err := a.app.Grant(w.ID, g[0], g[1]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.app.RevokeSecret(w.ID, "OLD_TOKEN"); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.tamper = func(s *workspace.ContainerSpec) {
		for i, kv := range s.Env {
			if strings.HasPrefix(kv, "API_TOKEN=") {
				s.Env[i] = "API_TOKEN=value-the-person-replaced"
			}
		}
	}
	a.mu.Unlock()
	ctx := gateway.WithAgent(context.Background(), "agent-a")
	res, err := a.side.Run(ctx, w.ID, workspace.RunRequest{Argv: []string{"sh", "-c",
		`case "$API_TOKEN" in value-granted-now) echo STORED;; value-the-person-replaced) echo CLAIMED;; *) echo OTHER;; esac; echo "old:${OLD_TOKEN:-none}"`}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Stdout != "STORED\nold:none\n" {
		t.Fatalf("the run's environment as the sidecar claimed it: %+v", res)
	}

	// A revoked secret claimed back is refused; nothing runs.
	a.mu.Lock()
	a.tamper = func(s *workspace.ContainerSpec) {
		s.Env = append(s.Env, "OLD_TOKEN=value-old-1234")
		s.SecretEnv = append(append([]string(nil), s.SecretEnv...), "OLD_TOKEN")
		slices.Sort(s.SecretEnv)
	}
	a.mu.Unlock()
	if _, err := a.side.Run(ctx, w.ID, workspace.RunRequest{Argv: []string{"echo", "ran"}}); !errcode.IsCode(err, errcode.Forbidden) {
		t.Fatalf("a run claiming a revoked secret: %v", err)
	}
	if left, err := a.d.Containers(context.Background(), a.side.StoreKey()); err != nil || len(left) != 0 {
		t.Fatalf("containers after the refusal: %v %v", left, err)
	}
}

// TestRuntime_SessionTokenReachesOnlyItsAgent: a confined session's token
// runs only its own agent's workspaces, and sees and removes only their
// containers.
func TestRuntime_SessionTokenReachesOnlyItsAgent(t *testing.T) {
	a := newRuntimeApp(t)
	mine := a.create(t, "agent-a")
	if _, err := a.side.Run(gateway.WithAgent(context.Background(), "agent-a"), mine.ID, workspace.RunRequest{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	spec := a.lastRun
	a.mu.Unlock()
	sc, err := gateway.NewClient(a.addr, sessionTok)
	if err != nil {
		t.Fatal(err)
	}
	srt, err := gateway.NewRuntime(context.Background(), sc)
	if err != nil {
		t.Fatalf("a session's token on GET /v1/runtime: %v", err)
	}
	spec.RunID = "00000000-0000-4000-8000-000000000002"
	if _, err := srt.Run(gateway.WithAgent(context.Background(), "agent-a"), spec, io.Discard, io.Discard); !errcode.IsCode(err, errcode.Forbidden) {
		t.Fatalf("a session speaking as another agent: %v", err)
	}
	if _, err := srt.Run(gateway.WithAgent(context.Background(), "agent-b"), spec, io.Discard, io.Discard); !errcode.IsCode(err, errcode.WorkspaceNotFound) {
		t.Fatalf("a session running another agent's workspace: %v", err)
	}

	// A container of agent-a's workspace, left as a crash would leave it.
	cfg, hc, nc := a.d.ContainerConfig(spec)
	made, err := a.d.Client().ContainerCreate(context.Background(), cfg, hc, nc, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.d.Remove(context.Background(), made.ID) })
	seen, err := srt.Containers(context.Background(), a.side.StoreKey())
	if err != nil || len(seen) != 0 {
		t.Fatalf("the session sees %v (%v), want none of agent-a's", seen, err)
	}
	if err := srt.Remove(context.Background(), made.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.d.Client().ContainerInspect(context.Background(), made.ID); err != nil {
		t.Fatalf("the session removed agent-a's container: %v", err)
	}
	all, err := a.rt.Containers(context.Background(), a.side.StoreKey())
	if err != nil || len(all) != 1 || all[0].ID != made.ID {
		t.Fatalf("the gateway's own token sees %v (%v), want the one container", all, err)
	}
}

// TestRuntime_OnlyTheRunInProgressIsCarried: the app carries out a run
// only while the sidecar's Run holds the workspace for it; a spec that
// passes every check but is no run in progress is refused, and the run the
// app carries out is the workspace's: Destroy in the app cancels it.
func TestRuntime_OnlyTheRunInProgressIsCarried(t *testing.T) {
	a := newRuntimeApp(t)
	w := a.create(t, "agent-a")
	ctx := gateway.WithAgent(context.Background(), "agent-a")
	if _, err := a.side.Run(ctx, w.ID, workspace.RunRequest{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	spec := a.lastRun
	a.mu.Unlock()
	forged := spec
	forged.RunID = "00000000-0000-4000-8000-000000000003"
	forged.Argv = []string{"sh", "-c", "echo forged"}
	var out bytes.Buffer
	if _, err := a.rt.Run(ctx, forged, &out, &out); !errcode.IsCode(err, errcode.Forbidden) || out.Len() != 0 {
		t.Fatalf("a run nobody holds the workspace for: %v %q", err, out.String())
	}

	done := make(chan error, 1)
	started := make(chan struct{})
	var once sync.Once
	go func() {
		_, err := a.side.Run(ctx, w.ID, workspace.RunRequest{Argv: []string{"sh", "-c", "echo up; sleep 300"},
			OnOutput: func(string, []byte) { once.Do(func() { close(started) }) }})
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("the run ended before it started: %v", err)
	}
	a.mu.Lock()
	running := a.lastRun
	a.mu.Unlock()
	// Another run while the workspace is busy: not the one in progress.
	if _, err := a.rt.Run(ctx, forged, &out, &out); !errcode.IsCode(err, errcode.Forbidden) || out.Len() != 0 {
		t.Fatalf("a second run while one is in progress: %v %q", err, out.String())
	}
	// The run in progress sent once more: one run at a time.
	if _, err := a.rt.Run(ctx, running, &out, &out); err == nil || out.Len() != 0 {
		t.Fatalf("the run in progress carried twice: %v %q", err, out.String())
	}
	if left, err := a.d.Containers(context.Background(), a.side.StoreKey()); err != nil || len(left) != 1 {
		t.Fatalf("containers while one run goes on: %v %v", left, err)
	}

	// Destroy in the app cancels the run it carries out, so the sidecar's
	// Run lets go of the workspace and the workspace goes.
	rep, err := a.app.Destroy(context.Background(), w.ID)
	if err != nil || !rep.ContainersGone || !rep.TreeRemoved {
		t.Fatalf("Destroy in the app while it carries out the run: %+v %v", rep, err)
	}
	if err := <-done; err == nil {
		t.Fatal("the destroyed workspace's run reported success")
	}
}

// TestRuntime_SessionReachesOnlyItsRepository: two confined sessions of
// the same client (the same agent name as each other and as the client
// unconfined) each run, see and remove only the workspaces made from
// their own repository.
func TestRuntime_SessionReachesOnlyItsRepository(t *testing.T) {
	a := newRuntimeApp(t)
	repoA, repoB := gitxtest.Basic(t, 1), gitxtest.Basic(t, 1)
	const tokA, tokB = "sluice_session_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "sluice_session_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	a.sessions.add(tokA, &gateway.Caller{Session: "sa", Agent: "agent-a", Repo: repoA.Dir})
	a.sessions.add(tokB, &gateway.Caller{Session: "sb", Agent: "agent-a", Repo: repoB.Dir})
	ws, err := a.side.Create(context.Background(), workspace.CreateRequest{Source: workspace.Source{Kind: workspace.SourceRepo, Path: repoA.Dir}, Agent: "agent-a"})
	if err != nil {
		t.Fatal(err)
	}
	// A sidecar of each session: a Manager on the store whose runs go
	// through the app with that session's token.
	sidecarOf := func(tok string) (*workspace.Manager, *gateway.Runtime) {
		c, err := gateway.NewClient(a.addr, tok)
		if err != nil {
			t.Fatal(err)
		}
		rt, err := gateway.NewRuntime(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		opts := a.opts
		opts.Runtime = rt
		m, err := workspace.Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m, rt
	}
	sideA, rtA := sidecarOf(tokA)
	sideB, rtB := sidecarOf(tokB)
	ctx := gateway.WithAgent(context.Background(), "agent-a")

	res, err := sideA.Run(ctx, ws.ID, workspace.RunRequest{Argv: []string{"sh", "-c", "echo mine"}})
	if err != nil || res.Stdout != "mine\n" {
		t.Fatalf("the session's run of its own workspace: %+v %v", res, err)
	}
	if res, err := sideB.Run(ctx, ws.ID, workspace.RunRequest{Argv: []string{"sh", "-c", "echo theirs"}}); !errcode.IsCode(err, errcode.WorkspaceNotFound) {
		t.Fatalf("another session of the same agent ran the workspace: %+v %v", res, err)
	}

	// A container of the workspace, left as a crash would leave it (its
	// spec as the client's unconfined sidecar makes it).
	if _, err := a.side.Run(ctx, ws.ID, workspace.RunRequest{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	spec := a.lastRun
	a.mu.Unlock()
	spec.RunID = "00000000-0000-4000-8000-000000000004"
	if spec.WorkspaceID != ws.ID {
		t.Fatalf("the last spec is of %s", spec.WorkspaceID)
	}
	cfg, hc, nc := a.d.ContainerConfig(spec)
	made, err := a.d.Client().ContainerCreate(context.Background(), cfg, hc, nc, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.d.Remove(context.Background(), made.ID) })
	if seen, err := rtB.Containers(context.Background(), a.side.StoreKey()); err != nil || len(seen) != 0 {
		t.Fatalf("the other session sees %v (%v), want none", seen, err)
	}
	if err := rtB.Remove(context.Background(), made.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.d.Client().ContainerInspect(context.Background(), made.ID); err != nil {
		t.Fatalf("the other session removed the workspace's container: %v", err)
	}
	if seen, err := rtA.Containers(context.Background(), a.side.StoreKey()); err != nil || len(seen) != 1 || seen[0].ID != made.ID {
		t.Fatalf("the session sees %v (%v), want its workspace's container", seen, err)
	}
	if err := rtA.Remove(context.Background(), made.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.d.Client().ContainerInspect(context.Background(), made.ID); err == nil {
		t.Fatal("the session could not remove its own workspace's container")
	}
}

// rawRunner sends a sidecar's runs to the app as a careless or hostile
// client would: it never signals, and either reads every frame while
// ignoring its writers' refusals, or stops reading (stall).
type rawRunner struct {
	*gateway.Runtime
	a     *runtimeApp
	stall bool
	// got is the output bytes read (reading), or the stall's outcome.
	got chan any
}

func (r rawRunner) Run(ctx context.Context, spec workspace.ContainerSpec, stdout, stderr io.Writer) (workspace.ExitStatus, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return workspace.ExitStatus{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.a.addr+"/v1/runtime/runs", bytes.NewReader(b))
	if err != nil {
		return workspace.ExitStatus{}, err
	}
	req.Header.Set("Authorization", "Bearer "+r.a.token)
	req.Header.Set(gateway.AgentHeader, "agent-a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return workspace.ExitStatus{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return workspace.ExitStatus{}, errors.New("the app refused the run: " + resp.Status)
	}
	if r.stall {
		// Read nothing; wait for the run's container to be there, then to
		// be gone.
		r.got <- r.a.waitContainers(func(n int) bool { return n > 0 }) && r.a.waitContainers(func(n int) bool { return n == 0 })
		return workspace.ExitStatus{}, errors.New("the client stalled")
	}
	var total int64
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(resp.Body, hdr[:]); err != nil {
			return workspace.ExitStatus{}, err
		}
		p := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
		if _, err := io.ReadFull(resp.Body, p); err != nil {
			return workspace.ExitStatus{}, err
		}
		if hdr[0] != 3 {
			total += int64(len(p))
			stdout.Write(p) // its refusal is ignored: no signal is sent
			continue
		}
		r.got <- total
		var end gateway.RunEnd
		if err := json.Unmarshal(p, &end); err != nil {
			return workspace.ExitStatus{}, err
		}
		return end.Status, nil
	}
}

// waitContainers waits for the store's containers to satisfy ok, for at
// most a minute (less than a run's default time limit).
func (a *runtimeApp) waitContainers(ok func(int) bool) bool {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if list, err := a.d.Containers(context.Background(), a.side.StoreKey()); err == nil && ok(len(list)) {
			return true
		}
	}
	return false
}

// TestRuntime_AppHoldsARunToItsLimits: the app stops a run past its output
// limit though its caller never says so, and a caller that stops reading
// ends its run's stream at the frame write deadline: the run is stopped
// and its container removed.
func TestRuntime_AppHoldsARunToItsLimits(t *testing.T) {
	defer gateway.SetFrameWriteTimeout(2 * time.Second)()
	a := newRuntimeApp(t)
	w := a.create(t, "agent-a")
	ctx := gateway.WithAgent(context.Background(), "agent-a")
	open := func(r rawRunner) *workspace.Manager {
		opts := a.opts
		opts.Runtime = r
		m, err := workspace.Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}

	reader := rawRunner{Runtime: a.rt, a: a, got: make(chan any, 1)}
	lim := workspace.Limits{OutputBytes: 1024, Timeout: time.Minute}
	res, err := open(reader).Run(ctx, w.ID, workspace.RunRequest{Argv: []string{"yes"}, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	got := (<-reader.got).(int64)
	if !res.OutputStopped || res.TimedOut || got > workspace.OutputStopAt(lim) {
		t.Fatalf("a flooding run whose caller never signals: %d bytes sent, %+v", got, res)
	}

	staller := rawRunner{Runtime: a.rt, a: a, stall: true, got: make(chan any, 1)}
	done := make(chan error, 1)
	go func() {
		// More output than the connection's buffers hold, then a long wait.
		_, err := open(staller).Run(ctx, w.ID, workspace.RunRequest{Argv: []string{"sh", "-c", "head -c 28000000 /dev/zero; sleep 300"}})
		done <- err
	}()
	select {
	case gone := <-staller.got:
		if !gone.(bool) {
			t.Fatal("the run of a caller that stopped reading went on")
		}
	case err := <-done:
		t.Fatalf("the run ended before its caller stalled: %v", err)
	}
	<-done
}
