package apply

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/proposal"
)

// scaleEdit writes scaleChanged files of a scaleFixture of n files with
// content new in each round, and returns their paths.
func scaleEdit(f *fixture, n, round int) []string {
	paths := make([]string, 0, scaleChanged)
	for j := range scaleChanged {
		i := j*(n/scaleChanged) + 1
		f.repo.Write(scalePath(i), benchContent(i, fmt.Sprintf("edited %d in round %d", i, round)))
		paths = append(paths, scalePath(i))
	}
	return paths
}

// BenchmarkPathsAtScale runs, at each size of BenchmarkScale, in one pair
// of repositories (one for Sluice, one for the person), with 10 files
// edited on disk, an approved commit and an approved discard of those
// named paths and the restore of each:
//
//	go test -run '^$' -bench 'BenchmarkPathsAtScale' -benchtime 3x ./core/apply/
//
// Commit10 is approve → completed through Execute against git commit --
// paths; RestoreCommit10 restoring that commit's restore point against
// git reset HEAD~1 (the branch and the index back, files as they are);
// Discard10 against git restore --staged --worktree -- paths;
// RestoreDiscard10 (the edits back) against git stash pop after git stash
// push -- paths.
func BenchmarkPathsAtScale(b *testing.B) {
	for _, n := range scaleSizes {
		sl, cli := scaleFixture(b, n, false), scaleFixture(b, n, false)
		slStart, cliStart := sl.git("rev-parse", "main"), cli.git("rev-parse", "main")
		run := func(name string, sluice, person func(b *testing.B) func(int) time.Duration) {
			runScale(b, n, name, sl, cli, sluice, person)
		}
		restore := func(b *testing.B, id string) {
			if _, err := sl.e.Restore(testCtx(b), sl.repo.Dir, id, false); err != nil {
				b.Fatalf("restore: %v", err)
			}
		}
		commit := func(i int) *proposal.CommitArgs {
			return &proposal.CommitArgs{Message: fmt.Sprintf("round %d", i), Paths: scaleEdit(sl, n, i)}
		}
		discard := func(i int) *proposal.DiscardArgs {
			return &proposal.DiscardArgs{Paths: scaleEdit(sl, n, i)}
		}
		personCommit := func(b *testing.B, i int) {
			args := append([]string{"commit", "-q", "-m", fmt.Sprintf("round %d", i), "--"}, scaleEdit(cli, n, i)...)
			personGit(b, cli.repo.Dir, nil, args...)
		}
		run("Commit10", func(b *testing.B) func(int) time.Duration {
			return func(i int) time.Duration {
				resetBench(b, sl, slStart)
				rec := sl.propose(commit(i))
				start := time.Now()
				sl.mustComplete(rec)
				return time.Since(start)
			}
		}, func(b *testing.B) func(int) time.Duration {
			return func(i int) time.Duration {
				resetBench(b, cli, cliStart)
				start := time.Now()
				personCommit(b, i)
				return time.Since(start)
			}
		})
		run("RestoreCommit10", func(b *testing.B) func(int) time.Duration {
			return func(i int) time.Duration {
				resetBench(b, sl, slStart)
				done := sl.mustComplete(sl.propose(commit(i)))
				start := time.Now()
				restore(b, done.Outcome.RestorePoint)
				return time.Since(start)
			}
		}, func(b *testing.B) func(int) time.Duration {
			return func(i int) time.Duration {
				resetBench(b, cli, cliStart)
				personCommit(b, i)
				start := time.Now()
				personGit(b, cli.repo.Dir, nil, "reset", "-q", "HEAD~1")
				return time.Since(start)
			}
		})
		run("Discard10", func(b *testing.B) func(int) time.Duration {
			return func(i int) time.Duration {
				resetBench(b, sl, slStart)
				rec := sl.propose(discard(i))
				start := time.Now()
				sl.mustComplete(rec)
				return time.Since(start)
			}
		}, func(b *testing.B) func(int) time.Duration {
			return func(i int) time.Duration {
				resetBench(b, cli, cliStart)
				args := append([]string{"restore", "--staged", "--worktree", "--"}, scaleEdit(cli, n, i)...)
				start := time.Now()
				personGit(b, cli.repo.Dir, nil, args...)
				return time.Since(start)
			}
		})
		run("RestoreDiscard10", func(b *testing.B) func(int) time.Duration {
			return func(i int) time.Duration {
				resetBench(b, sl, slStart)
				done := sl.mustComplete(sl.propose(discard(i)))
				start := time.Now()
				restore(b, done.Outcome.RestorePoint)
				return time.Since(start)
			}
		}, func(b *testing.B) func(int) time.Duration {
			return func(i int) time.Duration {
				resetBench(b, cli, cliStart)
				args := append([]string{"stash", "push", "-q", "--"}, scaleEdit(cli, n, i)...)
				personGit(b, cli.repo.Dir, nil, args...)
				start := time.Now()
				personGit(b, cli.repo.Dir, nil, "stash", "pop", "-q")
				return time.Since(start)
			}
		})
		os.RemoveAll(sl.root)
		os.RemoveAll(cli.root)
	}
}
