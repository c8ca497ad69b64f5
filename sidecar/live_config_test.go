package sidecar

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
)

// liveEnv isolates the XDG paths like testEnv but leaves the allowed roots
// to config.json alone: SLUICE_ALLOWED_ROOTS, even empty, would override
// the file for the sidecar's whole life.
func liveEnv(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	env := map[string]string{
		"HOME":            dir,
		"PATH":            os.Getenv("PATH"),
		"XDG_CONFIG_HOME": filepath.Join(dir, "config"),
		"XDG_STATE_HOME":  filepath.Join(dir, "state"),
	}
	var list []string
	for k, v := range env {
		t.Setenv(k, v)
		list = append(list, k+"="+v)
	}
	for _, k := range []string{"SLUICE_ALLOWED_ROOTS", "SLUICE_WORKSPACE_IMAGE", "SLUICE_WORKSPACE_RUNTIME", "SLUICE_PENDING_EXPIRY"} {
		if v, ok := os.LookupEnv(k); ok {
			t.Setenv(k, v) // restored when the test ends
			os.Unsetenv(k)
		}
	}
	return list
}

func capabilities(t *testing.T, cs *mcp.ClientSession) CapabilitiesOut {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sluice_capabilities"})
	if err != nil || res.IsError {
		t.Fatalf("sluice_capabilities: %v %+v", err, res)
	}
	return decode[CapabilitiesOut](t, res)
}

// A person adds a root (`sluice roots add`, which writes config.json)
// while their agent's MCP server runs: the next call of that same session
// may read the repository, and is never told to ask for the folder again.
// The workspace image, the runtime and the expiry follow the file the
// same way, and a root taken away is refused on the next call.
func TestStdio_RootAddedWhileRunning_UsableOnNextCall(t *testing.T) {
	env := liveEnv(t)
	repos := t.TempDir()
	repo := filepath.Join(repos, "app")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gitRepo(t, repo)
	canonRepos, _ := filepath.EvalSymlinks(repos)

	cmd := exec.Command(sidecarBinary(t))
	cmd.Env = env
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "live-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()

	e := gitCallErr(t, cs, "repo_brief", map[string]any{"repoPath": repo})
	if e.Code != errcode.PathOutsideRoots || !strings.Contains(e.Message, "no allowed roots are configured") {
		t.Fatalf("before the root was added: %+v", e)
	}
	caps := capabilities(t, cs)
	if len(caps.AllowedRoots) != 0 || caps.Features["workspaces"] {
		t.Fatalf("before: roots %v workspaces %v", caps.AllowedRoots, caps.Features["workspaces"])
	}

	// `sluice roots add REPOS`, as the CLI and the app's API do it.
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.AddRoot(repos); err != nil {
		t.Fatal(err)
	}
	if res := gitCall(t, cs, "repo_brief", map[string]any{"repoPath": repo}); res.IsError {
		t.Fatalf("repo_brief in the root added while the sidecar ran: %s", gitResultText(res))
	}
	caps = capabilities(t, cs)
	if !slices.Equal(caps.AllowedRoots, []string{canonRepos}) {
		t.Fatalf("allowed roots after adding: %v", caps.AllowedRoots)
	}

	// An image pinned and a longer expiry saved in Settings: the same
	// session sees both.
	if err := cfg.SaveWorkspaceImage("sha256:" + strings.Repeat("0f", 32)); err != nil {
		t.Fatal(err)
	}
	s := cfg.Settings()
	s.AllowedRoots = []string{canonRepos}
	s.PendingExpiry = "72h"
	if err := cfg.SaveSettings(s); err != nil {
		t.Fatal(err)
	}
	caps = capabilities(t, cs)
	if !caps.Features["workspaces"] || caps.Limits.PendingExpirySeconds != 72*3600 {
		t.Fatalf("after pinning an image and a 72h expiry: workspaces %v, expiry %ds", caps.Features["workspaces"], caps.Limits.PendingExpirySeconds)
	}

	// Taken away again: refused on the next call.
	if _, err := cfg.RemoveRoot(repos); err != nil {
		t.Fatal(err)
	}
	if e := gitCallErr(t, cs, "repo_brief", map[string]any{"repoPath": repo}); e.Code != errcode.PathOutsideRoots {
		t.Fatalf("after the root was removed: %+v", e)
	}
}
