package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveAndLook starts bin as an agent does, over stdio with args, and
// returns the executable the process runs once it has answered initialize
// (/proc/PID/exe), its command line and its tools/list answer. What it
// wrote to stderr is in *stderr when stderr is not nil.
func serveAndLook(t *testing.T, bin string, env []string, args ...string) (exe string, cmdline []string, tools []byte) {
	return serveAndLookErr(t, bin, env, nil, args...)
}

func serveAndLookErr(t *testing.T, bin string, env []string, errOut *string, args ...string) (exe string, cmdline []string, tools []byte) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "exec-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("start %s %v: %v\n%s", bin, args, err, stderr.String())
	}
	defer cs.Close()
	pid := cmd.Process.Pid
	if exe, err = os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	cmdline = strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v\n%s", err, stderr.String())
	}
	if tools, err = json.Marshal(res.Tools); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	cmd.Wait()
	if errOut != nil {
		*errOut = stderr.String()
	}
	return exe, cmdline, tools
}

// copyBinary copies src to dir/name with mode: a copy, not a link, so that
// its mode is its own.
func copyBinary(t *testing.T, src, dir, name string, mode os.FileMode) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	dst := filepath.Join(dir, name)
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	// Chmod, not the umask-filtered create mode: a group-writable copy is
	// one of the cases.
	if err := os.Chmod(dst, mode); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestServing_ExecsServingBinary: sluice-sidecar started for stdio, in
// each form an agent's configuration may use, becomes
// sluice-sidecar-stdio (the same process: its pid is the one started and
// its command line is unchanged) when that sits beside it, and answers
// tools/list exactly as sluice-sidecar alone does; alone, or beside a
// serving binary that others may write, sluice-sidecar serves itself.
func TestServing_ExecsServingBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/exe")
	}
	bin := sidecarBinary(t)
	if real, err := filepath.EvalSymlinks(bin); err == nil {
		bin = real
	}
	serving := filepath.Join(filepath.Dir(bin), ServingBinary)
	if _, err := os.Stat(serving); err != nil {
		t.Fatalf("%s is not beside %s (make build installs both): %v", ServingBinary, bin, err)
	}
	env, _ := testEnv(t, t.TempDir())

	// Alone: the full binary serves, as before the serving binary existed.
	alone := copyBinary(t, bin, t.TempDir(), "sluice-sidecar", 0o755)
	exe, _, aloneTools := serveAndLook(t, alone, env)
	if exe != alone {
		t.Fatalf("alone, the process runs %s, want %s itself", exe, alone)
	}

	for _, args := range [][]string{nil, {"stdio"}, {"--toolsets", "git,propose,workspace"}, {"stdio", "--toolsets", "git"}} {
		exe, cmdline, tools := serveAndLook(t, bin, env, args...)
		if exe != serving {
			t.Errorf("sluice-sidecar %v runs %s, want %s", args, exe, serving)
		}
		if want := append([]string{bin}, args...); !slices.Equal(cmdline, want) {
			t.Errorf("sluice-sidecar %v: command line %q, want %q unchanged", args, cmdline, want)
		}
		if len(args) == 0 && !bytes.Equal(tools, aloneTools) {
			t.Errorf("tools/list differs between the serving binary and sluice-sidecar alone:\n%s\n%s", tools, aloneTools)
		}
		if slices.Contains(args, "git") && bytes.Contains(tools, []byte(`"propose_commit"`)) {
			t.Errorf("sluice-sidecar %v: the flags did not reach the serving binary: propose tools listed", args)
		}
	}

	// A serving binary that another user could have written is not run;
	// the same file, writable by its owner alone, is.
	dir := t.TempDir()
	full := copyBinary(t, bin, dir, "sluice-sidecar", 0o755)
	beside := copyBinary(t, serving, dir, ServingBinary, 0o775)
	if exe, _, _ := serveAndLook(t, full, env); exe != full {
		t.Errorf("beside a group-writable %s, the process runs %s, want %s itself", ServingBinary, exe, full)
	}
	if err := os.Chmod(beside, 0o755); err != nil {
		t.Fatal(err)
	}
	if exe, _, _ := serveAndLook(t, full, env); exe != beside {
		t.Errorf("beside a %s of mode 0755, the process runs %s, want %s", ServingBinary, exe, beside)
	}
}

