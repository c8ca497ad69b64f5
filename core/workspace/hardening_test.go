//go:build unix

package workspace

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace/workspacetest"
)

// These tests observe each hardening property from inside a real
// container on a real Docker Engine.

func TestRun_HardeningObservedInside(t *testing.T) {
	t.Parallel()
	m := newManager(t, true)
	w, _ := createRepoWS(t, m)
	script := `
echo "uid=$(id -u) gid=$(id -g)"
grep '^CapEff:' /proc/self/status
grep '^CapBnd:' /proc/self/status
grep '^NoNewPrivs:' /proc/self/status
echo "ifaces=$(ls /sys/class/net | tr '\n' ' ')"
echo "netdev=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')"
touch /x 2>/dev/null && echo "rootfs=writable" || echo "rootfs=readonly"
touch /workspace/.probe && echo "workspace=writable" && rm /workspace/.probe
touch /workspace/.git/probe 2>/dev/null && echo "gitdir=writable" || echo "gitdir=readonly"
touch /tmp/probe && echo "tmp=writable"
ls /var/run/docker.sock /run/docker.sock 2>/dev/null && echo "docker.sock=present" || echo "docker.sock=absent"
echo "mounts=$(grep -c ' /workspace' /proc/self/mountinfo)"
`
	res := mustRun(t, m, w.ID, RunRequest{Argv: []string{"sh", "-c", script}})
	out := res.Stdout
	t.Logf("observed inside the container:\n%s", out)
	for _, want := range []string{
		"uid=65534 gid=65534",
		"CapEff:\t0000000000000000",
		"CapBnd:\t0000000000000000",
		"NoNewPrivs:\t1",
		"ifaces=lo \n",
		"netdev=lo \n",
		"rootfs=readonly",
		"workspace=writable",
		"gitdir=readonly",
		"tmp=writable",
		"docker.sock=absent",
		"mounts=2",
	} {
		if m.own.uid != nobodyID && strings.HasPrefix(want, "uid=") {
			want = fmt.Sprintf("uid=%d gid=%d", m.own.uid, m.own.gid)
		}
		// gVisor's /proc/self/status has no NoNewPrivs line (runsc applies
		// the flag all the same); under it the line must not say 0.
		if testRuntime == "runsc" && strings.HasPrefix(want, "NoNewPrivs:") {
			if strings.Contains(out, "NoNewPrivs:\t0") {
				t.Errorf("inside the container: no_new_privs is off:\n%s", out)
			}
			continue
		}
		if !strings.Contains(out+"\n", want) {
			t.Errorf("inside the container: want %q in:\n%s", want, out)
		}
	}
	if res.ExitCode != 0 || res.ImageID != m.opts.Image || res.Runtime != "docker" || res.DurationMS <= 0 {
		t.Errorf("evidence: %+v", res)
	}
	// The container is gone once Run returns.
	if _, err := needDocker(t).Client().ContainerInspect(context.Background(), res.ContainerID); !cerrdefs.IsNotFound(err) {
		t.Errorf("the run's container still exists: %v", err)
	}
}

