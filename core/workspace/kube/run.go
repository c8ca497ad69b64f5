package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
)

// Bounds of a run's phases.
const (
	// startWait bounds the wait for both containers to run: scheduling,
	// pulling an absent image (IfNotPresent), starting.
	startWait = 5 * time.Minute
	// killGrace is how long a killed run has to end before Run gives up
	// on it (and deletes the pod).
	killGrace = 20 * time.Second
	// createWait bounds each create, which a run's cancel does not cut
	// short (see create).
	createWait = 60 * time.Second
	// streamSettle bounds the wait for the attach stream to end after the
	// run container ended: a child that kept stdout open is cut off.
	streamSettle = 5 * time.Second
)

// prepare builds and validates a run's objects.
func (r *Runtime) prepare(spec workspace.ContainerSpec) (runObjects, error) {
	if err := r.CheckImage(context.Background(), spec.Image); err != nil {
		return runObjects{}, err
	}
	if err := r.checkRuntimeName(spec.RuntimeName); err != nil {
		return runObjects{}, err
	}
	if spec.Network != "" && (spec.Network != egressNetwork || r.proxy == nil) {
		return runObjects{}, errcode.New(errcode.Unsupported, "the run asks for network %q, which the Kubernetes runtime does not have", spec.Network)
	}
	o, err := r.objects(spec)
	if err != nil {
		return runObjects{}, err
	}
	nonce := o.pod.Annotations[annotationNonce]
	a := allowed{nonce: nonce, runCmd: runCommand(spec.Limits.PIDs, spec.Argv), image: spec.Image, uids: r.uids, pids: spec.Limits.PIDs, runtimeClass: r.opt.RuntimeClassName,
		secretEnv: spec.SecretEnv, wsSecret: wsSecretName(spec.WorkspaceID),
		maxDeadline: int64((min(spec.Limits.Timeout, workspace.HardLimits.Timeout) + deadlineMargin).Seconds())}
	if spec.Network != "" {
		bits := 32
		if r.proxy.IP.To4() == nil {
			bits = 128
		}
		a.proxyCIDR = (&net.IPNet{IP: r.proxy.IP, Mask: net.CIDRMask(bits, bits)}).String()
		a.proxyPort, _ = r.proxyPort(spec) // objects read it already
	}
	o.allow = a
	return o, validateRun(o, a)
}

// Run implements workspace.Runtime: make sure the workspace's Secret holds
// the granted secrets; create the run's Secret, NetworkPolicy and pod; wait for both containers; copy the tree in; attach and open the
// start gate; wait for the program; copy the tree out; delete everything
// and verify it is gone.
func (r *Runtime) Run(ctx context.Context, spec workspace.ContainerSpec, stdout, stderr io.Writer) (st workspace.ExitStatus, err error) {
	objs, err := r.prepare(spec)
	if err != nil {
		return st, err
	}
	name := objs.pod.Name
	st.ContainerID = name
	// Cleanup happens whatever ctx does (a destroyed workspace, a client
	// that went away); a cancelled run is deleted at once.
	bg := context.WithoutCancel(ctx)
	t0 := time.Now()
	phase := func(what string) {
		r.log.Debug("kube: run phase", "pod", name, "phase", what, "ms", time.Since(t0).Milliseconds())
		t0 = time.Now()
	}
	// Only what is this run's is removed: an object of the same name that
	// create found and did not make (another run's leftover) stays.
	var ours made
	applied := false // the tree holds the run's result
	defer func() {
		rctx, cancel := context.WithTimeout(bg, removeWait)
		defer cancel()
		rerr := r.remove(rctx, name, ours.has)
		switch {
		case rerr == nil:
		case err == nil && applied:
			// The tree is already the run's: the run is not failed (a retry
			// would apply it twice), only its removal is.
			r.log.Warn("kube: the run's changes were applied but its objects could not all be removed", "pod", name, "err", rerr)
			err = &errcode.Error{Code: errcode.Internal, Data: map[string]any{"pod": name},
				Msg: "the run's changes were applied to the workspace, but its objects could not all be removed: " + rerr.Error(),
				Err: errors.Join(workspace.ErrRunNotRemoved, rerr)}
		case err == nil:
			err = rerr
		default:
			// The run failed already; its error stands, and what could not
			// be removed (a Secret with granted values?) is said here.
			r.log.Warn("kube: the failed run's objects could not all be removed", "pod", name, "err", rerr, "run_err", err)
		}
		phase("remove")
	}()
	// The workspace's Secret holds exactly the granted values the run was
	// given before its pod can read it (see secrets.go); it outlives the
	// run, as the grant does.
	if granted := grantedValues(spec); len(granted) > 0 {
		if err := r.PutSecrets(context.WithoutCancel(ctx), spec.StoreKey, spec.WorkspaceID, granted); err != nil {
			return st, cancelledOr(ctx, err)
		}
	}
	ours, err = r.create(ctx, objs)
	if err != nil {
		return st, cancelledOr(ctx, err)
	}
	if ctx.Err() != nil {
		return st, cancelledOr(ctx, ctx.Err())
	}
	phase("create")
	if err := r.waitStarted(ctx, name, spec.Image); err != nil {
		return st, cancelledOr(ctx, err)
	}
	phase("start")
	if err := r.copyIn(ctx, name, spec); err != nil {
		return st, cancelledOr(ctx, err)
	}
	phase("copy in")
	seen, err := r.runProgram(ctx, name, spec.Limits.Timeout, stdout, stderr)
	phase("program")
	st.ExitCode, st.OOMKilled, st.TimedOut, st.OutputStopped = seen.exitCode, seen.oomKilled, seen.timedOut, seen.outputStopped
	if seen.cancelled != nil {
		return st, &errcode.Error{Code: errcode.Timeout, Msg: "the run was cancelled", Err: seen.cancelled}
	}
	if err != nil {
		return st, err
	}
	if seen.neverStarted {
		return st, nil
	}
	if err := r.copyOut(ctx, name, spec); err != nil {
		return st, cancelledOr(ctx, err)
	}
	applied = true
	phase("copy out")
	return st, nil
}

