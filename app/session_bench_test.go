package app

import (
	"fmt"
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
