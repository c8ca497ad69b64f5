//go:build linux

package presence

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// agentProcesses reads every process of procfs in full (parent, agent,
// and for an agent its working directory), as the scan did before it read
// only what the processes working in the repository need: the reference
// the scan's answers are compared with.
func agentProcesses(procfs string) []proc {
	des, err := os.ReadDir(procfs)
	if err != nil {
		return nil
	}
	var out []proc
	r := procReader{buf: make([]byte, 4096)}
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil || pid <= 0 {
			continue
		}
		dir := filepath.Join(procfs, de.Name())
		p, ok := readProc(&r, dir, pid)
		if !ok {
			continue
		}
		if p.agent != "" {
			if cwd, err := os.Readlink(filepath.Join(dir, "cwd")); err == nil {
				if canon, err := filepath.EvalSymlinks(cwd); err == nil {
					cwd = canon
				}
				p.cwd = cwd
			}
		}
		out = append(out, p)
	}
	return out
}

// processAgentsInFull is processAgents from every process read in full.
func processAgentsInFull(procfs, repo string, self int) []Agent {
	procs := agentProcesses(procfs)
	byPID := map[int]proc{}
	for _, p := range procs {
		byPID[p.pid] = p
	}
	mine := ancestors(func(pid int) int { return byPID[pid].ppid }, self)
	var out []Agent
	for _, p := range procs {
		if p.agent == "" || mine[p.pid] || p.pid == self {
			continue
		}
		if parent, ok := byPID[p.ppid]; ok && parent.agent == p.agent {
			continue
		}
		if p.cwd == "" || !within(p.cwd, repo) {
			continue
		}
		out = append(out, Agent{Kind: "process", PID: p.pid, Name: p.agent, State: StateOpen, Repo: p.cwd})
	}
	return out
}

func byPIDOrder(a []Agent) []Agent {
	a = slices.Clone(a)
	slices.SortFunc(a, func(x, y Agent) int { return x.PID - y.PID })
	return a
}

// The scan reads what a process is (stat, command line) only for the
// processes working in the repository, their parents and this process's
// ancestors, and answers as reading every process in full does: an agent
// in the repository, one whose directory reaches it through a symlink, and
// one whose parent outside it is another agent are reported; a helper of an
// agent (inside or with its parent outside), the agent running this
// process, other processes and a process whose directory cannot be read
// are not; none of the 200 processes elsewhere is read beyond its
// directory.
func TestProcessAgents_ReadsOnlyWhatTheRepositoryNeeds(t *testing.T) {
	procfs := t.TempDir()
	repo, _ := filepath.EvalSymlinks(t.TempDir())
	sub := filepath.Join(repo, "sub")
	os.Mkdir(sub, 0o755)
	elsewhere, _ := filepath.EvalSymlinks(t.TempDir())
	alias := filepath.Join(elsewhere, "alias")
	if err := os.Symlink(sub, alias); err != nil {
		t.Fatal(err)
	}
	mk := func(pid int, comm string, ppid int, cmdline, cwd string) {
		dir := filepath.Join(procfs, strconv.Itoa(pid))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		stat := fmt.Sprintf("%d (%s) S %d 1 1 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n", pid, comm, ppid)
		os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644)
		os.WriteFile(filepath.Join(dir, "cmdline"), []byte(cmdline), 0o644)
		if cwd != "" {
			os.Symlink(cwd, filepath.Join(dir, "cwd"))
		}
	}
	const claudeJS = "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"
	mk(1, "systemd", 0, "/sbin/init\x00", "/")
	mk(100, "bash", 1, "bash\x00", elsewhere)
	mk(101, "claude", 100, "claude\x00", repo)                 // reported
	mk(102, "node", 101, "node\x00"+claudeJS+"\x00", sub)      // claude's helper
	mk(103, "sluice-sidecar", 104, "sluice-sidecar\x00", repo) // this process
	mk(104, "codex", 1, "codex\x00", repo)                     // the agent running it
	mk(105, "codex", 106, "codex\x00", sub)                    // helper of 106
	mk(106, "codex", 1, "codex\x00", elsewhere)
	mk(107, "gemini", 108, "gemini\x00", sub) // reported: its parent is claude
	mk(108, "claude", 1, "claude\x00", elsewhere)
	mk(109, "bash", 101, "bash\x00", repo)
	mk(110, "aider", 1, "aider\x00", alias) // reported, in sub
	mk(111, "claude", 1, "claude\x00", "")  // another user's: no cwd
	for pid := 200; pid < 400; pid++ {
		mk(pid, "claude", 1, "claude\x00", elsewhere)
	}

	ps := newProcScan(procfs)
	got := byPIDOrder(processAgents(ps, repo, 103, map[int]bool{}))
	want := []Agent{
		{Kind: "process", PID: 101, Name: "claude", State: StateOpen, Repo: repo},
		{Kind: "process", PID: 107, Name: "gemini", State: StateOpen, Repo: sub},
		{Kind: "process", PID: 110, Name: "aider", State: StateOpen, Repo: sub},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("agents:\n%+v\nwant:\n%+v", got, want)
	}
	if full := byPIDOrder(processAgentsInFull(procfs, repo, 103)); !reflect.DeepEqual(got, full) {
		t.Fatalf("agents:\n%+v\nreading every process in full:\n%+v", got, full)
	}
	var read []int
	for pid := range ps.procs {
		read = append(read, pid)
	}
	slices.Sort(read)
	if want := []int{1, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110}; !slices.Equal(read, want) {
		t.Fatalf("processes read: %v, want %v", read, want)
	}
}

