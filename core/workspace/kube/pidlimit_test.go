package kube

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
	"github.com/sluicehq/sluice/core/workspace/kube/kubetest"
)

// TestPods_OwnUIDAndPIDLimit reads run and session pods back from the API
// server: each runs under a uid and gid of its own, drawn by its nonce
// from the configured range (not the workspace's), and its untrusted
// container's command sets the run's PID limit before anything else.
func TestPods_OwnUIDAndPIDLimit(t *testing.T) {
	cfg := kubetest.ControlPlane(t)
	ns := kubetest.Namespace(t, cfg)
	cs := adminClient(t, cfg)
	const first, last = 3_000_000, 19_999_999
	r := newRuntime(t, cfg, Options{Namespace: ns, ImagePullPolicy: "Never", PodUIDs: strconv.Itoa(first) + "-" + strconv.Itoa(last)})
	inRange := func(u int64) bool { return u >= first && u <= last }

	type started struct {
		pod  *corev1.Pod
		pids int64
		stop func()
	}
	var pods []started
	for i, pids := range []int64{minPodPIDs, 100, 256, 4096} {
		spec := testSpec(t, fakeImage)
		spec.Limits.PIDs = pids
		done, cancel := runAsync(r, spec)
		pod := awaitPod(t, cs, ns, podName(spec.RunID), done)
		pods = append(pods, started{pod, pids, func() { cancel(); <-done }})
		if i == 0 {
			// A session's pod as well.
			sess := sessionSpec(t, "/nonexistent/sluice-sidecar")
			sess.Limits.PIDs = 512
			sctx, scancel := context.WithCancel(context.Background())
			sdone := make(chan error, 1)
			go func() {
				s, err := r.StartSession(sctx, sess, nil, &lineWriter{}, &lineWriter{})
				if s != nil {
					s.Remove()
				}
				sdone <- err
			}()
			spod := awaitPod(t, cs, ns, sessionName(sess.Session), nil)
			pods = append(pods, started{spod, 512, func() { scancel(); <-sdone }})
		}
	}
	seen := map[int64]string{}
	for _, p := range pods {
		sc := p.pod.Spec.SecurityContext
		uid := *sc.RunAsUser
		if !inRange(uid) || *sc.RunAsGroup != uid || uid != r.uids.podUID(p.pod.Annotations[annotationNonce]) {
			t.Errorf("pod %s runs as %d:%d, not its own uid of %d-%d", p.pod.Name, uid, *sc.RunAsGroup, first, last)
		}
		if other, ok := seen[uid]; ok {
			t.Errorf("pods %s and %s share uid %d", other, p.pod.Name, uid)
		}
		seen[uid] = p.pod.Name
		gated := p.pod.Spec.Containers[1]
		if !slices.Contains([]string{containerRun, containerAgent}, gated.Name) || len(gated.Command) < 5 ||
			!strings.HasPrefix(gated.Command[2], pidLimitScript) || gated.Command[4] != strconv.FormatInt(p.pids, 10) {
			t.Errorf("pod %s: its %s container does not set the PID limit %d first: %q", p.pod.Name, gated.Name, p.pids, gated.Command)
		}
		// The keeper is Sluice's alone, and not held to the limit: a
		// program at its limit must not stop the copies and the kill.
		if k := p.pod.Spec.Containers[0]; k.Name != containerKeeper || !slices.Equal(k.Command, keeperCmd) {
			t.Errorf("pod %s: keeper %q", p.pod.Name, k.Command)
		}
		t.Logf("%s: uid %d, PID limit %s", p.pod.Name, uid, gated.Command[4])
	}
	for _, p := range pods {
		p.stop()
	}
	revokeGrants(t, cfg, ns)
	assertNothingLabelled(t, cs, ns)

	// A limit too low for the pod's own processes is refused before
	// anything is made, for a run and for a session.
	spec := testSpec(t, fakeImage)
	spec.Limits.PIDs = minPodPIDs - 1
	_, err := r.Run(context.Background(), spec, &limitBuffer{max: 1 << 10}, &limitBuffer{max: 1 << 10})
	wantCode(t, err, errcode.InvalidArgument, "PID limit", strconv.Itoa(minPodPIDs))
	sess := sessionSpec(t, "/nonexistent/sluice-sidecar")
	_, err = r.StartSession(context.Background(), sess, nil, &lineWriter{}, &lineWriter{})
	wantCode(t, err, errcode.InvalidArgument, "PID limit")
	revokeGrants(t, cfg, ns)
	assertNothingLabelled(t, cs, ns)
}

// TestOptions_PodUIDs: the pods' uid range is checked when the runtime is
// made, naming the option's form.
func TestOptions_PodUIDs(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	for _, bad := range []string{"0-100000", "1000", "5000-4000", "100000-101022", "2147483000-2147483647", "a-b", "-5-100"} {
		if _, err := NewForConfig(cfg, Options{Namespace: "ns", PodUIDs: bad}); !errcode.IsCode(err, errcode.InvalidArgument) || !strings.Contains(err.Error(), "FIRST-LAST") {
			t.Errorf("PodUIDs %q: %v", bad, err)
		}
	}
	r, err := NewForConfig(cfg, Options{Namespace: "ns", PodUIDs: "100000-101023"})
	if err != nil || r.uids != (uidRange{100000, 1024}) {
		t.Fatalf("a range of 1024: %+v %v", r, err)
	}
	r, err = NewForConfig(cfg, Options{Namespace: "ns"})
	if err != nil || r.uids != defaultPodUIDs || r.uids.String() != "1879048192-1895825407" {
		t.Fatalf("the default range: %v %v", r.uids, err)
	}
	// Spread over the range, and the same for the same nonce.
	hits := map[int64]bool{}
	for i := range 1000 {
		n := strconv.Itoa(i)
		u := r.uids.podUID(n)
		if !r.uids.contains(u) || u != r.uids.podUID(n) {
			t.Fatalf("uid %d for nonce %s", u, n)
		}
		hits[u] = true
	}
	if len(hits) < 990 {
		t.Fatalf("1000 nonces drew only %d uids of 2^24", len(hits))
	}
}

