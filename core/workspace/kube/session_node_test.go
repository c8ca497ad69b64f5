package kube

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/core/workspace"
	"github.com/sluicehq/sluice/core/workspace/kube/kubetest"
)

var sidecarBin struct {
	once sync.Once
	path string
	err  error
}

// sidecarBinary is a static sluice-sidecar for the pod (pod-link, relay):
// SLUICE_BIN_DIR's when it has one, else built once for this test binary.
func sidecarBinary(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("SLUICE_BIN_DIR"); d != "" {
		if p := filepath.Join(d, "sluice-sidecar"); fileExists(p) {
			return p
		}
	}
	sidecarBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-kube-sidecar-")
		if err != nil {
			sidecarBin.err = err
			return
		}
		sidecarBin.path = filepath.Join(dir, "sluice-sidecar")
		cmd := exec.Command("go", "build", "-o", sidecarBin.path, "github.com/sluicehq/sluice/sidecar/cmd/sluice-sidecar")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			sidecarBin.err = &buildErr{out: string(out), err: err}
		}
	})
	if sidecarBin.err != nil {
		t.Fatal(sidecarBin.err)
	}
	return sidecarBin.path
}

type buildErr struct {
	out string
	err error
}

func (e *buildErr) Error() string { return "building sluice-sidecar: " + e.err.Error() + "\n" + e.out }

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// serveUnix answers each connection to a new Unix socket with handle.
func serveUnix(t *testing.T, path string, handle func(net.Conn)) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
}

// TestNode_SessionPod: a confined session's pod gets the copy (with its
// git directory), the person's objects under it, the confined HOME (a
// link in it carried as a link, never followed out) and the sidecar; its
// MCP and egress connections reach the launcher's sockets through the
// link; the agent's tree is back in the copy before its tool call reaches
// the session's sidecar, and again at its end, without what it wrote in
// its .git; the environment is in the Secret, not the pod; nothing is
// left after Remove.
func TestNode_SessionPod(t *testing.T) {
	e := onNode(t)
	sessionPodScenario(t, e, e.r, false)
}

// TestNode_SessionPodUnderGVisor: the same with the RuntimeClass
// configured: the agent's kernel is gVisor's, and its sockets, copy and
// link work the same.
func TestNode_SessionPodUnderGVisor(t *testing.T) {
	c := kubetest.Node(t)
	if c.GVisor == "" {
		t.Skip("the cluster was started without gVisor (SLUICE_K8S_GVISOR=0)")
	}
	e := onNode(t)
	sessionPodScenario(t, e, newRuntime(t, c.Config, Options{Namespace: e.ns, ImagePullPolicy: "Never", RuntimeClassName: c.GVisor}), true)
}

