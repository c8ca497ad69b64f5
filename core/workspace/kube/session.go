package kube

// Confined sessions as pods (`sluice run --runtime kubernetes`): the agent
// runs in a pod of the configured namespace, from the session image (which
// carries the agent's CLI), with the same hardening as a workspace run and
// a NetworkPolicy that lets nothing in or out. A pod has no view of the
// person's machine, so what a Docker session container gets as binds is
// carried instead:
//
//   - the session's copy (with its git directory) and the person's objects
//     it borrows, the confined HOME and the sidecar binary go in once, as
//     one tar stream over exec into the keeper container, before the agent
//     starts (it waits behind the same start gate as a run's program);
//   - the two sockets a session has (MCP to the session's sidecar, the
//     egress proxy) are served in the pod by `sluice-sidecar pod-link` in
//     the keeper, whose exec stream carries every connection to the
//     launcher's sockets (package podlink);
//   - the copy comes back: before every tool call the agent makes (so a
//     read tool answers for the files the agent has, and a proposal is
//     sealed from them) and when the agent has ended, the pod's tree
//     (without its .git) is read back as an untrusted archive into the
//     launcher's copy in place (workspace.SyncTree);
//   - the confined HOME comes back once, when the agent has ended (after
//     the copy's last read-back, before the pod is deleted), as a
//     three-way apply (homeback.go): only what the agent added, changed or
//     removed in the pod relative to what went in, and only onto paths the
//     HOME still holds as they went in, since other sessions of the same
//     program share it. What went in is kept in the session's directory
//     while the pod lives, so that an app that finds the launcher gone
//     (EndSession) carries the HOME back the same way.

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/session/podlink"
	"github.com/sluicehq/sluice/core/workspace"
)

// Names and places of a session's pod.
const (
	sessionPrefix  = "sluice-session-"
	containerAgent = "agent"
	volRepo        = "repo"
	volObjects     = "objects"
	volHome        = "home"
	volRun         = "run"
	// keeperDir is where the keeper mounts the session's volumes.
	keeperDir = "/sluice"
	// labelSession selects a session's objects; the exact id is in the
	// annotation of the same key.
	labelSession = "sluice.session"
	// sessionDeadline is a session pod's activeDeadlineSeconds: a backstop
	// for a launcher that is gone and an app that never came back.
	sessionDeadline = 7 * 24 * time.Hour
	// Inside the agent's container, as under Bubblewrap and Docker.
	insideDir     = "/run/sluice"
	insideSidecar = insideDir + "/bin/sluice-sidecar"
	insideMCP     = insideDir + "/mcp.sock"
	insideEgress  = insideDir + "/egress.sock"
	// The link's socket names (podlink's headers).
	linkMCP    = "mcp"
	linkEgress = "egress"
	// insideObjects is where the agent sees the person's objects,
	// read-only; the copy's origin alternate (.git/sluice-origin, which
	// its alternates name) is a link to it in the pod (a mount inside the
	// copy's .git would make its parents root's).
	insideObjects = "/run/sluice-origin"
	originEntry   = "repo/.git/sluice-origin"
	// runBytes bounds the run volume (the sidecar binary and two sockets);
	// homeBytes the confined HOME.
	runBytes  = 64 << 20
	homeBytes = 1 << 30
)

// sessionKeeperMemory is a session keeper's memory: a run's keeper's and
// room for the sidecar binary in the in-memory run volume.
var sessionKeeperMemory = resource.MustParse("128Mi")

// gvisorHints are gVisor's mount hints on a session pod: the run volume,
// where the keeper's sockets are, is one tmpfs inside the pod's sandbox,
// shared by both containers (a socket is not shared through the node's
// directory). Other runtimes ignore them.
var gvisorHints = map[string]string{
	"dev.gvisor.spec.mount." + volRun + ".share":   "pod",
	"dev.gvisor.spec.mount." + volRun + ".type":    "tmpfs",
	"dev.gvisor.spec.mount." + volRun + ".options": "rw,rprivate",
}

// syncWait bounds one read-back of a session's copy.
const syncWait = 10 * time.Minute

// ErrSessionPodKept is in the chain of the error of a session whose last
// read-back failed: its pod is kept, so that the app reads the agent's
// files back itself (EndSession) before anything of them is offered.
var ErrSessionPodKept = errors.New("the session's pod is kept for its files to be read back")

// ErrFilesNotBack is in the chain of EndSession's error when the
// session's objects are deleted but its files did not come back: the pod
// no longer ran its keeper, or what it held was refused (a name that
// climbs out, a limit passed, a file pod-tree may not read), which the
// agent made so and which a second read would meet again. Nothing of the
// files may be offered: the copy is older than what the agent left.
var ErrFilesNotBack = errors.New("the session's files did not come back from its pod")