func TestRun_PIDLimit(t *testing.T) {
	t.Parallel()
	m := newManager(t, true)
	w := freshWS(t, m)
	limit, forkMsg := int64(32), "can't fork"
	if testRuntime == "runsc" {
		// Under gVisor the limit also counts the sandbox's own threads:
		// below about 48 it cannot start at all. A fork loop that reaches
		// the limit takes the whole sandbox down (exit 2), so no shell
		// is left to say it could not fork.
		limit, forkMsg = 64, ""
	}
	res := mustRun(t, m, w.ID, RunRequest{
		Argv:   []string{"sh", "-c", "for i in $(seq 1 200); do sleep 30 & done; echo all-started"},
		Limits: Limits{PIDs: limit},
	})
	if strings.Contains(res.Stdout, "all-started") || res.ExitCode == 0 || !strings.Contains(res.Stderr, forkMsg) {
		t.Fatalf("a fork loop under a 32-PID limit: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	t.Logf("fork loop under a %d-PID limit: exit %d, stderr %q", limit, res.ExitCode, strings.TrimSpace(res.Stderr))
}

func TestRun_MemoryLimitOOM(t *testing.T) {
	t.Parallel()
	m := newManager(t, true)
	w := freshWS(t, m)
	// The memory is taken only once the run has been seen running. A
	// container OOM-killed in its first moments can lose its OOM event in
	// containerd before 2.2 (containerd/containerd#8180), and the Engine
	// then reports a bare exit 137; an over-limit run of real work is
	// killed later than that.
	started := make(chan struct{})
	var once sync.Once
	done := runInBackground(m, w.ID, RunRequest{
		Argv:   []string{"sh", "-c", `echo started; while [ ! -f go ]; do sleep 0.1; done; x=$(head -c 200000000 /dev/zero | tr "\0" a); echo ${#x}`},
		Limits: Limits{MemoryBytes: 64 << 20},
		OnOutput: func(stream string, chunk []byte) {
			if strings.Contains(string(chunk), "started") {
				once.Do(func() { close(started) })
			}
		},
	})
	r := goOnAfter(t, m, w.ID, started, done, "go", "it was told to")
	if r.err != nil {
		t.Fatal(r.err)
	}
	res := r.res
	// The OOM killer picks the largest process: usually the shell holding
	// the string (exit 137), sometimes a member of the pipe, after which
	// the shell prints a shorter length. Either way the flag is set and
	// the 200 MB never fit.
	if !res.OOMKilled || strings.Contains(res.Stdout, "200000000") {
		t.Fatalf("holding 200 MB under a 64 MiB limit: %+v", res)
	}
	t.Logf("OOM: exit %d, oomKilled %v", res.ExitCode, res.OOMKilled)
}

func TestRun_TimeoutOutputLimitAndStreaming(t *testing.T) {
	t.Parallel()
	m := newManager(t, true)
	w := freshWS(t, m)

	// A 1 s limit cannot stop the run before a second has passed; how long
	// past it the kill lands depends on the machine, so only the flag and
	// the verdict say it was the limit that ended the run.
	start := time.Now()
	res := mustRun(t, m, w.ID, RunRequest{Argv: []string{"sleep", "60"}, Limits: Limits{Timeout: time.Second}})
	if !res.TimedOut || time.Since(start) < time.Second {
		t.Fatalf("timeout: %+v after %v", res, time.Since(start))
	}
	if v := res.Verdict(); !strings.Contains(v, "killed at its time limit (1s)") {
		t.Fatalf("timeout verdict: %q", v)
	}

	res = mustRun(t, m, w.ID, RunRequest{Argv: []string{"sh", "-c", "yes | head -c 100000; echo err >&2"}, Limits: Limits{OutputBytes: 1024}})
	if !res.Truncated || len(res.Stdout)+len(res.Stderr) > 1024 || res.OutputBytes != 100004 || res.ExitCode != 0 {
		t.Fatalf("output limit: truncated %v, kept %d, total %d, exit %d", res.Truncated, len(res.Stdout)+len(res.Stderr), res.OutputBytes, res.ExitCode)
	}
	if v := res.Verdict(); !strings.HasPrefix(v, "exited 0") || !strings.Contains(v, "past the 1024-byte cap: 100004 bytes in all") {
		t.Fatalf("output cap verdict: %q", v)
	}

	// A run that floods far past the limit is stopped.
	res = mustRun(t, m, w.ID, RunRequest{Argv: []string{"yes"}, Limits: Limits{OutputBytes: 1024, Timeout: 30 * time.Second}})
	if !res.OutputStopped || res.TimedOut {
		t.Fatalf("flood: %+v", res)
	}
	if v := res.Verdict(); !strings.Contains(v, "stopped for flooding output") || !strings.Contains(v, "cap") {
		t.Fatalf("flood verdict: %q", v)
	}

	// Streaming: the run waits, after its first line, for a file the test
	// writes only once that line has reached OnOutput. A run whose output
	// were handed over only at its end would never be told to go on.
	var mu sync.Mutex
	var chunks []string
	first := make(chan struct{})
	var once sync.Once
	done := runInBackground(m, w.ID, RunRequest{
		Argv: []string{"sh", "-c", "echo one; while [ ! -f stop ]; do sleep 0.1; done; echo two; echo three >&2"},
		OnOutput: func(stream string, b []byte) {
			mu.Lock()
			chunks = append(chunks, stream+":"+string(b))
			mu.Unlock()
			if stream == "stdout" && strings.Contains(string(b), "one") {
				once.Do(func() { close(first) })
			}
		},
	})
	r := goOnAfter(t, m, w.ID, first, done, "stop", "its first line was streamed")
	if r.err != nil || r.res.TimedOut {
		t.Fatalf("streamed run: %+v %v", r.res, r.err)
	}
	res = r.res
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(chunks, "")
	if !strings.Contains(all, "stdout:one") || !strings.Contains(all, "two") || !strings.Contains(all, "stderr:three") {
		t.Fatalf("streamed chunks: %q", chunks)
	}
	if res.Stdout != "one\ntwo\n" || res.Stderr != "three\n" {
		t.Fatalf("captured: %q %q", res.Stdout, res.Stderr)
	}
}

func TestRun_TestEvidence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, true)
	w := freshWS(t, m)
	for _, f := range []string{"junit_fail.xml", "gotest_pass.json", "tap_fail.tap"} {
		b, _ := os.ReadFile(filepath.Join("testdata", f))
		if _, err := m.WriteFile(ctx, w.ID, "fixtures/"+f, b, 0); err != nil {
			t.Fatal(err)
		}
	}
	// A report file written by the run.
	res := mustRun(t, m, w.ID, RunRequest{Argv: []string{"sh", "-c", "mkdir -p out && cp fixtures/junit_fail.xml out/report.xml; exit 1"}, ReportPath: "out/report.xml"})
	if res.Tests == nil || res.Tests.Failed != 1 || res.Tests.Errors != 1 || res.ExitCode != 1 {
		t.Fatalf("JUnit report: %+v %s", res.Tests, res.ReportError)
	}
	// go test -json and TAP on stdout.
	res = mustRun(t, m, w.ID, RunRequest{Argv: []string{"cat", "fixtures/gotest_pass.json"}, StdoutFormat: FormatGoTest})
	if res.Tests == nil || !res.Tests.OK() || res.Tests.Passed != 3 {
		t.Fatalf("go test -json: %+v %s", res.Tests, res.ReportError)
	}
	res = mustRun(t, m, w.ID, RunRequest{Argv: []string{"cat", "fixtures/tap_fail.tap"}, StdoutFormat: FormatTAP})
	if res.Tests == nil || res.Tests.Failed != 1 {
		t.Fatalf("TAP: %+v %s", res.Tests, res.ReportError)
	}
	// A report path that escapes is refused before anything runs.
	if _, err := m.Run(ctx, w.ID, RunRequest{Argv: []string{"true"}, ReportPath: "../../etc/passwd"}); err == nil {
		t.Fatalf("escaping report path accepted")
	}
	runs, err := m.Runs(w.ID)
	if err != nil || len(runs) != 3 {
		t.Fatalf("stored runs: %d %v", len(runs), err)
	}
}

