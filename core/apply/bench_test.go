package apply

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/proposal"
)

// The benchmarks compare an approved proposal, executed with everything
// Sluice adds (digest and pin checks, journal transitions, restore point
// before and end state after, compare-and-swap), with a person doing the
// same by hand with the git CLI, in the same run on the same disk: each
// round runs both sides, in alternating order, so that whatever the
// shared disk does at a moment weighs on both alike.
//
//	go test -run '^$' -bench 'Patch1000|Merge500' -benchtime 20x ./core/apply/
//
// ns/op is Sluice's mean; git-ns/op the person's; x-git the ratio of the
// two, and x-git-p50 the ratio of the medians.

const benchFiles = 1000

// benchFixture is a fixture whose repository has benchFiles files of 20
// lines on main, built with git fast-import.
func benchFixture(b *testing.B, featureCommits int) *fixture {
	b.Helper()
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	r := gitxtest.InitAt(b, filepath.Join(root, "repo"))
	var in bytes.Buffer
	when := 1_700_000_000
	commit := func(ref, msg string, from string, files map[string]string) {
		when += 60
		fmt.Fprintf(&in, "commit %s\ncommitter Pat Person <pat@example.com> %d +0000\ndata %d\n%s\n", ref, when, len(msg), msg)
		if from != "" {
			fmt.Fprintf(&in, "from %s\n", from)
		}
		for p, c := range files {
			fmt.Fprintf(&in, "M 100644 inline %s\ndata %d\n%s\n", p, len(c), c)
		}
	}
	base := map[string]string{}
	for i := range benchFiles {
		base[benchPath(i)] = benchContent(i, "")
	}
	commit("refs/heads/main", "base", "", base)
	fmt.Fprintf(&in, "reset refs/tags/base\nfrom refs/heads/main\n\n")
	if featureCommits > 0 {
		fmt.Fprintf(&in, "reset refs/heads/feature\nfrom refs/tags/base\n\n")
		for i := range featureCommits {
			commit("refs/heads/feature", fmt.Sprintf("feature step %d", i), "", map[string]string{
				fmt.Sprintf("feature/f%03d.txt", i): fmt.Sprintf("feature file %d\n", i),
				benchPath(i * 2 % benchFiles):       benchContent(i*2%benchFiles, fmt.Sprintf("feature %d", i)),
			})
		}
		commit("refs/heads/main", "main moves on", "", map[string]string{"main-only.txt": "main\n"})
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

func benchPath(i int) string { return fmt.Sprintf("src/pkg%02d/file%04d.txt", i%50, i) }

func benchContent(i int, changed string) string {
	var s strings.Builder
	for l := range 20 {
		if l == 10 && changed != "" {
			s.WriteString(changed + "\n")
			continue
		}
		fmt.Fprintf(&s, "file %d line %d\n", i, l)
	}
	return s.String()
}

// patch1000 changes one line in every file. Each round's content is new
// (round numbers are never reused), so that neither side finds its blobs
// already written.
func patch1000(iter int) string {
	var p strings.Builder
	for i := range benchFiles {
		path := benchPath(i)
		fmt.Fprintf(&p, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -9,5 +9,5 @@\n", path, path, path, path)
		for l := 8; l < 13; l++ {
			if l == 10 {
				fmt.Fprintf(&p, "-file %d line %d\n+patched %d in round %d\n", i, l, i, iter)
				continue
			}
			fmt.Fprintf(&p, " file %d line %d\n", i, l)
		}
	}
	return p.String()
}

// resetBench puts the repository back at its start between iterations
// (not measured): main at start, a clean checkout, no restore points; then
// it flushes the files it wrote to disk, so that each side starts its
// round on a settled disk rather than paying for the reset's writeback.
func resetBench(b *testing.B, f *fixture, start string) {
	b.Helper()
	f.git("reset", "-q", "--hard", start)
	f.git("clean", "-q", "-fd")
	refs := f.git("for-each-ref", "--format=delete %(refname)", "refs/sluice/")
	if refs != "" {
		cmd := exec.Command("git", "update-ref", "--stdin")
		cmd.Dir = f.repo.Dir
		cmd.Stdin = strings.NewReader(refs + "\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
	syscall.Sync()
}

// personGit runs git as the person would at their terminal: their own
// configuration (the test HOME), nothing else.
func personGit(b *testing.B, dir string, stdin []byte, args ...string) {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+personHome)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v: %s", args, err, out)
	}
}

// BenchmarkVsGit_Patch1000: an approved 1,000-file patch, then an
// approved commit of it, against git apply, git add -A and git commit.
func BenchmarkVsGit_Patch1000(b *testing.B) {
	sl, cli := benchFixture(b, 0), benchFixture(b, 0)
	slStart, cliStart := sl.git("rev-parse", "main"), cli.git("rev-parse", "main")
	sluice := func(i int) time.Duration {
		resetBench(b, sl, slStart)
		apply := sl.propose(&proposal.PatchArgs{Patch: patch1000(i), Target: proposal.PatchWorktree})
		start := time.Now()
		sl.mustComplete(apply)
		took := time.Since(start)
		commit := sl.propose(&proposal.CommitArgs{Message: "Apply the patch", StageAll: true})
		start = time.Now()
		sl.mustComplete(commit)
		return took + time.Since(start)
	}
	person := func(i int) time.Duration {
		resetBench(b, cli, cliStart)
		patch := []byte(patch1000(i))
		start := time.Now()
		personGit(b, cli.repo.Dir, patch, "apply")
		personGit(b, cli.repo.Dir, nil, "add", "-A")
		personGit(b, cli.repo.Dir, nil, "commit", "-q", "-m", "Apply the patch")
		return time.Since(start)
	}
	pairRounds(b, sluice, person)
}

// BenchmarkVsGit_Merge500: an approved merge of a 500-commit branch into
// the checked-out main (a real merge: both sides moved), against git
// merge in the checkout.
func BenchmarkVsGit_Merge500(b *testing.B) {
	sl, cli := benchFixture(b, 500), benchFixture(b, 500)
	slStart, cliStart := sl.git("rev-parse", "main"), cli.git("rev-parse", "main")
	sluice := func(int) time.Duration {
		resetBench(b, sl, slStart)
		rec := sl.propose(&proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit})
		start := time.Now()
		sl.mustComplete(rec)
		return time.Since(start)
	}
	person := func(int) time.Duration {
		resetBench(b, cli, cliStart)
		start := time.Now()
		personGit(b, cli.repo.Dir, nil, "merge", "-q", "--no-edit", "feature")
		return time.Since(start)
	}
	pairRounds(b, sluice, person)
}

// pairRounds runs both sides in alternating rounds after three unmeasured
// warm-up rounds each (the first rounds on a fresh repository pay for its
// object directories and a cold page cache), and reports Sluice's mean as
// ns/op, the person's as git-ns/op, and the ratios of the means and of the
// medians. Each side times only its own work: resetting the repository
// and submitting the proposal are not measured.
func pairRounds(b *testing.B, sluice, person func(round int) time.Duration) {
	s, p := gitxtest.Pair(b, 3, sluice, person)
	b.ReportMetric(float64(s.Mean()), "ns/op")
	b.ReportMetric(float64(p.Mean()), "git-ns/op")
	b.ReportMetric(gitxtest.Ratio(s, p), "x-git")
	b.ReportMetric(float64(s.Median())/float64(p.Median()), "x-git-p50")
}

// BenchmarkVsGit_Seal1000: sealing a commit of 1,000 changed files when
// it is proposed (the outcome's tree, every file's change with its size,
// the filter check) against a person staging and writing the same tree by
// hand: git add -A and git write-tree. Each round writes new content into
// every file first (not timed), so neither side finds its blobs written.
func BenchmarkVsGit_Seal1000(b *testing.B) {
	sl, cli := benchFixture(b, 0), benchFixture(b, 0)
	slStart, cliStart := sl.git("rev-parse", "main"), cli.git("rev-parse", "main")
	touch := func(f *fixture, round int) {
		for i := range benchFiles {
			p := filepath.Join(f.repo.Dir, filepath.FromSlash(benchPath(i)))
			if err := os.WriteFile(p, []byte(benchContent(i, fmt.Sprintf("sealed %d in round %d", i, round))), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		syscall.Sync()
	}
	sluice := func(i int) time.Duration {
		resetBench(b, sl, slStart)
		touch(sl, i)
		p := sl.newProposal(sl.repo.Dir, &proposal.CommitArgs{Message: "Seal", StageAll: true})
		start := time.Now()
		s, err := sl.e.Seal(testCtx(b), p)
		took := time.Since(start)
		if err != nil || len(s.Files) != benchFiles {
			b.Fatalf("seal: %v (%d files)", err, len(s.Files))
		}
		return took
	}
	person := func(i int) time.Duration {
		resetBench(b, cli, cliStart)
		touch(cli, i)
		start := time.Now()
		personGit(b, cli.repo.Dir, nil, "add", "-A")
		personGit(b, cli.repo.Dir, nil, "write-tree")
		return time.Since(start)
	}
	pairRounds(b, sluice, person)
}
