package kube

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
)

// Names of the pod's parts.
const (
	namePrefix      = "sluice-run-"
	containerKeeper = "keeper"
	containerRun    = "run"
	volWorkspace    = "workspace"
	volGit          = "git"
	volTmp          = "tmp"
	labelManagedBy  = "app.kubernetes.io/managed-by"
	managedBy       = "sluice"
	// annotationNonce holds a random value drawn for each run and put on
	// all its objects: an object of the run's name without it is not the
	// run's (see create).
	annotationNonce = "sluice.run-nonce"
	// deadlineMargin is added to a run's timeout for activeDeadlineSeconds:
	// the pod's start, the copies in and out. Only a backstop for when
	// Sluice is gone; Sluice's own timer ends the program.
	deadlineMargin = 10 * time.Minute
)

// keeper's fixed share: it waits, and runs tar twice. Half a CPU, because
// tar is CPU-bound on a tree of small files: 2,000 files of 8 KiB unpacked
// in 11.7 s at 100m and 2.7–3.0 s at 500m on the test node.
var (
	keeperCPU     = resource.MustParse("500m")
	keeperMemory  = resource.MustParse("64Mi")
	keeperStorage = resource.MustParse("64Mi")
)

// Run container's environment defaults, as the Docker runtime's (the
// Manager's Env already holds PATH, HOME and LANG).
const (
	containerPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	containerHome = "/tmp"
)

// keeperCmd waits forever (holding the volumes) and does nothing else. A
// loop, not one long sleep, so that an image whose sleep refuses a huge
// argument still works; it exits at SIGTERM, which PID 1 would otherwise
// ignore, so a deleted pod's keeper ends at once rather than at the end of
// the grace period.
var keeperCmd = []string{"/bin/sh", "-c", `trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done`}

// pidLimitScript is the first step of each command Sluice runs in a pod
// for the untrusted side (a run's program, a session's agent): it holds sh,
// and so everything started from it, to the PID limit given as $1, by
// RLIMIT_NPROC, soft and hard (see pidlimit.go). Shells spell it
// differently (bash, zsh and busybox: ulimit -u; dash and mksh: ulimit -p),
// so each spelling is tried in turn, and only /proc/self/limits says
// whether it took: a shell that set nothing, or something else, does not
// start the program but exits exitNoPIDLimit, its reason in the
// termination message. Builtins and redirections only: nothing here
// forks, so a pod already at its limit cannot make it fail half-way.
const pidLimitScript = `n=$1; shift
sluice_lim() { while read -r a b c d e; do [ "$a $b $c $d" = "Max processes $n $n" ] && return 0; done </proc/self/limits; return 1; }
{ ulimit -u "$n" && sluice_lim; } 2>/dev/null || { ulimit -p "$n" && sluice_lim; } 2>/dev/null || {
m="sluice: this image's /bin/sh cannot limit its processes to $n (RLIMIT_NPROC, ulimit -u or -p, soft and hard); the program does not start without its PID limit"
echo "$m" >&2; echo "$m" >/dev/termination-log 2>/dev/null; exit 122; }
`

// exitNoPIDLimit is pidLimitScript's exit code when it could not set the
// limit (see startFailure).
const exitNoPIDLimit = 122

// runScript holds the run to its PID limit, gates the program on one line
// of stdin (see runtime.go) and keeps sh as PID 1 (the exit afterwards
// stops sh from exec'ing the last command in its place).
const runScript = pidLimitScript + `read -r _ || exit 125; "$@"; exit $?`

// runObjects are everything a run is made of, named alike.
type runObjects struct {
	pod    *corev1.Pod
	policy *networkingv1.NetworkPolicy
	// secret is nil when the run has no secrets.
	secret *corev1.Secret
	// allow is what validateRun allows these objects (set by prepare).
	allow allowed
}

// podName is the name of a run's pod (and its Secret and NetworkPolicy).
func podName(runID string) string {
	n := namePrefix + sanitizeName(runID)
	if len(n) > 63 {
		sum := sha256.Sum256([]byte(runID))
		n = n[:63-13] + "-" + hex.EncodeToString(sum[:6])
	}
	return strings.TrimRight(n, "-")
}

