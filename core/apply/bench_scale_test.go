package apply

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/proposal"
)

// The scaling benchmarks run the same small change (10 files) in
// repositories of 1,000, 20,000 and 100,000 files, each against the git
// command a person would use, in the same run: an execution and a restore
// should cost what the change touches, not what is around it.
//
//	go test -run '^$' -bench 'BenchmarkScale' -benchtime 3x ./core/apply/
//
// ns/op is Sluice's mean, git-ns/op the person's, x-git their ratio.

var scaleSizes = []int{1_000, 20_000, 100_000}

// scaleChanged is how many files the change touches.
const scaleChanged = 10

func scalePath(i int) string { return fmt.Sprintf("src/d%03d/f%06d.txt", i%500, i) }

// scaleFixture is a fixture whose main has n files of 20 lines, built
// with git fast-import; with merge, a branch feature from the same base
// changes scaleChanged files and adds as many, and main moves on by one
// commit of its own, so that merging feature into main is a real merge.
func scaleFixture(b testing.TB, n int, merge bool) *fixture {
	b.Helper()
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	r := gitxtest.InitAt(b, filepath.Join(root, "repo"))
	var in bytes.Buffer
	when := 1_700_000_000
	commit := func(ref, msg string, files map[string]string) {
		when += 60
		fmt.Fprintf(&in, "commit %s\ncommitter Pat Person <pat@example.com> %d +0000\ndata %d\n%s\n", ref, when, len(msg), msg)
		for p, c := range files {
			fmt.Fprintf(&in, "M 100644 inline %s\ndata %d\n%s\n", p, len(c), c)
		}
	}
	base := make(map[string]string, n)
	for i := range n {
		base[scalePath(i)] = benchContent(i, "")
	}
	commit("refs/heads/main", "base", base)
	if merge {
		fmt.Fprintf(&in, "reset refs/heads/feature\nfrom refs/heads/main\n\n")
		for i := range scaleChanged {
			k := i * (n / scaleChanged)
			commit("refs/heads/feature", fmt.Sprintf("feature step %d", i), map[string]string{
				fmt.Sprintf("feature/f%03d.txt", i): fmt.Sprintf("feature file %d\n", i),
				scalePath(k):                        benchContent(k, fmt.Sprintf("feature %d", i)),
			})
		}
		commit("refs/heads/main", "main moves on", map[string]string{"main-only.txt": "main\n"})
	}
	in.WriteString("done\n")
	cmd := exec.Command("git", "fast-import", "--quiet", "--done")
	cmd.Dir = r.Dir
	cmd.Stdin = &in
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("fast-import: %v: %s", err, out)
	}
	r.Git("reset", "-q", "--hard", "main")
	f := &fixture{t: b, root: root, repo: r}
	f.open(filepath.Join(b.TempDir(), "journal.db"), filepath.Join(b.TempDir(), "audit.jsonl"))
	return f
}

