package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func isolate(t *testing.T) (cfgDir string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	for _, k := range []string{"SLUICE_ALLOWED_ROOTS", "SLUICE_PENDING_EXPIRY", "SLUICE_POLICY_FILE", "SLUICE_TOOLSETS", "SLUICE_NOTIFICATIONS", "SLUICE_AUDIT_KEY", "SLUICE_AUDIT_SIGNING", "SLUICE_WORKSPACE_IMAGE"} {
		os.Unsetenv(k)
	}
	return filepath.Join(dir, "config", "sluice")
}

func writeConfig(t *testing.T, dir, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLoad_Defaults(t *testing.T) {
	isolate(t)
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.PendingExpiry != 24*time.Hour || !c.AuditSigning || !c.Notifications || len(c.AllowedRoots) != 0 {
		t.Fatalf("defaults: %+v", c)
	}
	if !strings.HasSuffix(c.ConfigDir, "config/sluice") || !strings.HasSuffix(c.StateDir, "state/sluice") {
		t.Fatalf("paths: %s %s", c.ConfigDir, c.StateDir)
	}
	if c.AuditKeyFile != filepath.Join(c.ConfigDir, "audit-key.pem") {
		t.Errorf("audit key path %s", c.AuditKeyFile)
	}
	if _, err := os.Stat(c.ConfigDir); !os.IsNotExist(err) {
		t.Errorf("Load created %s; it must not touch the file system", c.ConfigDir)
	}
}

func TestLoad_EnvOverridesFile(t *testing.T) {
	dir := isolate(t)
	rootA, rootB := t.TempDir(), t.TempDir()
	writeConfig(t, dir, `{"allowedRoots":["`+rootA+`"],"pendingExpiry":"30m","toolsets":["git"]}`)
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.AllowedRoots) != 1 || c.AllowedRoots[0] != rootA || c.PendingExpiry != 30*time.Minute || len(c.Toolsets) != 1 {
		t.Fatalf("from file: %+v", c)
	}
	t.Setenv("SLUICE_ALLOWED_ROOTS", rootB)
	t.Setenv("SLUICE_PENDING_EXPIRY", "5m")
	c, err = Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.AllowedRoots[0] != rootB || c.PendingExpiry != 5*time.Minute {
		t.Fatalf("env over file: %+v", c)
	}
}

func TestLoad_Invalid_NamesKey(t *testing.T) {
	for _, tc := range []struct{ file, env, wantKey string }{
		{`{"allowedRoots":["relative/dir"]}`, "", "allowedRoots"},
		{`{"allowedRoots":["/no/such/dir/anywhere"]}`, "", "allowedRoots"},
		{`{"allowedRoots":["/"]}`, "", "allowedRoots"},
		{`{"pendingExpiry":"soon"}`, "", "pendingExpiry"},
		{`{"pendingExpiry":"1s"}`, "", "pendingExpiry"},
		{`{"toolsets":["shell"]}`, "", "toolsets"},
		{`{"restorePointRetention":"a month"}`, "", "restorePointRetention"},
		{`{"restorePointRetention":"30m"}`, "", "restorePointRetention"},
		{`{"colour":"blue"}`, "", "colour"},
		{`{"allowedRoots":[]} {}`, "", "trailing"},
		{`{}`, "SLUICE_PENDING_EXPIRY=forever", "SLUICE_PENDING_EXPIRY"},
		{`{}`, "SLUICE_NOTIFICATIONS=maybe", "SLUICE_NOTIFICATIONS"},
	} {
		t.Run(tc.wantKey, func(t *testing.T) {
			dir := isolate(t)
			writeConfig(t, dir, tc.file)
			if tc.env != "" {
				k, v, _ := strings.Cut(tc.env, "=")
				t.Setenv(k, v)
			}
			_, err := Load()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.wantKey) {
				t.Fatalf("Load() error = %v; want ErrInvalid naming %q", err, tc.wantKey)
			}
		})
	}
}

func TestLoad_RootsCanonical(t *testing.T) {
	isolate(t)
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_ALLOWED_ROOTS", link)
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.AllowedRoots[0] != real {
		t.Fatalf("root %s, want the canonical %s", c.AllowedRoots[0], real)
	}
}

func TestEnsurePrivateDir_Table(t *testing.T) {
	base := t.TempDir()
	fresh := filepath.Join(base, "a", "b")
	if err := EnsurePrivateDir(fresh); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(fresh); st.Mode().Perm() != 0o700 {
		t.Errorf("created with %04o", st.Mode().Perm())
	}
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o755)
	if err := EnsurePrivateDir(open); !errors.Is(err, ErrUnsafeDir) {
		t.Errorf("0755 dir: got %v, want ErrUnsafeDir", err)
	}
	link := filepath.Join(base, "link")
	os.Symlink(fresh, link)
	if err := EnsurePrivateDir(link); !errors.Is(err, ErrUnsafeDir) {
		t.Errorf("symlinked dir: got %v, want ErrUnsafeDir", err)
	}
}

