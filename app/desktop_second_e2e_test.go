package app

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDesktop_SecondInstance_SaysWhichRuns: with the desktop window
// running, `sluice serve` names it and exits; with `sluice serve` running,
// the desktop binary opens a window titled "Sluice is already running"
// whose page was told which instance runs and where, instead of a line in
// a terminal only.
func TestDesktop_SecondInstance_SaysWhichRuns(t *testing.T) {
	dir := binDir(t)
	importBin, err := exec.LookPath("import")
	needOrSkip(t, err == nil, "import (apt install imagemagick)")
	_, err = exec.LookPath("xdotool")
	needOrSkip(t, err == nil, "xdotool (apt install xdotool)")
	display := startXvfb(t)
	bus := startSessionBus(t)
	home := t.TempDir()
	runtimeDir := t.TempDir()
	envOn := func(addr string) []string {
		return []string{
			"PATH=" + os.Getenv("PATH"), "HOME=" + home, "DISPLAY=" + display, "NO_AT_BRIDGE=1",
			"DBUS_SESSION_BUS_ADDRESS=" + bus,
			"XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "XDG_STATE_HOME=" + filepath.Join(home, "state"),
			"XDG_RUNTIME_DIR=" + runtimeDir, "SLUICE_WEB_ADDR=" + addr,
		}
	}
	env := envOn(freeLoopbackAddr(t))
	startBackground(t, env, io.Discard, "dunst", "-config", "/dev/null")
	// desktop starts the desktop app; exited is closed once it has exited.
	desktop := func(out *syncBuffer) (cmd *exec.Cmd, exited <-chan struct{}) {
		cmd = exec.Command(filepath.Join(dir, "sluice"))
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start desktop app: %v", err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		t.Cleanup(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			if t.Failed() {
				t.Logf("desktop output:\n%s", out.String())
			}
		})
		return cmd, done
	}

	// The window first; then `sluice serve` beside it.
	var first syncBuffer
	win, winExited := desktop(&first)
	waitFor(t, desktopWait, "the window's front end to call Ready", func() bool {
		return strings.Contains(first.String(), `msg="frontend ready" ui=desktop`)
	})
	serve := exec.Command(filepath.Join(dir, "sluice"), "serve")
	serve.Env = env
	out, _ := serve.CombinedOutput()
	if serve.ProcessState.ExitCode() == 0 || !strings.Contains(string(out), "already running as the desktop window") ||
		!strings.Contains(string(out), "tray") {
		t.Fatalf("sluice serve beside the window: exit %d\n%s", serve.ProcessState.ExitCode(), out)
	}
	syscall.Kill(-win.Process.Pid, syscall.SIGTERM)
	<-winExited

	// `sluice serve` first (on a new address if the first was taken
	// meanwhile); then the desktop binary.
	addr := onFreeAddr(t, func(addr string) error {
		env = envOn(addr)
		_, err := tryServe(t, filepath.Join(dir, "sluice-headless"), env)
		return err
	})
	var second syncBuffer
	blocked, blockedExited := desktop(&second)
	waitFor(t, desktopWait, "the second window's page to be told who runs", func() bool {
		return strings.Contains(second.String(), `msg="window told another Sluice is running"`)
	})
	if s := second.String(); !strings.Contains(s, "already running as `sluice serve`") || !strings.Contains(s, "http://"+addr) {
		t.Fatalf("what the window was told:\n%s", s)
	}
	waitFor(t, desktopWait, `a window titled "Sluice is already running"`, func() bool {
		c := exec.Command("xdotool", "search", "--onlyvisible", "--name", "^Sluice is already running$")
		c.Env = env
		b, _ := c.Output()
		return strings.TrimSpace(string(b)) != ""
	})
	// WebKit paints after the page's call returns: the screenshot a
	// person looks at is taken once it has.
	screenshotPainted(t, importBin, display, filepath.Join(artifactDir(t), "desktop-already-running.png"))
	select {
	case <-blockedExited:
		t.Fatalf("the window closed by itself: %v", blocked.ProcessState)
	default:
	}
}