var (
	nameBadRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9-]+`) })
	labelBadRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._-]+`) })
)

func sanitizeName(s string) string {
	return strings.Trim(nameBadRe().ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// labelValue turns s into a valid label value, deterministically (the
// same s always gives the same value, so Containers selects by it). The
// exact value is kept in an annotation of the same key.
func labelValue(s string) string {
	v := labelBadRe().ReplaceAllString(s, "_")
	if len(v) > 63 {
		sum := sha256.Sum256([]byte(s))
		v = v[:63-13] + "_" + hex.EncodeToString(sum[:6])
	}
	return strings.TrimFunc(v, func(r rune) bool { return r == '_' || r == '.' || r == '-' })
}

func (r *Runtime) meta(spec workspace.ContainerSpec) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      podName(spec.RunID),
		Namespace: r.opt.Namespace,
		Labels: map[string]string{
			workspace.LabelWorkspace: labelValue(spec.WorkspaceID),
			workspace.LabelStore:     labelValue(spec.StoreKey),
			workspace.LabelRun:       labelValue(spec.RunID),
			labelManagedBy:           managedBy,
		},
		Annotations: map[string]string{
			workspace.LabelWorkspace: spec.WorkspaceID,
			workspace.LabelStore:     spec.StoreKey,
			workspace.LabelRun:       spec.RunID,
			annotationNonce:          rand.Text(),
		},
	}
}

// parseUser reads spec.User, uid:gid, neither 0.
func parseUser(u string) (uid, gid int64, err error) {
	us, gs, ok := strings.Cut(u, ":")
	uid, err1 := strconv.ParseInt(us, 10, 32)
	gid, err2 := strconv.ParseInt(gs, 10, 32)
	if !ok || err1 != nil || err2 != nil || uid <= 0 || gid <= 0 {
		return 0, 0, errcode.New(errcode.InvalidArgument, "container configuration refused: the user must be a numeric non-root uid:gid, not %q", u)
	}
	return uid, gid, nil
}

// objects builds the run's objects from its spec. Every hardening setting
// is set here, explicitly, and validatePod checks it again.
func (r *Runtime) objects(spec workspace.ContainerSpec) (runObjects, error) {
	// The workspace's uid:gid owns the tree on the host (see copyOut); the
	// pod runs under its own (see pidlimit.go).
	if _, _, err := parseUser(spec.User); err != nil {
		return runObjects{}, err
	}
	if len(spec.Argv) == 0 {
		return runObjects{}, errcode.New(errcode.InvalidArgument, "container configuration refused: the command is empty")
	}
	if err := checkPIDs(spec.Limits.PIDs); err != nil {
		return runObjects{}, err
	}
	m := r.meta(spec)
	uid := r.uids.podUID(m.Annotations[annotationNonce])
	env, secret, err := r.env(m, spec, wsSecretName(spec.WorkspaceID))
	if err != nil {
		return runObjects{}, err
	}
	lim := spec.Limits
	cpu := resource.NewMilliQuantity(max(int64(lim.CPUs*1000), 10), resource.DecimalSI)
	mem := resource.NewQuantity(lim.MemoryBytes, resource.BinarySI)
	storage := resource.NewQuantity(r.opt.WorkspaceBytes, resource.BinarySI)
	runRes := corev1.ResourceList{corev1.ResourceCPU: *cpu, corev1.ResourceMemory: *mem, corev1.ResourceEphemeralStorage: *storage}
	keeperRes := corev1.ResourceList{corev1.ResourceCPU: keeperCPU, corev1.ResourceMemory: keeperMemory, corev1.ResourceEphemeralStorage: keeperStorage}

	withGit := spec.GitDirPath != ""
	runMounts := []corev1.VolumeMount{{Name: volWorkspace, MountPath: workspace.WorkspaceMount}}
	keeperMounts := []corev1.VolumeMount{{Name: volWorkspace, MountPath: workspace.WorkspaceMount}}
	wsSize := resource.NewQuantity(r.opt.WorkspaceBytes, resource.BinarySI)
	volumes := []corev1.Volume{{Name: volWorkspace, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: wsSize}}}}
	if withGit {
		runMounts = append(runMounts, corev1.VolumeMount{Name: volGit, MountPath: workspace.GitMount, ReadOnly: true})
		keeperMounts = append(keeperMounts, corev1.VolumeMount{Name: volGit, MountPath: workspace.GitMount})
		volumes = append(volumes, corev1.Volume{Name: volGit, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: wsSize}}})
	}
	runMounts = append(runMounts, corev1.VolumeMount{Name: volTmp, MountPath: "/tmp"})
	volumes = append(volumes, corev1.Volume{Name: volTmp, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
		Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(lim.TmpfsBytes, resource.BinarySI)}}})

	deadline := int64((lim.Timeout + deadlineMargin).Seconds())
	pod := &corev1.Pod{
		ObjectMeta: m,
		Spec: r.hardenedPodSpec("workspace", uid, uid, deadline, volumes,
			r.keeperContainer(spec.Image, workspace.WorkspaceMount, keeperMounts, keeperRes),
			corev1.Container{
				Name:            containerRun,
				Image:           spec.Image,
				ImagePullPolicy: corev1.PullPolicy(r.opt.ImagePullPolicy),
				Command:         runCommand(spec.Limits.PIDs, spec.Argv),
				Env:             env,
				WorkingDir:      workspace.WorkspaceMount,
				VolumeMounts:    runMounts,
				Stdin:           true,
				StdinOnce:       true,
				Resources:       corev1.ResourceRequirements{Requests: runRes, Limits: runRes.DeepCopy()},
				SecurityContext: containerSecurity(),
			},
		),
	}
	var port int32
	if spec.Network != "" {
		if port, err = r.proxyPort(spec); err != nil {
			return runObjects{}, err
		}
	}
	policy := r.policy(m, port)
	return runObjects{pod: pod, policy: policy, secret: secret}, nil
}