func sessionPodScenario(t *testing.T, e nodeEnv, r *Runtime, gvisor bool) {
	host := t.TempDir()
	copyDir := filepath.Join(host, "copy")
	objects := filepath.Join(host, "objects")
	home := filepath.Join(host, "home")
	writeFiles(t, copyDir, map[string]string{"a.txt": "a\n", "gone.txt": "gone\n", "sub/b.txt": "b\n", ".git/HEAD": "ref: refs/heads/main\n", ".git/sluice-origin/.keep": ""})
	writeFiles(t, objects, map[string]string{"pack/objfile": "OBJECTS-ARRIVED\n"})
	writeFiles(t, home, map[string]string{"h.txt": "HOME-ARRIVED\n"})
	secretFile := filepath.Join(host, "host-secret")
	writeFiles(t, host, map[string]string{"host-secret": "HOST-SECRET-CONTENT\n"})
	if err := os.Symlink(secretFile, filepath.Join(home, "link")); err != nil {
		t.Fatal(err)
	}
	sock := t.TempDir()
	mcpSock, egressSock := filepath.Join(sock, "mcp.sock"), filepath.Join(sock, "egress.sock")
	var mu sync.Mutex
	var sawNew []bool
	serveUnix(t, mcpSock, func(c net.Conn) {
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(sc.Bytes(), &req) != nil {
				continue
			}
			// What the session's sidecar would read: the copy, now.
			_, err := os.Stat(filepath.Join(copyDir, "new.txt"))
			mu.Lock()
			sawNew = append(sawNew, err == nil)
			mu.Unlock()
			c.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"host":"MCP-ANSWERED"}}` + "\n"))
		}
	})
	serveUnix(t, egressSock, func(c net.Conn) {
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Write([]byte("EGRESS-ANSWERED " + line))
	})

	const repo, personHome = "/home/person/proj", "/home/person"
	script := `dmesg 2>/dev/null | head -3
cd ` + repo + `
echo new > new.txt
echo changed > a.txt
rm gone.txt
echo pod > .git/podwrote
cat .git/sluice-origin/pack/objfile
touch .git/sluice-origin/planted 2>/dev/null && echo OBJECTS-WRITABLE || echo OBJECTS-READONLY
cat "$HOME/h.txt"
cat "$HOME/link" 2>/dev/null || echo "LINK $(readlink "$HOME/link") NOT FOLLOWED"
[ -e /var/run/secrets/kubernetes.io/serviceaccount/token ] && echo TOKEN-PRESENT || echo NO-TOKEN
touch /run/sluice/x 2>/dev/null && echo RUN-WRITABLE || echo RUN-READONLY
echo "SECRET=$SESSION_SECRET"
echo '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"repo_brief"}}' | /run/sluice/bin/sluice-sidecar relay
echo ping | /run/sluice/bin/sluice-sidecar relay --socket /run/sluice/egress.sock
echo after > after.txt
exit 4`
	cs := workspace.SessionContainerSpec{
		Session: "Sess-" + randomID(t), Image: e.image, User: e.spec(t).User,
		Cmd: []string{"/bin/sh", "-c", script},
		Env: []string{"PATH=" + containerPath, "HOME=" + personHome, "SESSION_SECRET=model-key-123"},
		Binds: []workspace.SessionBind{
			{Source: copyDir, Target: repo},
			{Source: objects, Target: repo + "/.git/sluice-origin", ReadOnly: true},
			{Source: home, Target: personHome},
			{Source: sidecarBinary(t), Target: insideSidecar, ReadOnly: true},
			{Source: egressSock, Target: insideEgress},
			{Source: mcpSock, Target: insideMCP},
		},
		Copy: repo, WorkingDir: repo,
		Limits: workspace.Limits{MemoryBytes: 128 << 20, CPUs: 0.5, PIDs: 256, TmpfsBytes: 16 << 20},
	}
	out := &lineWriter{}
	errOut := &lineWriter{}
	s, err := r.StartSession(context.Background(), cs, nil, out, errOut)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Remove()
	pod, err := e.cs.CoreV1().Pods(e.ns).Get(context.Background(), s.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pod.Spec.Containers {
		for _, env := range c.Env {
			if strings.Contains(env.Value, "model-key-123") {
				t.Errorf("container %s has the session's secret in its spec (%s)", c.Name, env.Name)
			}
		}
	}
	code, err := s.Wait()
	if err != nil {
		t.Fatalf("wait: %v\nout:\n%s\nerr:\n%s", err, out, errOut)
	}
	if code != 4 {
		t.Errorf("exit code %d, want 4\nout:\n%s\nerr:\n%s", code, out, errOut)
	}
	got := out.String()
	for _, want := range []string{"OBJECTS-ARRIVED", "HOME-ARRIVED", "LINK " + secretFile + " NOT FOLLOWED", "NO-TOKEN", "RUN-READONLY", "OBJECTS-READONLY",
		"SECRET=model-key-123", `"id":7`, "MCP-ANSWERED", "EGRESS-ANSWERED ping"} {
		if !strings.Contains(got, want) {
			t.Errorf("the agent's output lacks %q:\n%s\nstderr:\n%s", want, got, errOut)
		}
	}
	if gvisor != strings.Contains(got, "gVisor") {
		t.Errorf("under gVisor: %v; the kernel log says:\n%s", gvisor, got)
	}
	if strings.Contains(got, "HOST-SECRET-CONTENT") {
		t.Errorf("a link in the confined HOME was followed out of it:\n%s", got)
	}
	mu.Lock()
	if len(sawNew) != 1 || !sawNew[0] {
		t.Errorf("the tool call reached the session's sidecar before the agent's file was back in the copy (saw: %v)", sawNew)
	}
	mu.Unlock()
	for name, want := range map[string]string{"new.txt": "new\n", "a.txt": "changed\n", "sub/b.txt": "b\n", "after.txt": "after\n", ".git/HEAD": "ref: refs/heads/main\n"} {
		if b, err := os.ReadFile(filepath.Join(copyDir, name)); err != nil || string(b) != want {
			t.Errorf("the copy's %s is %q (%v), want %q", name, b, err, want)
		}
	}
	for _, name := range []string{"gone.txt", ".git/podwrote"} {
		if _, err := os.Lstat(filepath.Join(copyDir, name)); err == nil {
			t.Errorf("the copy still has (or got) %s", name)
		}
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
}

// startUntilReady starts the session of cs and returns once its agent
// printed READY (its script's sign that what it does first is done), with
// what it prints; the session is removed when the test ends.
func startUntilReady(t *testing.T, e nodeEnv, cs workspace.SessionContainerSpec) (*SessionRun, *lineWriter) {
	t.Helper()
	ready := make(chan struct{})
	var once sync.Once
	out := &lineWriter{onData: func(s string) {
		if strings.Contains(s, "READY") {
			once.Do(func() { close(ready) })
		}
	}}
	s, err := e.r.StartSession(context.Background(), cs, nil, out, &lineWriter{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Remove() })
	<-ready
	return s, out
}

// TestNode_SessionKilled: a kill the agent cannot ignore (after it
// ignored TERM) ends the agent, not the pod: Wait still reads back what
// it wrote, and only Remove deletes the pod.
func TestNode_SessionKilled(t *testing.T) {
	e := onNode(t)
	cs, copyDir := endTestSpec(t, e, `sh -c 'trap "" TERM; echo late > late.txt; echo READY; while :; do sleep 1; done'; exit 7`)
	s, out := startUntilReady(t, e, cs)
	if err := s.Signal("TERM"); err != nil {
		t.Fatal(err)
	}
	if err := s.Signal("KILL"); err != nil {
		t.Fatal(err)
	}
	code, err := s.Wait()
	if err != nil || code != 7 {
		t.Fatalf("Wait after the kill: exit %d, %v (output %q)", code, err, out)
	}
	if b, err := os.ReadFile(filepath.Join(copyDir, "late.txt")); err != nil || string(b) != "late\n" {
		t.Fatalf("what the killed agent wrote did not come back: %q %v", b, err)
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
}

// endTestSpec is a session's spec over a copy of one file, running script
// in the copy, and the copy's host path.
func endTestSpec(t *testing.T, e nodeEnv, script string) (workspace.SessionContainerSpec, string) {
	host := t.TempDir()
	copyDir := filepath.Join(host, "copy")
	writeFiles(t, copyDir, map[string]string{"a.txt": "a\n", ".git/HEAD": "ref: refs/heads/main\n", ".git/sluice-origin/.keep": ""})
	writeFiles(t, filepath.Join(host, "objects"), map[string]string{"info/.keep": ""})
	writeFiles(t, filepath.Join(host, "home"), map[string]string{".keep": ""})
	sock := t.TempDir()
	serveUnix(t, filepath.Join(sock, "mcp.sock"), func(net.Conn) {})
	serveUnix(t, filepath.Join(sock, "egress.sock"), func(net.Conn) {})
	const repo = "/home/person/proj"
	return workspace.SessionContainerSpec{
		Session: "Sess-" + randomID(t), Image: e.image, User: e.spec(t).User,
		Cmd: []string{"/bin/sh", "-c", "cd " + repo + " && " + script},
		Env: []string{"PATH=" + containerPath, "HOME=/home/person"},
		Binds: []workspace.SessionBind{
			{Source: copyDir, Target: repo},
			{Source: filepath.Join(host, "objects"), Target: repo + "/.git/sluice-origin", ReadOnly: true},
			{Source: filepath.Join(host, "home"), Target: "/home/person"},
			{Source: sidecarBinary(t), Target: insideSidecar, ReadOnly: true},
			{Source: filepath.Join(sock, "egress.sock"), Target: insideEgress},
			{Source: filepath.Join(sock, "mcp.sock"), Target: insideMCP},
		},
		Copy: repo, WorkingDir: repo,
		Limits: workspace.Limits{MemoryBytes: 64 << 20, CPUs: 0.5, PIDs: 256, TmpfsBytes: 16 << 20},
	}, copyDir
}

// TestNode_SessionEndedByTheApp: a launcher gone, the app ends the
// session: the agent's files, which no tool call brought back, come back
// from the pod before its objects are deleted; and when what the pod holds
// cannot be read (a file the agent made unreadable), the objects go and
// the error says the files did not come back, so nothing is offered.
func TestNode_SessionEndedByTheApp(t *testing.T) {
	e := onNode(t)
	for _, tc := range []struct {
		name, script string
		wantErr      error
	}{
		{"read back", `echo left > left.txt; echo READY; while :; do sleep 1; done`, nil},
		{"unreadable", `echo left > left.txt; echo x > locked.txt; chmod 000 locked.txt; echo READY; while :; do sleep 1; done`, ErrFilesNotBack},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			cs, copyDir := endTestSpec(t, e, tc.script)
			s, _ := startUntilReady(t, e, cs)
			err := e.r.EndSession(context.Background(), cs.Session, copyDir)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("EndSession: %v", err)
				}
				if b, err := os.ReadFile(filepath.Join(copyDir, "left.txt")); err != nil || string(b) != "left\n" {
					t.Fatalf("the agent's file did not come back: %q %v", b, err)
				}
			} else if !errors.Is(err, tc.wantErr) {
				t.Fatalf("EndSession: %v, want %v", err, tc.wantErr)
			}
			if _, err := e.cs.CoreV1().Pods(e.ns).Get(context.Background(), s.name, metav1.GetOptions{}); err == nil {
				t.Fatalf("the session's pod is still there")
			}
		})
	}
}
