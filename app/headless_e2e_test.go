package app

import (
	"bufio"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHeadless_PlainBuild_ServesAndDoctors runs the binary that a plain
// `CGO_ENABLED=0 go build .` produces (no WebKit, no tags): with no
// arguments and no display it serves the web UI and prints a login URL
// that opens a session; `doctor` prints one line per check.
func TestHeadless_PlainBuild_ServesAndDoctors(t *testing.T) {
	bin := filepath.Join(binDir(t), "sluice-headless")
	_, err := os.Stat(bin)
	needOrSkip(t, err == nil, "build/bin/sluice-headless (make build)")
	home := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "XDG_STATE_HOME=" + filepath.Join(home, "state")}

	cmd := exec.Command(bin)
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var login string
	deadline := time.After(desktopWait)
	for login == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the headless binary exited before printing a login URL")
			}
			if u, ok := strings.CutPrefix(l, "Login: "); ok {
				login = u
			}
		case <-deadline:
			t.Fatalf("no login URL within %s", desktopWait)
		}
	}
	if !strings.HasPrefix(login, "http://127.0.0.1:") || !strings.Contains(login, "/login?token=") {
		t.Fatalf("login URL %q", login)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(login)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	base := login[:strings.Index(login, "/login")]
	resp, err = c.Get(base + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status after login: %d", resp.StatusCode)
	}

	doc := exec.Command(bin, "doctor")
	doc.Env = env
	out, _ := doc.CombinedOutput()
	for _, check := range []string{"git", "config directory", "state directory", "gateway", "docker engine", "audit key"} {
		if !strings.Contains(string(out), check) {
			t.Errorf("doctor output lacks the %q check:\n%s", check, out)
		}
	}
	// The app above is running, so its gateway answers and its key exists.
	if !strings.Contains(string(out), "ok    gateway") || !strings.Contains(string(out), "ok    audit key") {
		t.Errorf("doctor with the app running:\n%s", out)
	}
}