// minPodPIDs is the lowest PID limit a pod is given: the limit counts the
// whole pod's tasks (see pidlimit.go), and the pod's own take some of it:
// the keeper's shell and its sleep, the run's shell, and the pause process
// where the node runs it as the pod's user (one task for the usual C
// pause; 6 on the test node, whose pause is a Go program).
const minPodPIDs = 16

// checkPIDs refuses a PID limit a pod cannot start a program under.
func checkPIDs(pids int64) error {
	if pids < minPodPIDs || pids > workspace.HardLimits.PIDs {
		return &errcode.Error{Code: errcode.InvalidArgument, Data: map[string]any{"limit": "pids", "min": minPodPIDs, "runtime": "kubernetes"},
			Msg: fmt.Sprintf("on Kubernetes a run needs a PID limit of at least %d (and at most %d): it bounds the whole pod, whose own processes count against it", minPodPIDs, workspace.HardLimits.PIDs)}
	}
	return nil
}

// hardenedPodSpec is the spec every pod of Sluice's shares: never
// restarted, no service-account token, no service links, a deadline, no
// grace period, the pod's own non-root uid and gid (see pidlimit.go),
// RuntimeDefault seccomp, the configured RuntimeClass; validatePodSpec
// checks each again.
func (r *Runtime) hardenedPodSpec(hostname string, uid, gid, deadline int64, volumes []corev1.Volume, containers ...corev1.Container) corev1.PodSpec {
	s := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		AutomountServiceAccountToken:  new(false),
		EnableServiceLinks:            new(false),
		Hostname:                      hostname,
		ActiveDeadlineSeconds:         &deadline,
		TerminationGracePeriodSeconds: new(int64(0)),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   new(true),
			RunAsUser:      &uid,
			RunAsGroup:     &gid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Volumes:    volumes,
		Containers: containers,
	}
	if rc := r.opt.RuntimeClassName; rc != "" {
		s.RuntimeClassName = &rc
	}
	return s
}

// keeperContainer holds a pod's volumes and runs the copies in and out.
func (r *Runtime) keeperContainer(image, workDir string, mounts []corev1.VolumeMount, res corev1.ResourceList) corev1.Container {
	return corev1.Container{
		Name:            containerKeeper,
		Image:           image,
		ImagePullPolicy: corev1.PullPolicy(r.opt.ImagePullPolicy),
		Command:         keeperCmd,
		Env:             []corev1.EnvVar{{Name: "PATH", Value: containerPath}, {Name: "HOME", Value: containerHome}},
		WorkingDir:      workDir,
		VolumeMounts:    mounts,
		Resources:       corev1.ResourceRequirements{Requests: res, Limits: res.DeepCopy()},
		SecurityContext: containerSecurity(),
	}
}

