package session

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// large is the 20,000-file repository the benchmarks use, with its root.
func large(b *testing.B) (string, gitx.Roots) {
	b.Helper()
	repo := gitxtest.LargeRepo(b, gitxtest.LargeDefault)
	r, err := gitx.NewRoots([]string{filepath.Dir(repo)})
	if err != nil {
		b.Fatal(err)
	}
	return repo, r
}

// BenchmarkSession_Copy20k is the private copy a session starts with, of
// the 20,000-file repository, against the git CLI's nearest equivalent in
// the same run: `git clone --shared` (alternates to the source's objects,
// then a checkout of HEAD).
func BenchmarkSession_Copy20k(b *testing.B) {
	repo, roots := large(b)
	r, err := gitx.Default()
	if err != nil {
		b.Fatal(err)
	}
	base := b.TempDir()
	home := b.TempDir()
	n := 0
	dest := func() string { n++; return filepath.Join(base, strconv.Itoa(n)) }
	copyOnce := func(int) time.Duration {
		d := dest()
		start := time.Now()
		if _, err := MakeCopy(context.Background(), r, roots, repo, d, home); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		removeAll(d)
		return took
	}
	cloneOnce := func(int) time.Duration {
		d := dest()
		c := exec.Command("git", "clone", "-q", "--shared", repo, d)
		c.Env = gitxtest.Env(home)
		start := time.Now()
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("git clone --shared: %v\n%s", err, out)
		}
		took := time.Since(start)
		removeAll(d)
		return took
	}
	sl, git := gitxtest.Pair(b, 1, copyOnce, cloneOnce)
	b.ReportMetric(gitxtest.Ms(sl.Median()), "copy-ms")
	b.ReportMetric(gitxtest.Ms(git.Median()), "git-clone-shared-ms")
	b.ReportMetric(gitxtest.Ratio(sl, git), "x-git")
}

// BenchmarkSession_GitStatus20k and _Grep20k are what an agent's shell
// does most in a 20,000-file repository, inside a session's sandbox (on
// the copy, bound at the repository's path, the person's objects through
// the origin alternate) against the same command outside it, on the
// person's checkout. Each round runs the command five times in one shell
// and times it there, so what is measured is the command, not the start of
// a sandbox.
func BenchmarkSession_GitStatus20k(b *testing.B) {
	benchInside(b, "git status --porcelain >/dev/null")
}

func BenchmarkSession_Grep20k(b *testing.B) {
	benchInside(b, "git grep -q -e needle-that-is-not-there || true; grep -r -q -e needle-that-is-not-there --exclude-dir=.git . || true")
}

func benchInside(b *testing.B, cmd string) {
	repo, roots := large(b)
	bwrap, err := FindBubblewrap()
	if err != nil {
		b.Skip(err)
	}
	r, err := gitx.Default()
	if err != nil {
		b.Fatal(err)
	}
	copyDir := filepath.Join(b.TempDir(), "copy")
	c, err := MakeCopy(context.Background(), r, roots, repo, copyDir, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer removeAll(copyDir)
	const times = 5
	script := fmt.Sprintf(`s=$(date +%%s%%N); for i in 1 2 3 4 5; do %s; done; e=$(date +%%s%%N); echo $((e - s))`, cmd)
	home := b.TempDir()
	env := append(gitxtest.Env(home), "PATH=/usr/bin:/bin")
	measure := func(name string, args ...string) time.Duration {
		out, err := exec.Command(name, args...).CombinedOutput()
		for try := 1; err != nil && LostMountRace(out) && try < bwrapAttempts; try++ {
			out, err = exec.Command(name, args...).CombinedOutput()
		}
		if err != nil {
			b.Fatalf("%s: %v\n%s", name, err, out)
		}
		lines := strings.Fields(string(out))
		ns, err := strconv.ParseInt(lines[len(lines)-1], 10, 64)
		if err != nil {
			b.Fatalf("%s: %q", name, out)
		}
		return time.Duration(ns / times)
	}
	inside := func(int) time.Duration {
		args := append(BaseArgs(), "--tmpfs", "/tmp", "--tmpfs", "/run",
			"--bind", copyDir, repo, "--ro-bind", c.Objects, filepath.Join(repo, ".git", OriginAlternate), "--chdir", repo)
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			args = append(args, "--setenv", k, v)
		}
		return measure(bwrap, append(args, "--", "sh", "-c", script)...)
	}
	outside := func(int) time.Duration {
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("outside: %v\n%s", err, out)
		}
		ns, _ := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		return time.Duration(ns / times)
	}
	in, out := gitxtest.Pair(b, 1, inside, outside)
	b.ReportMetric(gitxtest.Ms(in.Median()), "inside-ms")
	b.ReportMetric(gitxtest.Ms(out.Median()), "outside-ms")
	b.ReportMetric(gitxtest.Ratio(in, out), "x-outside")
}
