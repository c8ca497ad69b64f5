package apply

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// BenchmarkSealedRefs_Reads_vs_CLI is what the refs that keep n
// proposals' sealed objects (0, 1,000, 10,000) cost the reads that should
// not care about them, beside git in the same run, in the 1,000-file
// repository of the execution benchmarks: commit_details beside `git
// show --stat`, repo_brief beside `git status`, and the person's `git log
// --decorate -20` beside `git log --no-decorate -20`. "own" is each
// proposal under a ref of its own, as Keep leaves them; "folded" is after
// TendSealed folded them into refs/sluice/kept (tend-ms: how long that
// took).
//
//	go test -run '^$' -bench SealedRefs -benchtime 20x ./core/apply/
func BenchmarkSealedRefs_Reads_vs_CLI(b *testing.B) {
	for _, n := range []int{0, 1_000, 10_000} {
		f := benchFixture(b, 0)
		sealedRefs(b, f, n)
		run, err := gitx.NewRunner(gitx.RunnerOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, layout := range []string{"own", "folded"} {
			var tend time.Duration
			if layout == "folded" {
				start := time.Now()
				got, err := f.e.TendSealed(context.Background(), f.repo.Dir, func([]string) (map[string]bool, error) { return nil, nil })
				if err != nil || got.Kept != n {
					b.Fatalf("tend: %+v %v", got, err)
				}
				tend = time.Since(start)
			}
			repo, err := run.Open(context.Background(), gitx.Roots{f.root}, f.repo.Dir)
			if err != nil {
				b.Fatal(err)
			}
			name := fmt.Sprintf("proposals=%d/%s", n, layout)
			b.Run(name+"/commit_details", func(b *testing.B) {
				if layout == "folded" {
					b.ReportMetric(gitxtest.Ms(tend), "tend-ms")
				}
				pairCLI(b, func() {
					if _, err := repo.CommitDetails(context.Background(), "HEAD", 0); err != nil {
						b.Fatal(err)
					}
				}, f.repo.Dir, "show", "--stat", "HEAD")
			})
			b.Run(name+"/repo_brief", func(b *testing.B) {
				pairCLI(b, func() {
					if _, err := repo.Brief(context.Background()); err != nil {
						b.Fatal(err)
					}
				}, f.repo.Dir, "status")
			})
			b.Run(name+"/git_log_decorate", func(b *testing.B) {
				pairCLI(b, func() { gitCLI(b, f.repo.Dir, "log", "--decorate", "-20") }, f.repo.Dir, "log", "--no-decorate", "-20")
			})
		}
	}
}

// sealedRefs gives n proposals a sealed ref each, shaped as Keep makes
// them (a commit whose tree holds the trees before and after), with git
// fast-import: each proposal adds a file of its own to main's tree.
func sealedRefs(b *testing.B, f *fixture, n int) {
	b.Helper()
	if n == 0 {
		return
	}
	base := f.git("rev-parse", "HEAD^{tree}")
	var in bytes.Buffer
	for i := range n {
		fmt.Fprintf(&in, "commit refs/sluice/sealed/bench%05d\ncommitter Sluice <sluice@localhost> %d +0000\ndata 0\n", i, 1_700_000_000+i)
		fmt.Fprintf(&in, "M 040000 %s t00\nM 040000 %s t01\n", base, base)
		c := fmt.Sprintf("proposal %d\n", i)
		fmt.Fprintf(&in, "M 100644 inline t01/new%05d.txt\ndata %d\n%s\n", i, len(c), c)
	}
	c := exec.Command("git", "fast-import", "--quiet")
	c.Dir, c.Stdin = f.repo.Dir, &in
	if out, err := c.CombinedOutput(); err != nil {
		b.Fatalf("fast-import: %v\n%s", err, out)
	}
	// As Keep leaves them: loose refs, not packed.
	loose, err := os.ReadDir(filepath.Join(f.repo.Dir, ".git", "refs", "sluice", "sealed"))
	if err != nil || len(loose) != n {
		b.Fatalf("%d loose sealed refs, want %d (%v)", len(loose), n, err)
	}
}

// pairCLI times sluice and the git command args in alternating rounds and
// reports both and their ratio.
func pairCLI(b *testing.B, sluice func(), dir string, args ...string) {
	b.Helper()
	ta, tc := gitxtest.Pair(b, 1, gitxtest.Timed(sluice), gitxtest.Timed(func() { gitCLI(b, dir, args...) }))
	b.ReportMetric(float64(ta.Mean()), "ns/op")
	b.ReportMetric(gitxtest.Ms(ta.Mean()), "sluice-ms/op")
	b.ReportMetric(gitxtest.Ms(tc.Mean()), "git-ms/op")
	b.ReportMetric(gitxtest.Ratio(ta, tc), "ratio")
}

// gitCLI runs plain git as a person would.
func gitCLI(b *testing.B, dir string, args ...string) {
	c := exec.Command("git", args...)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v\n%s", args, err, out)
	}
}