// sessionScript holds the agent to the session's PID limit and gates it
// on one line of stdin like a run's program (see runScript), then becomes
// it: the container's first process is sandbox-init, which passes signals
// on and reaps.
const sessionScript = pidLimitScript + `read -r _ || exit 125; exec "$@"`

// sessionPlaces are a session container spec's binds, each by its role.
type sessionPlaces struct {
	copyHost, copyTarget string
	// objectsHost are the person's objects (bound at the copy's origin
	// alternate under Docker).
	objectsHost          string
	homeHost, homeTarget string
	sidecarHost          string
	mcpHost, egressHost  string
}

// sessionPlacesOf sorts the binds a session container is given: the
// Kubernetes runtime carries exactly the copy, the objects under it, the
// HOME, the sidecar and the two sockets. Anything else (an allowed root,
// the agent's install) cannot be carried into a pod and is refused: the
// session image carries the agent.
func sessionPlacesOf(cs workspace.SessionContainerSpec) (sessionPlaces, error) {
	var p sessionPlaces
	p.copyTarget = cs.Copy
	if p.copyTarget == "" || !path.IsAbs(p.copyTarget) {
		return p, errcode.New(errcode.InvalidArgument, "a session pod needs the copy's path")
	}
	for _, b := range cs.Binds {
		switch {
		case b.Target == insideMCP:
			p.mcpHost = b.Source
		case b.Target == insideEgress:
			p.egressHost = b.Source
		case b.Target == insideSidecar:
			p.sidecarHost = b.Source
		case b.Target == p.copyTarget && !b.ReadOnly:
			p.copyHost = b.Source
		case b.ReadOnly && strings.HasPrefix(b.Target, p.copyTarget+"/.git/"):
			p.objectsHost = b.Source
		case !b.ReadOnly && p.homeTarget == "":
			p.homeHost, p.homeTarget = b.Source, b.Target
		default:
			return p, errcode.New(errcode.Unsupported, "a session pod cannot show %s: only the copy, its objects, the confined HOME and Sluice's own sockets go into a pod (the session image carries the agent)", b.Target)
		}
	}
	if p.copyHost == "" || p.objectsHost == "" || p.homeHost == "" || p.sidecarHost == "" || p.mcpHost == "" || p.egressHost == "" {
		return p, errcode.New(errcode.InvalidArgument, "a session pod needs the copy, its objects, the confined HOME, the sidecar and both sockets")
	}
	if !path.IsAbs(p.homeTarget) || strings.HasPrefix(p.homeTarget, insideDir) || p.homeTarget == p.copyTarget {
		return p, errcode.New(errcode.InvalidArgument, "the confined HOME's path %q cannot be mounted in a session pod", p.homeTarget)
	}
	return p, nil
}

// sessionName is a session's pod (and Secret and NetworkPolicy) name.
func sessionName(id string) string {
	sum := sha256.Sum256([]byte(id))
	n := sessionPrefix + sanitizeName(id)
	if len(n) > 63-13 {
		n = n[:63-13]
	}
	return strings.TrimRight(n, "-") + "-" + hex.EncodeToString(sum[:6])
}

// sessionShape is a session pod: the keeper holding the volumes, the
// agent behind its gate, with a terminal when the person has one.
func sessionShape(p sessionPlaces, pids int64, agentCmd []string, workDir string) *podShape {
	return &podShape{
		containers: []string{containerKeeper, containerAgent},
		volumes: map[string]corev1.StorageMedium{volRepo: corev1.StorageMediumDefault, volObjects: corev1.StorageMediumDefault,
			volHome: corev1.StorageMediumDefault, volRun: corev1.StorageMediumMemory, volTmp: corev1.StorageMediumMemory},
		required: []string{volRepo, volObjects, volHome, volRun, volTmp},
		mounts: map[string]map[string]mountRule{
			containerKeeper: {volRepo: {keeperDir + "/repo", false}, volObjects: {keeperDir + "/objects", false},
				volHome: {keeperDir + "/home", false}, volRun: {keeperDir + "/run", false}},
			// The person's objects are read-only to the agent, as the bind
			// of the Docker runtime is.
			containerAgent: {volRepo: {p.copyTarget, false}, volObjects: {insideObjects, true},
				volHome: {p.homeTarget, false}, volRun: {insideDir, true}, volTmp: {"/tmp", false}},
		},
		cmds:     map[string][]string{containerKeeper: keeperCmd, containerAgent: agentCommand(pids, agentCmd)},
		workDirs: map[string]string{containerKeeper: keeperDir, containerAgent: workDir},
		stdin:    containerAgent,
		tty:      true,
		gvisor:   gvisorHints,
	}
}

// agentCommand is the agent container's command: sh held to the pod's PID
// limit, behind the gate, then the session's command (sandbox-init and the
// agent).
func agentCommand(pids int64, cmd []string) []string {
	return append([]string{"/bin/sh", "-c", sessionScript, "sluice-session", strconv.FormatInt(pids, 10)}, cmd...)
}

