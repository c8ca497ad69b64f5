package app

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/workspace"
)

// TestWorkspaceGrant_KubernetesUnreachable: with workspaceRuntime
// kubernetes and a cluster that cannot be reached, `sluice workspace
// grant` refuses a secret (it could not reach the cluster the runs read it
// from) and records nothing; revoking a name not granted is refused; a
// revoke of a granted secret still happens, and the person is told that the
// cluster's copy is left for Sluice to delete.
func TestWorkspaceGrant_KubernetesUnreachable(t *testing.T) {
	home := t.TempDir()
	for k, v := range map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config"),
		"XDG_STATE_HOME": filepath.Join(home, "state"), "SLUICE_ALLOWED_ROOTS": "", "KUBECONFIG": ""} {
		t.Setenv(k, v)
	}
	kubeconfig := filepath.Join(home, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	conf, err := json.Marshal(map[string]any{"workspaceRuntime": "kubernetes", "kubernetes": map[string]any{
		"kubeconfig": kubeconfig, "namespace": "sluice-workspaces",
		"image": "localhost/sluice/busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, "config", "sluice")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), conf, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	m, err := workspace.Open(workspace.Options{StateDir: cfg.StateDir, ConfigDir: cfg.ConfigDir})
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.Create(context.Background(), workspace.CreateRequest{Source: workspace.Source{Kind: workspace.SourceFresh}, Agent: "test"})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()

	var out, errOut bytes.Buffer
	code := runWorkspace([]string{"grant", "--id", w.ID, "--secret", "DEPLOY_TOKEN"}, strings.NewReader("s3cr3t-value-9d2f7c41\n"), &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "not granted") || !strings.Contains(errOut.String(), "could not be reached") || out.Len() != 0 {
		t.Fatalf("grant with the cluster unreachable: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	m, err = workspace.Open(workspace.Options{StateDir: cfg.StateDir, ConfigDir: cfg.ConfigDir})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got, err := m.Get(w.ID); err != nil || len(got.Secrets) != 0 {
		t.Fatalf("the refused grant was recorded: %+v %v", got, err)
	}

	// Revoking the name the refused grant left ungranted is not found,
	// and says so.
	out.Reset()
	errOut.Reset()
	code = runWorkspace([]string{"grant", "--id", w.ID, "--revoke-secret", "DEPLOY_TOKEN"}, strings.NewReader(""), &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "no secret of this name is granted") || out.Len() != 0 {
		t.Fatalf("revoke of a secret never granted: exit %d\n%s%s", code, out.String(), errOut.String())
	}

	// A secret granted while the store had no cluster to reach (this
	// Manager has no runtime), revoked with the cluster unreachable.
	if err := m.Grant(w.ID, "DEPLOY_TOKEN", "s3cr3t-value-9d2f7c41"); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	code = runWorkspace([]string{"grant", "--id", w.ID, "--revoke-secret", "DEPLOY_TOKEN"}, strings.NewReader(""), &out, &errOut)
	if code != 0 || out.String() != "granted\n" || !strings.Contains(errOut.String(), "is revoked") || !strings.Contains(errOut.String(), "could not be deleted yet") {
		t.Fatalf("revoke with the cluster unreachable: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}
