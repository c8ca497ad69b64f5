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
	exe, cmdline, tools, _ = serveAndLookComm(t, bin, env, errOut, args...)
	return exe, cmdline, tools
}

// serveAndLookComm is serveAndLookErr that also returns the process's name
// (/proc/PID/comm).
func serveAndLookComm(t *testing.T, bin string, env []string, errOut *string, args ...string) (exe string, cmdline []string, tools []byte, comm string) {
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
	if raw, err = os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); err != nil {
		t.Fatal(err)
	}
	comm = strings.TrimSuffix(string(raw), "\n")
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v\n%s", err, stderr.String())
	}
	// Each thread has a name of its own (top -H, ps -L): one that differs
	// from the process's is reported with it.
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/comm"); err == nil {
			if name := strings.TrimSuffix(string(raw), "\n"); name != comm {
				comm += " (thread " + task.Name() + ": " + name + ")"
			}
		}
	}
	if tools, err = json.Marshal(res.Tools); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	cmd.Wait()
	if errOut != nil {
		*errOut = stderr.String()
	}
	return exe, cmdline, tools, comm
}

// resolved is path with its symlinks resolved, as /proc/PID/exe shows it
// (t.TempDir may be under a symlinked TMPDIR).
func resolved(t *testing.T, path string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return real
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
	bin := resolved(t, sidecarBinary(t))
	serving := filepath.Join(filepath.Dir(bin), ServingBinary)
	if _, err := os.Stat(serving); err != nil {
		t.Fatalf("%s is not beside %s (make build installs both): %v", ServingBinary, bin, err)
	}
	env, _ := testEnv(t, t.TempDir())

	// Alone: the full binary serves, as before the serving binary existed.
	alone := copyBinary(t, bin, resolved(t, t.TempDir()), "sluice-sidecar", 0o755)
	exe, _, aloneTools := serveAndLook(t, alone, env)
	if exe != alone {
		t.Fatalf("alone, the process runs %s, want %s itself", exe, alone)
	}

	for _, args := range [][]string{nil, {"stdio"}, {"--toolsets", "git,propose,workspace"}, {"stdio", "--toolsets", "git"}} {
		exe, cmdline, tools, comm := serveAndLookComm(t, bin, env, nil, args...)
		if exe != serving {
			t.Errorf("sluice-sidecar %v runs %s, want %s (both stamped with one build ID, as make build does?)", args, exe, serving)
		}
		// As an exec by the file's name would name it: the kernel keeps
		// 15 bytes.
		if want := ServingBinary[:15]; comm != want {
			t.Errorf("sluice-sidecar %v: the process is named %q, want %q", args, comm, want)
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
	dir := resolved(t, t.TempDir())
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
// answers, saying why on stderr. Another build is another build ID, even
// from the same sources and version: the same commit edited, or built
// where go build records no commit, is another build.
func TestServing_OtherBuildNotUsed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/exe")
	}
	env, _ := testEnv(t, t.TempDir())
	dir := resolved(t, t.TempDir())
	full, serving := filepath.Join(dir, "sluice-sidecar"), filepath.Join(dir, ServingBinary)
	if out, err := buildPair(dir, newBuildID(), ""); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// The pair of one build hands off: what differs below is the ID alone.
	if exe, _, _ := serveAndLook(t, full, env); exe != serving {
		t.Fatalf("sluice-sidecar beside the serving binary of its build runs %s, want %s", exe, serving)
	}
	if out, err := buildOne(serving, ServingBinary, newBuildID(), ""); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	alone := copyBinary(t, full, resolved(t, t.TempDir()), "sluice-sidecar", 0o755)
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

// TestServing_UnstampedServesInProcess: a pair built without a build ID
// (a plain go build, go install) cannot tell its own build from another,
// so sluice-sidecar hands nothing off and serves itself.
func TestServing_UnstampedServesInProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/exe")
	}
	env, _ := testEnv(t, t.TempDir())
	dir := resolved(t, t.TempDir())
	if out, err := buildPair(dir, "", ""); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	full := filepath.Join(dir, "sluice-sidecar")
	var stderr string
	if exe, _, _ := serveAndLookErr(t, full, env, &stderr); exe != full {
		t.Errorf("unstamped sluice-sidecar runs %s, want %s itself", exe, full)
	}
	if strings.Contains(stderr, "another build") {
		t.Errorf("unstamped sluice-sidecar handed off and was refused; want no hand-off:\n%s", stderr)
	}
}