// sessionObjects builds a session's pod, NetworkPolicy and Secret (which
// holds the whole environment: the model's key is in it, so no value is in
// the pod spec) and what validateRun allows them.
func (r *Runtime) sessionObjects(cs workspace.SessionContainerSpec, p sessionPlaces) (runObjects, error) {
	// The person's uid:gid owns the copy on this machine; the pod runs
	// under its own (see pidlimit.go).
	if _, _, err := parseUser(cs.User); err != nil {
		return runObjects{}, err
	}
	if len(cs.Cmd) == 0 {
		return runObjects{}, errcode.New(errcode.InvalidArgument, "container configuration refused: the command is empty")
	}
	if err := checkPIDs(cs.Limits.PIDs); err != nil {
		return runObjects{}, err
	}
	name := sessionName(cs.Session)
	nonce := rand.Text()
	uid := r.uids.podUID(nonce)
	m := metav1.ObjectMeta{
		Name: name, Namespace: r.opt.Namespace,
		Labels:      map[string]string{labelSession: labelValue(cs.Session), labelManagedBy: managedBy},
		Annotations: map[string]string{labelSession: cs.Session, annotationNonce: nonce},
	}
	maps.Copy(m.Annotations, gvisorHints)
	var names []string
	for _, kv := range cs.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return runObjects{}, errcode.New(errcode.InvalidArgument, "container configuration refused: an environment entry is not KEY=VALUE")
		}
		names = append(names, k)
	}
	env, secret, err := r.env(m, workspace.ContainerSpec{Env: cs.Env, SecretEnv: names}, "")
	if err != nil {
		return runObjects{}, err
	}
	lim := cs.Limits
	cpu := resource.NewMilliQuantity(max(int64(lim.CPUs*1000), 10), resource.DecimalSI)
	mem := resource.NewQuantity(lim.MemoryBytes, resource.BinarySI)
	storage := resource.NewQuantity(r.opt.WorkspaceBytes, resource.BinarySI)
	agentRes := corev1.ResourceList{corev1.ResourceCPU: *cpu, corev1.ResourceMemory: *mem, corev1.ResourceEphemeralStorage: *storage}
	// The keeper writes the sidecar (about 20 MiB) into the run volume,
	// which is memory charged to it.
	keeperRes := corev1.ResourceList{corev1.ResourceCPU: keeperCPU, corev1.ResourceMemory: sessionKeeperMemory, corev1.ResourceEphemeralStorage: keeperStorage}
	shape := sessionShape(p, cs.Limits.PIDs, cs.Cmd, cs.WorkingDir)
	disk := func(n int64) *corev1.EmptyDirVolumeSource {
		return &corev1.EmptyDirVolumeSource{SizeLimit: resource.NewQuantity(n, resource.BinarySI)}
	}
	volumes := []corev1.Volume{
		{Name: volRepo, VolumeSource: corev1.VolumeSource{EmptyDir: disk(r.opt.WorkspaceBytes)}},
		{Name: volObjects, VolumeSource: corev1.VolumeSource{EmptyDir: disk(r.opt.WorkspaceBytes)}},
		{Name: volHome, VolumeSource: corev1.VolumeSource{EmptyDir: disk(homeBytes)}},
		// In memory: under gVisor only a memory emptyDir is one file
		// system for both containers, in which the keeper's sockets are
		// the agent's too (a disk one is each container's view of the
		// node's directory, where a socket is not shared).
		{Name: volRun, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(runBytes, resource.BinarySI)}}},
		{Name: volTmp, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(max(lim.TmpfsBytes, 64<<20), resource.BinarySI)}}},
	}
	mounts := func(c string) []corev1.VolumeMount {
		var out []corev1.VolumeMount
		for _, v := range []string{volRepo, volObjects, volHome, volRun, volTmp} {
			if rule, ok := shape.mounts[c][v]; ok {
				out = append(out, corev1.VolumeMount{Name: v, MountPath: rule.path, ReadOnly: rule.readOnly})
			}
		}
		return out
	}
	deadline := int64(sessionDeadline.Seconds())
	pod := &corev1.Pod{
		ObjectMeta: m,
		Spec: r.hardenedPodSpec("sluice-session", uid, uid, deadline, volumes,
			r.keeperContainer(cs.Image, keeperDir, mounts(containerKeeper), keeperRes),
			corev1.Container{
				Name:            containerAgent,
				Image:           cs.Image,
				ImagePullPolicy: corev1.PullPolicy(r.opt.ImagePullPolicy),
				Command:         shape.cmds[containerAgent],
				Env:             env,
				WorkingDir:      cs.WorkingDir,
				VolumeMounts:    mounts(containerAgent),
				Stdin:           true,
				StdinOnce:       true,
				TTY:             cs.TTY,
				Resources:       corev1.ResourceRequirements{Requests: agentRes, Limits: agentRes.DeepCopy()},
				SecurityContext: containerSecurity(),
			},
		),
	}
	o := runObjects{pod: pod, policy: r.policy(m, 0), secret: secret}
	// The policy selects the session's pod by its session label.
	o.policy.Spec.PodSelector.MatchLabels = map[string]string{labelSession: m.Labels[labelSession], labelManagedBy: managedBy}
	o.allow = allowed{nonce: nonce, image: cs.Image, uids: r.uids, pids: cs.Limits.PIDs, runtimeClass: r.opt.RuntimeClassName, secretEnv: names,
		maxDeadline: deadline, shape: shape}
	return o, validateRun(o, o.allow)
}

