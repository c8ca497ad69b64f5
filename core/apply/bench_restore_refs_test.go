package apply

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/restorepoint"
)

// BenchmarkRestoreRefs_Reads_vs_Without is what the refs of n restore
// points (0, 1,000, 10,000, one an hour, each shaped as an executed
// commit leaves it: meta, end, the branch as it was, the worktree) cost
// reads that should not care about them, each beside the same read of a
// repository without them (the 1,000-file repository of the execution
// benchmarks) in the same run: the person's `git log --all --oneline
// -20` and `git for-each-ref` (refs: how many it lists), repo_brief, and
// the safety timeline. "loose" is as the executor leaves them; "tended"
// after TendRestorePoints removed those past a 30-day retention (the
// newest 720 stay; tend-ms: how long the tends took, tends: how many
// hourly tends the backlog took, 500 restore points each); "folded"
// after FoldRestorePoints then folded those into the one ref
// restorepoint.FoldedRef (tend-ms and tends: the folds, 500 restore
// points each). `git log --decorate -20` and `git status` are measured
// too. Each repository's branch has 32 commits, more than the page of
// `git log --all -20`.
//
//	go test -run '^$' -bench RestoreRefs -benchtime 20x ./core/apply/
func BenchmarkRestoreRefs_Reads_vs_Without(b *testing.B) {
	ctx := context.Background()
	run, err := gitx.NewRunner(gitx.RunnerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	without := benchFixture(b, 0)
	pageOfHistory(b, without)
	bare, err := run.Open(ctx, gitx.Roots{without.root}, without.repo.Dir)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	for _, n := range []int{0, 1_000, 10_000} {
		f := benchFixture(b, 0)
		pageOfHistory(b, f)
		restoreRefs(b, f, n, now)
		for _, layout := range []string{"loose", "tended", "folded"} {
			var tend time.Duration
			tends := 0
			if layout == "folded" {
				// As many hourly folds as the backlog takes.
				start := time.Now()
				for {
					got, err := f.e.FoldRestorePoints(ctx, f.repo.Dir)
					if err != nil {
						b.Fatal(err)
					}
					tends++
					if got.Folded == 0 {
						break
					}
				}
				tend = time.Since(start)
			}
			if layout == "tended" {
				// As many hourly tends as the backlog takes.
				start := time.Now()
				for {
					got, err := f.e.TendRestorePoints(ctx, f.repo.Dir, now.Add(-30*24*time.Hour), nil)
					if err != nil {
						b.Fatal(err)
					}
					tends++
					if got.Left == 0 {
						break
					}
				}
				tend = time.Since(start)
			}
			repo, err := run.Open(ctx, gitx.Roots{f.root}, f.repo.Dir)
			if err != nil {
				b.Fatal(err)
			}
			name := fmt.Sprintf("points=%d/%s", n, layout)
			b.Run(name+"/git_log_all", func(b *testing.B) {
				if layout != "loose" {
					b.ReportMetric(gitxtest.Ms(tend), "tend-ms")
					b.ReportMetric(float64(tends), "tends")
				}
				pairWithout(b, func() { gitCLI(b, f.repo.Dir, "log", "--all", "--oneline", "-20") },
					func() { gitCLI(b, without.repo.Dir, "log", "--all", "--oneline", "-20") })
			})
			b.Run(name+"/for_each_ref", func(b *testing.B) {
				out, err := exec.Command("git", "-C", f.repo.Dir, "for-each-ref").Output()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(bytes.Count(out, []byte("\n"))), "refs")
				pairWithout(b, func() { gitCLI(b, f.repo.Dir, "for-each-ref") }, func() { gitCLI(b, without.repo.Dir, "for-each-ref") })
			})
			b.Run(name+"/git_log_decorate", func(b *testing.B) {
				pairWithout(b, func() { gitCLI(b, f.repo.Dir, "log", "--decorate", "--oneline", "-20") },
					func() { gitCLI(b, without.repo.Dir, "log", "--decorate", "--oneline", "-20") })
			})
			b.Run(name+"/git_status", func(b *testing.B) {
				pairWithout(b, func() { gitCLI(b, f.repo.Dir, "status", "--porcelain") },
					func() { gitCLI(b, without.repo.Dir, "status", "--porcelain") })
			})
			b.Run(name+"/repo_brief", func(b *testing.B) {
				pairWithout(b, func() {
					if _, err := repo.Brief(ctx); err != nil {
						b.Fatal(err)
					}
				}, func() {
					if _, err := bare.Brief(ctx); err != nil {
						b.Fatal(err)
					}
				})
			})
			b.Run(name+"/safety_timeline", func(b *testing.B) {
				pairWithout(b, func() {
					if _, err := restorepoint.SafetyTimeline(ctx, repo, 0); err != nil {
						b.Fatal(err)
					}
				}, func() {
					if _, err := restorepoint.SafetyTimeline(ctx, bare, 0); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}

// pageOfHistory gives f's branch 30 more commits, a page of `git log
// -20` and more, as a repository in use has: with fewer, `git log --all
// -20` goes on into whatever else the refs reach to fill its page.
func pageOfHistory(b *testing.B, f *fixture) {
	b.Helper()
	for i := range 30 {
		f.git("commit", "-q", "--allow-empty", "-m", fmt.Sprintf("history %d", i))
	}
}

// restoreRefs gives f n restore points, the newest taken at now and each
// other an hour before the next, with git fast-import: the refs an
// executed commit of main leaves (meta and end records, main as it was,
// the clean worktree at HEAD), loose as the executor writes them.
func restoreRefs(b *testing.B, f *fixture, n int, now time.Time) {
	b.Helper()
	if n == 0 {
		return
	}
	head := f.git("rev-parse", "HEAD")
	tree := f.git("rev-parse", "HEAD^{tree}")
	var in bytes.Buffer
	for i := range n {
		id := fmt.Sprintf("bench%05d", i)
		at := now.Add(-time.Duration(n-1-i) * time.Hour).UTC().Truncate(time.Millisecond)
		rp := RestorePoint{ID: id, Kind: KindProposal, Label: "before commit " + id, ProposalID: id, Op: "commit", Repo: f.repo.Dir, CreatedAt: at,
			Refs:      []RefState{{Ref: "refs/heads/main", SHA: head}},
			Worktrees: []WorktreeState{{Path: f.repo.Dir, Head: "refs/heads/main", HeadSHA: head, Files: true, Index: tree, Tree: tree, Clean: true}}}
		end := EndState{At: at.Add(time.Second), Outcome: EndCompleted, Refs: rp.Refs, Worktrees: rp.Worktrees}
		meta, _ := json.Marshal(rp)
		endJS, _ := json.Marshal(end)
		base := RestorePrefix + id + "/"
		for _, c := range []struct {
			ref, msg string
		}{{base + "meta", "Sluice restore point " + id + "\n\n" + string(meta)}, {base + "end", "Sluice restore point " + id + " end\n\n" + string(endJS)}} {
			fmt.Fprintf(&in, "commit %s\ncommitter Sluice <sluice@localhost> %d +0000\ndata %d\n%s\n", c.ref, at.Unix(), len(c.msg), c.msg)
			if strings.HasSuffix(c.ref, "/end") {
				fmt.Fprintf(&in, "from %smeta\n", base)
			}
			in.WriteString("deleteall\n\n")
		}
		fmt.Fprintf(&in, "reset %sref/refs/heads/main\nfrom %s\n\nreset %sworktree/0\nfrom %s\n\n", base, head, base, head)
	}
	c := exec.Command("git", "fast-import", "--quiet")
	c.Dir, c.Stdin = f.repo.Dir, &in
	if out, err := c.CombinedOutput(); err != nil {
		b.Fatalf("fast-import: %v\n%s", err, out)
	}
	if got := strings.Count(f.git("for-each-ref", "--format=x", RestorePrefix), "x"); got != 4*n {
		b.Fatalf("%d restore point refs, want %d", got, 4*n)
	}
}

// pairWithout times a read with Sluice's refs beside the same read of the
// repository without them, in alternating rounds, and reports both and
// their ratio.
func pairWithout(b *testing.B, with, without func()) {
	b.Helper()
	ta, tc := gitxtest.Pair(b, 1, gitxtest.Timed(with), gitxtest.Timed(without))
	b.ReportMetric(float64(ta.Mean()), "ns/op")
	b.ReportMetric(gitxtest.Ms(ta.Mean()), "with-ms/op")
	b.ReportMetric(gitxtest.Ms(tc.Mean()), "without-ms/op")
	b.ReportMetric(gitxtest.Ratio(ta, tc), "ratio")
}