func TestRun_RefusesBadRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, true)
	w := freshWS(t, m)
	for _, req := range []RunRequest{
		{},
		{Argv: []string{""}},
		{Argv: []string{"true"}, Limits: Limits{Timeout: 2 * time.Hour}},
		{Argv: []string{"true"}, Limits: Limits{MemoryBytes: 8 << 30}},
		{Argv: []string{"true"}, Limits: Limits{OutputBytes: 64 << 20}},
		{Argv: []string{"true"}, Env: map[string]string{"PATH": "/evil"}},
		{Argv: []string{"true"}, Env: map[string]string{"LD_PRELOAD": "/x.so"}},
		{Argv: []string{"true"}, StdoutFormat: "xml"},
	} {
		if _, err := m.Run(ctx, w.ID, req); !errcode.IsCode(err, errcode.InvalidArgument) {
			t.Errorf("Run(%+v): %v", req, err)
		}
	}
	// A workspace busy with a run refuses a second operation. The run
	// lasts until the test has tried both: it waits for a file written
	// past the manager, straight into the tree.
	done := make(chan error, 1)
	go func() {
		_, err := m.Run(ctx, w.ID, RunRequest{Argv: []string{"sh", "-c", "while [ ! -f stop ]; do sleep 0.1; done"}})
		done <- err
	}()
	waitFor(t, "the run to start", func() bool {
		select {
		case err := <-done:
			t.Fatalf("the run ended before it was told to: %v", err)
		default:
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.active[w.ID] != nil
	})
	if _, err := m.WriteFile(ctx, w.ID, "x", []byte("x"), 0); !errcode.IsCode(err, errcode.WorkspaceLocked) {
		t.Errorf("write during a run: %v, want workspace_locked", err)
	}
	if _, err := m.Run(ctx, w.ID, RunRequest{Argv: []string{"true"}}); !errcode.IsCode(err, errcode.WorkspaceLocked) {
		t.Errorf("a second run during a run: %v, want workspace_locked", err)
	}
	writeFile(t, filepath.Join(m.treeDir(w.ID), "stop"), "")
	if err := <-done; err != nil {
		t.Errorf("the run: %v", err)
	}
}

