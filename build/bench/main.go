// Command bench runs Sluice's benchmarks (Go benchmarks that measure Sluice
// and the git and docker CLIs it is compared with, in the same run) and
// records the figures in docs/benchmarks.md between the markers
// <!-- bench:begin --> and <!-- bench:end -->. `make bench` runs it.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// suite is one `go test -bench` invocation.
type suite struct {
	title string
	pkg   string
	bench string
	// benchtime keeps slow benchmarks (real repositories, containers)
	// within the run's budget.
	benchtime string
}

var suites = []suite{
	{"Audit ledger", "./core/audit/", ".", "2000x"},
	{"Read-only git surface", "./core/gitx/", ".", "20x"},
	{"Read-only git surface over MCP", "./sidecar/", "RepoBrief_Stdio|Sidecar_", "20x"},
	{"Proposals and the gateway", "./core/journal/", "BenchmarkJournal_Submit", "2s"},
	{"Journal: History's first page at 0, 100, 1,000, 10,000 and 100,000 records", "./core/journal/", "BenchmarkJournal_HistoryFirstPage", "100x"},
	{"Collisions between large pending proposals", "./core/journal/", "BenchmarkJournal_Collisions20000", "5x"},
	{"Journal: the pending list's first page at 100, 1,000, 10,000 and 100,000 pending", "./core/journal/", "BenchmarkJournal_PendingFirstPage", "20x"},
	{"Journal: the start-up lists at 100, 1,000, 10,000 and 100,000 records", "./core/journal/", "BenchmarkJournal_StartupLists", "20x"},
	{"Journal: the Sessions and Rules screens at 100, 1,000, 10,000 and 100,000 records", "./core/journal/", "BenchmarkJournal_SessionsAndRulesScreens", "2000x"},
	{"Sluice's own refs: reads beside git with 0, 1,000 and 10,000 proposals' sealed refs", "./core/apply/", "BenchmarkSealedRefs", "20x"},
	{"Sluice's own refs: reads beside a repository without them at 0, 1,000 and 10,000 restore points", "./core/apply/", "BenchmarkRestoreRefs", "5x"},
	{"commit_details and repo_brief beside git at 1,000, 20,000 and 100,000 files and 0, 1,000 and 10,000 refs", "./sidecar/", "BenchmarkCommitDetails_Scale_Stdio", "20x"},
	{"Proposals and the gateway (HTTP)", "./core/intake/", "BenchmarkSubmit_EndToEnd|BenchmarkSubmit_Concurrent20|BenchmarkBoltFsyncTx", "2s"},
	{"Execution", "./core/apply/", "Patch1000|Merge500", "20x"},
	{"Workspaces on Kubernetes: a run's first output and whole run, a pod beside a Docker container", "./core/workspace/kube/", "BenchmarkFirstCommand_Pod_vs_Docker", "10x"},
	{"Confined sessions on Kubernetes: start, end and the copy's way back, a pod beside a Docker container", "./core/workspace/kube/", "BenchmarkSession_Pod_vs_Docker", "5x"},
	{"Execution and restore at 1,000, 20,000 and 100,000 files", "./core/apply/", "BenchmarkScale", "3x"},
	{"Commit and discard of 10 named paths at 1,000, 20,000 and 100,000 files", "./core/apply/", "BenchmarkPathsAtScale", "3x"},
	{"Sealed outcomes", "./core/apply/", "Seal1000|Reseal1000", "10x"},
	{"Sealed outcomes (submit → card)", "./core/intake/", "BenchmarkSubmit_Sealed1000", "20x"},
	{"Sealed outcomes: the agent's call", "./app/", "Agent_StageAll1000", "10x"},
	{"Sealed outcomes: the agent's call at 10 and 20,000 files", "./app/", "Agent_StageAll10_vs|Agent_StageAll20000_vs", "3x"},
	{"Sealed outcomes in the browser", "./app/", "Browser_SubmitToCard|Browser_FirstDiffPaint1000", "10x"},
	{"Sealed outcomes in the browser: 20,000 files", "./app/", "Browser_FirstDiffPaint20000", "3x"},
	{"Workspaces: runs", "./core/workspace/", "Run_Trivial|DockerCLIRunRm", "20x"},
	{"Workspaces: create and seal", "./core/workspace/", "Create_Repo20k|Seal_Repo20k|GitClone20k", "10x"},
	{"Confined sessions: start", "./app/", "Session_Start", "10x"},
	{"Confined sessions: start in a 20,000-file repository", "./app/", "SessionStart_Repo20k", "3x"},
	{"Confined sessions: the copy, and work inside", "./core/session/", "Session_Copy20k|Session_GitStatus20k|Session_Grep20k", "5x"},
	{"Remote connectors: OAuth sign-in to the first tool call, and the token check per request", "./sidecar/", "BenchmarkRemote_", "300x"},
}

