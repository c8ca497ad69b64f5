package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// The sidecar benchmarks measure what an agent experiences: a real
// sluice-sidecar process over stdio, driven by the go-sdk client, on the
// generated repository (gitxtest.LargeDefault).

// benchEnv is an isolated environment whose allowed root is root.
func benchEnv(b *testing.B, root string) []string {
	b.Helper()
	dir := b.TempDir()
	return []string{
		"HOME=" + dir,
		"PATH=" + os.Getenv("PATH"),
		"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"XDG_STATE_HOME=" + filepath.Join(dir, "state"),
		"SLUICE_ALLOWED_ROOTS=" + root,
	}
}

func startSidecar(b *testing.B, env []string, args ...string) (*mcp.ClientSession, *exec.Cmd) {
	b.Helper()
	cmd := exec.Command(sidecarBinary(b), args...)
	cmd.Env = env
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return cs, cmd
}

// rawBriefCommands are the git commands repo_brief replaces, run one after
// the other as an agent with a shell would.
var rawBriefCommands = [][]string{
	{"status"},
	{"log", "-n", "50", "--format=%h %an %ar %s"},
	{"branch", "-vv"},
	{"stash", "list"},
	{"submodule", "status"},
	{"rev-list", "--left-right", "--count", "@{upstream}...HEAD"},
	{"symbolic-ref", "--short", "refs/remotes/origin/HEAD"},
}

// BenchmarkRepoBrief_Stdio_vs_RawGit: one repo_brief tools/call round trip
// over stdio against the raw command sequence, in the same run; plus the
// size of each in tokens (bytes/4).
func BenchmarkRepoBrief_Stdio_vs_RawGit(b *testing.B) {
	repo := gitxtest.LargeRepo(b, gitxtest.LargeDefault)
	cs, _ := startSidecar(b, benchEnv(b, repo), "--toolsets", "git,fleet,safety")
	defer cs.Close()
	ctx := context.Background()
	var briefBytes, rawBytes int
	brief := func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "repo_brief", Arguments: map[string]any{"repoPath": repo}})
		if err != nil || res.IsError {
			b.Fatalf("repo_brief: %v %+v", err, res)
		}
		j, _ := json.Marshal(res.StructuredContent)
		briefBytes = len(j)
	}
	raw := func() {
		rawBytes = 0
		for _, args := range rawBriefCommands {
			c := exec.Command("git", args...)
			c.Dir = repo
			var out bytes.Buffer
			c.Stdout = &out
			if err := c.Run(); err != nil {
				b.Fatalf("git %v: %v", args, err)
			}
			rawBytes += out.Len()
		}
	}
	tb, tr := gitxtest.Pair(b, 1, gitxtest.Timed(brief), gitxtest.Timed(raw))
	b.ReportMetric(float64(tb.Mean()), "ns/op")
	b.ReportMetric(gitxtest.Ms(tb.Mean()), "brief-ms/op")
	b.ReportMetric(gitxtest.Ms(tr.Mean()), "raw-ms/op")
	b.ReportMetric(gitxtest.Ratio(tb, tr), "time-ratio")
	b.ReportMetric(float64(briefBytes/4), "brief-tokens")
	b.ReportMetric(float64(rawBytes/4), "raw-tokens")
	b.ReportMetric(float64(briefBytes)/float64(rawBytes), "token-ratio")
}

// BenchmarkSidecar_StartToInitialize: process start until the initialize
// answer (the go-sdk client's Connect returns after it).
func BenchmarkSidecar_StartToInitialize(b *testing.B) {
	env := benchEnv(b, b.TempDir())
	sidecarBinary(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cs, _ := startSidecar(b, env)
		b.StopTimer()
		cs.Close()
		b.StartTimer()
	}
}

// BenchmarkSidecar_StartToToolsList: process start until the tools/list
// answer, the first thing every client asks after initialize.
func BenchmarkSidecar_StartToToolsList(b *testing.B) {
	env := benchEnv(b, b.TempDir())
	sidecarBinary(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cs, _ := startSidecar(b, env)
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cs.Close()
		b.StartTimer()
	}
}

