package doctor

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/gateway"
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

func byName(results []Result) map[string]Result {
	m := map[string]Result{}
	for _, r := range results {
		m[r.Name] = r
	}
	return m
}

func TestRun_FreshInstall_WarnsButPasses(t *testing.T) {
	cfg := testConfig(t)
	res := Run(context.Background(), cfg, Options{})
	m := byName(res)
	if m["git"].Status != OK {
		t.Errorf("git: %+v", m["git"])
	}
	for _, name := range []string{"config directory", "state directory", "gateway", "audit key"} {
		if m[name].Status != Warn {
			t.Errorf("%s on a fresh install: %+v, want warn", name, m[name])
		}
	}
	var out bytes.Buffer
	if Print(&out, res) {
		t.Fatalf("a fresh install must not fail the app's doctor:\n%s", out.String())
	}
	if lines := strings.Count(out.String(), "\n"); lines != len(res) {
		t.Errorf("want one line per check, got %d lines for %d checks", lines, len(res))
	}
}

func TestRun_Problems_Fail(t *testing.T) {
	cfg := testConfig(t)
	if err := cfg.EnsureDirs(); err != nil {
		t.Fatal(err)
	}
	os.Chmod(cfg.StateDir, 0o755)
	if err := os.WriteFile(cfg.AuditKeyFile, []byte("key"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := Run(context.Background(), cfg, Options{
		GatewayRequired: true,
		KeyCheck:        func(string) error { return errors.New("key is readable by others") },
	})
	m := byName(res)
	if m["config directory"].Status != OK {
		t.Errorf("config dir: %+v", m["config directory"])
	}
	for _, name := range []string{"state directory", "gateway", "audit key"} {
		if m[name].Status != Fail || m[name].Hint == "" {
			t.Errorf("%s: %+v, want fail with a hint", name, m[name])
		}
	}
	var out bytes.Buffer
	if !Print(&out, res) {
		t.Fatal("Print must report failure")
	}
	if !strings.Contains(out.String(), "fail  state directory") || !strings.Contains(out.String(), "hint: chmod 700") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestRun_GatewayRunning_OK(t *testing.T) {
	cfg := testConfig(t)
	tok, _ := gateway.NewToken()
	s, err := gateway.Listen(gateway.Options{Token: tok, AppVersion: "9.9"})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	defer s.Shutdown(context.Background())
	if err := gateway.WriteEndpoint(cfg.GatewayFile(), gateway.Endpoint{Addr: s.Addr(), Token: tok, PID: 1, AppVersion: "9.9"}); err != nil {
		t.Fatal(err)
	}
	r := byName(Run(context.Background(), cfg, Options{GatewayRequired: true}))["gateway"]
	if r.Status != OK || !strings.Contains(r.Detail, "9.9") {
		t.Fatalf("gateway: %+v", r)
	}
}

// TestCommand_ExitCodes pins what both binaries' doctor commands return:
// 0 on a fresh install for the app, 1 for the sidecar (no gateway to
// forward to), 1 with a config line for a broken configuration, 2 for a
// flag it does not know.
func TestCommand_ExitCodes(t *testing.T) {
	cfg := testConfig(t)
	var out, errs bytes.Buffer
	if code := Command(nil, &out, &errs, Options{}); code != 0 {
		t.Errorf("app on a fresh install: exit %d\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "warn  gateway") {
		t.Errorf("app on a fresh install:\n%s", out.String())
	}
	out.Reset()
	if code := Command(nil, &out, &errs, Options{GatewayRequired: true}); code != 1 {
		t.Errorf("sidecar on a fresh install: exit %d\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "fail  gateway") {
		t.Errorf("sidecar on a fresh install:\n%s", out.String())
	}
	if code := Command([]string{"--no-such-flag"}, &out, &errs, Options{}); code != 2 {
		t.Errorf("unknown flag: exit %d", code)
	}
	if err := cfg.EnsureDirs(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.ConfigDir, "config.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := Command(nil, &out, &errs, Options{}); code != 1 {
		t.Errorf("broken config.json: exit %d", code)
	}
	if !strings.HasPrefix(out.String(), "fail  config            ") || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("broken config.json:\n%s", out.String())
	}
}

// TestRun_KeyCheckDefault_LoadsTheKey checks the key as the ledger reads
// it when no KeyCheck is given.
func TestRun_KeyCheckDefault_LoadsTheKey(t *testing.T) {
	cfg := testConfig(t)
	if err := cfg.EnsureDirs(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.AuditKeyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := byName(Run(context.Background(), cfg, Options{}))["audit key"]; r.Status != Fail {
		t.Errorf("a file that is not a key: %+v", r)
	}
	os.Remove(cfg.AuditKeyFile)
	if err := audit.GenerateKey(cfg.AuditKeyFile, filepath.Join(t.TempDir(), "audit-key.pub")); err != nil {
		t.Fatal(err)
	}
	if r := byName(Run(context.Background(), cfg, Options{}))["audit key"]; r.Status != OK {
		t.Errorf("a key the app made: %+v", r)
	}
}
