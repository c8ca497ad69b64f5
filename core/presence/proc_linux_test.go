//go:build linux

package presence

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	time.Sleep(50 * time.Millisecond)

	agents, err := Detect(DetectOptions{Dir: filepath.Join(t.TempDir(), "none"), Repo: repo, SelfPID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range agents {
		switch a.PID {
		case inRepo.Process.Pid:
			found = a.Kind == "process" && a.Name == "claude" && a.State == StateOpen && a.Repo == sub
		case outside.Process.Pid:
			t.Errorf("an agent outside the repository was reported: %+v", a)
		}
	}
	if !found {
		t.Fatalf("the claude process in the repository was not found: %+v", agents)
	}
}