// SessionRun is a session's pod, started: the agent runs; its copy comes
// back on Sync.
type SessionRun struct {
	r      *Runtime
	name   string
	places sessionPlaces
	ours   made
	// cancel ends the link and the attach; linkIn is the link's way into
	// the pod, whose end lets pod-link exit by itself.
	cancel  context.CancelFunc
	linkIn  *io.PipeWriter
	linkC   chan error
	attachC chan error
	sizes   chan remotecommand.TerminalSize
	// syncLock (a one-slot channel) serializes read-backs and honours a
	// caller's context while it waits.
	syncLock chan struct{}
	// kept is set when the final read-back failed: Remove then leaves the
	// pod for the app to read back (EndSession).
	kept bool
	// manifest is the pod's tree as the last read-back applied it (nil:
	// none yet, the next read sends everything).
	manifest []byte
	// homeIn is the confined HOME as it went into the pod, homePod the
	// pod's manifest of it before the agent started (nil: not taken, the
	// HOME is not carried back); homeLimits bound what comes back.
	homeIn     map[string]homeRecord
	homePod    []byte
	homeLimits homeLimits
	endOnce    sync.Once
}

// StartSession starts a confined session's pod and returns once the agent
// runs: the objects made and checked as stored, the copy, objects, HOME
// and sidecar copied in, the link serving both sockets, the agent attached
// (in, out and errOut its terminal or streams) and its gate opened.
func (r *Runtime) StartSession(ctx context.Context, cs workspace.SessionContainerSpec, in io.Reader, out, errOut io.Writer) (*SessionRun, error) {
	if err := r.CheckImage(ctx, cs.Image); err != nil {
		return nil, err
	}
	if cs.RuntimeName != "" {
		return nil, errcode.New(errcode.InvalidArgument, "a session pod's runtime is the configured RuntimeClass, not %q", cs.RuntimeName)
	}
	p, err := sessionPlacesOf(cs)
	if err != nil {
		return nil, err
	}
	objs, err := r.sessionObjects(cs, p)
	if err != nil {
		return nil, err
	}
	s := &SessionRun{r: r, name: objs.pod.Name, places: p, linkC: make(chan error, 1), attachC: make(chan error, 1),
		sizes: make(chan remotecommand.TerminalSize, 4), syncLock: make(chan struct{}, 1), homeLimits: defaultHomeLimits}
	if cs.TTY && cs.Rows > 0 && cs.Cols > 0 {
		s.sizes <- remotecommand.TerminalSize{Width: uint16(cs.Cols), Height: uint16(cs.Rows)}
	}
	ok := false
	defer func() {
		if !ok {
			s.Remove()
		}
	}()
	s.ours, err = r.create(ctx, objs)
	if err != nil {
		return nil, err
	}
	if err := r.waitStarted(ctx, s.name, cs.Image); err != nil {
		return nil, err
	}
	if err := s.copyIn(ctx); err != nil {
		return nil, err
	}
	if err := s.homeBaseline(ctx); err != nil {
		s.homePod = nil
		r.log.Warn("kube: the manifest of the session's HOME could not be taken; what the agent changes in its HOME will not be carried back", "pod", s.name, "err", err)
	} else if err := saveHomeIn(p.copyHost, p.homeHost, s.homeIn, s.homePod); err != nil {
		// Only an app that ends the session itself needs it.
		r.log.Warn("kube: what went into the session's pod of its HOME could not be kept; an app that ends the session will not carry its HOME back", "pod", s.name, "err", err)
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	if err := s.startLink(lctx); err != nil {
		return nil, err
	}
	go func() {
		g := &gate{opened: make(chan struct{})}
		var stdin io.Reader = g
		if in != nil {
			stdin = io.MultiReader(g, in)
		}
		s.attachC <- s.attach(lctx, stdin, out, errOut, cs.TTY)
	}()
	ok = true
	// The first read-back sends the whole tree (it has no manifest to
	// compare with); it is taken now, while the agent starts, so that the
	// agent's first tool call waits only for what it changed.
	go func() {
		pctx, cancel := context.WithTimeout(lctx, 10*time.Minute)
		defer cancel()
		if err := s.Sync(pctx); err != nil {
			r.log.Warn("kube: the session's first read-back failed; the next tool call reads everything", "pod", s.name, "err", err)
		}
	}()
	return s, nil
}

// copyIn sends the copy (its .git included), the person's objects under
// it, the HOME and the sidecar into the keeper's volumes as one archive.
func (s *SessionRun) copyIn(ctx context.Context) error {
	pr, pw := io.Pipe()
	packC := make(chan error, 1)
	s.homeIn = map[string]homeRecord{}
	go func() {
		err := packSession(pw, s.places, s.homeIn)
		pw.CloseWithError(err)
		packC <- err
	}()
	err := s.r.execIn(ctx, s.name, containerKeeper, []string{"tar", "-x", "-f", "-", "-C", keeperDir}, pr, nil)
	if err == nil {
		_, _ = io.Copy(io.Discard, pr)
	}
	pr.CloseWithError(errPodTarEnded)
	packErr := <-packC
	if packErr != nil && !errors.Is(packErr, errPodTarEnded) {
		return packErr
	}
	if err != nil {
		return &errcode.Error{Code: errcode.Internal, Msg: "cannot copy the session's files into its pod: " + err.Error(), Err: err}
	}
	return nil
}

// packSession writes the archive copyIn sends: repo/ (the copy),
// objects/, home/ and run/bin/sluice-sidecar. Each tree is read
// through an os.Root: a link in it (the confined HOME is the agent's to
// write between sessions) is archived as a link and never followed out.
// homeIn gets each path of the HOME as it went in.
func packSession(w io.Writer, p sessionPlaces, homeIn map[string]homeRecord) error {
	tw := tar.NewWriter(w)
	parts := []struct {
		host, prefix string
		rec          map[string]homeRecord
	}{
		{p.copyHost, "repo", nil},
		{p.objectsHost, "objects", nil},
		{p.homeHost, "home", homeIn},
	}
	for _, part := range parts {
		if err := packDir(tw, part.host, part.prefix, part.rec); err != nil {
			return err
		}
	}
	// The copy's origin alternate leads to the person's objects where the
	// pod shows them, read-only.
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: originEntry, Linkname: insideObjects, Mode: 0o777, ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "run/bin/", Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	f, err := os.Open(p.sidecarHost)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot read the sidecar for the session's pod")
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "run/bin/sluice-sidecar", Mode: 0o755, Size: st.Size(), ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return err
	}
	return tw.Close()
}