// sessionSpec is a session's spec whose binds name paths that need not
// exist: enough to make its pod, not to start it.
func sessionSpec(t testing.TB, sidecar string) workspace.SessionContainerSpec {
	host := t.TempDir()
	const repo = "/home/person/proj"
	return workspace.SessionContainerSpec{
		Session: "Sess-" + randomID(t), Image: fakeImage, User: "65534:65534",
		Cmd: []string{"/bin/sh", "-c", "true"},
		Env: []string{"PATH=" + containerPath, "HOME=/home/person"},
		Binds: []workspace.SessionBind{
			{Source: filepath.Join(host, "copy"), Target: repo},
			{Source: filepath.Join(host, "objects"), Target: repo + "/.git/sluice-origin", ReadOnly: true},
			{Source: filepath.Join(host, "home"), Target: "/home/person"},
			{Source: sidecar, Target: insideSidecar, ReadOnly: true},
			{Source: filepath.Join(host, "egress.sock"), Target: insideEgress},
			{Source: filepath.Join(host, "mcp.sock"), Target: insideMCP},
		},
		Copy: repo, WorkingDir: repo,
		Limits: workspace.Limits{MemoryBytes: 64 << 20, CPUs: 0.5, TmpfsBytes: 16 << 20},
	}
}

// TestRun_PIDLimitNotSet: a run container that ended with
// pidLimitScript's exit code (its shell could not set the limit; the test
// plays the kubelet) ends the run before its program with an error naming
// the limit and the shell's message, and nothing is left.
func TestRun_PIDLimitNotSet(t *testing.T) {
	cfg := kubetest.ControlPlane(t)
	ns := kubetest.Namespace(t, cfg)
	cs := adminClient(t, cfg)
	r := newRuntime(t, cfg, Options{Namespace: ns, ImagePullPolicy: "Never"})
	spec := testSpec(t, fakeImage)
	done, cancel := runAsync(r, spec)
	defer cancel()
	name := podName(spec.RunID)
	awaitPod(t, cs, ns, name, done)
	setStatus(t, cs, ns, name, func(st *corev1.PodStatus) {
		runningStatus(st)
		st.ContainerStatuses[1].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exitNoPIDLimit, Reason: "Error",
			Message: "sluice: this image's /bin/sh cannot limit its processes to 256"}}
	})
	res := <-done
	wantCode(t, res.err, errcode.Unsupported, "PID limit", "cannot limit its processes to 256", fakeImage)
	if !errors.Is(res.err, errNoPIDLimit) {
		t.Fatalf("the error does not carry errNoPIDLimit: %v", res.err)
	}
	revokeGrants(t, cfg, ns)
	assertNothingLabelled(t, cs, ns)
}

// TestPIDLimitScript_Shells runs Sluice's first step under each shell this
// machine has, as /bin/sh would run it: the limit is set soft and hard and
// the program starts; a shell whose ulimit sets nothing (here bash with
// the builtin off) does not start the program and says why.
func TestPIDLimitScript_Shells(t *testing.T) {
	shells := map[string][]string{"dash": {"dash"}, "bash": {"bash"}, "busybox sh": {"busybox", "sh"}, "mksh": {"mksh"}, "zsh": {"zsh"}}
	ran := 0
	for name, argv := range shells {
		path, err := exec.LookPath(argv[0])
		if err != nil {
			t.Logf("%s: not on this machine", name)
			continue
		}
		ran++
		script := pidLimitScript + `read -r _ || exit 125; "$@"; exit $?`
		cmd := exec.Command(path, append(argv[1:], "-c", script, "sluice-run", "77", "cat", "/proc/self/limits")...)
		cmd.Stdin = strings.NewReader("\n")
		out, err := cmd.CombinedOutput()
		if err != nil || !regexp.MustCompile(`Max processes +77 +77 +processes`).Match(out) {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
	if ran < 2 {
		t.Fatalf("only %d of the shells are here", ran)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash here")
	}
	// The termination message goes to a file of the test's, not to this
	// machine's /dev.
	msgFile := filepath.Join(t.TempDir(), "termination-log")
	script := strings.ReplaceAll(pidLimitScript, "/dev/termination-log", msgFile)
	cmd := exec.Command(bash, "-c", "enable -n ulimit\n"+script+`echo PROGRAM-STARTED`, "sluice-run", "77")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitNoPIDLimit || strings.Contains(string(out), "PROGRAM-STARTED") || !strings.Contains(string(out), "cannot limit its processes to 77") {
		t.Fatalf("a shell that cannot set the limit: %v\n%s", err, out)
	}
	if msg, err := os.ReadFile(msgFile); err != nil || !strings.Contains(string(msg), "cannot limit its processes to 77") {
		t.Fatalf("the termination message: %q %v", msg, err)
	}
}
