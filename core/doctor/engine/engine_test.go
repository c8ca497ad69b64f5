package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/doctor"
	"github.com/sluicehq/sluice/core/workspace/dockerrt"
	"github.com/sluicehq/sluice/core/workspace/workspacetest"
)

func testConfig(t *testing.T) *config.Config {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("SLUICE_ALLOWED_ROOTS", "")
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func byName(rs []doctor.Result) map[string]doctor.Result {
	m := map[string]doctor.Result{}
	for _, r := range rs {
		m[r.Name] = r
	}
	return m
}

// TestRun_WorkspaceImageAndRuntime pins the test image, then one that is
// not present, then a runtime the Engine lacks, on a real Engine.
func TestRun_WorkspaceImageAndRuntime(t *testing.T) {
	ctx := context.Background()
	d, err := dockerrt.New(ctx)
	if err != nil {
		if os.Getenv("SLUICE_REQUIRE_E2E") == "1" {
			t.Fatalf("Docker Engine required: %v", err)
		}
		t.Skip(err)
	}
	defer d.Close()
	id, err := workspacetest.EnsureImage(ctx, d.Client())
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	if r := byName(doctor.Run(ctx, cfg, doctor.Options{Engine: Checks}))["workspace image"]; r.Status != doctor.Warn {
		t.Errorf("no image pinned: %+v", r)
	}
	cfg.WorkspaceImage = id
	m := byName(doctor.Run(ctx, cfg, doctor.Options{Engine: Checks}))
	if r := m["workspace image"]; r.Status != doctor.OK || !strings.Contains(r.Detail, workspacetest.ImageRef) {
		t.Errorf("the test image pinned: %+v", r)
	}
	if r := m["workspace runtime"]; r.Status != doctor.OK {
		t.Errorf("the default runtime: %+v", r)
	}
	cfg.WorkspaceImage = "sha256:" + strings.Repeat("0", 64)
	cfg.WorkspaceRuntime = "sluice-no-such-runtime"
	m = byName(doctor.Run(ctx, cfg, doctor.Options{Engine: Checks}))
	if r := m["workspace image"]; r.Status != doctor.Fail {
		t.Errorf("an absent image pinned: %+v", r)
	}
	if r := m["workspace runtime"]; r.Status != doctor.Fail || !strings.Contains(r.Detail, "sluice-no-such-runtime") {
		t.Errorf("a runtime the Engine lacks: %+v", r)
	}
	var out bytes.Buffer
	if !doctor.Print(&out, doctor.Run(ctx, cfg, doctor.Options{Engine: Checks})) {
		t.Errorf("doctor passed with an absent image:\n%s", out.String())
	}
}
