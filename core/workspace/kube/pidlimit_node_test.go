package kube

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/core/workspace/kube/kubetest"
)

// bombScript starts background sleeps one after the other, saying how
// many it has started, until a fork fails (the shell then exits, saying
// why) or, were nothing to stop it, a bound of ten times the limit. Its
// parent reports the end, then waits on a FIFO (no fork: the pod's budget
// is spent) for the test to release it, and until the releasing process
// is gone (else the container's end could kill it before its status is
// read).
const bombScript = `mkfifo /tmp/release
ulimit -u 100000 2>/dev/null && echo RAISED || echo RAISE-REFUSED
echo "uid $(id -u)"
sh -c 'i=0; while [ $i -lt $1 ]; do sleep 1000 & i=$((i+1)); echo "started $i"; done' bomb "$1"
echo "BOMB-ENDED $?"
read -r p </tmp/release
while [ -d "/proc/$p" ]; do :; done
echo RELEASED
echo kept >kept.txt`

var startedRe = regexp.MustCompile(`started (\d+)\n`)

// bombResult is what a fork loop in a pod reached.
type bombResult struct {
	started int
	stdout  string
	stderr  string
}

func (b bombResult) String() string {
	return "started " + strconv.Itoa(b.started) + "\nstdout:\n" + b.stdout + "\nstderr:\n" + b.stderr
}

// runBomb runs bombScript in a run of r with the PID limit pids; while
// the pod's budget is spent (BOMB-ENDED seen), during() runs; then the
// test releases the run through its FIFO, by an exec into the run
// container, which must work although the pod is at its limit.
func runBomb(t *testing.T, e nodeEnv, r *Runtime, pids int64, during func()) bombResult {
	t.Helper()
	spec := e.spec(t, "sh", "-c", bombScript, "bomb-parent", strconv.FormatInt(10*pids, 10))
	spec.Limits.PIDs = pids
	name := podName(spec.RunID)
	var once sync.Once
	released := make(chan error, 1)
	stdout := &lineWriter{onData: func(s string) {
		if strings.Contains(s, "BOMB-ENDED") {
			once.Do(func() {
				go func() {
					if during != nil {
						during()
					}
					released <- r.execIn(context.Background(), name, containerRun, []string{"/bin/sh", "-c", "echo $$ >/tmp/release"}, nil, nil)
				}()
			})
		}
	}}
	stderr := &lineWriter{}
	st, err := r.Run(context.Background(), spec, stdout, stderr)
	res := bombResult{stdout: stdout.String(), stderr: stderr.String()}
	for _, m := range startedRe.FindAllStringSubmatch(res.stdout, -1) {
		res.started, _ = strconv.Atoi(m[1])
	}
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, res)
	}
	if err := <-released; err != nil {
		t.Fatalf("an exec into the run container failed while the pod was at its PID limit: %v\n%s", err, res)
	}
	if st.ExitCode != 0 || !strings.Contains(res.stdout, "RELEASED") {
		t.Fatalf("status %+v\n%s", st, res)
	}
	// The copy out works after the pod was at its limit.
	if b, err := os.ReadFile(filepath.Join(spec.TreePath, "kept.txt")); err != nil || string(b) != "kept\n" {
		t.Fatalf("the run's file did not come back: %q %v", b, err)
	}
	return res
}

// podOwnTasks bounds the tasks of a pod that are not the fork loop's
// sleeps: the pause process (on the test node a Go program whose thread
// count varies with the machine's load, 5 to 9; in the pod's sandbox
// under gVisor), the keeper's shell and its sleep, Sluice's shell in the
// run container, the loop's two shells. Runs on the node took 10 to 13;
// the bound leaves room for a busier machine's threads, and the limits
// tested are large enough (64) that a limit off by half still fails.
const podOwnTasks = 24

// checkBomb: the fork loop was stopped by its pod's limit, with EAGAIN,
// short of the limit by no more than the pod's own processes, and could
// not raise the limit.
func checkBomb(t *testing.T, res bombResult, pids int64, own int) {
	t.Helper()
	if !strings.Contains(res.stdout, "RAISE-REFUSED") {
		t.Errorf("the program raised its PID limit:\n%s", res)
	}
	if strings.Contains(res.stdout, "BOMB-ENDED 0") || !strings.Contains(res.stderr, "Resource temporarily unavailable") {
		t.Errorf("the fork loop was not stopped by a failed fork (EAGAIN):\n%s", res)
	}
	if res.started >= int(pids) || res.started < int(pids)-own {
		t.Errorf("the fork loop started %d processes under a PID limit of %d (the pod's own take at most %d)\n%s", res.started, pids, own, res)
	}
}