var benchLine = regexp.MustCompile(`^Benchmark\S+\s+\d+\s+`)

func main() {
	out := flag.String("out", "docs/benchmarks.md", "markdown file to update")
	only := flag.String("only", "", "run only the suite with this title, or those whose title contains it")
	flag.Parse()

	var report strings.Builder
	stamp := fmt.Sprintf("Run on %s · %s · %d CPUs · %s/%s", time.Now().UTC().Format("2006-01-02 15:04 MST"),
		runtime.Version(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&report, "%s\n\n", stamp)
	// With -only, each suite's section replaces its earlier one and says
	// when it was run; the other suites' figures stay.
	sections := map[string]string{}
	failed := false
	// A title given whole names that suite alone ("Sealed outcomes" is
	// also the start of other suites' titles).
	exact := false
	for _, s := range suites {
		exact = exact || s.title == *only
	}
	for _, s := range suites {
		if *only != "" && (exact && s.title != *only || !exact && !strings.Contains(s.title, *only)) {
			continue
		}
		fmt.Fprintf(os.Stderr, "== %s (%s)\n", s.title, s.pkg)
		// go test's own 10-minute limit would stop the suites that build
		// large repositories.
		args := []string{"test", "-run", "^$", "-bench", s.bench, "-benchmem", "-benchtime", s.benchtime, "-count", "1", "-timeout", "60m", s.pkg}
		cmd := exec.Command("go", args...)
		var buf bytes.Buffer
		cmd.Stdout = &buf
		cmd.Stderr = os.Stderr
		err := cmd.Run()
		os.Stderr.Write(buf.Bytes())
		start := report.Len()
		fmt.Fprintf(&report, "### %s\n\n", s.title)
		if *only != "" {
			fmt.Fprintf(&report, "%s (this suite alone)\n\n", stamp)
		}
		fmt.Fprintf(&report, "`go %s`\n\n```\n", strings.Join(args, " "))
		var lines []string
		sc := bufio.NewScanner(&buf)
		for sc.Scan() {
			if benchLine.MatchString(sc.Text()) {
				lines = append(lines, sc.Text())
				report.WriteString(sc.Text() + "\n")
			}
		}
		report.WriteString("```\n\n")
		if err == nil {
			err = missing(s.bench, lines)
		}
		if err != nil {
			failed = true
			fmt.Fprintf(&report, "**This suite failed: %v**\n\n", err)
		}
		sections[s.title] = report.String()[start:]
	}
	var err error
	if *only != "" {
		err = spliceSections(*out, sections)
	} else {
		err = splice(*out, report.String())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "figures written to", *out)
	if failed {
		os.Exit(1)
	}
}

// missing reports each alternative of a suite's -bench pattern that no
// benchmark line matched: a benchmark renamed or moved to another package
// would otherwise drop out of the figures unnoticed.
func missing(pattern string, lines []string) error {
	var gone []string
	for _, alt := range strings.Split(pattern, "|") {
		re, err := regexp.Compile(alt)
		if err != nil {
			return err
		}
		found := false
		for _, l := range lines {
			if re.MatchString(strings.Fields(l)[0]) {
				found = true
				break
			}
		}
		if !found {
			gone = append(gone, alt)
		}
	}
	if len(gone) > 0 {
		return fmt.Errorf("no benchmark matched %s", strings.Join(gone, ", "))
	}
	return nil
}

const begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"

// splice replaces the text between the markers, keeping the hand-written
// analysis around it.
func splice(path, body string) error {
	return editMarked(path, func(string) string { return "\n" + body })
}

// editMarked rewrites the text between the markers in path as edit returns
// it.
func editMarked(path string, edit func(block string) string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s lacks the %s … %s markers", path, begin, end)
	}
	s = s[:i+len(begin)] + edit(s[i+len(begin):j]) + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}

// spliceSections replaces, between the markers, the "### title" section of
// each suite that ran (up to the next section or the end marker), or adds
// it before the end marker.
func spliceSections(path string, sections map[string]string) error {
	return editMarked(path, func(block string) string {
		for _, su := range suites {
			body, ok := sections[su.title]
			if !ok {
				continue
			}
			head := "### " + su.title + "\n"
			k := strings.Index(block, head)
			if k < 0 {
				block += body
				continue
			}
			rest := block[k+len(head):]
			n := strings.Index(rest, "\n### ")
			if n < 0 {
				n = len(rest)
			} else {
				n++
			}
			block = block[:k] + body + rest[n:]
		}
		return block
	})
}
