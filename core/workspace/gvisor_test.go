//go:build unix

package workspace

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
)

// needRunsc skips (or, with SLUICE_REQUIRE_E2E=1, fails) when the Engine
// has no runsc runtime; `make test` registers it (build/scripts/setup.sh).
func needRunsc(t *testing.T) TestEngine {
	t.Helper()
	d := needDocker(t)
	if _, err := d.CheckRuntime(context.Background(), "runsc"); err != nil {
		if os.Getenv("SLUICE_REQUIRE_E2E") == "1" {
			t.Fatalf("the runsc runtime is required (SLUICE_REQUIRE_E2E=1): %v", err)
		}
		t.Skipf("no runsc runtime: %v", err)
	}
	return d
}

// TestSuite_UnderGVisor runs this package's tests once more, in a child
// process of the same test binary, with every workspace run under runsc.
// The child's failures are this test's failures.
func TestSuite_UnderGVisor(t *testing.T) {
	if testRuntime != "" {
		t.Skip("already the re-run under " + testRuntime)
	}
	needRunsc(t)
	args := []string{"-test.count=1", "-test.v", "-test.skip", "^TestSuite_UnderGVisor$"}
	if dl, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout", time.Until(dl).Round(time.Second).String())
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "SLUICE_TEST_WORKSPACE_RUNTIME=runsc")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	passed, skipped := strings.Count(out.String(), "--- PASS"), strings.Count(out.String(), "--- SKIP")
	if err != nil || !strings.Contains(out.String(), "\nPASS\n") {
		t.Fatalf("the workspace suite under runsc failed (%v):\n%s", err, out.String())
	}
	// A child that ran next to nothing (a broken -test.skip, say) proves
	// nothing either.
	if !strings.Contains(out.String(), "--- PASS: TestRun_HardeningObservedInside") || passed < 40 {
		t.Fatalf("the re-run under runsc ran only %d tests:\n%s", passed, out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "--- SKIP") || strings.Contains(line, "gvisor:") {
			t.Log(strings.TrimSpace(line))
		}
	}
	t.Logf("under runsc: %d passed, %d skipped", passed, skipped)
}