// scalePatch changes one line in scaleChanged files spread over the
// repository; round makes each round's content new.
func scalePatch(n, round int) string {
	var p strings.Builder
	for j := range scaleChanged {
		i := j*(n/scaleChanged) + 1
		path := scalePath(i)
		fmt.Fprintf(&p, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -9,5 +9,5 @@\n", path, path, path, path)
		for l := 8; l < 13; l++ {
			if l == 10 {
				fmt.Fprintf(&p, "-file %d line %d\n+patched %d in round %d\n", i, l, i, round)
				continue
			}
			fmt.Fprintf(&p, " file %d line %d\n", i, l)
		}
	}
	return p.String()
}

// BenchmarkScale runs, at each size, in one pair of repositories (one
// for Sluice, one for the person; main checked out, a branch feature to
// merge):
//
//   - Patch10: an approved 10-file patch to the working tree, approve →
//     completed through Execute, against git apply;
//   - RestorePatch10: restoring that patch's restore point, against git
//     reset --hard after git apply;
//   - RestoreMerge: restoring the restore point of an approved merge of
//     feature (10 commits, 20 files) into main, against git reset --hard
//     ORIG_HEAD after git merge;
//   - PatchIndex10: the 10-file patch applied to the index, against git
//     apply --cached; RestorePatchIndex10 restoring it, against git reset
//     -q (the index back to HEAD, files as they are);
//   - ResetMixed: an approved mixed reset of main's last commit, against
//     git reset --mixed HEAD~1; RestoreResetMixed restoring it, against
//     git reset --mixed back to where main was.
func BenchmarkScale(b *testing.B) {
	for _, n := range scaleSizes {
		sl, cli := scaleFixture(b, n, true), scaleFixture(b, n, true)
		slStart, cliStart := sl.git("rev-parse", "main"), cli.git("rev-parse", "main")
		run := func(name string, sluice, person func(b *testing.B) func(int) time.Duration) {
			runScale(b, n, name, sl, cli, sluice, person)
		}
		patch := func(i int) *proposal.PatchArgs {
			return &proposal.PatchArgs{Patch: scalePatch(n, i), Target: proposal.PatchWorktree}
		}
		run("Patch10", func(b *testing.B) func(int) time.Duration {
			return func(i int) time.Duration {
				resetBench(b, sl, slStart)
				rec := sl.propose(patch(i))
				start := time.Now()
				sl.mustComplete(rec)
				return time.Since(start)
			}
		}, func(b *testing.B) func(int) time.Duration {
			return func(i int) time.Duration {
				resetBench(b, cli, cliStart)
				p := []byte(scalePatch(n, i))
				start := time.Now()
				personGit(b, cli.repo.Dir, p, "apply")
				return time.Since(start)
			}
		})
		run("RestorePatch10", func(b *testing.B) func(int) time.Duration {
			return func(i int) time.Duration {
				resetBench(b, sl, slStart)
				done := sl.mustComplete(sl.propose(patch(i)))
				start := time.Now()
				if _, err := sl.e.Restore(testCtx(b), sl.repo.Dir, done.Outcome.RestorePoint, false); err != nil {
					b.Fatalf("restore: %v", err)
				}
				return time.Since(start)
			}
		}, func(b *testing.B) func(int) time.Duration {
			return func(i int) time.Duration {
				resetBench(b, cli, cliStart)
				personGit(b, cli.repo.Dir, []byte(scalePatch(n, i)), "apply")
				start := time.Now()
				personGit(b, cli.repo.Dir, nil, "reset", "-q", "--hard")
				return time.Since(start)
			}
		})
		run("RestoreMerge", func(b *testing.B) func(int) time.Duration {
			return func(int) time.Duration {
				resetBench(b, sl, slStart)
				done := sl.mustComplete(sl.propose(&proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit}))
				start := time.Now()
				if _, err := sl.e.Restore(testCtx(b), sl.repo.Dir, done.Outcome.RestorePoint, false); err != nil {
					b.Fatalf("restore: %v", err)
				}
				return time.Since(start)
			}
		}, func(b *testing.B) func(int) time.Duration {
			return func(int) time.Duration {
				resetBench(b, cli, cliStart)
				personGit(b, cli.repo.Dir, nil, "merge", "-q", "--no-edit", "feature")
				start := time.Now()
				personGit(b, cli.repo.Dir, nil, "reset", "-q", "--hard", "ORIG_HEAD")
				return time.Since(start)
			}
		})
		patchIndex := func(i int) *proposal.PatchArgs {
			return &proposal.PatchArgs{Patch: scalePatch(n, i), Target: proposal.PatchIndex}
		}
		restore := func(b *testing.B, id string) {
			if _, err := sl.e.Restore(testCtx(b), sl.repo.Dir, id, false); err != nil {
				b.Fatalf("restore: %v", err)
			}
		}
		run("PatchIndex10", func(b *testing.B) func(int) time.Duration {
			return func(i int) time.Duration {
				resetBench(b, sl, slStart)
				rec := sl.propose(patchIndex(i))
				start := time.Now()
				sl.mustComplete(rec)
				return time.Since(start)
			}
		}, func(b *testing.B) func(int) time.Duration {
			return func(i int) time.Duration {
				resetBench(b, cli, cliStart)
				p := []byte(scalePatch(n, i))
				start := time.Now()
				personGit(b, cli.repo.Dir, p, "apply", "--cached")
				return time.Since(start)
			}
		})
		run("RestorePatchIndex10", func(b *testing.B) func(int) time.Duration {
			return func(i int) time.Duration {
				resetBench(b, sl, slStart)
				done := sl.mustComplete(sl.propose(patchIndex(i)))
				start := time.Now()
				restore(b, done.Outcome.RestorePoint)
				return time.Since(start)
			}
		}, func(b *testing.B) func(int) time.Duration {
			return func(i int) time.Duration {
				resetBench(b, cli, cliStart)
				personGit(b, cli.repo.Dir, []byte(scalePatch(n, i)), "apply", "--cached")
				start := time.Now()
				personGit(b, cli.repo.Dir, nil, "reset", "-q")
				return time.Since(start)
			}
		})
		run("ResetMixed", func(b *testing.B) func(int) time.Duration {
			return func(int) time.Duration {
				resetBench(b, sl, slStart)
				rec := sl.propose(&proposal.ResetArgs{Mode: proposal.ResetMixed, Target: "HEAD~1"})
				start := time.Now()
				sl.mustComplete(rec)
				return time.Since(start)
			}
		}, func(b *testing.B) func(int) time.Duration {
			return func(int) time.Duration {
				resetBench(b, cli, cliStart)
				start := time.Now()
				personGit(b, cli.repo.Dir, nil, "reset", "-q", "--mixed", "HEAD~1")
				return time.Since(start)
			}
		})
		run("RestoreResetMixed", func(b *testing.B) func(int) time.Duration {
			return func(int) time.Duration {
				resetBench(b, sl, slStart)
				done := sl.mustComplete(sl.propose(&proposal.ResetArgs{Mode: proposal.ResetMixed, Target: "HEAD~1"}))
				start := time.Now()
				restore(b, done.Outcome.RestorePoint)
				return time.Since(start)
			}
		}, func(b *testing.B) func(int) time.Duration {
			return func(int) time.Duration {
				resetBench(b, cli, cliStart)
				personGit(b, cli.repo.Dir, nil, "reset", "-q", "--mixed", "HEAD~1")
				start := time.Now()
				personGit(b, cli.repo.Dir, nil, "reset", "-q", "--mixed", cliStart)
				return time.Since(start)
			}
		})
		// The next size's repositories need the disk more than these.
		os.RemoveAll(sl.root)
		os.RemoveAll(cli.root)
	}
}

// runScale runs one sub-benchmark at one size: Sluice's path (sl) against
// the person's git (cli), side by side with one warm-up round (the
// repositories are the size's own, already read by the sub-benchmarks
// before); each sub-benchmark fails through its own b.
func runScale(b *testing.B, n int, name string, sl, cli *fixture, sluice, person func(b *testing.B) func(int) time.Duration) {
	b.Run(fmt.Sprintf("files=%d/%s", n, name), func(b *testing.B) {
		sl.t, cli.t = b, b
		s, p := gitxtest.Pair(b, 1, sluice(b), person(b))
		b.ReportMetric(float64(s.Mean()), "ns/op")
		b.ReportMetric(float64(p.Mean()), "git-ns/op")
		b.ReportMetric(gitxtest.Ratio(s, p), "x-git")
		b.ReportMetric(float64(s.Median())/float64(p.Median()), "x-git-p50")
	})
}