// packDir archives the tree host under prefix; rec, when not nil, gets
// each path (but the top) as archived.
func packDir(tw *tar.Writer, host, prefix string, rec map[string]homeRecord) error {
	root, err := os.OpenRoot(host)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot read %s for the session's pod", host)
	}
	defer root.Close()
	return fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := path.Join(prefix, rel)
		if name == originEntry {
			// The mount point of the origin: a link in the pod.
			return fs.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := int64(info.Mode().Perm())
		switch {
		case d.IsDir() && rel == "." && !strings.Contains(prefix, "/"):
			// The volume's own mount point: the keeper does not own it.
			return nil
		case d.IsDir():
			if rec != nil && rel != "." {
				rec[rel] = homeRecord{typ: 'd', mode: uint32(mode)}
			}
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: info.ModTime()})
		case d.Type()&fs.ModeSymlink != 0:
			target, err := root.Readlink(rel)
			if err != nil {
				return err
			}
			if rec != nil {
				rec[rel] = homeRecord{typ: 'l', mode: uint32(mode), link: target}
			}
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: info.ModTime()})
		case d.Type().IsRegular():
			f, err := root.Open(rel)
			if err != nil {
				return err
			}
			defer f.Close()
			st, err := f.Stat()
			if err != nil || !st.Mode().IsRegular() {
				return errcode.New(errcode.Conflict, "%s changed while it was copied into the session's pod", name)
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: st.Size(), ModTime: st.ModTime()}); err != nil {
				return err
			}
			h := sha256.New()
			n, err := io.Copy(io.MultiWriter(tw, h), io.LimitReader(f, st.Size()))
			if err == nil && n != st.Size() {
				err = errcode.New(errcode.Conflict, "%s changed while it was copied into the session's pod", name)
			}
			if err == nil && rec != nil {
				r := homeRecord{typ: 'f', mode: uint32(mode), size: n}
				h.Sum(r.sum[:0])
				rec[rel] = r
			}
			return err
		}
		// Sockets, FIFOs and devices stay behind.
		return nil
	})
}