// made is which of a run's objects (by resource) create made, or may
// have made: a create that failed without a clear answer may have been
// stored. What create found and refused as not the run's is not in it.
type made map[string]bool

func (m made) has(resource string) bool { return m[resource] }

// create makes the run's objects: the Secret and the NetworkPolicy first,
// so the pod never exists without them. A create is not cancelled with
// the run: the API server may finish a create whose caller went away, and
// that object would then be left with nobody to delete it (Run's deferred
// remove deletes what create made).
//
// An object that already exists is this run's only if it carries the
// run's nonce (a retried create whose first attempt was stored); it is
// then checked as stored, like one just made. Anything else of the same
// name (another run's leftover under a reused run ID) refuses the run and
// is left alone.
func (r *Runtime) create(ctx context.Context, o runObjects) (made, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createWait)
	defer cancel()
	ns := r.opt.Namespace
	ours := made{}
	if o.secret != nil {
		ours["secrets"] = true
		sec, err := withRetry(cctx, func(ctx context.Context) (*corev1.Secret, error) {
			return r.cs.CoreV1().Secrets(ns).Create(ctx, o.secret, metav1.CreateOptions{})
		})
		if apierrors.IsAlreadyExists(err) {
			sec, err = withRetry(cctx, func(ctx context.Context) (*corev1.Secret, error) {
				return r.cs.CoreV1().Secrets(ns).Get(ctx, o.secret.Name, metav1.GetOptions{})
			})
			if err == nil && !sameSecret(sec, o.secret) {
				delete(ours, "secrets")
				return ours, notOurs("Secret", o.secret.Name)
			}
		}
		if err != nil {
			return ours, apiError(err, "create", "secrets", o.secret.Name)
		}
		o.secret = sec
	}
	if ctx.Err() != nil {
		return ours, ctx.Err()
	}
	ours["networkpolicies"] = true
	np, err := withRetry(cctx, func(ctx context.Context) (*networkingv1.NetworkPolicy, error) {
		return r.cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, o.policy, metav1.CreateOptions{})
	})
	if apierrors.IsAlreadyExists(err) {
		np, err = withRetry(cctx, func(ctx context.Context) (*networkingv1.NetworkPolicy, error) {
			return r.cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, o.policy.Name, metav1.GetOptions{})
		})
		if err == nil && np.Annotations[annotationNonce] != o.allow.nonce {
			delete(ours, "networkpolicies")
			return ours, notOurs("NetworkPolicy", o.policy.Name)
		}
	}
	if err != nil {
		return ours, apiError(err, "create", "networkpolicies", o.policy.Name)
	}
	if ctx.Err() != nil {
		return ours, ctx.Err()
	}
	ours["pods"] = true
	pod, err := withRetry(cctx, func(ctx context.Context) (*corev1.Pod, error) {
		return r.cs.CoreV1().Pods(ns).Create(ctx, o.pod, metav1.CreateOptions{})
	})
	if apierrors.IsAlreadyExists(err) {
		pod, err = withRetry(cctx, func(ctx context.Context) (*corev1.Pod, error) {
			return r.cs.CoreV1().Pods(ns).Get(ctx, o.pod.Name, metav1.GetOptions{})
		})
		if err == nil && pod.Annotations[annotationNonce] != o.allow.nonce {
			delete(ours, "pods")
			return ours, notOurs("pod", o.pod.Name)
		}
	}
	if err != nil {
		return ours, apiError(err, "create", "pods", o.pod.Name)
	}
	// What was stored is checked too: a mutating admission webhook may
	// have changed the pod (or policy) after Sluice checked what it sent.
	// The program has not started (it waits behind the start gate), and
	// the caller deletes what was made. A nodeSelector or toleration may
	// come from the RuntimeClass's scheduling, and only those are allowed.
	if needsScheduling(&pod.Spec) && o.allow.runtimeClass != "" {
		rc, err := withRetry(cctx, func(ctx context.Context) (*nodev1.RuntimeClass, error) {
			return r.cs.NodeV1().RuntimeClasses().Get(ctx, o.allow.runtimeClass, metav1.GetOptions{})
		})
		if err != nil {
			return ours, apiError(err, "get", "runtimeclasses", o.allow.runtimeClass)
		}
		if rc.Scheduling != nil {
			o.allow.nodeSelector, o.allow.tolerations = rc.Scheduling.NodeSelector, rc.Scheduling.Tolerations
		}
	}
	if verr := validateRun(runObjects{pod: pod, policy: np, secret: o.secret}, o.allow); verr != nil {
		return ours, &errcode.Error{Code: errcode.Forbidden, Err: verr,
			Msg: "the cluster changed the run's pod or NetworkPolicy after Sluice made it (a mutating admission webhook?), so it does not run: " + verr.Error()}
	}
	return ours, nil
}