func TestRun_ImageIsVerified(t *testing.T) {
	t.Parallel()
	missing := newManager(t, true, func(o *Options) { o.Image = "sha256:" + strings.Repeat("0", 64) })
	w := freshWS(t, missing)
	if _, err := missing.Run(context.Background(), w.ID, RunRequest{Argv: []string{"true"}}); !errcode.IsCode(err, errcode.Unsupported) {
		t.Fatalf("run with an image that is not present: %v", err)
	}
	if err := needDocker(t).CheckImage(context.Background(), "busybox:latest"); !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Fatalf("an image by tag: %v", err)
	}
	if _, err := Open(Options{StateDir: t.TempDir() + "/s", ConfigDir: t.TempDir() + "/c", Image: workspacetest.ImageRef}); !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Fatalf("Open with an image tag: %v", err)
	}
}

// TestRun_DecoyHostLeaksNothing gives the host process every kind of
// credential an agent would love to find, then looks for each from inside
// a run: in its environment and anywhere in its file system.
func TestRun_DecoyHostLeaksNothing(t *testing.T) {
	tag := fmt.Sprintf("%d", time.Now().UnixNano())
	decoys := map[string]string{
		"GH_TOKEN":              "decoy-gh-token-" + tag,
		"GITHUB_TOKEN":          "decoy-github-token-" + tag,
		"SSH_AUTH_SOCK":         "/tmp/decoy-ssh-agent-" + tag,
		"GIT_ASKPASS":           "/usr/local/bin/decoy-askpass-" + tag,
		"AWS_SECRET_ACCESS_KEY": "decoy-aws-secret-" + tag,
	}
	for k, v := range decoys {
		t.Setenv(k, v)
	}
	home := t.TempDir()
	hostsToken := "decoy-gh-hosts-token-" + tag
	credToken := "decoy-git-credential-" + tag
	writeFile(t, filepath.Join(home, ".gitconfig"), "[credential]\n\thelper = store\n[user]\n\tname = decoy-"+tag+"\n")
	writeFile(t, filepath.Join(home, ".git-credentials"), "https://person:"+credToken+"@github.com\n")
	writeFile(t, filepath.Join(home, ".config", "gh", "hosts.yml"), "github.com:\n    oauth_token: "+hostsToken+"\n    user: person\n")
	t.Setenv("HOME", home)
	all := []string{hostsToken, credToken, "decoy-" + tag}
	for _, v := range decoys {
		all = append(all, v)
	}

	m := newManager(t, true)
	w, _ := createRepoWS(t, m)
	// The values travel only as argv of the container's own grep (its
	// /proc is excluded), never as files.
	// Each value is passed split in two and joined inside the shell, so
	// that no file (not even the stored argv of the run) holds it whole;
	// the joined patterns exist only in the container's memory and /proc,
	// which the scan skips.
	script := `env; echo ---
pats=""
while [ $# -gt 1 ]; do pats="$pats -e $1$2"; shift 2; done
for d in /*; do
  case "$d" in /proc|/sys|/dev) ;; *) grep -r -l -s -F $pats "$d" ;; esac
done
grep -r -l -s -F $pats /dev/shm
echo "scan-done"`
	args := []string{"sh", "-c", script, "scan"}
	for _, v := range all {
		args = append(args, v[:len(v)/2], v[len(v)/2:])
	}
	res := mustRun(t, m, w.ID, RunRequest{Argv: args})
	env, found, _ := strings.Cut(res.Stdout, "---\n")
	if !strings.Contains(found, "scan-done") {
		t.Fatalf("the scan did not finish: %q %q", res.Stdout, res.Stderr)
	}
	if strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(found), "scan-done")) != "" {
		t.Fatalf("files inside the container hold a host credential:\n%s", found)
	}
	for _, v := range all {
		if strings.Contains(env, v) {
			t.Fatalf("the run's environment holds %q:\n%s", v, env)
		}
	}
	for _, k := range []string{"GH_TOKEN", "GITHUB_TOKEN", "SSH_AUTH_SOCK", "GIT_ASKPASS", "AWS_SECRET_ACCESS_KEY"} {
		if strings.Contains(env, k+"=") {
			t.Fatalf("the run's environment has %s:\n%s", k, env)
		}
	}
	t.Logf("environment inside the run:\n%s", env)
	// Nor did Sluice's own files pick them up.
	filepath.Walk(m.dir(w.ID), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			for _, v := range all {
				if bytes.Contains(b, []byte(v)) {
					t.Errorf("%s holds %q", p, v)
				}
			}
		}
		return nil
	})
}