// startLink runs `sluice-sidecar pod-link` in the keeper and serves its
// connections: the agent's MCP to the session's sidecar (each tool call
// after the copy came back), its proxy traffic to the launcher's egress
// proxy. It returns once both sockets exist in the pod.
func (s *SessionRun) startLink(ctx context.Context) error {
	toPod, podIn := io.Pipe()
	fromPod, podOut := io.Pipe()
	s.linkIn = podIn
	cmd := []string{keeperDir + "/run/bin/sluice-sidecar", "pod-link",
		"--socket", linkMCP + "=" + keeperDir + "/run/mcp.sock", "--socket", linkEgress + "=" + keeperDir + "/run/egress.sock"}
	execC := make(chan error, 1)
	go func() {
		err := s.r.execIn(ctx, s.name, containerKeeper, cmd, toPod, podOut)
		podOut.CloseWithError(io.EOF)
		toPod.CloseWithError(io.EOF)
		execC <- err
	}()
	dial := func(sock string) func(context.Context) (net.Conn, error) {
		return func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}
	}
	targets := map[string]podlink.Target{
		linkMCP:    {Dial: dial(s.places.mcpHost), BeforeCall: s.Sync},
		linkEgress: {Dial: dial(s.places.egressHost)},
	}
	go func() {
		err := podlink.Serve(ctx, pipeRWC{fromPod, podIn}, targets)
		podIn.CloseWithError(io.EOF)
		fromPod.CloseWithError(io.EOF)
		s.linkC <- errors.Join(err, <-execC)
	}()
	wait := []string{"/bin/sh", "-c", `i=0; while [ ! -S "$1" ] || [ ! -S "$2" ]; do i=$((i+1)); [ $i -le 600 ] || exit 1; sleep 0.1; done`, "sluice-wait",
		keeperDir + "/run/mcp.sock", keeperDir + "/run/egress.sock"}
	if err := s.r.execIn(ctx, s.name, containerKeeper, wait, nil, nil); err != nil {
		return errcode.Wrap(errcode.Internal, err, "the session pod's link to Sluice did not start")
	}
	return nil
}

// pipeRWC joins the link's two pipes.
type pipeRWC struct {
	r *io.PipeReader
	w *io.PipeWriter
}

func (p pipeRWC) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p pipeRWC) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipeRWC) Close() error {
	p.w.Close()
	return p.r.Close()
}

// attach connects the person's terminal (or streams) to the agent.
func (s *SessionRun) attach(ctx context.Context, stdin io.Reader, out, errOut io.Writer, tty bool) error {
	opts := &corev1.PodAttachOptions{Container: containerAgent, Stdin: true, Stdout: true, Stderr: !tty, TTY: tty}
	req := s.r.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(s.r.opt.Namespace).Name(s.name).SubResource("attach").
		VersionedParams(opts, scheme.ParameterCodec)
	ex, err := s.r.newExecutor(req.URL())
	if err != nil {
		return err
	}
	so := remotecommand.StreamOptions{Stdin: stdin, Stdout: out, Tty: tty}
	if tty {
		so.TerminalSizeQueue = sizeQueue(s.sizes)
	} else {
		so.Stderr = errOut
	}
	if err := ex.StreamWithContext(ctx, so); err != nil && ctx.Err() == nil {
		return apiError(streamCause(err), "create", "pods/attach", s.name)
	}
	return nil
}

type sizeQueue chan remotecommand.TerminalSize

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	sz, ok := <-q
	if !ok {
		return nil
	}
	return &sz
}

// Sync reads the pod's tree back into the session's copy, in place, as
// an untrusted archive; the pod's .git stays in the pod. Only what changed
// since the last read-back travels (`sluice-sidecar pod-tree` in the
// keeper, workspace.SyncTreeDelta here); when the copy and the last
// manifest disagree, the whole tree is read again. Calls are serialized.
func (s *SessionRun) Sync(ctx context.Context) error {
	// A read-back that stalls (a kubelet that does not answer) gives up
	// rather than holding the lock: the tool call is refused, the next one
	// reads again.
	ctx, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	select {
	case s.syncLock <- struct{}{}:
	case <-ctx.Done():
		return &errcode.Error{Code: errcode.Timeout, Msg: "the session's files could not be read back from its pod in time", Err: ctx.Err()}
	}
	defer func() { <-s.syncLock }()
	next, err := s.r.syncDelta(ctx, s.name, s.places.copyHost, s.manifest)
	if errors.Is(err, workspace.ErrTreeDisagrees) && s.manifest != nil {
		s.r.log.Warn("kube: the session's copy and its manifest disagree; reading the whole tree", "pod", s.name, "err", err)
		next, err = s.r.syncDelta(ctx, s.name, s.places.copyHost, nil)
	}
	if err != nil {
		s.manifest = nil
		return err
	}
	s.manifest = next
	return nil
}