// sameSecret reports whether a stored Secret is the one built for the run:
// its nonce, type and values.
func sameSecret(stored, built *corev1.Secret) bool {
	if stored.Annotations[annotationNonce] != built.Annotations[annotationNonce] || stored.Type != built.Type || len(stored.Data) != len(built.Data) {
		return false
	}
	for k, v := range built.Data {
		if sv, ok := stored.Data[k]; !ok || !bytes.Equal(sv, v) {
			return false
		}
	}
	return true
}

// notOurs refuses a run whose object's name is taken by another's.
func notOurs(kind, name string) error {
	return &errcode.Error{Code: errcode.Conflict, Data: map[string]any{"name": name},
		Msg: fmt.Sprintf("a %s named %s already exists and is not this run's (left by an earlier run with the same ID?); the run does not start and the object is left alone", kind, name)}
}

// waitStarted waits until both containers run. A container that cannot
// start (its image missing, its configuration refused) or a pod that
// failed is a typed error at once; a pod no node takes within startWait is
// Unavailable with the scheduler's reason.
func (r *Runtime) waitStarted(ctx context.Context, name, image string) error {
	wctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	p, err := r.watchPod(wctx, name, func(p *corev1.Pod) (bool, error) {
		if err := podFailure(p); err != nil {
			return false, err
		}
		if err := startFailure(p, image); err != nil {
			return false, err
		}
		if p.Status.Phase == corev1.PodSucceeded {
			return false, errcode.New(errcode.Internal, "the run's pod ended before the run started")
		}
		return running(p), nil
	})
	if err == nil || ctx.Err() != nil {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		why := "it is still starting"
		if p != nil && unscheduled(p) != "" {
			why = "no node takes it: " + unscheduled(p)
		}
		return &errcode.Error{Code: errcode.Unavailable, Data: map[string]any{"pod": name},
			Msg: fmt.Sprintf("the run's pod did not start within %s (%s)", startWait, why)}
	}
	if errors.Is(err, errPodGone) {
		return &errcode.Error{Code: errcode.Internal, Msg: "the run's pod was deleted before the run started", Err: err}
	}
	return err
}

// runWatch is what runProgram saw.
type runWatch struct {
	exitCode      int
	oomKilled     bool
	timedOut      bool
	outputStopped bool
	// cancelled is ctx's error if ctx ended first.
	cancelled error
	// neverStarted is set when the run was stopped before its program
	// could start: the tree is as it went in.
	neverStarted bool
}