// TestRun_SecretNeverInHostCmdline runs with a granted secret while
// scanning every process's command line on the host, and checks that the
// run's output comes back redacted.
func TestRun_SecretNeverInHostCmdline(t *testing.T) {
	t.Parallel()
	m := newManager(t, true)
	w := freshWS(t, m)
	secret := fmt.Sprintf("sk-live-%d-abcdef", time.Now().UnixNano())
	if err := m.Grant(w.ID, "SECRET", secret); err != nil {
		t.Fatal(err)
	}
	var scans, hits atomic.Int64
	var hitWhere atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
			for _, p := range paths {
				b, err := os.ReadFile(p)
				if err == nil && bytes.Contains(b, []byte(secret)) {
					hits.Add(1)
					hitWhere.Store(p + ": " + string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
				}
			}
			scans.Add(1)
		}
	}()
	var streamed bytes.Buffer
	var smu sync.Mutex
	res := mustRun(t, m, w.ID, RunRequest{
		Argv: []string{"sh", "-c", `sleep 2; echo "token is $SECRET"; printf '%s' "$SECRET" | cut -c1-6; echo "$SECRET" >&2`},
		OnOutput: func(_ string, b []byte) {
			smu.Lock()
			streamed.Write(b)
			smu.Unlock()
		},
	})
	close(stop)
	wg.Wait()
	if hits.Load() > 0 {
		t.Fatalf("the secret appeared in a host command line: %v", hitWhere.Load())
	}
	if scans.Load() < 5 {
		t.Fatalf("only %d scans of /proc ran during the run", scans.Load())
	}
	if !strings.Contains(res.Stdout, "token is [redacted:SECRET]") || strings.Contains(res.Stdout+res.Stderr, secret) || res.Stderr != "[redacted:SECRET]\n" {
		t.Fatalf("output not redacted: %q %q", res.Stdout, res.Stderr)
	}
	smu.Lock()
	if strings.Contains(streamed.String(), secret) {
		t.Fatalf("streamed output holds the secret")
	}
	smu.Unlock()
	runs, _ := m.Runs(w.ID)
	b, _ := os.ReadFile(filepath.Join(m.runsDir(w.ID), runs[0].ID+".json"))
	if bytes.Contains(b, []byte(secret)) {
		t.Fatalf("stored evidence holds the secret")
	}
	t.Logf("%d scans of /proc/*/cmdline during the run, no hit; stdout %q", scans.Load(), res.Stdout)
}

func hostIP(t *testing.T) string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
			return ipn.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address on this host")
	return ""
}