// BenchmarkSidecar_IdleRSS: resident memory of an initialised sidecar
// with every default toolset, after one repo_brief, idle for two seconds
// (a session gives unused memory back after one: idleTrimAfter). It is
// what an agent gets when it starts sluice-sidecar: the process that
// sluice-sidecar-stdio replaced it with, installed beside it by make build
// (the bench fails when it is missing or the process does not run it).
func BenchmarkSidecar_IdleRSS(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	repo := gitxtest.LargeRepo(b, gitxtest.LargeDefault)
	// Beside sluice-sidecar as the exec finds it: after symlinks, which
	// /proc/PID/exe shows resolved too.
	bin, err := filepath.EvalSymlinks(sidecarBinary(b))
	if err != nil {
		b.Fatal(err)
	}
	serving, err := filepath.EvalSymlinks(filepath.Join(filepath.Dir(bin), ServingBinary))
	if err != nil {
		b.Fatalf("no %s beside %s (make build installs both): %v", ServingBinary, bin, err)
	}
	var total float64
	for i := 0; i < b.N; i++ {
		cs, cmd := startSidecar(b, benchEnv(b, repo))
		if exe, err := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe"); err != nil || exe != serving {
			b.Fatalf("sluice-sidecar runs %s (%v), not %s beside it (both from one make build?)", exe, err, serving)
		}
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "repo_brief", Arguments: map[string]any{"repoPath": repo}}); err != nil {
			b.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		total += vmRSSMiB(b, cmd.Process.Pid)
		cs.Close()
	}
	b.ReportMetric(total/float64(b.N), "idle-RSS-MiB")
}

func vmRSSMiB(b *testing.B, pid int) float64 {
	b.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			kb, _ := strconv.ParseFloat(f[0], 64)
			return kb / 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// BenchmarkCommitDetails_Scale_Stdio_vs_CLI is the path an agent takes:
// commit_details of HEAD as one tools/call round trip to a real sidecar
// over stdio beside `git show --stat HEAD`, and repo_brief beside `git
// status`, in the same run, in repositories of 1,000, 20,000 and 100,000
// files (200 commits, the newest changing 3 files) with 0, 1,000 and
// 10,000 loose refs under refs/sluice/ (Sluice keeps one per proposal),
// none of them naming anything the person asked about. Each size and refs
// count gets a sidecar of its own, as an agent's session would.
func BenchmarkCommitDetails_Scale_Stdio_vs_CLI(b *testing.B) {
	for _, files := range []int{1_000, 20_000, 100_000} {
		dir := gitxtest.LargeRepo(b, gitxtest.Large{Files: files, Commits: 200})
		for _, refs := range []int{0, 1_000, 10_000} {
			sluiceRefs(b, dir, refs)
			cs, _ := startSidecar(b, benchEnv(b, dir), "--toolsets", "git")
			call := func(tool string) func() {
				return func() {
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"repoPath": dir, "rev": "HEAD"}})
					if err != nil || res.IsError {
						b.Fatalf("%s: %v %+v", tool, err, res)
					}
				}
			}
			brief := func() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "repo_brief", Arguments: map[string]any{"repoPath": dir}})
				if err != nil || res.IsError {
					b.Fatalf("repo_brief: %v %+v", err, res)
				}
			}
			name := fmt.Sprintf("files=%d/refs=%d", files, refs)
			b.Run(name+"/commit_details", func(b *testing.B) {
				compareCLI(b, call("commit_details"), func() { gitCLI(b, dir, "show", "--stat", "HEAD") })
			})
			b.Run(name+"/repo_brief", func(b *testing.B) {
				compareCLI(b, brief, func() { gitCLI(b, dir, "status") })
			})
			cs.Close()
		}
		// The generated repository is shared by later runs: it keeps none.
		sluiceRefs(b, dir, 0)
	}
}

// compareCLI times the sidecar's call and git's command in alternating
// rounds (gitxtest.Pair) and reports both and their ratios.
func compareCLI(b *testing.B, sluice, git func()) {
	b.Helper()
	ts, tg := gitxtest.Pair(b, 1, gitxtest.Timed(sluice), gitxtest.Timed(git))
	b.ReportMetric(float64(ts.Mean()), "ns/op")
	b.ReportMetric(gitxtest.Ms(ts.Mean()), "sluice-ms/op")
	b.ReportMetric(gitxtest.Ms(tg.Mean()), "git-ms/op")
	b.ReportMetric(gitxtest.Ratio(ts, tg), "ratio")
	// The ratio of the medians beside that of the means: on a shared
	// machine a few stalled rounds of 20 move a mean.
	b.ReportMetric(float64(ts.Median())/float64(tg.Median()), "median-ratio")
}

