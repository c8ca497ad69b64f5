package app

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// BenchmarkSession_Start is what `sluice run` adds to starting an agent,
// as the person on a running app: `sluice run claude --version` (register
// the session and make its copy, the confined HOME, the egress proxy, the
// session's sidecar, the sandbox, then the session's end) against `claude
// --version` started directly, in the same run.
func BenchmarkSession_Start(b *testing.B) {
	m := newMachine(b)
	claude, err := exec.LookPath(filepath.Join(m.tools, "node_modules", ".bin", "claude"))
	if err != nil {
		b.Fatal(err)
	}
	run := func(c *exec.Cmd) {
		c.Dir = m.repo
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", c.Args, err, out)
		}
	}
	confined := gitxtest.Timed(func() { run(m.cmd(filepath.Join(m.bin, "sluice-headless"), "run", "claude", "--version")) })
	direct := gitxtest.Timed(func() { run(m.cmd(claude, "--version")) })
	in, out := gitxtest.Pair(b, 2, confined, direct)
	b.ReportMetric(gitxtest.Ms(in.Median()), "sluice-run-ms")
	b.ReportMetric(gitxtest.Ms(out.Median()), "direct-ms")
	b.ReportMetric(gitxtest.Ms(in.Median()-out.Median()), "added-ms")
}

// BenchmarkSessionStart_Repo20k is the same start in a repository of real
// size (20,000 files, 2,000 commits): the private copy and, at the end,
// the check of what the agent left are what grow with it. It runs beside
// `claude --version` directly and `git clone --shared` of the same
// repository (git's nearest way to a private copy), in the same run.
func BenchmarkSessionStart_Repo20k(b *testing.B) {
	m := newMachine(b)
	b.Setenv("SLUICE_BENCH_REPO_DIR", m.root)
	repo := gitxtest.LargeRepo(b, gitxtest.LargeDefault)
	m.chown(repo)
	claude, err := exec.LookPath(filepath.Join(m.tools, "node_modules", ".bin", "claude"))
	if err != nil {
		b.Fatal(err)
	}
	run := func(c *exec.Cmd) {
		c.Dir = repo
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", c.Args, err, out)
		}
	}
	clones := filepath.Join(m.base, "clones")
	if err := os.Mkdir(clones, 0o755); err != nil {
		b.Fatal(err)
	}
	m.chown(clones)
	n := 0
	confined := gitxtest.Timed(func() { run(m.cmd(filepath.Join(m.bin, "sluice-headless"), "run", "claude", "--version")) })
	direct := gitxtest.Timed(func() { run(m.cmd(claude, "--version")) })
	clone := gitxtest.Timed(func() {
		n++
		dst := filepath.Join(clones, fmt.Sprint(n))
		run(m.cmd("git", "clone", "-q", "--shared", repo, dst))
		os.RemoveAll(dst)
	})
	in, out := gitxtest.Pair(b, 2, confined, direct)
	cl, _ := gitxtest.Pair(b, 2, clone, direct)
	b.ReportMetric(gitxtest.Ms(in.Median()), "sluice-run-ms")
	b.ReportMetric(gitxtest.Ms(out.Median()), "direct-ms")
	b.ReportMetric(gitxtest.Ms(in.Median()-out.Median()), "added-ms")
	b.ReportMetric(gitxtest.Ms(cl.Median()), "git-clone-shared-ms")
}

// BenchmarkSession_StartContainer is the same start under `--runtime
// docker` and `--runtime runsc` (the session's container from the agent
// image, with the agent's install shown), against the docker CLI running
// the same program in the same image with the same install mounted and no
// network, in the same run: what Sluice adds to a container start.
func BenchmarkSession_StartContainer(b *testing.B) {
	m := newMachine(b, withContainers())
	claude, err := filepath.EvalSymlinks(filepath.Join(m.tools, "node_modules", ".bin", "claude"))
	if err != nil {
		b.Fatal(err)
	}
	modules := filepath.Join(m.tools, "node_modules")
	run := func(c *exec.Cmd) {
		c.Dir = m.repo
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", c.Args, err, out)
		}
	}
	for _, rt := range []string{"docker", "runsc"} {
		oci := map[string]string{"docker": "runc", "runsc": "runsc"}[rt]
		b.Run(rt, func(b *testing.B) {
			confined := gitxtest.Timed(func() {
				run(m.cmd(filepath.Join(m.bin, "sluice-headless"), "run", "--runtime", rt, "claude", "--version"))
			})
			direct := gitxtest.Timed(func() {
				run(m.cmd("docker", "run", "--rm", "--runtime", oci, "--network", "none", "--user", fmt.Sprintf("%d:%d", m.uid, m.gid),
					"-v", modules+":"+modules+":ro", m.image, claude, "--version"))
			})
			in, out := gitxtest.Pair(b, 2, confined, direct)
			b.ReportMetric(gitxtest.Ms(in.Median()), "sluice-run-ms")
			b.ReportMetric(gitxtest.Ms(out.Median()), "docker-run-ms")
			b.ReportMetric(gitxtest.Ms(in.Median()-out.Median()), "added-ms")
		})
	}
}