// TestRun_UnderGVisor proves a workspace run happens under gVisor: the
// kernel the container sees is gVisor's (its kernel log says so), and the
// evidence names runsc.
func TestRun_UnderGVisor(t *testing.T) {
	t.Parallel()
	needRunsc(t)
	m := newManager(t, true, func(o *Options) { o.RuntimeName = "runsc" })
	w := freshWS(t, m)
	res := mustRun(t, m, w.ID, RunRequest{Argv: []string{"dmesg"}})
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "Starting gVisor") || res.OCIRuntime != "runsc" {
		t.Fatalf("dmesg under runsc: exit %d, ociRuntime %q, stdout %q, stderr %q", res.ExitCode, res.OCIRuntime, res.Stdout, res.Stderr)
	}
	t.Logf("gvisor: kernel log inside the workspace: %q", firstLine(res.Stdout))

	// A PID limit too low for the sandbox to start is refused up front,
	// with a reason, instead of failing as an unexplained start error.
	if _, err := m.Run(context.Background(), w.ID, RunRequest{Argv: []string{"true"}, Limits: Limits{PIDs: 32}}); !errcode.IsCode(err, errcode.InvalidArgument) || !strings.Contains(err.Error(), "runsc") {
		t.Fatalf("a 32-PID limit under runsc: %v", err)
	}

	// The same command under the Engine's default runtime shows the host's
	// kernel, or nothing (dmesg is restricted): never gVisor's banner. So
	// the check above tells the two apart.
	if testRuntime == "" {
		runc := newManager(t, true)
		w := freshWS(t, runc)
		res := mustRun(t, runc, w.ID, RunRequest{Argv: []string{"dmesg"}})
		if strings.Contains(res.Stdout, "gVisor") || res.OCIRuntime != "runc" {
			t.Fatalf("dmesg under runc: ociRuntime %q, stdout %q", res.OCIRuntime, firstLine(res.Stdout))
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestRun_UnknownRuntimeFailsClosed configures a runtime the Engine does
// not have: every run fails with an error naming it, and no container is
// ever created (so nothing ran under the default runtime instead).
func TestRun_UnknownRuntimeFailsClosed(t *testing.T) {
	t.Parallel()
	d := needDocker(t)
	m := newManager(t, true, func(o *Options) { o.RuntimeName = "sluice-no-such-runtime" })
	w := freshWS(t, m)
	for i := 0; i < 2; i++ {
		_, err := m.Run(context.Background(), w.ID, RunRequest{Argv: []string{"true"}})
		if !errcode.IsCode(err, errcode.Unsupported) || !strings.Contains(err.Error(), `"sluice-no-such-runtime"`) || !strings.Contains(err.Error(), "never runs a workspace under another runtime") {
			t.Fatalf("run %d under a runtime the Engine lacks: %v", i, err)
		}
	}
	if left, err := d.Containers(context.Background(), m.StoreKey()); err != nil || len(left) != 0 {
		t.Fatalf("containers were created: %v %v", left, err)
	}
	ws, err := m.Get(w.ID)
	if err != nil || ws.Runs != 0 {
		t.Fatalf("the refused runs were counted: %+v %v", ws, err)
	}
	if runs, _ := m.Runs(w.ID); len(runs) != 0 {
		t.Fatalf("evidence stored for refused runs: %+v", runs)
	}
}

// TestEgress_RefusedUnderGVisor: runsc is registered with --network=none,
// so a grant could never work. It is refused where the person makes it,
// and a grant made before the runtime changed stops runs instead of
// letting them run without the network they were promised.
func TestEgress_RefusedUnderGVisor(t *testing.T) {
	t.Parallel()
	needRunsc(t)
	m := newManager(t, true, func(o *Options) { o.RuntimeName = "runsc" })
	w := freshWS(t, m)
	err := m.GrantEgress(w.ID, []string{"example.com:443"})
	if !errcode.IsCode(err, errcode.Unsupported) || !strings.Contains(err.Error(), "runsc") || !strings.Contains(err.Error(), "no network") {
		t.Fatalf("an egress grant under runsc: %v", err)
	}
	if ws, _ := m.Get(w.ID); len(ws.Egress) != 0 {
		t.Fatalf("the refused grant was stored: %v", ws.Egress)
	}
	// Revoking is always possible.
	if err := m.GrantEgress(w.ID, nil); err != nil {
		t.Fatalf("revoking egress under runsc: %v", err)
	}

	// A workspace granted egress under runc, then run under runsc.
	runc := newManager(t, true, func(o *Options) { o.RuntimeName = "runc" })
	w2 := freshWS(t, runc)
	if err := runc.GrantEgress(w2.ID, []string{"example.com:443"}); err != nil {
		t.Fatal(err)
	}
	moved, err := Open(Options{StateDir: runc.opts.StateDir, ConfigDir: runc.opts.ConfigDir, Runtime: runc.opts.Runtime,
		Image: runc.opts.Image, RuntimeName: "runsc", Limits: runc.opts.Limits})
	if err != nil {
		t.Fatal(err)
	}
	defer moved.Close()
	if _, err := moved.Run(context.Background(), w2.ID, RunRequest{Argv: []string{"true"}}); !errcode.IsCode(err, errcode.Unsupported) || !strings.Contains(err.Error(), "revoke the egress grant") {
		t.Fatalf("a granted workspace run under runsc: %v", err)
	}
}

// The Engine's runtimes as CheckRuntime reads them: runsc as setup
// registers it has no network and may reach host sockets (a confined
// session needs that); runc has a network and no such argument.
func TestCheckRuntime_ReadsRuntimeArgs(t *testing.T) {
	d := needRunsc(t)
	gv, err := d.CheckRuntime(context.Background(), "runsc")
	if err != nil {
		t.Fatal(err)
	}
	if !gv.NoNetwork || !gv.HostUDS {
		t.Fatalf("runsc: %+v, want NoNetwork and HostUDS (build/scripts/setup.sh registers both)", gv)
	}
	rc, err := d.CheckRuntime(context.Background(), "runc")
	if err != nil {
		t.Fatal(err)
	}
	if rc.NoNetwork || rc.HostUDS {
		t.Fatalf("runc: %+v, want neither", rc)
	}
}
