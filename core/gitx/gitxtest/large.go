package gitxtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Large describes the generated benchmark repository.
type Large struct {
	Files, Commits int
	// Modified and Untracked are the working-tree changes left in it.
	Modified, Untracked int
}

// LargeDefault is the repository the benchmarks use: at least 20,000
// files and 2,000 commits, like a mid-sized monorepo.
var LargeDefault = Large{Files: 20_000, Commits: 2_000, Modified: 20, Untracked: 5}

// LargeRepo returns a generated repository of shape l. It is built once
// with git fast-import into os.TempDir()/sluice-bench-<shape> and reused by
// later runs (and by concurrent benchmark processes: it is built beside
// and renamed into place); SLUICE_BENCH_REPO_DIR moves that cache. Only
// benchmarks call it.
func LargeRepo(tb testing.TB, l Large) string {
	tb.Helper()
	base := os.Getenv("SLUICE_BENCH_REPO_DIR")
	if base == "" {
		base = os.TempDir()
	}
	dir := filepath.Join(base, fmt.Sprintf("sluice-bench-v1-%df-%dc-%dm-%du", l.Files, l.Commits, l.Modified, l.Untracked))
	if _, err := os.Stat(filepath.Join(dir, ".sluice-bench-complete")); err == nil {
		canon, _ := filepath.EvalSymlinks(dir)
		return canon
	}
	tmp, err := os.MkdirTemp(base, "sluice-bench-building-")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if err := buildLarge(tb, tmp, l); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".sluice-bench-complete"), nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process finished first; use its copy.
		if _, serr := os.Stat(filepath.Join(dir, ".sluice-bench-complete")); serr != nil {
			tb.Fatalf("install benchmark repository: %v", err)
		}
	}
	canon, _ := filepath.EvalSymlinks(dir)
	return canon
}

func buildLarge(tb testing.TB, dir string, l Large) error {
	Git(tb, dir, "init", "-q")
	// The marker file is untracked by design; keep it out of status.
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte(".sluice-bench-complete\n"), 0o644); err != nil {
		return err
	}
	imp := exec.Command("git", "fast-import", "--quiet", "--done")
	imp.Dir = dir
	imp.Env = Env(homeDir())
	in, err := imp.StdinPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	imp.Stderr = &stderr
	if err := imp.Start(); err != nil {
		return err
	}
	w := bufio.NewWriterSize(in, 1<<20)
	path := func(i int) string {
		ext := []string{"go", "md", "txt", "json", "ts"}[i%5]
		return fmt.Sprintf("pkg%03d/sub%d/file%05d.%s", i/100, (i/10)%10, i, ext)
	}
	inline := func(p, content string) {
		fmt.Fprintf(w, "M 100644 inline %s\ndata %d\n%s\n", p, len(content), content)
	}
	ts := int64(1_600_000_000)
	for c := 0; c < l.Commits; c++ {
		subject := fmt.Sprintf("Change %d", c)
		if c%3 == 0 {
			subject = fmt.Sprintf("feat(pkg%03d): change %d", c%200, c)
		}
		fmt.Fprintf(w, "commit refs/heads/main\nmark :%d\n", c+1)
		fmt.Fprintf(w, "author Ada Lovelace <ada@example.com> %d +0000\ncommitter Ada Lovelace <ada@example.com> %d +0000\n", ts, ts)
		fmt.Fprintf(w, "data %d\n%s\n", len(subject), subject)
		if c > 0 {
			fmt.Fprintf(w, "from :%d\n", c)
		}
		if c == 0 {
			for i := 0; i < l.Files; i++ {
				inline(path(i), fmt.Sprintf("package p%d\n\n// File %d of the benchmark repository.\nvar X%d = %d\n", i%7, i, i, i))
			}
		} else {
			for k := 0; k < 3; k++ {
				i := (c*7919 + k*104729) % l.Files
				inline(path(i), fmt.Sprintf("package p%d\n\n// File %d, changed by commit %d.\nvar X%d = %d\n", i%7, i, c, i, c))
			}
		}
		ts += 600
		w.WriteString("\n")
	}
	w.WriteString("done\n")
	if err := w.Flush(); err != nil {
		return err
	}
	in.Close()
	if err := imp.Wait(); err != nil {
		return fmt.Errorf("fast-import: %v: %s", err, stderr.String())
	}
	Git(tb, dir, "checkout", "-q", "-f", "main")
	Git(tb, dir, "remote", "add", "origin", "https://example.com/bench.git")
	Git(tb, dir, "update-ref", "refs/remotes/origin/main", "main~3")
	Git(tb, dir, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
	Git(tb, dir, "branch", "--set-upstream-to=origin/main", "main")
	Git(tb, dir, "branch", "feature/a", "main~10")
	Git(tb, dir, "branch", "feature/b", "main~20")
	Git(tb, dir, "tag", "v1.0.0", "main~100")
	for i := 0; i < l.Modified; i++ {
		p := filepath.Join(dir, filepath.FromSlash(path(i*97%l.Files)))
		if err := os.WriteFile(p, []byte(fmt.Sprintf("package x\n\n// Modified in the working tree (%d).\nvar Y = %d\n", i, i)), 0o644); err != nil {
			return err
		}
	}
	for i := 0; i < l.Untracked; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("untracked-%d.txt", i)), []byte("new\n"), 0o644); err != nil {
			return err
		}
	}
	// Refresh the index's stat data so that status measures steady state,
	// not a first refresh.
	Git(tb, dir, "update-index", "-q", "--refresh")
	return nil
}
