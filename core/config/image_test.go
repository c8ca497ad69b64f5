package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSaveWorkspaceImage_PinsAndKeepsOtherKeys(t *testing.T) {
	dir := isolate(t)
	root := t.TempDir()
	writeConfig(t, dir, `{"allowedRoots":["`+root+`"],"toolsets":["git","workspace"],"workspaceRuntime":"runsc"}`)
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	id := "sha256:" + strings.Repeat("a1", 32)
	if err := c.SaveWorkspaceImage(id); err != nil {
		t.Fatal(err)
	}
	again, err := Load()
	if err != nil {
		t.Fatalf("Load after pinning: %v", err)
	}
	if again.WorkspaceImage != id || again.WorkspaceRuntime != "runsc" || len(again.Toolsets) != 2 || len(again.AllowedRoots) != 1 {
		t.Fatalf("after pinning: %+v", again)
	}
	if st, err := os.Stat(filepath.Join(dir, "config.json")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("config.json mode: %v %v", st, err)
	}
}

func TestSaveWorkspaceImage_BadInputChangesNothing(t *testing.T) {
	dir := isolate(t)
	body := `{"toolsets":["git"]}`
	writeConfig(t, dir, body)
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "busybox:latest", "sha256:abc", "sha256:" + strings.Repeat("A", 64)} {
		if err := c.SaveWorkspaceImage(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("SaveWorkspaceImage(%q): %v, want ErrInvalid", bad, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "config.json")); string(b) != body {
		t.Fatalf("config.json changed: %s", b)
	}
	writeConfig(t, dir, `{"toolsets":`)
	if err := c.SaveWorkspaceImage("sha256:" + strings.Repeat("0", 64)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a malformed config.json: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "config.json")); string(b) != `{"toolsets":` {
		t.Fatalf("a malformed config.json was replaced: %s", b)
	}
}

func TestSaveWorkspaceImage_NoFileYet(t *testing.T) {
	isolate(t)
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	id := "sha256:" + strings.Repeat("0f", 32)
	if err := c.SaveWorkspaceImage(id); err != nil {
		t.Fatal(err)
	}
	if again, err := Load(); err != nil || again.WorkspaceImage != id {
		t.Fatalf("Load: %+v %v", again, err)
	}
	t.Setenv("SLUICE_WORKSPACE_IMAGE", "")
	if !WorkspaceImageFromEnv() {
		t.Fatal("WorkspaceImageFromEnv with the variable set")
	}
}

func TestSaveWorkspaceRuntime_KeepsOtherKeys_RefusesBadNames(t *testing.T) {
	dir := isolate(t)
	t.Setenv("SLUICE_WORKSPACE_RUNTIME", "")
	os.Unsetenv("SLUICE_WORKSPACE_RUNTIME")
	writeConfig(t, dir, `{"toolsets": ["git"], "pendingExpiry": "20m"}`)
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	for _, bad := range []string{"Runsc", "run sc", "../runc", strings.Repeat("r", 65)} {
		if err := c.SaveWorkspaceRuntime(bad); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "workspaceRuntime") {
			t.Errorf("%q: %v, want ErrInvalid naming workspaceRuntime", bad, err)
		}
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "config.json")); string(now) != string(before) {
		t.Fatalf("a refused name changed config.json:\n%s", now)
	}
	if err := c.SaveWorkspaceRuntime("runsc"); err != nil {
		t.Fatal(err)
	}
	if c, err = Load(); err != nil || c.WorkspaceRuntime != "runsc" || c.PendingExpiry != 20*time.Minute || len(c.Toolsets) != 1 {
		t.Fatalf("after saving runsc: %+v %v", c, err)
	}
	if err := c.SaveWorkspaceRuntime(""); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	if c, err = Load(); err != nil || c.WorkspaceRuntime != "" || strings.Contains(string(b), "workspaceRuntime") {
		t.Fatalf("after going back to the default: %s %v", b, err)
	}
}
