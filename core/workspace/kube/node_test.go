package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
	"github.com/sluicehq/sluice/core/workspace/kube/kubetest"
	"github.com/sluicehq/sluice/core/workspace/workspacetest"
)

// These tests run pods on a real single-node cluster (kubetest.Node; make
// test starts one), on the busybox test image imported into the node.

type nodeEnv struct {
	r     *Runtime
	cs    kubernetes.Interface
	ns    string
	image string
}

var nodeImage struct {
	once sync.Once
	ref  string
	err  error
}

func onNode(t *testing.T) nodeEnv {
	t.Helper()
	c := kubetest.Node(t)
	nodeImage.once.Do(func() {
		cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
		if err != nil {
			nodeImage.err = err
			return
		}
		defer cli.Close()
		_, nodeImage.err = workspacetest.EnsureImage(context.Background(), cli)
		nodeImage.ref = workspacetest.ImageRef
	})
	if nodeImage.err != nil {
		t.Fatal(nodeImage.err)
	}
	image := c.ImportImage(t, nodeImage.ref)
	ns := kubetest.Namespace(t, c.Config)
	r := newRuntime(t, c.Config, Options{Namespace: ns, ImagePullPolicy: "Never"})
	env := nodeEnv{r: r, cs: adminClient(t, c.Config), ns: ns, image: image}
	t.Cleanup(func() {
		revokeGrants(t, c.Config, ns)
		assertNothingLabelled(t, env.cs, ns)
	})
	return env
}

func (e nodeEnv) spec(t *testing.T, argv ...string) workspace.ContainerSpec {
	s := testSpec(t, e.image)
	s.Argv = argv
	s.Limits.MemoryBytes = 64 << 20
	s.Limits.CPUs = 0.5
	return s
}

// lineWriter is a Run writer that reports each write as it comes.
type lineWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	onData func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(p)
	s := w.buf.String()
	w.mu.Unlock()
	if w.onData != nil {
		w.onData(s)
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestNode_RunStreamsLiveAndExitCodes: the first line reaches the writer
// while the run still goes on (the run only ends once the test, having
// seen that line, makes a file the run waits for), stdout and stderr stay
// apart, the exit code comes back, and nothing is left.
func TestNode_RunStreamsLiveAndExitCodes(t *testing.T) {
	e := onNode(t)
	spec := e.spec(t, "sh", "-c", `echo first; echo to-stderr >&2; while [ ! -e /workspace/go ]; do sleep 0.1; done; echo last; exit 3`)
	name := podName(spec.RunID)
	var once sync.Once
	released := make(chan error, 1)
	stdout := &lineWriter{onData: func(s string) {
		if strings.Contains(s, "first\n") {
			once.Do(func() {
				go func() {
					released <- e.r.execIn(context.Background(), name, containerKeeper, []string{"touch", "/workspace/go"}, nil, nil)
				}()
			})
		}
	}}
	stderr := &lineWriter{}
	st, err := e.r.Run(context.Background(), spec, stdout, stderr)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Fatalf("the test could not release the run: %v", err)
	}
	if st.ExitCode != 3 || st.TimedOut || st.OOMKilled || st.OutputStopped || st.ContainerID != name {
		t.Fatalf("status %+v", st)
	}
	if stdout.String() != "first\nlast\n" || stderr.String() != "to-stderr\n" {
		t.Fatalf("stdout %q stderr %q", stdout, stderr)
	}
	// The run's tree came back: /workspace/go, made during the run, is in it.
	if _, err := os.Stat(filepath.Join(spec.TreePath, "go")); err != nil {
		t.Fatalf("a file made during the run did not come back: %v", err)
	}

	for _, code := range []int{0, 1, 42} {
		st, err := e.r.Run(context.Background(), e.spec(t, "sh", "-c", "exit "+strconv.Itoa(code)), &lineWriter{}, &lineWriter{})
		if err != nil || st.ExitCode != code {
			t.Fatalf("exit %d: %+v %v", code, st, err)
		}
	}
}