// gitCLI runs plain git, as a person or an agent with a shell would.
func gitCLI(b *testing.B, dir string, args ...string) {
	c := exec.Command("git", args...)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v\n%s", args, err, out)
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

// BenchmarkRepoBrief_Small_Stdio_vs_CLI is repo_brief at 1,000 files
// (200 commits, 0, 1,000 and 10,000 loose refs under refs/sluice/),
// where git status takes a few milliseconds and the call's fixed costs
// weigh most: one tools/call round trip to each sidecar named in
// SLUICE_BENCH_SIDECARS (comma separated; this tree's sidecar when
// unset), so that a sidecar built before a change can run beside the one
// after it, and `git status`, taking turns in every round (each round
// starts with the next one). Each reports its median and mean, their
// ratios to git's, and the CPU time the sidecar process itself used per
// call (from /proc, in clock ticks: about 0.1 ms at b.N = 100).
func BenchmarkRepoBrief_Small_Stdio_vs_CLI(b *testing.B) {
	bins := []string{}
	if v := os.Getenv("SLUICE_BENCH_SIDECARS"); v != "" {
		bins = strings.Split(v, ",")
	} else {
		bins = append(bins, sidecarBinary(b))
	}
	dir := gitxtest.LargeRepo(b, gitxtest.Large{Files: 1_000, Commits: 200})
	defer sluiceRefs(b, dir, 0)
	for _, refs := range []int{0, 1_000, 10_000} {
		sluiceRefs(b, dir, refs)
		type side struct {
			name string
			pid  int
			call func()
		}
		var sides []side
		var sessions []*mcp.ClientSession
		for i, bin := range bins {
			cmd := exec.Command(bin, "--toolsets", "git")
			cmd.Env = benchEnv(b, dir)
			client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				b.Fatal(err)
			}
			sessions = append(sessions, cs)
			sides = append(sides, side{name: fmt.Sprintf("sidecar%d", i), pid: cmd.Process.Pid, call: func() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "repo_brief", Arguments: map[string]any{"repoPath": dir}})
				if err != nil || res.IsError {
					b.Fatalf("repo_brief: %v %+v", err, res)
				}
			}})
		}
		sides = append(sides, side{name: "git", call: func() { gitCLI(b, dir, "status") }})
		b.Run(fmt.Sprintf("refs=%d", refs), func(b *testing.B) {
			for range 3 {
				for _, s := range sides {
					s.call()
				}
			}
			cpu0 := make([]float64, len(sides))
			for i, s := range sides {
				cpu0[i] = procCPUMs(b, s.pid)
			}
			times := make([]gitxtest.Times, len(sides))
			b.StopTimer()
			for round := range b.N {
				for j := range sides {
					k := (round + j) % len(sides)
					start := time.Now()
					sides[k].call()
					times[k] = append(times[k], time.Since(start))
				}
			}
			git := times[len(sides)-1]
			b.ReportMetric(gitxtest.Ms(git.Median()), "git-median-ms")
			b.ReportMetric(gitxtest.Ms(git.Mean()), "git-mean-ms")
			for i, s := range sides[:len(sides)-1] {
				b.ReportMetric(gitxtest.Ms(times[i].Median()), s.name+"-median-ms")
				b.ReportMetric(float64(times[i].Median())/float64(git.Median()), s.name+"-median-ratio")
				b.ReportMetric(gitxtest.Ratio(times[i], git), s.name+"-mean-ratio")
				b.ReportMetric((procCPUMs(b, s.pid)-cpu0[i])/float64(b.N), s.name+"-cpu-ms/call")
			}
			b.ReportMetric(float64(times[0].Mean()), "ns/op")
		})
		for _, cs := range sessions {
			cs.Close()
		}
	}
}

// procCPUMs is the user and system CPU time process pid has used, in
// milliseconds (0 without a pid).
func procCPUMs(b *testing.B, pid int) float64 {
	if pid == 0 {
		return 0
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Skip("needs /proc")
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	// Linux reports both in clock ticks of 10 ms (USER_HZ = 100).
	return (utime + stime) * 10
}
