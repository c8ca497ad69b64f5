package kube

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/core/workspace"
	"github.com/sluicehq/sluice/core/workspace/dockerrt"
	"github.com/sluicehq/sluice/core/workspace/kube/kubetest"
	"github.com/sluicehq/sluice/core/workspace/workspacetest"
)

// firstByte is a Run writer that notes when the program's first byte
// arrived.
type firstByte struct {
	mu    sync.Mutex
	start time.Time
	at    time.Duration
}

func (f *firstByte) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at == 0 && len(p) > 0 {
		f.at = time.Since(f.start)
	}
	return len(p), nil
}

func median(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2].Microseconds()) / 1000
}

// BenchmarkFirstCommand_Pod_vs_Docker is what a person waits for between
// an agent's workspace_run and the program's first output, on the cluster
// make test starts and on the Docker Engine, in alternating rounds with
// the same image, tree and limits: the runtime's Run from its call to the
// first byte of stdout (create, start, the tree copied in, attach), and
// to its return (the tree copied back, everything removed and verified
// gone). pod-start-ms is the part a warm pool of started pods would save:
// a bare pod of the same image from create to Running. runs-per-node is
// how many runs at the default limits the node's allocatable CPU and
// memory hold (requests equal limits, plus each pod's keeper).
func BenchmarkFirstCommand_Pod_vs_Docker(b *testing.B) {
	c := kubetest.Node(b)
	ctx := context.Background()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	imageID, err := workspacetest.EnsureImage(ctx, cli)
	if err != nil {
		b.Fatal(err)
	}
	podImage := c.ImportImage(b, workspacetest.ImageRef)
	ns := kubetest.Namespace(b, c.Config)
	pods := newRuntime(b, c.Config, Options{Namespace: ns, ImagePullPolicy: "Never"})
	docker, err := dockerrt.New(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer docker.Close()
	cs := adminClient(b, c.Config)

	type side struct {
		rt      workspace.Runtime
		image   string
		first   []time.Duration
		total   []time.Duration
		started []time.Duration
	}
	sides := []*side{{rt: docker, image: imageID}, {rt: pods, image: podImage}}
	run := func(s *side) {
		spec := testSpec(b, s.image)
		spec.Argv = []string{"echo", "first"}
		spec.Env = spec.Env[:3] // no secrets: the same environment on both sides
		spec.Limits.MemoryBytes, spec.Limits.CPUs = 256<<20, 0.5
		fb := &firstByte{start: time.Now()}
		st, err := s.rt.Run(ctx, spec, fb, io.Discard)
		total := time.Since(fb.start)
		if err != nil || st.ExitCode != 0 || fb.at == 0 {
			b.Fatalf("%s: %+v %v (first byte at %v)", s.rt.Name(), st, err, fb.at)
		}
		s.first, s.total = append(s.first, fb.at), append(s.total, total)
	}
	barePod := func() time.Duration {
		name := "bare-" + randomID(b)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: new(false), TerminationGracePeriodSeconds: new(int64(0)),
			Containers: []corev1.Container{{Name: "c", Image: podImage, ImagePullPolicy: corev1.PullNever, Command: []string{"/bin/sh", "-c", "sleep 3600"}}}}}
		start := time.Now()
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		for {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if p.Status.Phase == corev1.PodRunning {
				break
			}
			if time.Since(start) > 2*time.Minute {
				b.Fatalf("the bare pod did not run: %+v", p.Status)
			}
			time.Sleep(10 * time.Millisecond)
		}
		d := time.Since(start)
		cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
		return d
	}
	run(sides[0]) // warm both: the first container or pod of a process pays more
	run(sides[1])
	sides[0].first, sides[0].total, sides[1].first, sides[1].total = nil, nil, nil, nil
	b.ResetTimer()
	for i := range b.N {
		for j := range sides {
			run(sides[(i+j)%2])
		}
		sides[1].started = append(sides[1].started, barePod())
	}
	b.StopTimer()
	b.ReportMetric(median(sides[0].first), "docker-first-ms")
	b.ReportMetric(median(sides[1].first), "pod-first-ms")
	b.ReportMetric(median(sides[1].first)/median(sides[0].first), "first-ratio")
	b.ReportMetric(median(sides[0].total), "docker-run-ms")
	b.ReportMetric(median(sides[1].total), "pod-run-ms")
	b.ReportMetric(median(sides[1].started), "pod-start-ms")

	node, err := cs.CoreV1().Nodes().Get(ctx, c.Node, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	alloc := node.Status.Allocatable
	lim := workspace.DefaultLimits
	cpu := float64(alloc.Cpu().MilliValue()) / (lim.CPUs*1000 + float64(keeperCPU.MilliValue()))
	mem := float64(alloc.Memory().Value()) / float64(lim.MemoryBytes+keeperMemory.Value())
	b.ReportMetric(float64(int(min(cpu, mem, float64(alloc.Pods().Value())))), "runs-per-node")
}

