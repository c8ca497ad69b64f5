package gitx

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
)

// newRunner builds a runner from the current environment (tests that
// change the environment build their own after t.Setenv).
func newRunner(t testing.TB) *Runner {
	t.Helper()
	r, err := NewRunner(RunnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// openIn opens dir with root as the only allowed root (default: dir's
// parent, so that sibling fixtures such as worktrees are inside too).
func openIn(t testing.TB, r *Runner, dir string, root ...string) *Repo {
	t.Helper()
	roots := Roots{filepath.Dir(dir)}
	if len(root) > 0 {
		roots = Roots(root)
	}
	repo, err := r.Open(ctx(t), roots, dir)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	return repo
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wantCode(t testing.TB, err error, code errcode.Code) {
	t.Helper()
	if !errcode.IsCode(err, code) {
		t.Fatalf("error = %v, want code %s", err, code)
	}
}

func mustSince(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := ParseSince(s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return v
}