// runCommand is the run container's command: sh held to the pod's PID
// limit, behind the start gate, then argv.
func runCommand(pids int64, argv []string) []string {
	return append([]string{"/bin/sh", "-c", runScript, "sluice-run", strconv.FormatInt(pids, 10)}, argv...)
}

func containerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		ReadOnlyRootFilesystem:   new(true),
		AllowPrivilegeEscalation: new(false),
		Privileged:               new(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// env is the run container's environment: spec.Env, with the entries
// spec.SecretEnv names taken by reference from a Secret, so that no secret
// value is in the pod spec. A granted secret comes from the workspace's
// Secret wsSecret (see secrets.go); the others (the proxy variables, a
// session's keys; all of them when wsSecret is "") from the object's own
// Secret, returned, or nil when there are none.
func (r *Runtime) env(m metav1.ObjectMeta, spec workspace.ContainerSpec, wsSecret string) ([]corev1.EnvVar, *corev1.Secret, error) {
	secretNames := map[string]bool{}
	for _, n := range spec.SecretEnv {
		secretNames[n] = true
	}
	var env []corev1.EnvVar
	var secret *corev1.Secret
	for _, kv := range spec.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, nil, errcode.New(errcode.InvalidArgument, "container configuration refused: an environment entry is not KEY=VALUE")
		}
		if !secretNames[k] {
			env = append(env, corev1.EnvVar{Name: k, Value: v})
			continue
		}
		from := m.Name
		if wsSecret != "" && !slices.Contains(proxyEnv, k) {
			from = wsSecret
		} else {
			if secret == nil {
				secret = &corev1.Secret{ObjectMeta: *m.DeepCopy(), Type: corev1.SecretTypeOpaque, Immutable: new(true), Data: map[string][]byte{}}
			}
			secret.Data[k] = []byte(v)
		}
		env = append(env, corev1.EnvVar{Name: k, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: from}, Key: k, Optional: new(false)}}})
	}
	return env, secret, nil
}

// proxyPort is the port of the egress proxy a granted run's proxy
// variables name (each process serving workspaces listens on its own),
// which must be on the configured proxy IP.
func (r *Runtime) proxyPort(spec workspace.ContainerSpec) (int32, error) {
	if r.proxy == nil {
		return 0, errcode.New(errcode.Unsupported, "the run asks for the egress proxy, which the Kubernetes runtime has no address for")
	}
	for _, kv := range spec.Env {
		v, ok := strings.CutPrefix(kv, "HTTPS_PROXY=")
		if !ok {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || !net.ParseIP(u.Hostname()).Equal(r.proxy.IP) {
			return 0, errcode.New(errcode.InvalidArgument, "the run's proxy is not the egress proxy at %s", r.proxy.IP)
		}
		port, err := strconv.ParseUint(u.Port(), 10, 16)
		if err != nil || port == 0 {
			return 0, errcode.New(errcode.InvalidArgument, "the run's proxy names no port")
		}
		return int32(port), nil
	}
	return 0, errcode.New(errcode.InvalidArgument, "a run on the egress network names no proxy (HTTPS_PROXY)")
}

// policy is the run's NetworkPolicy: nothing in, nothing out, or, for a
// granted run (proxyPort not 0), out to the egress proxy's IP and that
// port alone.
func (r *Runtime) policy(m metav1.ObjectMeta, proxyPort int32) *networkingv1.NetworkPolicy {
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: *m.DeepCopy(),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{workspace.LabelRun: m.Labels[workspace.LabelRun], labelManagedBy: managedBy}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
	if proxyPort != 0 && r.proxy != nil {
		bits := 32
		if r.proxy.IP.To4() == nil {
			bits = 128
		}
		cidr := (&net.IPNet{IP: r.proxy.IP, Mask: net.CIDRMask(bits, bits)}).String()
		port := intstr.FromInt32(proxyPort)
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{
			To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: cidr}}},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: new(corev1.ProtocolTCP), Port: &port}},
		}}
	}
	return np
}
