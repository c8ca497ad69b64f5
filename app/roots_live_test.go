package app

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
)

// A root the person adds on the first screen applies to the running app at
// once: the status lists it, Settings asks for no restart, and the app
// reads a repository there (the safety timeline) — before, it answered
// that no roots were allowed until Sluice restarted. Removing it applies
// at once too.
func TestAPI_AddRoot_AppliesWithoutRestart(t *testing.T) {
	a := startApp(t)
	// startApp's environment names no roots (SLUICE_ALLOWED_ROOTS is
	// empty): unset it, so that config.json decides.
	os.Unsetenv("SLUICE_ALLOWED_ROOTS")
	api := &API{app: a, kind: "web"}
	root := t.TempDir()
	repo := gitRepo(t, root, "widgets")
	canon, _ := filepath.EvalSymlinks(root)

	if _, err := api.Timeline(repo); !errcode.IsCode(err, errcode.PathOutsideRoots) {
		t.Fatalf("before: Timeline = %v, want path_outside_roots", err)
	}
	v, err := api.AddRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.RestartRequired) != 0 {
		t.Fatalf("adding a root asks for a restart: %v", v.RestartRequired)
	}
	st, err := api.Status()
	if err != nil || !slices.Equal(st.AllowedRoots, []string{canon}) {
		t.Fatalf("status after adding: %v %v", st.AllowedRoots, err)
	}
	if tl, err := api.Timeline(repo); err != nil || tl.Repo == "" {
		t.Fatalf("Timeline in the root just added: %+v %v", tl, err)
	}
	if _, err := a.cfg.RemoveRoot(root); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Timeline(repo); !errcode.IsCode(err, errcode.PathOutsideRoots) {
		t.Fatalf("after removing the root: Timeline = %v, want path_outside_roots", err)
	}
}