// serveAll starts an HTTP server on every host address.
func serveAll(t *testing.T, body string) int {
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

func TestEgress_NoneByDefaultGrantedThroughProxy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the egress firewall needs root")
	}
	var dmu sync.Mutex
	var denials []Denial
	m := newManager(t, true, func(o *Options) {
		o.EgressFirewall = true
		o.OnEgressDenied = func(d Denial) { dmu.Lock(); denials = append(denials, d); dmu.Unlock() }
	})
	w := freshWS(t, m)
	allowed := upstream(t, "allowed")
	other := upstream(t, "other")
	direct := serveAll(t, "direct-host-service")
	ip := hostIP(t)

	// No grant: no network at all.
	res := mustRun(t, m, w.ID, RunRequest{Argv: []string{"sh", "-c", fmt.Sprintf(
		"timeout 3 wget -q -O- http://%s:%d/ ; echo rc=$?; timeout 3 wget -q -O- http://%s/ ; echo rc=$?", ip, direct, allowed)}})
	if strings.Contains(res.Stdout, "direct-host-service") || strings.Contains(res.Stdout, "hello from") || strings.Count(res.Stdout, "rc=0") != 0 {
		t.Fatalf("reached the network without a grant: %q %q", res.Stdout, res.Stderr)
	}
	t.Logf("without a grant: %q", strings.TrimSpace(res.Stderr))

	if testRuntime == "runsc" {
		// runsc is registered with --network=none: a grant is refused
		// (TestEgress_RefusedUnderGVisor has the details).
		if err := m.GrantEgress(w.ID, []string{allowed}); !errcode.IsCode(err, errcode.Unsupported) {
			t.Fatalf("an egress grant under runsc: %v", err)
		}
		return
	}
	if err := m.GrantEgress(w.ID, []string{allowed}); err != nil {
		t.Fatal(err)
	}
	// Debian's static busybox wget crashes with -T; timeout(1) bounds each
	// attempt instead. rc3 and rc4 go around the proxy (-Y off): to the
	// host's address on the egress network, and to its main address.
	script := fmt.Sprintf(`
timeout 5 wget -q -O- http://%[1]s/x; echo " rc1=$?"
timeout 5 wget -q -O- http://%[2]s/x; echo " rc2=$?"
gw=$(echo "$HTTP_PROXY" | sed 's|.*@||; s|:.*||')
timeout 3 wget -q -Y off -O- http://$gw:%[3]d/; echo " rc3=$?"
timeout 3 wget -q -Y off -O- http://%[4]s:%[3]d/; echo " rc4=$?"
`, allowed, other, direct, ip)
	res = mustRun(t, m, w.ID, RunRequest{Argv: []string{"sh", "-c", script}})
	t.Logf("with a grant for %s: stdout %q stderr %q", allowed, res.Stdout, res.Stderr)
	if !strings.Contains(res.Stdout, "hello from allowed rc1=0") {
		t.Errorf("the granted host was not reachable through the proxy")
	}
	if strings.Contains(res.Stdout, "hello from other") || strings.Contains(res.Stdout, "rc2=0") {
		t.Errorf("a host outside the grant was reachable")
	}
	if strings.Contains(res.Stdout, "direct-host-service") {
		t.Errorf("a host service was reachable around the proxy")
	}
	found := false
	for _, d := range res.EgressDenials {
		if d.Host == other && d.WorkspaceID == w.ID && d.RunID == res.ID {
			found = true
		}
	}
	if !found {
		t.Errorf("the denial is not in the run's evidence: %+v", res.EgressDenials)
	}
	dmu.Lock()
	if len(denials) == 0 || denials[0].Host != other {
		t.Errorf("OnEgressDenied saw %+v", denials)
	}
	dmu.Unlock()
	if !strings.Contains(strings.Join(res.Egress, ","), allowed) {
		t.Errorf("evidence does not name the grant: %v", res.Egress)
	}
}