// TestServing_OtherBuildNotUsed: a sluice-sidecar-stdio of another build
// beside sluice-sidecar (left from an older install) does not serve: it
// hands the process back, and sluice-sidecar serves itself, with the same
// answers, saying why on stderr.
func TestServing_OtherBuildNotUsed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/exe")
	}
	bin := sidecarBinary(t)
	env, _ := testEnv(t, t.TempDir())
	dir := t.TempDir()
	full := copyBinary(t, bin, dir, "sluice-sidecar", 0o755)
	cmd := exec.Command("go", "build", "-ldflags", "-X github.com/sluicehq/sluice/core/config.Version=another-build",
		"-o", filepath.Join(dir, ServingBinary), "./cmd/"+ServingBinary)
	cmd.Env = append(slices.Clone(startEnv), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	alone := copyBinary(t, bin, t.TempDir(), "sluice-sidecar", 0o755)
	_, _, want := serveAndLook(t, alone, env)

	for _, args := range [][]string{nil, {"stdio", "--toolsets", "git,propose,workspace"}} {
		var stderr string
		exe, cmdline, tools := serveAndLookErr(t, full, env, &stderr, args...)
		if exe != full {
			t.Errorf("sluice-sidecar %v beside a serving binary of another build runs %s, want %s itself", args, exe, full)
		}
		if w := append([]string{full}, args...); !slices.Equal(cmdline, w) {
			t.Errorf("sluice-sidecar %v: command line %q, want %q unchanged", args, cmdline, w)
		}
		if !bytes.Equal(tools, want) {
			t.Errorf("sluice-sidecar %v: tools/list differs from sluice-sidecar alone", args)
		}
		if !strings.Contains(stderr, "of another build") {
			t.Errorf("sluice-sidecar %v said nothing of the other build on stderr:\n%s", args, stderr)
		}
	}
}

// TestServingBinary_LinksNoOtherCommand: sluice-sidecar-stdio holds no
// code of the commands a stdio session never runs (the HTTP server,
// sessions, the pod's link and tree writer, client configuration, tokens,
// doctor, the audit commands), so an idle session does not keep it
// resident. The same symbols are in sluice-sidecar, so the check looks at
// the right names.
func TestServingBinary_LinksNoOtherCommand(t *testing.T) {
	bin := sidecarBinary(t)
	serving := filepath.Join(filepath.Dir(bin), ServingBinary)
	absent := []string{
		"github.com/sluicehq/sluice/sidecar.runHTTP",
		"github.com/sluicehq/sluice/sidecar.runSessionServer",
		"github.com/sluicehq/sluice/sidecar.runRelay",
		"github.com/sluicehq/sluice/sidecar.runSandboxInit",
		"github.com/sluicehq/sluice/sidecar.runPodLink",
		"github.com/sluicehq/sluice/sidecar.runPodTree",
		"github.com/sluicehq/sluice/sidecar.runConfig",
		"github.com/sluicehq/sluice/sidecar.runToken",
		"github.com/sluicehq/sluice/sidecar.runAudit",
		"github.com/sluicehq/sluice/core/doctor.Command",
		"github.com/sluicehq/sluice/core/audit.VerifyCommand",
		"archive/tar.(*Writer).WriteHeader",
		"github.com/hashicorp/yamux.(*Session).OpenStream",
	}
	inFull, inServing := symbols(t, bin), symbols(t, serving)
	if !inServing["github.com/sluicehq/sluice/sidecar.runStdio"] {
		t.Fatalf("%s has no runStdio: is it the serving binary?", serving)
	}
	for _, s := range absent {
		if !inFull[s] {
			t.Errorf("sluice-sidecar has no %s: the check looks for a name that is not there", s)
		}
		if inServing[s] {
			t.Errorf("%s links %s, which serving stdio never runs", ServingBinary, s)
		}
	}
}

// symbols are the names of the symbols `go tool nm` lists in bin.
func symbols(t *testing.T, bin string) map[string]bool {
	t.Helper()
	cmd := exec.Command("go", "tool", "nm", bin)
	cmd.Env = startEnv
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go tool nm %s: %v", bin, err)
	}
	syms := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		// address, type, name (which may hold spaces)
		f := strings.SplitN(strings.TrimSpace(line), " ", 3)
		if len(f) == 3 {
			syms[f[2]] = true
		}
	}
	return syms
}