// Against the machine's real processes, the scan answers as reading every
// process in full does, at each step of a story: an agent starts in the
// repository and another outside it; a process named node exec's another
// program also named node whose command line is now Claude Code's (same
// pid, start time and name: only its command line says it became an
// agent); the first agent is killed; a new one starts.
func TestDetect_RealProcesses_SameAsReadingEveryProcess(t *testing.T) {
	bin := t.TempDir()
	claude := copyProgram(t, "/bin/sleep", filepath.Join(bin, "claude"))
	shell := copyProgram(t, "/bin/bash", filepath.Join(bin, "a", "node"))
	tail := copyProgram(t, "/usr/bin/tail", filepath.Join(bin, "b", "node"))
	pkg := filepath.Join(t.TempDir(), "node_modules", "@anthropic-ai", "claude-code")
	os.MkdirAll(pkg, 0o755)
	cliJS := filepath.Join(pkg, "cli.js")
	os.WriteFile(cliJS, []byte("// not run\n"), 0o644)

	repo, _ := filepath.EvalSymlinks(t.TempDir())
	sub := filepath.Join(repo, "pkg")
	os.Mkdir(sub, 0o755)
	elsewhere := t.TempDir()
	start := func(dir string, stdin io.Reader, name string, args ...string) *exec.Cmd {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Stdin = stdin
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	// runs reports whether pid has exec'd name with an argument holding
	// arg.
	runs := func(pid int, name, arg string) bool {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return strings.TrimSpace(string(comm)) == name && bytes.Contains(cmdline, []byte(arg))
	}
	waitFor := func(what string, cond func() bool) {
		// A backstop only: the condition is a process's exec or exit.
		for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never happened", what)
			}
		}
	}
	step := func(name string, want ...int) {
		t.Helper()
		got, err := Detect(DetectOptions{Dir: filepath.Join(t.TempDir(), "none"), Repo: repo, SelfPID: os.Getpid()})
		if err != nil {
			t.Fatal(err)
		}
		full := processAgentsInFull("/proc", repo, os.Getpid())
		if !reflect.DeepEqual(byPIDOrder(got), byPIDOrder(full)) {
			t.Fatalf("%s: agents\n%+v\nreading every process in full:\n%+v", name, got, full)
		}
		var pids []int
		for _, a := range got {
			pids = append(pids, a.PID)
		}
		slices.Sort(pids)
		slices.Sort(want)
		if !slices.Equal(pids, want) {
			t.Fatalf("%s: agents %+v, want pids %v", name, got, want)
		}
	}

	a := start(sub, nil, claude, "60")
	b := start(elsewhere, nil, claude, "60")
	stdin, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c := start(repo, stdin, shell, "-c", `read x; exec "$0" -f "$1"`, tail, cliJS)
	waitFor("the agents' exec", func() bool {
		return runs(a.Process.Pid, "claude", "60") && runs(b.Process.Pid, "claude", "60") && runs(c.Process.Pid, "node", "read x")
	})
	step("started", a.Process.Pid)

	stdin.Close()
	w.Write([]byte("go\n"))
	waitFor("node's exec of node", func() bool { return runs(c.Process.Pid, "node", cliJS) && !runs(c.Process.Pid, "node", "read x") })
	step("exec'd", a.Process.Pid, c.Process.Pid)

	a.Process.Kill()
	a.Wait()
	step("killed", c.Process.Pid)

	d := start(repo, nil, claude, "60")
	waitFor("the new agent's exec", func() bool { return runs(d.Process.Pid, "claude", "60") })
	step("started again", c.Process.Pid, d.Process.Pid)
}

// copyProgram copies the program at src to dst (created with its
// directory) and returns dst; the test is skipped when there is no src.
func copyProgram(t *testing.T, src, dst string) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Skipf("no %s to stand in for a program", src)
	}
	defer in.Close()
	os.MkdirAll(filepath.Dir(dst), 0o755)
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// BenchmarkDetect_Processes is the scan a proposal's hint about other
// agents waits for, on this machine as it is (no agent in the repository;
// the number of processes is reported):
//
//	go test -run '^$' -bench Detect_Processes ./core/presence/
func BenchmarkDetect_Processes(b *testing.B) {
	repo, _ := filepath.EvalSymlinks(b.TempDir())
	dir := filepath.Join(b.TempDir(), "none")
	for b.Loop() {
		if _, err := Detect(DetectOptions{Dir: dir, Repo: repo, SelfPID: os.Getpid()}); err != nil {
			b.Fatal(err)
		}
	}
	des, _ := os.ReadDir("/proc")
	n := 0
	for _, de := range des {
		if _, err := strconv.Atoi(de.Name()); err == nil {
			n++
		}
	}
	b.ReportMetric(float64(n), "processes")
}
