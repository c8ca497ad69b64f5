package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLive_RootAddedWhileRunning_SeenOnNextCall(t *testing.T) {
	dir := isolate(t)
	writeConfig(t, dir, `{"pendingExpiry": "30m"}`)
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	live := NewLive(c)
	first := live.Current()
	if first.Config != c || first.Err != nil {
		t.Fatalf("before any change: %+v", first)
	}
	if again := live.Current(); again != first {
		t.Fatal("an unchanged file must give the same snapshot (callers cache what they derive from it)")
	}

	// Another process (`sluice roots add`) saves a root and pins an image.
	root := t.TempDir()
	canon, _ := filepath.EvalSymlinks(root)
	other, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.AddRoot(root); err != nil {
		t.Fatal(err)
	}
	img := "sha256:" + strings.Repeat("ab", 32)
	if err := other.SaveWorkspaceImage(img); err != nil {
		t.Fatal(err)
	}
	if err := other.SaveWorkspaceRuntime("runsc"); err != nil {
		t.Fatal(err)
	}
	now := live.Current()
	if now.Err != nil || !slices.Equal(now.Config.AllowedRoots, []string{canon}) {
		t.Fatalf("after the root was added: %v %v", now.Config.AllowedRoots, now.Err)
	}
	if now.Config.WorkspaceImage != img || now.Config.WorkspaceRuntime != "runsc" || now.Config.PendingExpiry != 30*time.Minute {
		t.Fatalf("image %q runtime %q expiry %s", now.Config.WorkspaceImage, now.Config.WorkspaceRuntime, now.Config.PendingExpiry)
	}
	if now.Config.ConfigDir != c.ConfigDir || now.Config.StateDir != c.StateDir {
		t.Fatalf("directories moved: %s %s", now.Config.ConfigDir, now.Config.StateDir)
	}
	if live.Current() != now {
		t.Fatal("read again without a change")
	}
}

func TestLive_FileStopsLoading_KeepsLastGoodAndSaysWhy(t *testing.T) {
	dir := isolate(t)
	root := t.TempDir()
	writeConfig(t, dir, `{"allowedRoots":["`+root+`"]}`)
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	live := NewLive(c)
	// Written by hand, not atomically, and wrong.
	writeConfig(t, dir, `{"allowedRoots":["`+root+`"], "toolsets": ["shell"]}`)
	bad := live.Current()
	if !errors.Is(bad.Err, ErrInvalid) || !strings.Contains(bad.Err.Error(), "toolsets") {
		t.Fatalf("a file that no longer loads: err %v", bad.Err)
	}
	if bad.Config != c {
		t.Fatal("the last good configuration must be kept beside the error")
	}
	// Fixed: the error is gone.
	writeConfig(t, dir, `{"allowedRoots":["`+root+`"], "toolsets": ["git", "propose"]}`)
	good := live.Current()
	if good.Err != nil || !slices.Equal(good.Config.Toolsets, []string{"git", "propose"}) {
		t.Fatalf("after the fix: %v %v", good.Config.Toolsets, good.Err)
	}
	// Removed: the defaults again (no roots).
	if err := os.Remove(filepath.Join(dir, "config.json")); err != nil {
		t.Fatal(err)
	}
	gone := live.Current()
	if gone.Err != nil || len(gone.Config.AllowedRoots) != 0 {
		t.Fatalf("after the file was removed: %v %v", gone.Config.AllowedRoots, gone.Err)
	}
}

func TestLive_EnvKeepsOverridingTheFile(t *testing.T) {
	dir := isolate(t)
	envRoot, fileRoot := t.TempDir(), t.TempDir()
	t.Setenv("SLUICE_ALLOWED_ROOTS", envRoot)
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	live := NewLive(c)
	writeConfig(t, dir, `{"allowedRoots":["`+fileRoot+`"], "pendingExpiry": "2h"}`)
	now := live.Current()
	canon, _ := filepath.EvalSymlinks(envRoot)
	if now.Err != nil || !slices.Equal(now.Config.AllowedRoots, []string{canon}) || now.Config.PendingExpiry != 2*time.Hour {
		t.Fatalf("roots %v expiry %s err %v", now.Config.AllowedRoots, now.Config.PendingExpiry, now.Err)
	}
}

func TestSaveSettings_PendingExpiry_UpToSevenDays(t *testing.T) {
	for _, tc := range []struct {
		expiry string
		ok     bool
	}{
		{"1m", true}, {"24h", true}, {"72h", true}, {"168h", true},
		{"59s", false}, {"168h1m", false}, {"30d", false}, {"", false},
	} {
		t.Run(tc.expiry, func(t *testing.T) {
			isolate(t)
			c, err := Load()
			if err != nil {
				t.Fatal(err)
			}
			s := c.Settings()
			if s.PendingExpiry != "24h0m0s" {
				t.Fatalf("default expiry %q", s.PendingExpiry)
			}
			s.PendingExpiry = tc.expiry
			err = c.SaveSettings(s)
			if tc.ok != (err == nil) {
				t.Fatalf("SaveSettings(%q) = %v", tc.expiry, err)
			}
			if err != nil {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "pendingExpiry") {
					t.Fatalf("error must name pendingExpiry: %v", err)
				}
				if _, serr := os.Stat(c.File()); !os.IsNotExist(serr) {
					t.Fatal("an invalid setting was written")
				}
				return
			}
			got, err := Load()
			if err != nil {
				t.Fatal(err)
			}
			want, _ := time.ParseDuration(tc.expiry)
			if got.PendingExpiry != want {
				t.Fatalf("saved %s, loaded %s", tc.expiry, got.PendingExpiry)
			}
		})
	}
}
