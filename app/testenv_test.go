package app

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/core/config"
)

// requireE2E is set by `make test`: pieces that end-to-end tests need
// (built binaries, Chromium, Xvfb) must then be present, and their absence
// fails the test instead of skipping it.
func requireE2E() bool { return os.Getenv("SLUICE_REQUIRE_E2E") == "1" }

// needOrSkip fails or skips when a prerequisite is missing.
func needOrSkip(t testing.TB, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if requireE2E() {
		t.Fatalf("missing prerequisite: %s", what)
	}
	t.Skipf("skipping: %s (run `make test` for the full suite)", what)
}

// isolate points XDG at fresh temp dirs so that no test touches the
// person's real configuration, and returns the loaded config.
func isolate(t *testing.T) *config.Config {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("SLUICE_ALLOWED_ROOTS", "")
	cfg, err := config.Load()
	if err != nil {
		t.Fatalf("load config: %v", err)
	}
	return cfg
}

func startApp(t *testing.T) *App {
	t.Helper()
	cfg := isolate(t)
	a, err := Start(cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatalf("start app: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// distFS is the built front end; tests that render it need `make build`
// (or `npm run build` in frontend/) first. SLUICE_FRONTEND_DIST names
// another build of it (one that no other build replaces while tests run).
func distFS(t testing.TB) fs.FS {
	t.Helper()
	dir, err := filepath.Abs("../frontend/dist")
	if d := os.Getenv("SLUICE_FRONTEND_DIST"); d != "" {
		dir, err = filepath.Abs(d)
	}
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(filepath.Join(dir, "index.html"))
	needOrSkip(t, err == nil, "frontend/dist/index.html (build the front end)")
	return os.DirFS(dir)
}

// artifactDir is where tests keep screenshots for people to look at.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SLUICE_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