// syncDelta reads the changes of pod's repo volume since prev into
// copyHost and returns the new manifest.
func (r *Runtime) syncDelta(ctx context.Context, pod, copyHost string, prev []byte) ([]byte, error) {
	pr, pw := io.Pipe()
	type result struct {
		next []byte
		err  error
	}
	resC := make(chan result, 1)
	// An archive refused ends the exec's stream at once: client-go would
	// otherwise read and discard the rest of what the pod sends.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		next, _, err := workspace.SyncTreeDelta(pr, copyHost, prev, workspace.ReplaceOptions{UID: -1, GID: -1})
		if err != nil {
			cancel()
		}
		pr.CloseWithError(err)
		resC <- result{next, err}
	}()
	cmd := []string{keeperDir + "/run/bin/sluice-sidecar", "pod-tree", "--root", keeperDir + "/repo",
		"--max-bytes", strconv.FormatInt(workspace.DefaultArchiveMaxBytes, 10)}
	err := r.execIn(ctx, pod, containerKeeper, cmd, bytes.NewReader(prev), pw)
	pw.CloseWithError(err)
	res := <-resC
	var ee *execError
	if errors.As(err, &ee) {
		// pod-tree ran and failed on what is in the pod (a file it may not
		// read, say): reading again would fail again.
		return nil, &errcode.Error{Code: errcode.Conflict, Msg: "the session's files could not be read in its pod: " + err.Error(), Err: errors.Join(errPodTreeFailed, err)}
	}
	if res.err != nil {
		return nil, res.err
	}
	if err != nil {
		return nil, &errcode.Error{Code: errcode.Internal, Msg: "cannot read the session's files back from its pod: " + err.Error(), Err: err}
	}
	return res.next, nil
}

// Wait waits for the agent to end and returns its exit code, after its
// copy came back (a copy that cannot come back is an error: what the agent
// left must not be offered from an older tree).
func (s *SessionRun) Wait() (int, error) {
	ctx := context.Background()
	p, err := s.r.watchPod(ctx, s.name, func(p *corev1.Pod) (bool, error) {
		if err := podFailure(p); err != nil {
			return false, err
		}
		cs := containerStatus(p, containerAgent)
		return cs != nil && cs.State.Terminated != nil, nil
	})
	if err != nil {
		if errors.Is(err, errPodGone) {
			return exitKilled, errcode.New(errcode.Internal, "the session's pod was deleted while the agent ran")
		}
		// The pod may still hold what the agent left: it stays for the
		// app to read back.
		s.kept = true
		return 1, fmt.Errorf("%w: %w", ErrSessionPodKept, err)
	}
	t := containerStatus(p, containerAgent).State.Terminated
	code := int(t.ExitCode)
	select {
	case <-s.attachC:
	case <-time.After(streamSettle):
	}
	if err := s.Sync(ctx); err != nil {
		// What the agent left must not be offered from an older tree: the
		// pod stays for the app to read back.
		s.kept = true
		return code, fmt.Errorf("%w: %w", ErrSessionPodKept, err)
	}
	s.endHome(ctx)
	if t.Reason == "OOMKilled" {
		return code, errcode.New(errcode.Internal, "the agent's container ran out of memory (OOMKilled)")
	}
	return code, nil
}

// endHome carries what the agent changed in its HOME back (homeBack); a
// HOME that cannot come back stays as it was, and the log says so.
func (s *SessionRun) endHome(ctx context.Context) {
	if s.homePod == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	select {
	case s.syncLock <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-s.syncLock }()
	applied, kept, err := homeBackOnce(s.places.copyHost, func() (int, int, error) { return s.homeBack(ctx) })
	if err != nil {
		s.r.log.Warn("kube: what the agent changed in its HOME in the pod did not come back; the confined HOME stays as it was", "pod", s.name, "err", err)
		return
	}
	if applied+kept > 0 {
		s.r.log.Info("kube: the agent's HOME came back from its pod", "pod", s.name, "applied", applied, "kept", kept)
	}
}

// Signal passes sig on to the agent's first process (sandbox-init, which
// passes it to the agent). KILL deletes the pod.
func (s *SessionRun) Signal(sig string) error {
	if sig == "KILL" {
		// Every process of the agent's but its first, which then exits as
		// the agent did: the pod stays, so Wait still reads the agent's
		// files back. Only a kill that cannot be made removes the pod.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.r.execIn(ctx, s.name, containerAgent, []string{"kill", "-9", "-1"}, nil, nil); err != nil {
			var ee *execError
			if !errors.As(err, &ee) && !s.agentEnded(ctx) {
				return s.Remove()
			}
		}
		return nil
	}
	if !slices.Contains([]string{"TERM", "INT", "HUP"}, sig) {
		sig = "TERM"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.r.execIn(ctx, s.name, containerAgent, []string{"kill", "-" + sig, "1"}, nil, nil)
}

// agentEnded says whether the agent's container has terminated: a kill
// whose exec stream broke because the container it ran in ended (the
// agent's first process exits once the others are killed) did its work,
// and the pod must stay for Wait to read the agent's files back.
//
// The node reports the container's end a moment after the stream breaks,
// so its status is followed for a while (agentEndWait) before the kill is
// taken to have failed.
func (s *SessionRun) agentEnded(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, agentEndWait)
	defer cancel()
	_, err := s.r.watchPod(ctx, s.name, func(p *corev1.Pod) (bool, error) {
		cs := containerStatus(p, containerAgent)
		return cs != nil && cs.State.Terminated != nil, nil
	})
	return err == nil
}

