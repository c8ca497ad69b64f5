package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRoots_AddListRemove_KeepsOtherKeys(t *testing.T) {
	dir := isolate(t)
	writeConfig(t, dir, `{"pendingExpiry": "30m", "toolsets": ["git"]}`)
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	a := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	b := t.TempDir()
	canonA, _ := filepath.EvalSymlinks(a)
	canonB, _ := filepath.EvalSymlinks(b)
	if got, err := c.AddRoot(link); err != nil || !slices.Equal(got, []string{canonA}) {
		t.Fatalf("add via symlink: %v %v", got, err)
	}
	if got, err := c.AddRoot(a); err != nil || !slices.Equal(got, []string{canonA}) {
		t.Fatalf("adding the same root twice: %v %v", got, err)
	}
	if got, err := c.AddRoot(b); err != nil || !slices.Equal(got, []string{canonA, canonB}) {
		t.Fatalf("add second: %v %v", got, err)
	}
	for _, bad := range []string{"relative/dir", filepath.Join(b, "missing"), "/"} {
		if _, err := c.AddRoot(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("AddRoot(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	loaded, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(loaded.AllowedRoots, []string{canonA, canonB}) || loaded.PendingExpiry.String() != "30m0s" || !slices.Equal(loaded.Toolsets, []string{"git"}) {
		t.Fatalf("after adding: roots %v expiry %s toolsets %v", loaded.AllowedRoots, loaded.PendingExpiry, loaded.Toolsets)
	}
	if got, err := c.RemoveRoot(link); err != nil || !slices.Equal(got, []string{canonB}) {
		t.Fatalf("remove via symlink: %v %v", got, err)
	}
	if _, err := c.RemoveRoot(a); !errors.Is(err, ErrNoSuchRoot) {
		t.Errorf("removing a root that is not there: %v", err)
	}
	// A root whose directory is gone can still be removed by its name.
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	if got, err := c.RemoveRoot(canonB); err != nil || len(got) != 0 {
		t.Fatalf("remove a vanished root: %v %v", got, err)
	}
	if roots, err := c.FileRoots(); err != nil || len(roots) != 0 {
		t.Fatalf("file roots %v %v", roots, err)
	}
}

func TestRoots_MalformedFile_Untouched(t *testing.T) {
	dir := isolate(t)
	body := "{\"allowedRoots\": [\n"
	writeConfig(t, dir, body)
	c := &Config{ConfigDir: dir}
	if _, err := c.AddRoot(t.TempDir()); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "config.json") {
		t.Fatalf("add into a malformed file: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "config.json")); string(got) != body {
		t.Fatalf("a malformed config.json was changed: %q", got)
	}
}

// What the app was started with through the environment is written to
// config.json, so that a sidecar with an empty environment reads it.
func TestPersistEnvOverrides_RootsAndImage(t *testing.T) {
	dir := isolate(t)
	writeConfig(t, dir, `{"toolsets": ["git", "propose"]}`)
	root := t.TempDir()
	canon, _ := filepath.EvalSymlinks(root)
	image := "sha256:" + strings.Repeat("ab", 32)
	t.Setenv("SLUICE_ALLOWED_ROOTS", root)
	t.Setenv("SLUICE_WORKSPACE_IMAGE", image)
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	changed, err := c.PersistEnvOverrides()
	if err != nil || !slices.Equal(changed, []string{"allowedRoots", "workspaceImage"}) {
		t.Fatalf("persist: %v %v", changed, err)
	}
	if changed, err := c.PersistEnvOverrides(); err != nil || len(changed) != 0 {
		t.Fatalf("second persist changed %v (%v)", changed, err)
	}
	os.Unsetenv("SLUICE_ALLOWED_ROOTS")
	os.Unsetenv("SLUICE_WORKSPACE_IMAGE")
	got, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.AllowedRoots, []string{canon}) || got.WorkspaceImage != image || !slices.Equal(got.Toolsets, []string{"git", "propose"}) {
		t.Fatalf("without the environment: roots %v image %q toolsets %v", got.AllowedRoots, got.WorkspaceImage, got.Toolsets)
	}
}

// An empty SLUICE_ALLOWED_ROOTS does not wipe the saved roots.
func TestPersistEnvOverrides_EmptyRootsKeepsFile(t *testing.T) {
	dir := isolate(t)
	root := t.TempDir()
	writeConfig(t, dir, `{"allowedRoots": ["`+root+`"]}`)
	t.Setenv("SLUICE_ALLOWED_ROOTS", "")
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := c.PersistEnvOverrides(); err != nil || len(changed) != 0 {
		t.Fatalf("persist with an empty variable changed %v (%v)", changed, err)
	}
	if roots, _ := c.FileRoots(); !slices.Equal(roots, []string{root}) {
		t.Fatalf("saved roots now %v", roots)
	}
}