// TestServing_UntrustedNotRun: the serving binary is run only when it and
// its directory are as an install leaves them; a symlink in its place, a
// file of another user, a directory others may write (a sticky shared
// one too) leave sluice-sidecar serving itself.
func TestServing_UntrustedNotRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/exe")
	}
	bin := resolved(t, sidecarBinary(t))
	serving := filepath.Join(filepath.Dir(bin), ServingBinary)
	env, _ := testEnv(t, t.TempDir())
	cases := []struct {
		name  string
		root  bool // needs root (chown)
		setup func(t *testing.T, dir string)
		runs  bool // the serving binary runs
	}{
		{"as installed", false, func(t *testing.T, dir string) {
			copyBinary(t, serving, dir, ServingBinary, 0o755)
		}, true},
		{"a symlink to a trusted file", false, func(t *testing.T, dir string) {
			target := copyBinary(t, serving, resolved(t, t.TempDir()), ServingBinary, 0o755)
			if err := os.Symlink(target, filepath.Join(dir, ServingBinary)); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"owned by another user", true, func(t *testing.T, dir string) {
			p := copyBinary(t, serving, dir, ServingBinary, 0o755)
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"in a directory others may write", false, func(t *testing.T, dir string) {
			copyBinary(t, serving, dir, ServingBinary, 0o755)
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a script", false, func(t *testing.T, dir string) {
			// A wrapper a packager might put there: run by the kernel's
			// interpreter, which would be given /proc/self/fd/N, closed
			// at the exec.
			target := copyBinary(t, serving, resolved(t, t.TempDir()), ServingBinary, 0o755)
			script := "#!/bin/sh\nexec " + target + " \"$@\"\n"
			if err := os.WriteFile(filepath.Join(dir, ServingBinary), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"in a sticky shared directory", false, func(t *testing.T, dir string) {
			copyBinary(t, serving, dir, ServingBinary, 0o755)
			if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.root && os.Geteuid() != 0 {
				t.Skip("chown to another user needs root")
			}
			dir := resolved(t, t.TempDir())
			full := copyBinary(t, bin, dir, "sluice-sidecar", 0o755)
			c.setup(t, dir)
			exe, _, _ := serveAndLook(t, full, env)
			want := full
			if c.runs {
				want = filepath.Join(dir, ServingBinary)
			}
			if exe != want {
				t.Errorf("the process runs %s, want %s", exe, want)
			}
		})
	}
}

// TestServing_CopyUnderServingName: a copy of sluice-sidecar itself under
// the serving name (a mistaken install) serves, started by sluice-sidecar
// or directly, instead of handing off to itself over and over; and it
// exits when stdin ends.
func TestServing_CopyUnderServingName(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/exe")
	}
	bin := resolved(t, sidecarBinary(t))
	env, _ := testEnv(t, t.TempDir())
	dir := resolved(t, t.TempDir())
	full := copyBinary(t, bin, dir, "sluice-sidecar", 0o755)
	copied := copyBinary(t, bin, dir, ServingBinary, 0o755)
	for _, start := range []string{full, copied} {
		exe, _, tools := serveAndLook(t, start, env)
		if exe != copied {
			t.Errorf("%s runs %s, want %s", start, exe, copied)
		}
		if !bytes.Contains(tools, []byte(`"repo_brief"`)) {
			t.Errorf("%s: tools/list holds no repo_brief:\n%s", start, tools)
		}
		// Only a backstop: the process exits at once at the end of stdin.
		cmd := exec.Command(start)
		cmd.Env = env
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s with stdin at its end: %v", start, err)
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("%s did not exit at the end of stdin", start)
		}
	}
}

// TestServing_HandoffNotInherited: each side of the hand-off removes
// SLUICE_SIDECAR_HANDOFF from its environment before it starts anything,
// so no process it starts gets it: sluice-sidecar exec'd back
// (execServing) and the serving binary that accepts (acceptHandoff).
func TestServing_HandoffNotInherited(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the hand-off is Linux's")
	}
	t.Setenv(handoffEnv, handoffRefused)
	execServing() // refused: returns at once, to serve
	if v, ok := os.LookupEnv(handoffEnv); ok {
		t.Errorf("sluice-sidecar exec'd back keeps %s=%s for what it starts", handoffEnv, v)
	}

	saved := buildID
	buildID = "test"
	t.Cleanup(func() { buildID = saved })
	// Accepting names the threads of this process after the serving
	// binary: the test process gets its own names back.
	if name, err := os.ReadFile("/proc/self/comm"); err == nil {
		t.Cleanup(func() {
			tasks, _ := os.ReadDir("/proc/self/task")
			for _, task := range tasks {
				_ = os.WriteFile("/proc/self/task/"+task.Name()+"/comm", name, 0)
			}
		})
	}
	t.Setenv(handoffEnv, buildIdentity()+":"+filepath.Join(t.TempDir(), "absent"))
	if !acceptHandoff(io.Discard) {
		t.Fatal("the serving binary refused the hand-off of its own build")
	}
	if v, ok := os.LookupEnv(handoffEnv); ok {
		t.Errorf("the serving binary keeps %s=%s for what it starts", handoffEnv, v)
	}
}

// TestServing_RejectsArguments: serving stdio takes flags only; a word
// after them, or a command the serving binary does not have, is a usage
// error (exit 2) from either binary, not a session served.
func TestServing_RejectsArguments(t *testing.T) {
	bin := sidecarBinary(t)
	serving := filepath.Join(filepath.Dir(bin), ServingBinary)
	env, _ := testEnv(t, t.TempDir())
	for _, c := range []struct {
		bin  string
		args []string
	}{
		{bin, []string{"stdio", "extra"}},
		{bin, []string{"--toolsets", "git", "extra"}},
		{serving, []string{"config"}},
		{serving, []string{"stdio", "extra"}},
		{serving, []string{"--toolsets", "git", "extra"}},
	} {
		cmd := exec.Command(c.bin, c.args...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != 2 {
			t.Errorf("%s %q: exit %d (%v), want 2\n%s", filepath.Base(c.bin), c.args, code, err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "stdio takes flags only") {
			t.Errorf("%s %q: stderr does not say why:\n%s", filepath.Base(c.bin), c.args, stderr.String())
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