func TestWriteFileAtomic_ReplacesWholeFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f.json")
	if err := WriteFileAtomic(p, []byte("first version, longer"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(p, []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "second" || st.Mode().Perm() != 0o600 {
		t.Fatalf("content %q mode %04o", b, st.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestLoad_WorkspaceImage(t *testing.T) {
	good := "sha256:" + strings.Repeat("ab", 32)
	other := "sha256:" + strings.Repeat("cd", 32)
	cases := []struct {
		name, file, env string
		want            string
		wantErr         bool
	}{
		{name: "unset", want: ""},
		{name: "file", file: `{"workspaceImage":"` + good + `"}`, want: good},
		{name: "env overrides file", file: `{"workspaceImage":"` + good + `"}`, env: other, want: other},
		{name: "tag refused", file: `{"workspaceImage":"busybox:latest"}`, wantErr: true},
		{name: "short id refused", env: "sha256:abcd", wantErr: true},
		{name: "upper-case hex refused", env: "sha256:" + strings.Repeat("AB", 32), wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := isolate(t)
			if tc.file != "" {
				writeConfig(t, dir, tc.file)
			}
			if tc.env != "" {
				t.Setenv("SLUICE_WORKSPACE_IMAGE", tc.env)
			}
			c, err := Load()
			if tc.wantErr {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "workspaceImage") {
					t.Fatalf("want an invalid workspaceImage error, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.WorkspaceImage != tc.want {
				t.Errorf("WorkspaceImage = %q, want %q", c.WorkspaceImage, tc.want)
			}
			if c.WorkspaceDir() != filepath.Join(c.StateDir, "workspaces") {
				t.Errorf("WorkspaceDir = %s", c.WorkspaceDir())
			}
		})
	}
}

func TestLoad_WorkspaceRuntime(t *testing.T) {
	for _, tc := range []struct {
		value string
		ok    bool
	}{{"", true}, {"runsc", true}, {"runc", true}, {"RUNSC", false}, {"runsc --network=host", false}, {"../x", false}} {
		isolate(t)
		t.Setenv("SLUICE_WORKSPACE_RUNTIME", tc.value)
		c, err := Load()
		if tc.ok && (err != nil || c.WorkspaceRuntime != tc.value) {
			t.Errorf("%q: %v %+v", tc.value, err, c)
		}
		if !tc.ok && !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: got %v, want ErrInvalid", tc.value, err)
		}
	}
}

func TestLoad_WebAddr(t *testing.T) {
	dir := isolate(t)
	t.Setenv("SLUICE_WEB_ADDR", "")
	os.Unsetenv("SLUICE_WEB_ADDR")
	c, err := Load()
	if err != nil || c.WebAddr != DefaultWebAddr || c.WebAddrConfigured {
		t.Fatalf("default: %q configured=%v %v", c.WebAddr, c.WebAddrConfigured, err)
	}
	writeConfig(t, dir, `{"webAddr": "127.0.0.1:9100"}`)
	if c, err = Load(); err != nil || c.WebAddr != "127.0.0.1:9100" || !c.WebAddrConfigured {
		t.Fatalf("from the file: %+v %v", c, err)
	}
	t.Setenv("SLUICE_WEB_ADDR", "[::1]:9200")
	if c, err = Load(); err != nil || c.WebAddr != "[::1]:9200" {
		t.Fatalf("env over file: %q %v", c.WebAddr, err)
	}
	for _, bad := range []string{"0.0.0.0:9100", "localhost:9100", "127.0.0.1", "127.0.0.1:99999", "10.0.0.1:80"} {
		t.Setenv("SLUICE_WEB_ADDR", bad)
		if _, err := Load(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "webAddr") {
			t.Errorf("%q: %v, want ErrInvalid naming webAddr", bad, err)
		}
	}
}

// TestLoad_RestorePointRetention: a month unless config.json says
// otherwise.
func TestLoad_RestorePointRetention(t *testing.T) {
	dir := isolate(t)
	c, err := Load()
	if err != nil || c.RestorePointRetention != 30*24*time.Hour {
		t.Fatalf("default: %v, %v", c, err)
	}
	writeConfig(t, dir, `{"restorePointRetention":"2160h"}`)
	if c, err = Load(); err != nil || c.RestorePointRetention != 90*24*time.Hour {
		t.Fatalf("from file: %v, %v", c, err)
	}
}