// agentEndWait bounds how long a kill whose stream broke waits for the
// node to report the agent's container ended.
const agentEndWait = 5 * time.Second

// Resize sets the agent's terminal size.
func (s *SessionRun) Resize(rows, cols uint) error {
	select {
	case s.sizes <- remotecommand.TerminalSize{Width: uint16(cols), Height: uint16(rows)}:
	default:
	}
	return nil
}

// Remove ends the link and deletes the session's objects, verified gone.
func (s *SessionRun) Remove() error {
	var err error
	s.endOnce.Do(func() {
		if s.linkIn != nil {
			// The end of its stdin ends pod-link, and its exec, cleanly.
			s.linkIn.Close()
			select {
			case <-s.linkC:
			case <-time.After(streamSettle):
			}
		}
		if s.cancel != nil {
			s.cancel()
		}
		ctx, cancel := context.WithTimeout(context.Background(), removeWait)
		defer cancel()
		// A read-back under way finishes (or fails) before the pod goes,
		// so that nothing renames into the copy afterwards.
		select {
		case s.syncLock <- struct{}{}:
			defer func() { <-s.syncLock }()
		case <-ctx.Done():
		}
		if s.kept {
			err = fmt.Errorf("%w (pod %s)", ErrSessionPodKept, s.name)
			return
		}
		// Kept only for an app that reads the pod back itself.
		_ = os.Remove(homeInPath(s.places.copyHost))
		ours := s.ours
		if ours == nil {
			ours = made{}
		}
		err = s.r.remove(ctx, s.name, ours.has)
	})
	return err
}

// EndSession is the app's for a session whose launcher is gone (or
// whose last read-back failed): the whole tree comes back from its pod
// (pod-tree, as a tool call's read-back, with no manifest), then what the
// agent changed in its HOME (when the launcher kept what went in, see
// homeback.go; a HOME that does not come back is logged), and only then
// is every object of the session deleted and verified gone. A pod that
// no longer runs its keeper cannot be read: its objects go, and the error
// says its files did not come back. A read-back that fails for a reason
// that may pass (the API server, the node) keeps the pod and is returned,
// to be tried again; one whose archive was refused deletes the objects
// and returns ErrFilesNotBack.
func (r *Runtime) EndSession(ctx context.Context, id, copyHost string) error {
	name := sessionName(id)
	p, err := withRetry(ctx, func(ctx context.Context) (*corev1.Pod, error) {
		return r.cs.CoreV1().Pods(r.opt.Namespace).Get(ctx, name, metav1.GetOptions{})
	})
	var readErr error
	switch {
	case apierrors.IsNotFound(err):
		// The launcher read the copy back and removed the pod (or none
		// was made); the Secret and NetworkPolicy may be left.
	case err != nil:
		return apiError(err, "get", "pods", name)
	case p.Annotations[labelSession] != id:
		return notOurs("pod", name)
	default:
		cs := containerStatus(p, containerKeeper)
		if cs == nil || cs.State.Running == nil {
			readErr = &errcode.Error{Code: errcode.Conflict, Msg: "the session's pod no longer runs its keeper, so its files cannot be read back", Err: ErrFilesNotBack}
			break
		}
		// Each read is bounded as the launcher's are (syncWait): the app
		// waits on it to end the session.
		sctx, cancel := context.WithTimeout(ctx, syncWait)
		_, err := r.syncDelta(sctx, name, copyHost, nil)
		cancel()
		if err != nil {
			if !refusedArchive(err) {
				return err // kept: tried again later
			}
			readErr = &errcode.Error{Code: errcode.Conflict, Msg: "the session's files were refused as they came back from its pod: " + err.Error(),
				Err: errors.Join(ErrFilesNotBack, err)}
			break
		}
		// The HOME as the launcher would have carried it back, when it
		// kept what went in; a HOME that does not come back is logged.
		hctx, cancel := context.WithTimeout(ctx, syncWait)
		r.endSessionHome(hctx, name, copyHost)
		cancel()
	}
	if err := r.remove(ctx, name, func(string) bool { return true }); err != nil {
		return err
	}
	_ = os.Remove(homeInPath(copyHost))
	return readErr
}

// errPodTreeFailed: pod-tree exited with an error in the pod.
var errPodTreeFailed = errors.New("pod-tree failed in the pod")

// refusedArchive reports a read-back refused for what the pod holds or
// sent: trying again would be refused again.
func refusedArchive(err error) bool {
	return errors.Is(err, errPodTreeFailed) || errors.Is(err, workspace.ErrArchiveUnsafe) || errors.Is(err, workspace.ErrArchiveLimit) ||
		errors.Is(err, workspace.ErrTreeManifest)
}
