package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/workspace/workspacetest"
)

// imageCLI runs `sluice workspace image ARGS…` as a person would, with
// env (no SLUICE_WORKSPACE_IMAGE in it), and returns its output.
func imageCLI(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir(t), "sluice-headless"), append([]string{"workspace", "image"}, args...)...)
	cmd.Env = env
	b, err := cmd.CombinedOutput()
	return string(b), err
}

func pinnedImage(t *testing.T, configDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(configDir, "sluice", "config.json"))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		WorkspaceImage string `json:"workspaceImage"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("config.json: %v: %s", err, b)
	}
	return f.WorkspaceImage
}

// imageEnv is a person's environment: their own XDG directories and
// nothing that names a workspace image.
func imageEnv(t *testing.T) (env []string, configDir string) {
	home := t.TempDir()
	configDir = filepath.Join(home, "config")
	env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + configDir, "XDG_STATE_HOME=" + filepath.Join(home, "state")}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		env = append(env, "DOCKER_HOST="+h)
	}
	return env, configDir
}

// TestWorkspace_ImageUse_ReachesTheAgentsSidecar is the README's steps:
// the person pins an image by name with `sluice workspace image use`, and
// the sidecar their agent starts (with none of Sluice's variables in its
// environment) runs workspaces on exactly that image, through the app.
func TestWorkspace_ImageUse_ReachesTheAgentsSidecar(t *testing.T) {
	_, id := needWorkspaceDocker(t)
	env, configDir := imageEnv(t)

	if out, err := imageCLI(t, env, "use", "sluice-test/no-such-image:1"); err == nil || !strings.Contains(out, "no local image") {
		t.Fatalf("use of an absent image: %v\n%s", err, out)
	}
	if out, err := imageCLI(t, env, "use"); err == nil {
		t.Fatalf("use without a name succeeded:\n%s", out)
	}
	if got := pinnedImage(t, configDir); got != "" {
		t.Fatalf("a refused choice pinned %q", got)
	}
	out, err := imageCLI(t, env, "list")
	if err != nil || !strings.Contains(out, id) || !strings.Contains(out, "no workspace image is pinned") {
		t.Fatalf("list before pinning: %v\n%s", err, out)
	}

	out, err = imageCLI(t, env, "use", workspacetest.ImageRef)
	if err != nil || !strings.Contains(out, id) {
		t.Fatalf("use %s: %v\n%s", workspacetest.ImageRef, err, out)
	}
	if got := pinnedImage(t, configDir); got != id {
		t.Fatalf("pinned %q, want %s", got, id)
	}
	out, err = imageCLI(t, env, "list")
	if err != nil {
		t.Fatal(err)
	}
	inUse := false
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "*") && strings.Contains(line, id) && strings.Contains(line, workspacetest.ImageRef) {
			inUse = true
		}
	}
	if !inUse {
		t.Fatalf("list does not mark %s in use:\n%s", id, out)
	}

	// The app, which runs the workspaces' containers for every sidecar,
	// started by the person in the same environment.
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	a, err := Start(cfg, newLogger(&bytes.Buffer{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })

	// The agent's sidecar: started by the agent with its own environment.
	cs := agentSession(t, env, "claude-code")
	res, isErr := callTool(t, cs, "workspace_create", map[string]any{"kind": "fresh"})
	if isErr {
		t.Fatalf("workspace_create: %v", res)
	}
	ws := res["workspaceId"].(string)
	t.Cleanup(func() { callTool(t, cs, "workspace_destroy", map[string]any{"workspaceId": ws}) })
	run, isErr := callTool(t, cs, "workspace_run", map[string]any{"workspaceId": ws, "argv": []string{"echo", "on the pinned image"}})
	if isErr || run["imageId"] != id || !strings.Contains(toString(run["stdout"]), "on the pinned image") {
		t.Fatalf("workspace_run: %v", run)
	}
}

// TestWorkspace_ImagePull_ByDigestFromARealRegistry pushes a locally built
// image to Debian's docker-registry on 127.0.0.1 and pulls it back with
// `sluice workspace image pull`: a tag and a wrong digest are refused and
// pin nothing; the right digest pins the image's ID.
func TestWorkspace_ImagePull_ByDigestFromARealRegistry(t *testing.T) {
	d, _ := needWorkspaceDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg, err := workspacetest.StartRegistry(ctx, t.TempDir())
	if errors.Is(err, workspacetest.ErrNoRegistryBinary) {
		needOrSkip(t, false, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	id, digest, err := reg.PushImage(ctx, d.Client(), "sluice-test/cli-pull:1", true)
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	t.Cleanup(func() {
		d.Client().ImageRemove(context.Background(), id, image.RemoveOptions{Force: true, PruneChildren: true})
	})
	repo := reg.Addr + "/sluice-test/cli-pull"
	env, configDir := imageEnv(t)

	if out, err := imageCLI(t, env, "pull", repo+":1"); err == nil || !strings.Contains(out, "by digest only") {
		t.Fatalf("pull by tag: %v\n%s", err, out)
	}
	wrong := "sha256:" + strings.Repeat("cd", 32)
	if out, err := imageCLI(t, env, "pull", repo+"@"+wrong); err == nil || !strings.Contains(out, "registry has no image") {
		t.Fatalf("pull by a wrong digest: %v\n%s", err, out)
	} else {
		t.Logf("a wrong digest: %s", strings.TrimSpace(out))
	}
	if got := pinnedImage(t, configDir); got != "" {
		t.Fatalf("a refused pull pinned %q", got)
	}

	out, err := imageCLI(t, env, "pull", repo+"@"+digest)
	if err != nil || !strings.Contains(out, id) {
		t.Fatalf("pull by digest: %v\n%s", err, out)
	}
	if got := pinnedImage(t, configDir); got != id {
		t.Fatalf("pinned %q, want %s", got, id)
	}
	t.Logf("pulled %s@%s and pinned %s", repo, digest, id)
}

// TestAPI_WorkspaceImages_SettingsChoice is the settings screen's side:
// the list marks nothing, then the chosen image; a bad choice changes
// nothing; the choice is in the ledger, and the running app uses it at
// once (no restart).
func TestAPI_WorkspaceImages_SettingsChoice(t *testing.T) {
	_, id := needWorkspaceDocker(t)
	t.Setenv("SLUICE_WORKSPACE_IMAGE", "")
	os.Unsetenv("SLUICE_WORKSPACE_IMAGE")
	a := startApp(t)
	api := &API{app: a, kind: "web"}
	v, err := api.WorkspaceImages()
	if err != nil || v.Pinned != "" || v.RestartRequired || v.OverriddenByEnv {
		t.Fatalf("WorkspaceImages before a choice: %+v %v", v, err)
	}
	if _, err := api.UseWorkspaceImage("sluice-test/no-such-image:1"); err == nil {
		t.Fatal("an absent image was accepted")
	}
	if got := pinnedImage(t, filepath.Dir(a.cfg.ConfigDir)); got != "" {
		t.Fatalf("a refused choice pinned %q", got)
	}
	v, err = api.UseWorkspaceImage(workspacetest.ImageRef)
	if err != nil || v.Pinned != id || v.Running != id || v.RestartRequired {
		t.Fatalf("UseWorkspaceImage: %+v %v", v, err)
	}
	marked := 0
	for _, im := range v.Images {
		if im.InUse {
			marked++
			if im.ID != id {
				t.Errorf("marked in use: %+v", im)
			}
		}
	}
	if marked != 1 {
		t.Fatalf("%d images marked in use: %+v", marked, v.Images)
	}
	entries, err := api.Audit()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries.Entries {
		if e["event_type"] == "workspace_image_pinned" && e["approval"] == "owner:web" {
			found = true
		}
	}
	if !found {
		t.Fatalf("the choice is not in the ledger: %v", entries.Entries)
	}
}
