package gitx

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// The benchmarks compare each inspection with the git CLI command (or,
// for the brief, the sequence of commands) it replaces, in the same run on
// the same generated repository (gitxtest.LargeDefault: 20,000 files,
// 2,000 commits, 20 modified and 5 untracked files). Each reports both
// sides per operation and their ratio.

func largeRepo(b *testing.B) (*Runner, *Repo) {
	b.Helper()
	dir := gitxtest.LargeRepo(b, gitxtest.LargeDefault)
	run, err := NewRunner(RunnerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	repo, err := run.Open(context.Background(), Roots{dir}, dir)
	if err != nil {
		b.Fatal(err)
	}
	return run, repo
}

// cli runs plain git, as a person or an agent with a shell would.
func cli(b *testing.B, dir string, args ...string) []byte {
	c := exec.Command("git", args...)
	c.Dir = dir
	var out bytes.Buffer
	c.Stdout = &out
	if err := c.Run(); err != nil {
		b.Fatalf("git %v: %v", args, err)
	}
	return out.Bytes()
}

// compare times a and c in alternating rounds, b.N each (see
// gitxtest.Pair), and reports both (ns/op is a's mean) and their ratio
// (a/c).
func compare(b *testing.B, a, c func()) {
	b.Helper()
	ta, tc := gitxtest.Pair(b, 1, gitxtest.Timed(a), gitxtest.Timed(c))
	b.ReportMetric(float64(ta.Mean()), "ns/op")
	b.ReportMetric(gitxtest.Ms(ta.Mean()), "sluice-ms/op")
	b.ReportMetric(gitxtest.Ms(tc.Mean()), "git-ms/op")
	b.ReportMetric(gitxtest.Ratio(ta, tc), "ratio")
}

func BenchmarkStatus_vs_CLI(b *testing.B) {
	_, repo := largeRepo(b)
	ctx := context.Background()
	compare(b, func() {
		if _, err := repo.Status(ctx, StatusOptions{Limit: 200}); err != nil {
			b.Fatal(err)
		}
	}, func() { cli(b, repo.Root, "status", "--porcelain=v2", "--branch") })
}

func BenchmarkDiffText_Worktree_vs_CLI(b *testing.B) {
	_, repo := largeRepo(b)
	ctx := context.Background()
	compare(b, func() {
		if _, err := repo.DiffText(ctx, DiffSpec{}, 3, MaxDiffBytes); err != nil {
			b.Fatal(err)
		}
	}, func() { cli(b, repo.Root, "diff") })
}

func BenchmarkDiffText_Revisions_vs_CLI(b *testing.B) {
	_, repo := largeRepo(b)
	ctx := context.Background()
	compare(b, func() {
		if _, err := repo.DiffText(ctx, DiffSpec{Base: "HEAD~200", Target: "HEAD"}, 3, MaxDiffBytes); err != nil {
			b.Fatal(err)
		}
	}, func() { cli(b, repo.Root, "diff", "HEAD~200", "HEAD") })
}

func BenchmarkHistory_vs_CLI(b *testing.B) {
	_, repo := largeRepo(b)
	ctx := context.Background()
	compare(b, func() {
		if _, err := repo.History(ctx, HistoryOptions{Limit: 20}); err != nil {
			b.Fatal(err)
		}
	}, func() { cli(b, repo.Root, "log", "-n", "20", "--format=%h %an %aI %s %D") })
}

// rawBriefSequence is what repo_brief replaces: the commands an agent runs
// one after the other to learn the same things.
var rawBriefSequence = [][]string{
	{"status"},
	{"log", "-n", "50", "--format=%h %an %ar %s"},
	{"branch", "-vv"},
	{"stash", "list"},
	{"submodule", "status"},
	{"rev-list", "--left-right", "--count", "@{upstream}...HEAD"},
	{"symbolic-ref", "--short", "refs/remotes/origin/HEAD"},
}

func BenchmarkBrief_vs_RawSequence(b *testing.B) {
	_, repo := largeRepo(b)
	ctx := context.Background()
	var brief *Brief
	var raw int
	compare(b, func() {
		var err error
		if brief, err = repo.Brief(ctx); err != nil {
			b.Fatal(err)
		}
	}, func() {
		raw = 0
		for _, args := range rawBriefSequence {
			raw += len(cli(b, repo.Root, args...))
		}
	})
	j, _ := json.Marshal(brief)
	b.ReportMetric(float64(len(j)/4), "brief-tokens")
	b.ReportMetric(float64(raw/4), "raw-tokens")
	b.ReportMetric(float64(len(j))/float64(raw), "token-ratio")
}

// BenchmarkOpen_Cold measures opening a repository without the open
// cache: the fixed cost of a first call.
func BenchmarkOpen_Cold(b *testing.B) {
	run, repo := largeRepo(b)
	for i := 0; i < b.N; i++ {
		if _, err := run.openCanonical(context.Background(), Roots{repo.Root}, repo.Root); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommitDetails_Refs_vs_CLI is commit_details beside `git show
// --stat` in a repository with 0 and 10,000 refs that name nothing the
// person asked about (Sluice keeps one per proposal under refs/sluice/).
func BenchmarkCommitDetails_Refs_vs_CLI(b *testing.B) {
	for _, n := range []int{0, 10000} {
		b.Run(fmt.Sprintf("refs=%d", n), func(b *testing.B) {
			r := gitxtest.Diverged(b)
			head := gitxtest.Git(b, r.Dir, "rev-parse", "HEAD")
			var in strings.Builder
			for i := range n {
				fmt.Fprintf(&in, "create refs/sluice/sealed/p%05d %s\n", i, head)
			}
			c := exec.Command("git", "update-ref", "--stdin")
			c.Dir, c.Stdin = r.Dir, strings.NewReader(in.String())
			if out, err := c.CombinedOutput(); err != nil {
				b.Fatalf("update-ref: %v\n%s", err, out)
			}
			run, err := NewRunner(RunnerOptions{})
			if err != nil {
				b.Fatal(err)
			}
			repo, err := run.Open(context.Background(), Roots{r.Dir}, r.Dir)
			if err != nil {
				b.Fatal(err)
			}
			compare(b, func() {
				if _, err := repo.CommitDetails(context.Background(), "HEAD", 0); err != nil {
					b.Fatal(err)
				}
			}, func() { cli(b, r.Dir, "show", "--stat", "HEAD") })
		})
	}
}

// BenchmarkCommitDetails_Scale_vs_CLI is commit_details beside `git show
// --stat` and repo_brief beside `git status`, in the same run, in
// repositories of 1,000, 20,000 and 100,000 files (200 commits, the newest
// changing 3 files) with 0, 1,000 and 10,000 loose refs under
// refs/sluice/ (Sluice keeps one per proposal), none of them naming
// anything the person asked about.
func BenchmarkCommitDetails_Scale_vs_CLI(b *testing.B) {
	for _, files := range []int{1_000, 20_000, 100_000} {
		dir := gitxtest.LargeRepo(b, gitxtest.Large{Files: files, Commits: 200})
		for _, refs := range []int{0, 1_000, 10_000} {
			sluiceRefs(b, dir, refs)
			run, err := NewRunner(RunnerOptions{})
			if err != nil {
				b.Fatal(err)
			}
			repo, err := run.Open(context.Background(), Roots{dir}, dir)
			if err != nil {
				b.Fatal(err)
			}
			name := fmt.Sprintf("files=%d/refs=%d", files, refs)
			b.Run(name+"/commit_details", func(b *testing.B) {
				compare(b, func() {
					if _, err := repo.CommitDetails(context.Background(), "HEAD", 0); err != nil {
						b.Fatal(err)
					}
				}, func() { cli(b, dir, "show", "--stat", "HEAD") })
			})
			b.Run(name+"/repo_brief", func(b *testing.B) {
				compare(b, func() {
					if _, err := repo.Brief(context.Background()); err != nil {
						b.Fatal(err)
					}
				}, func() { cli(b, dir, "status") })
			})
		}
		// The generated repository is shared by later runs: it keeps none.
		sluiceRefs(b, dir, 0)
	}
}

// sluiceRefs leaves exactly n loose refs under refs/sluice/sealed/ in dir,
// all at HEAD.
func sluiceRefs(b *testing.B, dir string, n int) {
	b.Helper()
	var del, add strings.Builder
	for _, ref := range strings.Fields(gitxtest.Git(b, dir, "for-each-ref", "--format=%(refname)", "refs/sluice/")) {
		fmt.Fprintf(&del, "delete %s\n", ref)
	}
	head := gitxtest.Git(b, dir, "rev-parse", "HEAD")
	for i := range n {
		fmt.Fprintf(&add, "create refs/sluice/sealed/p%05d %s\n", i, head)
	}
	// A ref may be named once per transaction: deletes, then creates.
	for _, in := range []string{del.String(), add.String()} {
		c := exec.Command("git", "update-ref", "--stdin")
		c.Dir, c.Stdin = dir, strings.NewReader(in)
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("update-ref: %v\n%s", err, out)
		}
	}
}
