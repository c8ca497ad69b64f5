package app

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/audit"
)

func TestStart_AuditLedger_SignedAndVerifies(t *testing.T) {
	a := startApp(t)
	cfg := a.cfg
	st, err := os.Stat(cfg.AuditKeyFile)
	if err != nil {
		t.Fatalf("the app did not create its signing key: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key mode %04o, want 0600", st.Mode().Perm())
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := audit.VerifyCommand([]string{cfg.AuditLog(), "--pubkey", cfg.AuditPublicKeyFile(), "--require-signed"}, &out, &errb)
	if code != 0 {
		t.Fatalf("verify-audit exit %d: %s %s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "entries: 2") || !strings.Contains(out.String(), "signed: 2") {
		t.Fatalf("want app_started and app_stopped, signed:\n%s", out.String())
	}
	entries, err := audit.Tail(cfg.AuditLog(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if entries[0]["event_type"] != "app_started" || entries[1]["event_type"] != "app_stopped" {
		t.Fatalf("entries: %v", entries)
	}
}

// A key the person configured is never replaced and never skipped: each
// problem with it stops the app before anything is served.
func TestStart_BadConfiguredKey_Refused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{"missing", func(t *testing.T, path string) {}},
		{"empty", func(t *testing.T, path string) { os.WriteFile(path, nil, 0o600) }},
		{"too large", func(t *testing.T, path string) { os.WriteFile(path, make([]byte, 65<<10), 0o600) }},
		{"readable by others", func(t *testing.T, path string) {
			if err := audit.GenerateKey(path, path+".pub"); err != nil {
				t.Fatal(err)
			}
			os.Chmod(path, 0o644)
		}},
		{"symlink", func(t *testing.T, path string) {
			real := path + ".real"
			if err := audit.GenerateKey(real, real+".pub"); err != nil {
				t.Fatal(err)
			}
			os.Symlink(real, path)
		}},
		{"not a key", func(t *testing.T, path string) { os.WriteFile(path, []byte("-----BEGIN NONSENSE-----\n"), 0o600) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := filepath.Join(t.TempDir(), "key.pem")
			tc.setup(t, key)
			t.Setenv("SLUICE_AUDIT_KEY", key)
			cfg := isolate(t)
			a, err := Start(cfg, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
			if err == nil {
				a.Close()
				t.Fatal("Start succeeded with a bad configured key")
			}
			if !strings.Contains(err.Error(), "audit signing key") {
				t.Errorf("error %q does not say what is wrong", err)
			}
			if _, err := os.Stat(cfg.GatewayFile()); !os.IsNotExist(err) {
				t.Errorf("gateway.json published although start-up failed")
			}
		})
	}
}
