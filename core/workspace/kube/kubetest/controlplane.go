package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// mainRan is set by Main: ControlPlane refuses to start processes that
// nothing would stop.
var mainRan atomic.Bool

// shared is the control plane of this test binary.
var shared = &plane{}

// ControlPlane starts etcd, kube-apiserver and kube-controller-manager once
// per test binary (see the package doc) and returns an admin config; every
// call gets its own copy. Without the binaries it skips t, or fails it
// under SLUICE_REQUIRE_E2E=1. The test package's TestMain must call Main.
func ControlPlane(t testing.TB) *rest.Config {
	t.Helper()
	if !mainRan.Load() {
		t.Fatal("kubetest.ControlPlane: the test package's TestMain must call kubetest.Main(m), which stops the control plane")
	}
	return shared.config(t)
}

// Main runs the tests, stops whatever this package started and exits
// with the tests' status. Call it from TestMain:
//
//	func TestMain(m *testing.M) { kubetest.Main(m) }
func Main(m *testing.M) {
	mainRan.Store(true)
	code := m.Run()
	shared.stop()
	os.Exit(code)
}

// plane is one control plane: started on first use, stopped by stop.
type plane struct {
	binDir string // "" means BinDir()

	once    sync.Once
	missing string // binaries missing: skip or fail
	err     error  // start failed: fail
	cfg     *rest.Config

	mu    sync.Mutex
	dir   string
	procs []*proc
}

// proc is a started process, stopped by its PID.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when it exited
}

// startTimings, written once the control plane is up, is what the
// harness's tests report: how long etcd and the API server took to be
// ready, and the whole start.
var startTimings struct {
	etcdAndAPIServer, total time.Duration
}

func (p *plane) config(t testing.TB) *rest.Config {
	t.Helper()
	p.once.Do(p.start)
	if p.missing != "" {
		unavailable(t, p.missing)
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return rest.CopyConfig(p.cfg)
}

func (p *plane) start() {
	dir := p.binDir
	if dir == "" {
		dir = BinDir()
	}
	if p.missing = missingBinaries(dir, "etcd", "kube-apiserver", "kube-controller-manager"); p.missing != "" {
		return
	}
	// A port picked free can be taken before the process binds it; the
	// process then exits and the start is tried again on new ports.
	for attempt := 1; ; attempt++ {
		err := p.startOnce(dir)
		if err == nil {
			return
		}
		p.stop()
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			p.err = fmt.Errorf("kubetest: starting the control plane from %s: %w", dir, err)
			return
		}
	}
}

var errPortTaken = errors.New("a port was taken")

func (p *plane) startOnce(bin string) error {
	t0 := time.Now()
	dir, err := os.MkdirTemp("", "sluice-kubetest-")
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.dir = dir
	p.mu.Unlock()
	certs, err := newPKI(dir)
	if err != nil {
		return err
	}
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdPort, peerPort, apiPort := ports[0], ports[1], ports[2]
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	if err := p.run(dir, "etcd", filepath.Join(bin, "etcd"),
		"--name", "default", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default="+peerURL,
		"--unsafe-no-fsync", "--log-level", "warn"); err != nil {
		return err
	}
	if err := p.run(dir, "kube-apiserver", filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(apiPort),
		"--tls-cert-file", certs.serverCert, "--tls-private-key-file", certs.serverKey,
		"--client-ca-file", certs.caFile,
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", certs.saPub,
		"--service-account-signing-key-file", certs.saKey,
		"--service-cluster-ip-range", "10.96.0.0/24",
		// an API server on 127.0.0.1 cannot be the kubernetes Service's endpoint
		"--endpoint-reconciler-type", "none",
		"--authorization-mode", "RBAC",
		"--enable-admission-plugins", "NamespaceLifecycle,LimitRanger,ServiceAccount,ResourceQuota",
		"--cert-dir", filepath.Join(dir, "apiserver-generated"),
		"--profiling=false"); err != nil {
		return err
	}
	cfg := &rest.Config{
		Host: "https://127.0.0.1:" + strconv.Itoa(apiPort),
		TLSClientConfig: rest.TLSClientConfig{
			CAData: certs.caPEM, CertData: certs.adminCertPEM, KeyData: certs.adminKeyPEM,
		},
		QPS: 100, Burst: 200, Timeout: 30 * time.Second,
	}
	if err := p.waitReady(cfg, 2*time.Minute); err != nil {
		return err
	}
	startTimings.etcdAndAPIServer = time.Since(t0)
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	if err := writeKubeconfig(kubeconfig, cfg.Host, certs.caFile, certs.adminCert, certs.adminKey); err != nil {
		return err
	}
	// The controllers that make an API server behave like a cluster's:
	// a namespace's default service account, quota usage (without it the
	// quota admission refuses everything a quota covers as "status
	// unknown"), namespace deletion and owner-reference garbage collection.
	if err := p.run(dir, "kube-controller-manager", filepath.Join(bin, "kube-controller-manager"),
		"--kubeconfig", kubeconfig, "--leader-elect=false", "--secure-port=0",
		"--controllers", "namespace-controller,serviceaccount-controller,resourcequota-controller,garbage-collector-controller",
		"--use-service-account-credentials=false", "--profiling=false"); err != nil {
		return err
	}
	startTimings.total = time.Since(t0)
	p.cfg = cfg
	return nil
}

// run starts one process with its output in dir/<name>.log.
func (p *plane) run(dir, name, path string, args ...string) error {
	logPath := filepath.Join(dir, name+".log")
	lf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		lf.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	lf.Close()
	pr := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { cmd.Wait(); close(pr.done) }()
	p.mu.Lock()
	p.procs = append(p.procs, pr)
	p.mu.Unlock()
	return nil
}

// waitReady polls /readyz until it answers ok; a process that exits
// meanwhile ends the wait with its log's tail.
func (p *plane) waitReady(cfg *rest.Config, backstop time.Duration) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(backstop)
	var last error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		cancel()
		if err == nil && string(body) == "ok" {
			return nil
		}
		last = err
		p.mu.Lock()
		procs := append([]*proc(nil), p.procs...)
		p.mu.Unlock()
		for _, pr := range procs {
			select {
			case <-pr.done:
				tail := logTail(pr.log, 15)
				if strings.Contains(tail, "address already in use") {
					return fmt.Errorf("%s exited: %w:\n%s", pr.name, errPortTaken, tail)
				}
				return fmt.Errorf("%s exited (%v) before the API server was ready:\n%s", pr.name, pr.cmd.ProcessState, tail)
			default:
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the API server was not ready after %s (last error: %v); logs in %s", backstop, last, p.dir)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends every process this plane started, by its PID (TERM, then KILL
// after 10 s), and removes its directory.
func (p *plane) stop() {
	p.mu.Lock()
	procs, dir := p.procs, p.dir
	p.procs, p.dir = nil, ""
	p.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		pr := procs[i]
		pr.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-pr.done:
		case <-time.After(10 * time.Second):
			pr.cmd.Process.Kill()
			<-pr.done
		}
	}
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// freePorts returns n distinct ports that were free on 127.0.0.1 a moment
// ago. They come from the ephemeral range, which the cluster make test
// starts (ports 23000–31999) never uses.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func writeKubeconfig(path, server, ca, cert, key string) error {
	return os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster: {server: %q, certificate-authority: %q}
users:
- name: admin
  user: {client-certificate: %q, client-key: %q}
contexts:
- name: kubetest
  context: {cluster: kubetest, user: admin}
current-context: kubetest
`, server, ca, cert, key)), 0o600)
}

// logTail is the last n lines of a log file.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