// TestNode_NoNetworkNoTokenSecretByReference: the run has no route out and
// no service account token, and a granted secret reaches it by reference.
func TestNode_NoNetworkNoTokenSecretByReference(t *testing.T) {
	e := onNode(t)
	script := `set -e
test ! -e /var/run/secrets/kubernetes.io/serviceaccount/token || { echo token mounted; exit 10; }
routes=$(grep -vc Iface /proc/net/route || true)
[ "$routes" = 0 ] || { echo "routes: $routes"; cat /proc/net/route; exit 11; }
if nc -w 2 10.96.0.1 443 </dev/null 2>/dev/null; then echo connected; exit 12; fi
if nc -w 2 1.1.1.1 80 </dev/null 2>/dev/null; then echo connected out; exit 13; fi
echo "secret=$TOKEN plain=$PLAIN user=$(id -u):$(id -g)"
touch /x 2>/dev/null && { echo root writable; exit 14; }
touch /workspace/.git/x 2>/dev/null && { echo repository writable; exit 15; }
echo ok`
	spec := e.spec(t, "sh", "-c", script)
	spec.GitDirPath = t.TempDir()
	if err := os.WriteFile(filepath.Join(spec.GitDirPath, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut lineWriter
	st, err := e.r.Run(context.Background(), spec, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	// The program runs as the pod's own uid and gid (see pidlimit.go),
	// not the workspace's.
	m := regexp.MustCompile(`^secret=s3cret-value plain=visible user=(\d+):(\d+)\nok\n$`).FindStringSubmatch(out.String())
	if st.ExitCode != 0 || m == nil {
		t.Fatalf("exit %d stdout %q stderr %q", st.ExitCode, out.String(), errOut.String())
	}
	uid, _ := strconv.ParseInt(m[1], 10, 64)
	if m[1] != m[2] || !defaultPodUIDs.contains(uid) || m[1]+":"+m[2] == spec.User {
		t.Fatalf("the program ran as %s:%s, not a pod's own uid of %s (the workspace's user is %s)", m[1], m[2], defaultPodUIDs, spec.User)
	}
}

// TestNode_FilesComeBack: files written in the run come back to the host
// tree, a deleted file disappears, and the repository is not copied back.
func TestNode_FilesComeBack(t *testing.T) {
	e := onNode(t)
	spec := e.spec(t, "sh", "-c", `test "$(cat a.txt)" = a && echo changed > a.txt && rm del.txt && mkdir -p sub && echo new > sub/b.txt && test -f .git/HEAD`)
	if err := os.WriteFile(filepath.Join(spec.TreePath, "del.txt"), []byte("bye\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec.GitDirPath = t.TempDir()
	if err := os.WriteFile(filepath.Join(spec.GitDirPath, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut lineWriter
	st, err := e.r.Run(context.Background(), spec, &out, &errOut)
	if err != nil || st.ExitCode != 0 {
		t.Fatalf("%+v %v stderr %q", st, err, errOut.String())
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(spec.TreePath, p))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	if read("a.txt") != "changed\n" || read("sub/b.txt") != "new\n" {
		t.Fatalf("a.txt %q sub/b.txt %q", read("a.txt"), read("sub/b.txt"))
	}
	if _, err := os.Lstat(filepath.Join(spec.TreePath, "del.txt")); !os.IsNotExist(err) {
		t.Fatalf("a file deleted in the run is still there: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(spec.TreePath, ".git", "HEAD")); !os.IsNotExist(err) {
		t.Fatalf("the repository was copied into the tree: %v", err)
	}
}

// TestNode_TimeoutOOMAndOutputStop: a run past its timeout is killed and
// named so; one past its memory is OOMKilled; a writer that fails stops
// the run.
func TestNode_TimeoutOOMAndOutputStop(t *testing.T) {
	e := onNode(t)
	spec := e.spec(t, "sh", "-c", "sleep 600 & sleep 600")
	spec.Limits.Timeout = 3 * time.Second
	st, err := e.r.Run(context.Background(), spec, &lineWriter{}, &lineWriter{})
	if err != nil || !st.TimedOut || st.ExitCode == 0 {
		t.Fatalf("timeout: %+v %v", st, err)
	}

	spec = e.spec(t, "sh", "-c", "tail /dev/zero")
	spec.Limits.MemoryBytes = 16 << 20
	st, err = e.r.Run(context.Background(), spec, &lineWriter{}, &lineWriter{})
	if err != nil || !st.OOMKilled {
		t.Fatalf("oom: %+v %v", st, err)
	}

	spec = e.spec(t, "sh", "-c", "yes")
	st, err = e.r.Run(context.Background(), spec, &failAfter{n: 1 << 16}, &lineWriter{})
	if err != nil || !st.OutputStopped {
		t.Fatalf("output stop: %+v %v", st, err)
	}
}

// failAfter fails every write once n bytes were written.
type failAfter struct{ n int }

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n -= len(p); f.n < 0 {
		return 0, workspace.ErrStopOutput
	}
	return len(p), nil
}

// TestNode_CancelDeletesAtOnce: a run whose context ends is deleted and
// reported cancelled.
func TestNode_CancelDeletesAtOnce(t *testing.T) {
	e := onNode(t)
	spec := e.spec(t, "sh", "-c", "echo started; sleep 600")
	ctx, cancel := context.WithCancel(context.Background())
	out := &lineWriter{onData: func(s string) {
		if strings.Contains(s, "started") {
			cancel()
		}
	}}
	_, err := e.r.Run(ctx, spec, out, &lineWriter{})
	wantCode(t, err, errcode.Timeout, "cancelled")
}

// TestNode_Doctor: every check passes on the test cluster (the probe pod
// set its own PID limit) but NetworkPolicy enforcement, which it cannot
// prove and warns about; no RuntimeClass warns.
func TestNode_Doctor(t *testing.T) {
	e := onNode(t)
	for _, f := range e.r.Doctor(context.Background(), e.image) {
		t.Logf("%s: %s: %s", f.Name, f.Status, f.Detail)
		want := "ok"
		if f.Name == "networkpolicy" || f.Name == "runtimeclass" {
			want = "warn"
		}
		if f.Status != want {
			t.Errorf("%s: %s (%s), want %s", f.Name, f.Status, f.Detail, want)
		}
	}
	bad := e.image[:strings.Index(e.image, "@")] + "@sha256:" + strings.Repeat("0", 64)
	fs := e.r.Doctor(context.Background(), bad)
	if last := fs[len(fs)-1]; last.Name != "image" || last.Status != "fail" || !strings.Contains(last.Detail, bad) {
		t.Fatalf("a missing image: %+v", last)
	}
	// The session image: busybox has sh and tar; a missing one fails.
	if f := e.r.DoctorSessionImage(context.Background(), e.image); f.Status != "ok" {
		t.Errorf("the session image: %+v", f)
	}
	if f := e.r.DoctorSessionImage(context.Background(), bad); f.Status != "fail" || !strings.Contains(f.Detail, bad) {
		t.Errorf("a missing session image: %+v", f)
	}
}

// TestNode_StreamForbidden: an identity that may create pods but not exec
// into them (or attach to them) gets Forbidden naming the subresource, and
// nothing is left.
func TestNode_StreamForbidden(t *testing.T) {
	for _, sub := range []string{"pods/exec", "pods/attach"} {
		e := onNode(t)
		c := kubetest.Node(t)
		cfg := restrictedConfig(t, c.Config, e.ns, "create "+sub, "get "+sub)
		r := newRuntime(t, cfg, Options{Namespace: e.ns, ImagePullPolicy: "Never"})
		_, err := r.Run(context.Background(), e.spec(t, "true"), &lineWriter{}, &lineWriter{})
		wantCode(t, err, errcode.Forbidden, sub, "RoleYAML")
	}
}

// TestNode_ManagerRunsOnKubernetes: a workspace Manager whose runtime is
// this one: a file written on the host is read in the run, a granted
// secret reaches the run and is redacted from its output, a file the run
// writes is read back through the Manager, and Destroy leaves nothing.
func TestNode_ManagerRunsOnKubernetes(t *testing.T) {
	e := onNode(t)
	ctx := context.Background()
	state, conf := t.TempDir(), t.TempDir()
	for _, d := range []string{state, conf} {
		if err := os.Chmod(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The proxy's address as pods would reach it; this node's pods have no
	// network, so only the shape of the granted run is seen here.
	e.r = newRuntime(t, kubetest.Node(t).Config, Options{Namespace: e.ns, ImagePullPolicy: "Never", EgressProxy: "127.0.0.1"})
	m, err := workspace.Open(workspace.Options{StateDir: state, ConfigDir: conf, Runtime: e.r, Image: e.image,
		Limits: workspace.Limits{MemoryBytes: 64 << 20, CPUs: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.Create(ctx, workspace.CreateRequest{Source: workspace.Source{Kind: workspace.SourceFresh, GitInit: true}, Agent: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.WriteFile(ctx, w.ID, "in.txt", []byte("from host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.Grant(w.ID, "API_TOKEN", "tok-secret-123456"); err != nil {
		t.Fatal(err)
	}
	// Every version of every pod of the run, as anyone who may read pods
	// sees it: the secret's value must be in none.
	wctx, stopWatch := context.WithCancel(ctx)
	pw, err := e.cs.CoreV1().Pods(e.ns).Watch(wctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var seen, leaked int
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range pw.ResultChan() {
			b, _ := json.Marshal(ev.Object)
			seen++
			if strings.Contains(string(b), "tok-secret-123456") {
				leaked++
			}
		}
	}()
	res, err := m.Run(ctx, w.ID, workspace.RunRequest{Argv: []string{"sh", "-c", `cat in.txt; echo "token=$API_TOKEN"; test -f .git/HEAD && echo has-git; echo out > out.txt`}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "from host\n") || !strings.Contains(res.Stdout, "has-git") ||
		strings.Contains(res.Stdout, "tok-secret-123456") || !strings.Contains(res.Stdout, "token=") {
		t.Fatalf("run: exit %d stdout %q", res.ExitCode, res.Stdout)
	}
	stopWatch()
	pw.Stop()
	<-watched
	if seen == 0 || leaked > 0 {
		t.Fatalf("%d pod versions seen, %d holding the secret's value", seen, leaked)
	}
	fc, err := m.ReadFile(ctx, w.ID, "out.txt", workspace.ReadOptions{})
	if err != nil || fc.Content != "out\n" {
		t.Fatalf("out.txt: %+v %v", fc, err)
	}
	// A granted run: its proxy variables carry the grant's credentials,
	// which must not be in the pod either.
	if err := m.GrantEgress(w.ID, []string{"example.com"}); err != nil {
		t.Fatal(err)
	}
	wctx, stopWatch = context.WithCancel(ctx)
	pw, err = e.cs.CoreV1().Pods(e.ns).Watch(wctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var proxyInSpec, proxyByRef int
	watched = make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range pw.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			for _, c := range p.Spec.Containers {
				for _, env := range c.Env {
					if strings.Contains(strings.ToLower(env.Name), "proxy") {
						if env.Value != "" {
							proxyInSpec++
						} else if env.ValueFrom != nil && env.ValueFrom.SecretKeyRef != nil {
							proxyByRef++
						}
					}
				}
			}
		}
	}()
	// The run's NetworkPolicy allows the port this Manager's proxy listens
	// on, which the run's proxy variables name.
	npw, err := e.cs.NetworkingV1().NetworkPolicies(e.ns).Watch(wctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var policyPorts []string
	npWatched := make(chan struct{})
	go func() {
		defer close(npWatched)
		for ev := range npw.ResultChan() {
			if np, ok := ev.Object.(*networkingv1.NetworkPolicy); ok {
				for _, eg := range np.Spec.Egress {
					for _, p := range eg.Ports {
						policyPorts = append(policyPorts, p.Port.String())
					}
				}
			}
		}
	}()
	res, err = m.Run(ctx, w.ID, workspace.RunRequest{Argv: []string{"sh", "-c", `case "$HTTP_PROXY" in http://*:*@*) echo proxy-set;; esac; echo "port=${HTTPS_PROXY##*:}"`}})
	stopWatch()
	pw.Stop()
	npw.Stop()
	<-watched
	<-npWatched
	if len(policyPorts) == 0 || !strings.Contains(res.Stdout, "port="+policyPorts[0]+"\n") {
		t.Fatalf("the NetworkPolicy allows ports %v; the run's proxy is at %q", policyPorts, res.Stdout)
	}
	if err != nil || res.ExitCode != 0 || !strings.Contains(res.Stdout, "proxy-set") {
		t.Fatalf("granted run: %+v %v", res, err)
	}
	if proxyInSpec > 0 || proxyByRef == 0 {
		t.Fatalf("proxy variables: %d by value in the pod, %d by reference", proxyInSpec, proxyByRef)
	}
	if _, err := m.Destroy(ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	if left, err := e.r.Containers(ctx, m.StoreKey()); err != nil || len(left) != 0 {
		t.Fatalf("after Destroy: %+v %v", left, err)
	}
}

// TestNode_TreeRoundTrips: a run that changes nothing gives back the tree
// it was given: contents, modes, symlinks, empty directories, dot files,
// names with spaces or a leading dash, and 2,000 files of 16 MiB in all.
func TestNode_TreeRoundTrips(t *testing.T) {
	e := onNode(t)
	spec := e.spec(t, "true")
	tree := spec.TreePath
	write := func(p string, data []byte, mode os.FileMode) {
		t.Helper()
		full := filepath.Join(tree, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2000; i++ {
		write(filepath.Join("d"+strconv.Itoa(i%20), "f"+strconv.Itoa(i)), bytes.Repeat([]byte{byte(i)}, 8<<10), 0o644)
	}
	write("bin/run.sh", []byte("#!/bin/sh\n"), 0o755)
	write(".hidden", []byte("h"), 0o600)
	write("..odd", []byte("o"), 0o644)
	write("-dash", []byte("d"), 0o644)
	write("with space", []byte("s"), 0o644)
	if err := os.Symlink("bin/run.sh", filepath.Join(tree, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(tree, "empty"), 0o750); err != nil {
		t.Fatal(err)
	}
	before := treeState(t, tree)
	st, err := e.r.Run(context.Background(), spec, &lineWriter{}, &lineWriter{})
	if err != nil || st.ExitCode != 0 {
		t.Fatalf("%+v %v", st, err)
	}
	after := treeState(t, tree)
	if len(before) != len(after) {
		t.Fatalf("%d entries before, %d after", len(before), len(after))
	}
	for p, b := range before {
		if after[p] != b {
			t.Errorf("%s: before %q after %q", p, b, after[p])
		}
	}
}

// treeState maps each path under root to its type, mode and content (or
// link target).
func treeState(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		v := fi.Mode().String()
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			v += " -> " + l
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			v += " " + string(b)
		}
		out[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
