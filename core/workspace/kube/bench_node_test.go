package kube

import (
	"context"
	"io"
	"slices"
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