func TestDestroy_VerifiedAndReconcile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, true)
	d := needDocker(t)
	w, _ := createRepoWS(t, m)
	res := mustRun(t, m, w.ID, RunRequest{Argv: []string{"true"}})

	// An orphan: a labelled container whose workspace does not exist, as a
	// crash would leave it.
	orphan := ContainerSpec{WorkspaceID: "ghost", RunID: "r1", StoreKey: m.StoreKey(), Image: m.opts.Image,
		Argv: []string{"sleep", "600"}, User: m.ContainerUser(), TreePath: m.treeDir(w.ID), Limits: m.opts.Limits}
	cfg, hc, nc := d.ContainerConfig(orphan)
	created, err := d.Client().ContainerCreate(ctx, cfg, hc, nc, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	// A stale run container of a live workspace (a crash mid-run).
	stale := orphan
	stale.WorkspaceID = w.ID
	cfg, hc, nc = d.ContainerConfig(stale)
	staleC, err := d.Client().ContainerCreate(ctx, cfg, hc, nc, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	// A half-created workspace.
	if err := os.MkdirAll(filepath.Join(m.root, "half", "tree"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(m.root, "half", "meta.json"), `{"id":"half","state":"creating"}`)

	rep, err := m.Reconcile(ctx)
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if len(rep.RemovedContainers) != 2 || len(rep.RemovedWorkspaces) != 1 || rep.RemovedWorkspaces[0] != "half" {
		t.Fatalf("Reconcile report: %+v", rep)
	}
	for _, id := range []string{created.ID, staleC.ID} {
		if _, err := d.Client().ContainerInspect(ctx, id); !cerrdefs.IsNotFound(err) {
			t.Fatalf("orphan %s still exists: %v", id, err)
		}
	}
	if _, err := os.Stat(filepath.Join(m.root, "half")); !os.IsNotExist(err) {
		t.Fatalf("half-created workspace remains: %v", err)
	}
	if _, err := m.Get(w.ID); err != nil {
		t.Fatalf("Reconcile touched a live workspace: %v", err)
	}

	// Destroy while a run is in flight: the run is stopped, its container
	// removed, the tree deleted, and each is verified.
	runErr := make(chan error, 1)
	go func() {
		_, err := m.Run(ctx, w.ID, RunRequest{Argv: []string{"sleep", "60"}})
		runErr <- err
	}()
	var running []ContainerInfo
	waitFor(t, "the long run's container", func() bool {
		select {
		case err := <-runErr:
			t.Fatalf("the long run ended before Destroy: %v", err)
		default:
		}
		running, _ = d.Containers(ctx, m.StoreKey())
		return len(running) > 0
	})
	start := time.Now()
	drep, err := m.Destroy(ctx, w.ID)
	if err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if !drep.ContainersGone || !drep.TreeRemoved {
		t.Fatalf("Destroy report: %+v", drep)
	}
	if err := <-runErr; err == nil {
		t.Fatalf("the interrupted run reported success")
	}
	for _, c := range append(running, ContainerInfo{ID: res.ContainerID}) {
		if _, err := d.Client().ContainerInspect(ctx, c.ID); !cerrdefs.IsNotFound(err) {
			t.Fatalf("container %s survived Destroy: %v", c.ID, err)
		}
	}
	if _, err := os.Stat(m.dir(w.ID)); !os.IsNotExist(err) {
		t.Fatalf("workspace directory survived Destroy: %v", err)
	}
	if _, err := m.Get(w.ID); err != ErrNotFound && !errcode.IsCode(err, errcode.WorkspaceNotFound) {
		t.Fatalf("Get after Destroy: %v", err)
	}
	t.Logf("Destroy during a run took %v: %+v", time.Since(start), drep)
}

func TestExpire_DestroysIdleWorkspaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	m := newManager(t, false, func(o *Options) {
		o.Lease = time.Hour
		o.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	})
	idle := freshWS(t, m)
	busy := freshWS(t, m)
	clock.Store(now.Add(50 * time.Minute).UnixNano())
	if _, err := m.WriteFile(ctx, busy.ID, "x", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	clock.Store(now.Add(70 * time.Minute).UnixNano())
	gone, err := m.Expire(ctx)
	if err != nil || len(gone) != 1 || gone[0] != idle.ID {
		t.Fatalf("Expire: %v %v", gone, err)
	}
	if _, err := m.Get(busy.ID); err != nil {
		t.Fatalf("a used workspace expired: %v", err)
	}
}

// TestReconcile_SparesWorkspacesBeingMade: Reconcile runs at start-up
// while agents may already be creating workspaces. A directory made a
// moment ago whose lock is not there yet is a workspace being made, not
// one a crash left behind: the scan must never remove it under Create.
func TestReconcile_SparesWorkspacesBeingMade(t *testing.T) {
	m, err := Open(Options{StateDir: t.TempDir() + "/s", ConfigDir: t.TempDir() + "/c"})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, err := m.Reconcile(context.Background()); err != nil {
				done <- err
				return
			}
		}
	}()
	for i := 0; i < 300; i++ {
		id := fmt.Sprintf("ws-made-%d", i)
		unlock, err := m.makeWorkspaceDir(id)
		if err != nil {
			close(stop)
			t.Fatalf("workspace %d: %v", i, err)
		}
		if _, err := os.Stat(filepath.Join(m.dir(id), "lock")); err != nil {
			t.Errorf("workspace %d lost its lock under Reconcile: %v", i, err)
		}
		unlock()
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
