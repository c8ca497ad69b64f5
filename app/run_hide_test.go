package app

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/core/config"
)

// The kubeconfig that workspaces run on is hidden from a confined session
// like Sluice's keys: with it an agent could start pods Sluice never saw.
func TestSluiceDirs_HideTheClusterCredentials(t *testing.T) {
	dir := t.TempDir()
	cfg := &config.Config{ConfigDir: filepath.Join(dir, "c"), StateDir: filepath.Join(dir, "s"), WorkspaceRuntime: config.RuntimeKubernetes}
	cfg.Kubernetes.Kubeconfig = filepath.Join(dir, "ops", "kubeconfig")
	if got := sluiceDirs(cfg); !slices.Contains(got, cfg.Kubernetes.Kubeconfig) {
		t.Fatalf("the configured kubeconfig is not hidden: %v", got)
	}
	cfg.Kubernetes.Kubeconfig = ""
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	t.Setenv("KUBECONFIG", a+string(filepath.ListSeparator)+b)
	if got := sluiceDirs(cfg); !slices.Contains(got, a) || !slices.Contains(got, b) {
		t.Fatalf("the KUBECONFIG files are not hidden: %v", got)
	}
	cfg.WorkspaceRuntime = "runsc"
	if got := sluiceDirs(cfg); slices.Contains(got, a) {
		t.Fatalf("a kubeconfig Sluice does not use is listed as its own: %v", got)
	}
}