// runProgram attaches to the run container, opens the start gate and
// waits for the program's end, killing it at its timeout or when its
// output was stopped. A cancelled ctx returns at once (Run's cleanup
// deletes the pod).
func (r *Runtime) runProgram(ctx context.Context, name string, timeout time.Duration, stdout, stderr io.Writer) (runWatch, error) {
	var seen runWatch
	bg := context.WithoutCancel(ctx)
	stop := make(chan struct{})
	var once sync.Once
	outW := &stopWriter{w: stdout, once: &once, stop: stop}
	errW := &stopWriter{w: stderr, once: &once, stop: stop}

	// The end of the run container, followed from before the attach.
	wctx, cancelWatch := context.WithCancel(bg)
	defer cancelWatch()
	type ended struct {
		pod *corev1.Pod
		err error
	}
	endC := make(chan ended, 1)
	go func() {
		p, err := r.awaitEnd(wctx, name)
		endC <- ended{p, err}
	}()

	actx, cancelAttach := context.WithCancel(bg)
	defer cancelAttach()
	attachC := make(chan error, 1)
	g := &gate{opened: make(chan struct{})}
	go func() {
		// One line opens the gate; the end of stdin closes the program's
		// stdin (stdinOnce).
		attachC <- r.attachRun(actx, name, g, outW, errW)
	}()

	// The program's time starts when the gate opens: it cannot start
	// before. Until then the same time bounds the wait for the attach; a
	// kill needed before the gate opened shuts the gate for good (sh then
	// exits without running the program) and the run ends at once (Run
	// deletes the pod).
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	gateOpened := g.opened
	var grace <-chan time.Time
	kill := func() (neverStarted bool) {
		if grace != nil {
			return false
		}
		if g.shut() {
			seen.exitCode, seen.neverStarted = exitKilled, true
			return true
		}
		grace = time.After(killGrace)
		// kill -1 reaches every process of the container but PID 1 (sh,
		// which then exits with the program's status) and itself.
		kctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		if err := r.execIn(kctx, name, containerRun, []string{"/bin/sh", "-c", "kill -9 -1"}, nil, nil); err != nil {
			r.log.Warn("kube: kill in the run container failed", "pod", name, "err", err)
		}
		return false
	}
	var end ended
	attachDone := false
	for exited := false; !exited; {
		select {
		case end = <-endC:
			exited = true
		case err := <-attachC:
			attachDone = true
			attachC = nil
			if err != nil && grace == nil {
				// Without the attach nobody reads the output or opened the
				// gate: the run cannot go on.
				r.log.Warn("kube: attach to the run container failed", "pod", name, "err", err)
				if ctx.Err() == nil {
					return seen, err
				}
			}
		case <-gateOpened:
			gateOpened = nil
			if grace == nil {
				timer.Reset(timeout)
			}
		case <-timer.C:
			seen.timedOut = true
			if kill() {
				return seen, nil
			}
		case <-stop:
			stop = nil
			seen.outputStopped = true
			if kill() {
				return seen, nil
			}
		case <-ctx.Done():
			seen.cancelled = ctx.Err()
			return seen, nil
		case <-grace:
			return seen, &errcode.Error{Code: errcode.Internal, Msg: "the run's container did not stop after it was killed"}
		}
	}
	if end.err != nil {
		if errors.Is(end.err, errPodGone) {
			return seen, &errcode.Error{Code: errcode.Internal, Msg: "the run's pod was deleted while the run went on", Err: end.err}
		}
		return seen, end.err
	}
	if !attachDone {
		select {
		case <-attachC:
		case <-time.After(streamSettle):
			cancelAttach()
			<-attachC
		}
	}
	seen.exitCode, seen.oomKilled = exitOf(end.pod)
	if outW.failed() != nil || errW.failed() != nil {
		seen.outputStopped = true
	}
	return seen, nil
}

// exitKilled is the exit code reported for a run killed before its
// program started, as for one killed by SIGKILL (128+9).
const exitKilled = 137

// gate is the run container's stdin: the one line that lets the program
// start, then its end. Once shut, it gives no line: sh exits without
// running the program.
type gate struct {
	mu     sync.Mutex
	state  int // 0 closed, 1 opened, 2 shut
	opened chan struct{}
}

func (g *gate) Read(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state != 0 || len(p) == 0 {
		return 0, io.EOF
	}
	// The line goes to the stream as this Read returns: the program can
	// start from now on, not before.
	g.state = 1
	close(g.opened)
	p[0] = '\n'
	return 1, nil
}

// shut keeps the gate closed for good, unless it was already opened; it
// reports whether the program never started.
func (g *gate) shut() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == 1 {
		return false
	}
	g.state = 2
	return true
}

// awaitEnd follows the pod until its run container ended, or the pod
// failed as a whole (evicted, past its deadline: a typed error).
func (r *Runtime) awaitEnd(ctx context.Context, name string) (*corev1.Pod, error) {
	return r.watchPod(ctx, name, func(p *corev1.Pod) (bool, error) {
		if err := podFailure(p); err != nil {
			return false, err
		}
		cs := containerStatus(p, containerRun)
		return cs != nil && cs.State.Terminated != nil, nil
	})
}

// exitOf is the ended run container's exit code and whether the kernel's
// OOM killer ended it.
func exitOf(p *corev1.Pod) (code int, oomKilled bool) {
	t := containerStatus(p, containerRun).State.Terminated
	return int(t.ExitCode), t.Reason == "OOMKilled"
}

// cancelledOr reports a run whose context ended while it was being
// prepared as cancelled, not as a cluster failure.
func cancelledOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return &errcode.Error{Code: errcode.Timeout, Msg: "the run was cancelled", Err: ctx.Err()}
	}
	return err
}
