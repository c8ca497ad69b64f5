package app

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// BenchmarkAgent_StageAll1000_vs_Git is the agent's call for a commit of
// 1,000 changed files as the agent sees it: propose_commit with stageAll
// through the real sidecar binary, the gateway, the seal, the journal and
// the collision check, until the call returns the pending proposal. It
// runs beside a person's `git add -A` and `git write-tree` with the git CLI
// on a copy of the same repository, in alternating rounds of the same run.
// Each round first writes new content into all 1,000 files of both
// repositories (not timed), so neither side finds its blobs written. A
// round whose seal outlasts the sidecar's wait (answered "sealing") lasts
// until proposal_wait finds the proposal pending, as the agent's would.
//
//	go test -run '^$' -bench 'Agent_StageAll1000' -benchtime 10x ./app/
func BenchmarkAgent_StageAll1000_vs_Git(b *testing.B) { agentStageAll(b, 1000) }

// BenchmarkAgent_StageAll10_vs_Git and BenchmarkAgent_StageAll20000_vs_Git
// are the same call for a commit of 10 and of 20,000 files.
func BenchmarkAgent_StageAll10_vs_Git(b *testing.B)    { agentStageAll(b, 10) }
func BenchmarkAgent_StageAll20000_vs_Git(b *testing.B) { agentStageAll(b, 20000) }

func agentStageAll(b *testing.B, n int) {
	_, repo, env := flowEnv(b)
	path := func(i int) string { return fmt.Sprintf("src/pkg%02d/file%04d.go", i%50, i) }
	write := func(dir string, round int) {
		for i := range n {
			p := filepath.Join(dir, filepath.FromSlash(path(i)))
			os.MkdirAll(filepath.Dir(p), 0o755)
			body := fmt.Sprintf("package pkg%02d\n\n// File %d, round %d.\nfunc F%d() int { return %d }\n", i%50, i, round, i, round)
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	git := func(dir string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	// The files are committed first; every round changes them all.
	write(repo, -1000)
	git(repo, "add", "-A")
	git(repo, "commit", "-q", "-m", fmt.Sprintf("%d files", n))
	byHand := filepath.Join(b.TempDir(), "by-hand")
	git(filepath.Dir(byHand), "clone", "-q", repo, byHand)

	cs := agentSession(b, env, "claude-code")
	sealing := 0
	sluice := func(round int) time.Duration {
		write(repo, round)
		syscall.Sync()
		start := time.Now()
		out, isErr := callTool(b, cs, "propose_commit", map[string]any{
			"repoPath": repo, "reason": "Rename across the tree", "message": "Rename across the tree", "stageAll": true,
		})
		if !isErr && out["status"] == "sealing" {
			// The seal outlasted the sidecar's wait (a loaded machine, a
			// large change): the agent follows it to its card, and so
			// does the round.
			sealing++
			for !isErr && out["status"] == "sealing" {
				out, isErr = callTool(b, cs, "proposal_wait", map[string]any{"proposalId": out["proposalId"], "timeoutSeconds": 5})
			}
		}
		took := time.Since(start)
		if isErr || out["status"] != "pending" {
			b.Fatalf("propose_commit: %v", out)
		}
		if _, isErr := callTool(b, cs, "proposal_cancel", map[string]any{"proposalId": out["proposalId"]}); isErr {
			b.Fatal("proposal_cancel failed")
		}
		return took
	}
	person := func(round int) time.Duration {
		git(byHand, "read-tree", "HEAD")
		write(byHand, round)
		syscall.Sync()
		start := time.Now()
		git(byHand, "add", "-A")
		git(byHand, "write-tree")
		return time.Since(start)
	}
	s, p := gitxtest.Pair(b, 1, sluice, person)
	b.ReportMetric(float64(s.Mean()), "ns/op")
	b.ReportMetric(gitxtest.Ms(s.Median()), "sluice-p50-ms")
	b.ReportMetric(gitxtest.Ms(p.Median()), "git-p50-ms")
	b.ReportMetric(gitxtest.Ratio(s, p), "x-git")
	b.ReportMetric(float64(s.Median())/float64(p.Median()), "x-git-p50")
	if sealing > 0 {
		b.ReportMetric(float64(sealing), "rounds-answered-sealing")
	}
}
