//go:build linux

package presence

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// An agent process whose working directory is inside the repository is
// found in /proc, even without a Sluice sidecar; one elsewhere is not.
func TestDetect_AgentProcessInRepo(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "claude")
	src, err := os.Open("/bin/sleep")
	if err != nil {
		t.Skip("no /bin/sleep to stand in for an agent")
	}
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(dst, src)
	src.Close()
	dst.Close()

	repo, _ := filepath.EvalSymlinks(t.TempDir())
	sub := filepath.Join(repo, "pkg")
	os.Mkdir(sub, 0o755)
	elsewhere := t.TempDir()
	start := func(dir string) *exec.Cmd {
		cmd := exec.Command(bin, "30")
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	inRepo := start(sub)
	outside := start(elsewhere)
	// A started process shows its program and directory once its exec
	// is done: scan until the one in the repository is seen (a backstop
	// only bounds a scan that never sees it).
	// The one outside is looked for once it runs as claude too, so that
	// its absence from the answer means something.
	execd := func(pid int) bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		return strings.TrimSpace(string(b)) == "claude"
	}
	var agents []Agent
	found, ready := false, false
	for deadline := time.Now().Add(60 * time.Second); !(found && ready) && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		// ready before the scan: the answer is one the outside
		// process, already claude, could have been in.
		ready = execd(outside.Process.Pid)
		var err error
		agents, err = Detect(DetectOptions{Dir: filepath.Join(t.TempDir(), "none"), Repo: repo, SelfPID: os.Getpid()})
		if err != nil {
			t.Fatal(err)
		}
		found = false
		for _, a := range agents {
			if a.PID == inRepo.Process.Pid {
				found = a.Kind == "process" && a.Name == "claude" && a.State == StateOpen && a.Repo == sub
			}
		}
	}
	if !ready {
		t.Fatal("the process outside the repository never ran as claude")
	}
	if !found {
		t.Fatalf("the claude process in the repository was not found: %+v", agents)
	}
	for _, a := range agents {
		if a.PID == outside.Process.Pid {
			t.Errorf("an agent outside the repository was reported: %+v", a)
		}
	}
}

// agentProcesses reads each process of a procfs as it is: its parent,
// the agent its name or command line names (a command line longer than
// the reader's first buffer included, and one whose second argument is an
// agent's package), where it works; a kernel thread by its name alone, and
// entries that are not processes or cannot be read are passed over.
func TestAgentProcesses_FakeProcfs(t *testing.T) {
	procfs := t.TempDir()
	work := t.TempDir()
	stat := func(pid, comm, ppid string, flags int) string {
		// pid (comm) state ppid pgrp session tty_nr tpgid flags ...
		return fmt.Sprintf("%s (%s) S %s 1 1 0 -1 %d 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n", pid, comm, ppid, flags)
	}
	mk := func(pid, statText, cmdline string, cwd bool) {
		dir := filepath.Join(procfs, pid)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "stat"), []byte(statText), 0o644)
		if cmdline != "" {
			os.WriteFile(filepath.Join(dir, "cmdline"), []byte(cmdline), 0o644)
		}
		if cwd {
			os.Symlink(work, filepath.Join(dir, "cwd"))
		}
	}
	long := strings.Repeat("d/", 3000) + "node"
	mk("10", stat("10", "node", "1", 0x400000), "node\x00/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js\x00", true)
	mk("11", stat("11", "kworker/0:1", "2", 0x04208060), "", false)
	mk("12", stat("12", "MainThread", "10", 0), long+"\x00/opt/node_modules/@openai/codex/bin/codex.js\x00--x\x00", true)
	mk("13", stat("13", "bash", "1", 0), "bash\x00-l\x00", false)
	mk("14", stat("14", "codex", "13", 0x400000), "", true)
	mk("15", "garbage", "claude\x00", false)
	os.Mkdir(filepath.Join(procfs, "self-not-a-pid"), 0o755)
	got := map[int]proc{}
	for _, p := range agentProcesses(procfs) {
		got[p.pid] = p
	}
	want := map[int]proc{
		10: {pid: 10, ppid: 1, agent: "claude", cwd: work},
		11: {pid: 11, ppid: 2},
		12: {pid: 12, ppid: 10, agent: "codex", cwd: work},
		13: {pid: 13, ppid: 1},
		14: {pid: 14, ppid: 13, agent: "codex", cwd: work},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("processes read:\n%+v\nwant:\n%+v", got, want)
	}
}