// BenchmarkSession_Pod_vs_Docker is what a person waits for when `sluice
// run` starts an agent, in a pod of the cluster make test starts and in a
// container of the Docker Engine, in alternating rounds with the same
// image, command and a copy of 1,000 files of 2 KiB: from the runtime's
// StartSession to the agent's first output (Docker binds the copy; the pod
// gets it, the objects, the HOME and the sidecar by exec, and its link
// started), and to the end of Wait and Remove (the pod's copy read back,
// its objects deleted and verified gone). pod-sync-ms is the wait a pod
// session adds before each tool call: the copy read back with 10 of the
// 1,000 files changed.
func BenchmarkSession_Pod_vs_Docker(b *testing.B) {
	c := kubetest.Node(b)
	ctx := context.Background()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	imageID, err := workspacetest.EnsureImage(ctx, cli)
	if err != nil {
		b.Fatal(err)
	}
	podImage := c.ImportImage(b, workspacetest.ImageRef)
	ns := kubetest.Namespace(b, c.Config)
	pods := newRuntime(b, c.Config, Options{Namespace: ns, ImagePullPolicy: "Never"})
	docker, err := dockerrt.New(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer docker.Close()

	host := b.TempDir()
	files := map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/sluice-origin/.keep": ""}
	content := strings.Repeat("x", 2047) + "\n"
	for i := range 1000 {
		files[fmt.Sprintf("d%02d/f%04d.txt", i%50, i)] = content
	}
	copyDir, objects, home := filepath.Join(host, "copy"), filepath.Join(host, "objects"), filepath.Join(host, "home")
	writeBenchFiles(b, copyDir, files)
	writeBenchFiles(b, objects, map[string]string{"info/.keep": ""})
	writeBenchFiles(b, home, map[string]string{".keep": ""})
	sock := b.TempDir()
	for _, s := range []string{"mcp.sock", "egress.sock"} {
		ln, err := net.Listen("unix", filepath.Join(sock, s))
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
	}
	const repo, personHome = "/home/person/proj", "/home/person"
	user := testSpec(b, imageID).User
	spec := func(image string, cmd ...string) workspace.SessionContainerSpec {
		return workspace.SessionContainerSpec{
			Session: "Bench-" + randomID(b), Image: image, User: user, Cmd: cmd,
			Env: []string{"PATH=" + containerPath, "HOME=" + personHome},
			Binds: []workspace.SessionBind{
				{Source: copyDir, Target: repo},
				{Source: objects, Target: repo + "/.git/sluice-origin", ReadOnly: true},
				{Source: home, Target: personHome},
				{Source: sidecarBinary(b), Target: insideSidecar, ReadOnly: true},
				{Source: filepath.Join(sock, "egress.sock"), Target: insideEgress},
				{Source: filepath.Join(sock, "mcp.sock"), Target: insideMCP},
			},
			Copy: repo, WorkingDir: repo,
			Limits: workspace.Limits{MemoryBytes: 256 << 20, CPUs: 0.5, PIDs: 256, TmpfsBytes: 16 << 20},
		}
	}
	type side struct {
		name         string
		first, total []time.Duration
	}
	sides := []*side{{name: "docker"}, {name: "pod"}}
	run := func(s *side) {
		fb := &firstByte{start: time.Now()}
		var wait func() (int, error)
		var remove func() error
		if s.name == "docker" {
			sc, err := docker.StartSession(ctx, spec(imageID, "sh", "-c", "echo ready"), nil, fb, io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			wait, remove = sc.Wait, sc.Remove
		} else {
			sr, err := pods.StartSession(ctx, spec(podImage, "sh", "-c", "echo ready"), nil, fb, io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			wait, remove = sr.Wait, sr.Remove
		}
		code, err := wait()
		if err == nil {
			err = remove()
		}
		total := time.Since(fb.start)
		fb.mu.Lock()
		at := fb.at
		fb.mu.Unlock()
		if err != nil || code != 0 || at == 0 {
			b.Fatalf("%s: exit %d, %v (first byte at %v)", s.name, code, err, at)
		}
		s.first, s.total = append(s.first, at), append(s.total, total)
	}
	run(sides[0])
	run(sides[1])
	sides[0].first, sides[0].total, sides[1].first, sides[1].total = nil, nil, nil, nil

	// One pod session that stays, for the copy's way back.
	long, err := pods.StartSession(ctx, spec(podImage, "sh", "-c", "echo ready; while [ ! -e /tmp/stop ]; do sleep 0.1; done"), nil, io.Discard, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	defer long.Remove()
	// Its first read-back (everything, taken as the session starts) is
	// done before the rounds: each round's is what a tool call waits for.
	if err := long.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	var syncs []time.Duration
	b.ResetTimer()
	for i := range b.N {
		for j := range sides {
			run(sides[(i+j)%2])
		}
		b.StopTimer()
		change := fmt.Sprintf(`for i in 0 1 2 3 4 5 6 7 8 9; do echo round-%d-$i > /sluice/repo/d0$i/f000$i.txt; done`, i)
		if err := pods.execIn(ctx, long.name, containerKeeper, []string{"/bin/sh", "-c", change}, nil, nil); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		if err := long.Sync(ctx); err != nil {
			b.Fatal(err)
		}
		syncs = append(syncs, time.Since(t0))
		if got, _ := os.ReadFile(filepath.Join(copyDir, "d09", "f0009.txt")); string(got) != fmt.Sprintf("round-%d-9\n", i) {
			b.Fatalf("the copy did not come back: %q", got)
		}
	}
	b.StopTimer()
	b.ReportMetric(median(sides[0].first), "docker-first-ms")
	b.ReportMetric(median(sides[1].first), "pod-first-ms")
	b.ReportMetric(median(sides[0].total), "docker-session-ms")
	b.ReportMetric(median(sides[1].total), "pod-session-ms")
	b.ReportMetric(median(syncs), "pod-sync-ms")
}

func writeBenchFiles(b *testing.B, root string, files map[string]string) {
	b.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