// TestNode_PIDLimitStopsAForkLoopPerPod: a run's fork loop is stopped at
// its PID limit (the program sees fork fail with EAGAIN, and cannot raise
// the limit); while that pod is at its limit, another run with the same
// limit starts as many processes as it likes within its own, and Sluice's
// exec into the full pod and its copy out still work; a normal run works
// afterwards. Each pod ran under a uid of its own.
func TestNode_PIDLimitStopsAForkLoopPerPod(t *testing.T) {
	e := onNode(t)
	const pids = 64
	// The second pod starts half its limit: the rest is room for the
	// pod's own tasks (podOwnTasks), whose count varies from run to run.
	// Had it shared the first pod's spent budget, it could start none.
	const otherStarts = pids / 2
	var other struct {
		out, errOut string
		err         error
	}
	res := runBomb(t, e, e.r, pids, func() {
		// The first pod's budget is spent: this one has all of its own.
		spec := e.spec(t, "sh", "-c", `i=0; while [ $i -lt $1 ]; do sleep 1000 & i=$((i+1)); done; echo "OTHER started $i as $(id -u)"`, "other", strconv.Itoa(otherStarts))
		spec.Limits.PIDs = pids
		out, errOut := &lineWriter{}, &lineWriter{}
		st, err := e.r.Run(context.Background(), spec, out, errOut)
		other.out, other.errOut, other.err = out.String(), errOut.String(), err
		if err == nil && st.ExitCode != 0 {
			other.err = &exitErr{st.ExitCode}
		}
	})
	t.Logf("PID limit %d: the fork loop started %d sleeps\n%s", pids, res.started, res.stdout)
	checkBomb(t, res, pids, podOwnTasks)
	if other.err != nil || !strings.Contains(other.out, "OTHER started "+strconv.Itoa(otherStarts)+" ") {
		t.Fatalf("a second pod could not start %d processes while the first was at its limit: %v %q (stderr %q)", otherStarts, other.err, other.out, other.errOut)
	}
	uidOf := func(s, prefix string) string {
		m := regexp.MustCompile(prefix + `(\d+)`).FindStringSubmatch(s)
		if m == nil {
			return ""
		}
		return m[1]
	}
	u1, u2 := uidOf(res.stdout, "uid "), uidOf(other.out, "as ")
	if u1 == "" || u1 == u2 || u1 == strings.Split(e.spec(t).User, ":")[0] {
		t.Fatalf("the pods ran as %q and %q (the workspace's user %s)", u1, u2, e.spec(t).User)
	}
	t.Logf("second pod: %s", other.out)

	normal := e.spec(t, "sh", "-c", "echo normal")
	normal.Limits.PIDs = pids
	out := &lineWriter{}
	st, err := e.r.Run(context.Background(), normal, out, &lineWriter{})
	if err != nil || st.ExitCode != 0 || out.String() != "normal\n" {
		t.Fatalf("a normal run after the fork loop: %+v %v %q", st, err, out)
	}
}

// TestNode_PIDLimitUnderGVisor: the same limit holds under gVisor, whose
// Sentry keeps its own count of a uid's tasks and refuses a clone past
// RLIMIT_NPROC with EAGAIN.
func TestNode_PIDLimitUnderGVisor(t *testing.T) {
	c := kubetest.Node(t)
	if c.GVisor == "" {
		t.Skip("the cluster was started without gVisor (SLUICE_K8S_GVISOR=0)")
	}
	e := onNode(t)
	r := newRuntime(t, c.Config, Options{Namespace: e.ns, ImagePullPolicy: "Never", RuntimeClassName: c.GVisor})
	const pids = 64
	res := runBomb(t, e, r, pids, nil)
	t.Logf("under gVisor, PID limit %d: the fork loop started %d sleeps\n%s", pids, res.started, res.stdout)
	checkBomb(t, res, pids, podOwnTasks)
}

// TestNode_PIDLimitInASessionPod: a confined session's agent is held to
// the session's PID limit the same way, and a kill exec'd into its full
// pod still ends it.
func TestNode_PIDLimitInASessionPod(t *testing.T) {
	e := onNode(t)
	const pids = 64
	cs, _ := endTestSpec(t, e, `sh -c 'sh -c "i=0; while [ \$i -lt 640 ]; do sleep 1000 & i=\$((i+1)); echo started \$i; done"; echo BOMB-ENDED $?; while :; do sleep 1; done'; exit 5`)
	cs.Limits.PIDs = pids
	ended := make(chan struct{})
	var once sync.Once
	out := &lineWriter{onData: func(s string) {
		if strings.Contains(s, "BOMB-ENDED") {
			once.Do(func() { close(ended) })
		}
	}}
	errOut := &lineWriter{}
	s, err := e.r.StartSession(context.Background(), cs, nil, out, errOut)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Remove()
	type waited struct {
		code int
		err  error
	}
	waitC := make(chan waited, 1)
	go func() {
		code, err := s.Wait()
		waitC <- waited{code, err}
	}()
	var w waited
	select {
	case <-ended:
		if err := s.Signal("KILL"); err != nil {
			t.Fatal(err)
		}
		w = <-waitC
	case w = <-waitC:
		t.Fatalf("the agent ended before its fork loop did: exit %d, %v\nout:\n%s\nerr:\n%s", w.code, w.err, out, errOut)
	}
	code, err := w.code, w.err
	res := bombResult{stdout: out.String(), stderr: errOut.String()}
	for _, m := range startedRe.FindAllStringSubmatch(res.stdout, -1) {
		res.started, _ = strconv.Atoi(m[1])
	}
	if err != nil || code != 5 {
		t.Fatalf("Wait after the kill: exit %d, %v\n%s", code, err, res)
	}
	t.Logf("session pod, PID limit %d: the fork loop started %d sleeps", pids, res.started)
	// The keeper's pod-link (a Go program, its threads counted) shares
	// the budget.
	if strings.Contains(res.stdout, "BOMB-ENDED 0") || !strings.Contains(res.stderr, "Resource temporarily unavailable") ||
		res.started >= pids || res.started < pids-40 {
		t.Fatalf("the agent's fork loop was not stopped at the session's limit of %d:\n%s", pids, res)
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
}

type exitErr struct{ code int }

func (e *exitErr) Error() string { return "exit code " + strconv.Itoa(e.code) }
