//go:build unix

package workspace

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace/workspacetest"
)

// TestEngine is the Docker runtime as this package's tests use it: the
// Runtime, its Engine client and the Engine configuration a spec becomes.
// It lives in dockerrt, which imports this package, so an internal test
// cannot import it; engine_test.go (package workspace_test) sets
// NewTestEngine and TestEngineWithClient from dockerrt, and the test
// binary links both.
type TestEngine interface {
	Runtime
	Client() *client.Client
	ContainerConfig(ContainerSpec) (*container.Config, *container.HostConfig, *network.NetworkingConfig)
}

var (
	// NewTestEngine connects to the Engine (dockerrt.New).
	NewTestEngine func(context.Context) (TestEngine, error)
	// TestEngineWithClient is the runtime over a client the test made
	// (dockerrt.NewWithClient).
	TestEngineWithClient func(*client.Client) TestEngine
)

var (
	dockerOnce sync.Once
	dockerRT   TestEngine
	dockerErr  error
	imageOnce  sync.Once
	imageID    string
	imageErr   error
)

// needDocker returns the shared Docker runtime, skipping the test when the
// Engine is unreachable unless SLUICE_REQUIRE_E2E=1 demands it.
func needDocker(t testing.TB) TestEngine {
	t.Helper()
	dockerOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		dockerRT, dockerErr = NewTestEngine(ctx)
	})
	if dockerErr != nil {
		if os.Getenv("SLUICE_REQUIRE_E2E") == "1" {
			t.Fatalf("Docker Engine required (SLUICE_REQUIRE_E2E=1) but unreachable: %v (%v)", dockerErr, dockerErr.(*errcode.Error).Err)
		}
		t.Skipf("Docker Engine unreachable: %v", dockerErr)
	}
	return dockerRT
}

// needImage imports the test image once (if it is not present yet) and
// returns its ID.
func needImage(t testing.TB, d TestEngine) string {
	t.Helper()
	imageOnce.Do(func() { imageID, imageErr = workspacetest.EnsureImage(context.Background(), d.Client()) })
	if imageErr != nil {
		t.Fatalf("test image: %v", imageErr)
	}
	return imageID
}

// testRuntime is the OCI runtime the suite's Docker tests run under: the
// Engine's default unless SLUICE_TEST_WORKSPACE_RUNTIME names another.
// TestSuite_UnderGVisor re-runs this package's tests with it set to runsc.
var testRuntime = os.Getenv("SLUICE_TEST_WORKSPACE_RUNTIME")

type managerOption func(*Options)

// newManager opens a Manager on fresh directories. With Docker, it runs
// the test image; every workspace left at the end is destroyed, which also
// proves no container outlives its test.
func newManager(t testing.TB, withDocker bool, opts ...managerOption) *Manager {
	t.Helper()
	base := t.TempDir()
	o := Options{
		StateDir:  filepath.Join(base, "state"),
		ConfigDir: filepath.Join(base, "config"),
		Limits:    Limits{Timeout: time.Minute, MemoryBytes: 256 << 20, OutputBytes: 1 << 20, CPUs: 1, PIDs: 128, TmpfsBytes: 64 << 20},
	}
	if withDocker {
		d := needDocker(t)
		o.Runtime = d
		o.Image = needImage(t, d)
		o.RuntimeName = testRuntime
	}
	for _, f := range opts {
		f(&o)
	}
	m, err := Open(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		list, _ := m.List()
		for _, w := range list {
			if _, err := m.Destroy(ctx, w.ID); err != nil {
				t.Errorf("cleanup: destroy %s: %v", w.ID, err)
			}
		}
		if o.Runtime != nil {
			left, err := o.Runtime.Containers(ctx, m.StoreKey())
			if err != nil || len(left) != 0 {
				t.Errorf("cleanup: containers left behind: %v %v", left, err)
			}
		}
		m.Close()
	})
	return m
}

// gitEnv is a scrubbed environment for the test's own git commands.
func gitEnv(home string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Person", "GIT_AUTHOR_EMAIL=person@example.invalid",
		"GIT_COMMITTER_NAME=Person", "GIT_COMMITTER_EMAIL=person@example.invalid",
	}
}

// git runs git in dir for a test and returns trimmed stdout.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main", "-c", "core.hooksPath=/dev/null"}, args...)...)
	cmd.Dir = dir
	cmd.Env = gitEnv(filepath.Dir(dir))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// hookMark is the file the post-checkout hook of makeRepo's repository
// at dir creates if it ever runs: beside the repository, in the test's own
// temporary directory.
func hookMark(dir string) string { return filepath.Join(filepath.Dir(dir), "hook-ran") }

// makeRepo creates a person's repository with a few files and two
// commits; it returns its path and the head commit.
func makeRepo(t testing.TB) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "-q")
	writeFile(t, filepath.Join(dir, "README.md"), "hello\n")
	writeFile(t, filepath.Join(dir, "src", "main.go"), "package main\n\nfunc main() {}\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "first")
	writeFile(t, filepath.Join(dir, "src", "util.go"), "package main\n\nfunc util() int { return 1 }\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "second")
	// A remote, a hook and a credential helper that must not follow the
	// clone into a workspace.
	git(t, dir, "remote", "add", "origin", "https://token-in-url@example.invalid/repo.git")
	git(t, dir, "config", "credential.helper", "store --file=/nonexistent")
	writeFile(t, filepath.Join(dir, ".git", "hooks", "post-checkout"), "#!/bin/sh\ntouch '"+hookMark(dir)+"'\n")
	os.Chmod(filepath.Join(dir, ".git", "hooks", "post-checkout"), 0o755)
	return dir, git(t, dir, "rev-parse", "HEAD")
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func createRepoWS(t testing.TB, m *Manager) (*Workspace, string) {
	t.Helper()
	repo, _ := makeRepo(t)
	w, err := m.Create(context.Background(), CreateRequest{Source: Source{Kind: SourceRepo, Path: repo}})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return w, repo
}

func mustRun(t testing.TB, m *Manager, id string, req RunRequest) *RunResult {
	t.Helper()
	res, err := m.Run(context.Background(), id, req)
	if err != nil {
		t.Fatalf("Run %q: %v", req.Argv, err)
	}
	return res
}

// runResult is how a run started by runInBackground ended.
type runResult struct {
	res *RunResult
	err error
}

// runInBackground starts a run of req in workspace id and returns where
// its end arrives.
func runInBackground(m *Manager, id string, req RunRequest) <-chan runResult {
	done := make(chan runResult, 1)
	go func() {
		res, err := m.Run(context.Background(), id, req)
		done <- runResult{res, err}
	}()
	return done
}

// goOnAfter waits until reached is closed (the run got to the point where
// it waits for a file named name in the workspace's tree), writes that
// file and returns how the run ended. A run that ends first fails the
// test: it did not wait for what.
func goOnAfter(t *testing.T, m *Manager, id string, reached <-chan struct{}, done <-chan runResult, name, what string) runResult {
	t.Helper()
	select {
	case <-reached:
	case r := <-done:
		t.Fatalf("the run ended before %s: %+v %v", what, r.res, r.err)
	}
	writeFile(t, filepath.Join(m.treeDir(id), name), "")
	return <-done
}
