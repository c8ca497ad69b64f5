package kube

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
)

// allowed is what a run's objects may hold beyond the fixed hardening.
type allowed struct {
	// nonce is the run's, on each of its objects.
	nonce string
	image string
	// uids is the range the pod's uid is drawn from, by the nonce (see
	// pidlimit.go); pids is its PID limit.
	uids         uidRange
	pids         int64
	runtimeClass string
	// proxy is the egress proxy's CIDR and port when the run has egress.
	proxyCIDR string
	proxyPort int32
	// secretEnv are the env names that must come from a Secret: the
	// granted ones from the workspace's Secret wsSecret when it is set, the
	// others (proxy variables; all of them without wsSecret) from the
	// run's own.
	secretEnv []string
	wsSecret  string
	// maxDeadline bounds activeDeadlineSeconds.
	maxDeadline int64
	// runCmd is the run container's command, exactly as built.
	runCmd []string
	// shape is the pod's containers, volumes and mounts; nil is a
	// workspace run's (runShape of runCmd).
	shape *podShape
	// nodeSelector and tolerations are what the RuntimeClass's scheduling
	// adds to the pod (its admission merges them in); nil unless the
	// stored pod has any (see create).
	nodeSelector map[string]string
	tolerations  []corev1.Toleration
}

func refusal(format string, a ...any) *errcode.Error {
	return &errcode.Error{Code: errcode.InvalidArgument, Msg: "pod configuration refused: " + fmt.Sprintf(format, a...)}
}

// validateRun checks a run's objects just before they are created, as
// ValidateContainerConfig checks the Docker runtime's: every setting the
// isolation rests on, whatever built them.
func validateRun(o runObjects, a allowed) error {
	if o.pod == nil || o.policy == nil {
		return refusal("the run's objects are incomplete")
	}
	if err := validatePodSpec(o.pod.Name, &o.pod.Spec, a); err != nil {
		return err
	}
	if err := validatePolicy(o.policy, o.pod, a); err != nil {
		return err
	}
	if o.secret != nil && (o.secret.Name != o.pod.Name || o.secret.Namespace != o.pod.Namespace) {
		return refusal("the run's Secret is not the run's")
	}
	// gVisor reads its mount hints from the pod's annotations: exactly
	// those Sluice set, no more, no fewer.
	for k, v := range o.pod.Annotations {
		if strings.HasPrefix(k, "dev.gvisor.") && a.podShape().gvisor[k] != v {
			return refusal("the pod's annotation %s is not one Sluice set", k)
		}
	}
	for k, v := range a.podShape().gvisor {
		if o.pod.Annotations[k] != v {
			return refusal("the pod lacks its annotation %s", k)
		}
	}
	for _, m := range []*metav1.ObjectMeta{&o.pod.ObjectMeta, &o.policy.ObjectMeta, secretMeta(o.secret)} {
		if m != nil && (a.nonce == "" || m.Annotations[annotationNonce] != a.nonce) {
			return refusal("%s does not carry the run's nonce", m.Name)
		}
	}
	return nil
}

func validatePodSpec(name string, s *corev1.PodSpec, a allowed) error {
	switch {
	case s.RestartPolicy != corev1.RestartPolicyNever:
		return refusal("restartPolicy must be Never")
	case s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken:
		return refusal("the service account token must not be mounted")
	case s.EnableServiceLinks == nil || *s.EnableServiceLinks:
		return refusal("service links must be off")
	case s.HostNetwork || s.HostPID || s.HostIPC:
		return refusal("no host namespace may be shared")
	case s.ShareProcessNamespace != nil && *s.ShareProcessNamespace:
		return refusal("the containers must not share a process namespace")
	case s.ServiceAccountName != "" && s.ServiceAccountName != "default" || s.DeprecatedServiceAccount != "" && s.DeprecatedServiceAccount != "default":
		// The API server names "default"; its token is not mounted.
		return refusal("no service account may be named")
	case s.NodeName != "" || len(s.ImagePullSecrets) > 0 || len(s.HostAliases) > 0:
		return refusal("nodeName, imagePullSecrets and hostAliases must be unset")
	case len(s.InitContainers) > 0 || len(s.EphemeralContainers) > 0:
		return refusal("no init or ephemeral containers")
	case s.ActiveDeadlineSeconds == nil || *s.ActiveDeadlineSeconds <= 0 || *s.ActiveDeadlineSeconds > a.maxDeadline:
		return refusal("activeDeadlineSeconds must be set, at most the run's timeout and its margin")
	case s.TerminationGracePeriodSeconds == nil || *s.TerminationGracePeriodSeconds != 0:
		return refusal("terminationGracePeriodSeconds must be 0")
	}
	if err := validateScheduling(s, a); err != nil {
		return err
	}
	if got := ptrStr(s.RuntimeClassName); got != a.runtimeClass {
		return refusal("runtimeClassName %q is not the configured %q", got, a.runtimeClass)
	}
	if err := validatePodSecurity(s.SecurityContext, a); err != nil {
		return err
	}
	shape := a.podShape()
	if err := validateVolumes(s.Volumes, shape); err != nil {
		return err
	}
	if !slices.Equal(containerNames(s.Containers), shape.containers) {
		return refusal("the pod must have exactly the containers %s", strings.Join(shape.containers, " and "))
	}
	for i := range s.Containers {
		if err := validateContainer(name, &s.Containers[i], a); err != nil {
			return err
		}
	}
	return nil
}

// validateScheduling keeps the pod off nodes it was not meant for: no
// affinity, no device claims, a nodeSelector and tolerations only as the
// RuntimeClass's scheduling adds them, and the API server's default
// tolerations of a node that is not ready or unreachable (NoExecute, for a
// bounded time: the pod is evicted from such a node all the same).
func validateScheduling(s *corev1.PodSpec, a allowed) error {
	switch {
	case s.Affinity != nil:
		return refusal("no affinity may be set")
	case len(s.ResourceClaims) > 0:
		return refusal("no resource claims may be made")
	}
	for k, v := range s.NodeSelector {
		if want, ok := a.nodeSelector[k]; !ok || want != v {
			return refusal("nodeSelector %s=%s is not the RuntimeClass's", k, v)
		}
	}
	for _, t := range s.Tolerations {
		if defaultToleration(t) || slices.ContainsFunc(a.tolerations, func(w corev1.Toleration) bool {
			return w.MatchToleration(&t) && ptrEq(w.TolerationSeconds, t.TolerationSeconds)
		}) {
			continue
		}
		return refusal("toleration %s %s %s:%s is not allowed", t.Key, t.Operator, t.Value, t.Effect)
	}
	return nil
}

// defaultToleration is one the API server's DefaultTolerationSeconds
// admission adds to every pod.
func defaultToleration(t corev1.Toleration) bool {
	return (t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable) &&
		t.Operator == corev1.TolerationOpExists && t.Value == "" && t.Effect == corev1.TaintEffectNoExecute && t.TolerationSeconds != nil
}

// needsScheduling reports whether a stored pod has scheduling settings
// only a RuntimeClass could have added.
func needsScheduling(s *corev1.PodSpec) bool {
	if len(s.NodeSelector) > 0 {
		return true
	}
	for _, t := range s.Tolerations {
		if !defaultToleration(t) {
			return true
		}
	}
	return false
}

func ptrEq[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

func validatePodSecurity(sc *corev1.PodSecurityContext, a allowed) error {
	switch {
	case sc == nil:
		return refusal("the pod security context is missing")
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
		return refusal("runAsNonRoot must be true")
	case a.uids.count == 0 || a.uids.first < 1:
		return refusal("the pods' uid range is not set")
	case sc.RunAsUser == nil || *sc.RunAsUser == 0 || !a.uids.contains(*sc.RunAsUser) || *sc.RunAsUser != a.uids.podUID(a.nonce):
		// The PID limit counts by uid: a uid outside the range, or not the
		// one the run drew, may be another pod's (or the node's).
		return refusal("runAsUser must be the pod's own uid, drawn from the range %s by the run's nonce", a.uids)
	case sc.RunAsGroup == nil || *sc.RunAsGroup != *sc.RunAsUser:
		return refusal("runAsGroup must be the pod's own gid, the number of its uid")
	case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		return refusal("the seccomp profile must be RuntimeDefault")
	case len(sc.Sysctls) > 0 || len(sc.SupplementalGroups) > 0 || sc.FSGroup != nil:
		return refusal("no sysctls, supplemental groups or fsGroup")
	case sc.SELinuxOptions != nil || sc.AppArmorProfile != nil && sc.AppArmorProfile.Type == corev1.AppArmorProfileTypeUnconfined:
		return refusal("no SELinux options or unconfined AppArmor")
	case sc.WindowsOptions != nil:
		return refusal("no Windows options")
	}
	return nil
}

func validateVolumes(vols []corev1.Volume, shape *podShape) error {
	seen := map[string]bool{}
	for _, v := range vols {
		ed := v.EmptyDir
		// Only an emptyDir: a copy of the VolumeSource with EmptyDir cleared
		// must be empty (no hostPath, projected token, secret, PVC …).
		rest := v.VolumeSource
		rest.EmptyDir = nil
		if ed == nil || rest != (corev1.VolumeSource{}) {
			return refusal("volume %q: only emptyDir volumes are allowed", v.Name)
		}
		if seen[v.Name] {
			return refusal("volume %q appears twice", v.Name)
		}
		seen[v.Name] = true
		if ed.SizeLimit == nil || ed.SizeLimit.Sign() <= 0 {
			return refusal("volume %q must have a size limit", v.Name)
		}
		medium, ok := shape.volumes[v.Name]
		switch {
		case !ok:
			return refusal("volume %q is not one of the pod's", v.Name)
		case ed.Medium != medium && medium == corev1.StorageMediumMemory:
			return refusal("volume %s must be in memory", v.Name)
		case ed.Medium != medium:
			return refusal("volume %q must be on disk", v.Name)
		}
	}
	for _, v := range shape.required {
		if !seen[v] {
			return refusal("the volumes %s are required", strings.Join(shape.required, " and "))
		}
	}
	return nil
}

// podShape is what a pod is made of: its containers in order, its
// volumes (each with its medium), where each container mounts which, each
// container's command, and which container has stdin (opened once) and
// may have a terminal.
type podShape struct {
	containers []string
	volumes    map[string]corev1.StorageMedium
	required   []string
	mounts     map[string]map[string]mountRule
	cmds       map[string][]string
	// workDirs are the containers' working directories.
	workDirs map[string]string
	stdin    string
	tty      bool
	// gvisor are the pod's dev.gvisor.* annotations.
	gvisor map[string]string
}

// mountRule is where a volume may be mounted, and whether read-only.
type mountRule struct {
	path     string
	readOnly bool
}

// runShape is a workspace run's pod.
func runShape(runCmd []string) *podShape {
	return &podShape{
		containers: []string{containerKeeper, containerRun},
		volumes:    map[string]corev1.StorageMedium{volWorkspace: corev1.StorageMediumDefault, volGit: corev1.StorageMediumDefault, volTmp: corev1.StorageMediumMemory},
		required:   []string{volWorkspace, volTmp},
		mounts:     mountRules,
		cmds:       map[string][]string{containerKeeper: keeperCmd, containerRun: runCmd},
		workDirs:   map[string]string{containerKeeper: workspace.WorkspaceMount, containerRun: workspace.WorkspaceMount},
		stdin:      containerRun,
	}
}

func (a allowed) podShape() *podShape {
	if a.shape != nil {
		return a.shape
	}
	return runShape(a.runCmd)
}

func containerNames(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// mountRules are where a workspace run's containers mount its volumes.
var mountRules = map[string]map[string]mountRule{
	containerKeeper: {volWorkspace: {"/workspace", false}, volGit: {"/workspace/.git", false}},
	containerRun:    {volWorkspace: {"/workspace", false}, volGit: {"/workspace/.git", true}, volTmp: {"/tmp", false}},
}

func validateContainer(pod string, c *corev1.Container, a allowed) error {
	shape := a.podShape()
	if c.Image != a.image {
		return refusal("container %s: the image must be the workspace image %s", c.Name, a.image)
	}
	sc := c.SecurityContext
	switch {
	case sc == nil:
		return refusal("container %s: the security context is missing", c.Name)
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		return refusal("container %s: the root filesystem must be read-only", c.Name)
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		return refusal("container %s: privilege escalation must be off", c.Name)
	case sc.Privileged == nil || *sc.Privileged:
		return refusal("container %s: must not be privileged", c.Name)
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		return refusal("container %s: every capability must be dropped and none added", c.Name)
	case sc.RunAsUser != nil || sc.RunAsGroup != nil || sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot:
		return refusal("container %s: the user is the pod's", c.Name)
	case sc.SeccompProfile != nil || sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount || sc.SELinuxOptions != nil || sc.AppArmorProfile != nil:
		return refusal("container %s: seccomp, procMount, SELinux and AppArmor are the pod's", c.Name)
	case c.TTY && !(shape.tty && c.Name == shape.stdin) || len(c.Ports) > 0 || len(c.VolumeDevices) > 0 || len(c.EnvFrom) > 0:
		return refusal("container %s: no TTY, ports, devices or envFrom", c.Name)
	case c.ImagePullPolicy != corev1.PullIfNotPresent && c.ImagePullPolicy != corev1.PullNever:
		return refusal("container %s: the image pull policy must be IfNotPresent or Never", c.Name)
	case c.LivenessProbe != nil || c.ReadinessProbe != nil || c.StartupProbe != nil || c.Lifecycle != nil:
		return refusal("container %s: no probes or lifecycle hooks", c.Name)
	}
	if c.WorkingDir != shape.workDirs[c.Name] {
		return refusal("container %s: the working directory must be %s", c.Name, shape.workDirs[c.Name])
	}
	if want, ok := shape.cmds[c.Name]; !ok || !slices.Equal(c.Command, want) || len(c.Args) > 0 {
		return refusal("container %s: the command must be the one Sluice built", c.Name)
	}
	if c.Name == shape.stdin && !limitsPIDs(c.Command, a.pids) {
		return refusal("container %s: the command must hold the pod to its PID limit of %d first", c.Name, a.pids)
	}
	if len(c.Resources.Claims) > 0 {
		return refusal("container %s: no resource claims", c.Name)
	}
	if c.Name == shape.stdin && (!c.Stdin || !c.StdinOnce) {
		return refusal("container %s: stdin must be open once (the start gate)", c.Name)
	}
	if c.Name != shape.stdin && c.Stdin {
		return refusal("container %s: no stdin", c.Name)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		req, okR := c.Resources.Requests[r]
		lim, okL := c.Resources.Limits[r]
		if !okR || !okL || lim.Sign() <= 0 || req.Cmp(lim) != 0 {
			return refusal("container %s: %s must be requested and limited, requests equal to limits", c.Name, r)
		}
	}
	rules := shape.mounts[c.Name]
	for _, m := range c.VolumeMounts {
		rule, ok := rules[m.Name]
		if !ok || m.MountPath != rule.path || m.ReadOnly != rule.readOnly || m.SubPath != "" || m.SubPathExpr != "" ||
			m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
			return refusal("container %s: volume %s may not be mounted at %s like this", c.Name, m.Name, m.MountPath)
		}
	}
	if c.Name != shape.stdin {
		// The keeper's environment is fixed: PATH and HOME, nothing more.
		if len(c.Env) != 2 || c.Env[0] != (corev1.EnvVar{Name: "PATH", Value: containerPath}) || c.Env[1] != (corev1.EnvVar{Name: "HOME", Value: containerHome}) {
			return refusal("container %s: the environment must be PATH and HOME as Sluice sets them", c.Name)
		}
		return nil
	}
	secret := map[string]bool{}
	for _, n := range a.secretEnv {
		secret[n] = true
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			if secret[e.Name] {
				return refusal("container %s: the secret %s must come from a Secret by reference", c.Name, e.Name)
			}
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		from := pod
		if a.wsSecret != "" && !slices.Contains(proxyEnv, e.Name) {
			from = a.wsSecret
		}
		if ref == nil || *e.ValueFrom != (corev1.EnvVarSource{SecretKeyRef: ref}) || !secret[e.Name] || e.Value != "" || ref.Name != from || ref.Key != e.Name ||
			ref.Optional == nil || *ref.Optional {
			return refusal("container %s: %s may only come from the Secret %s, under its own name, not optional", c.Name, e.Name, from)
		}
	}
	return nil
}

// limitsPIDs says whether cmd is sh running Sluice's script, whose first
// step is pidLimitScript, with the limit pids (at least minPodPIDs).
func limitsPIDs(cmd []string, pids int64) bool {
	return pids >= minPodPIDs && len(cmd) >= 5 && cmd[0] == "/bin/sh" && cmd[1] == "-c" &&
		strings.HasPrefix(cmd[2], pidLimitScript) && cmd[4] == strconv.FormatInt(pids, 10)
}

func validatePolicy(np *networkingv1.NetworkPolicy, pod *corev1.Pod, a allowed) error {
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
		return refusal("the NetworkPolicy must select the run's pod")
	}
	if np.Namespace != pod.Namespace || np.Name != pod.Name {
		return refusal("the NetworkPolicy is not the run's")
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
		return refusal("the NetworkPolicy must govern both ingress and egress")
	}
	if len(np.Spec.Ingress) > 0 {
		return refusal("the NetworkPolicy must allow no ingress")
	}
	if len(np.Spec.Egress) == 0 {
		return nil
	}
	if a.proxyCIDR == "" || len(np.Spec.Egress) != 1 {
		return refusal("the NetworkPolicy may allow egress only to the egress proxy, and only for a granted run")
	}
	e := np.Spec.Egress[0]
	if len(e.To) != 1 || e.To[0].IPBlock == nil || e.To[0].IPBlock.CIDR != a.proxyCIDR || len(e.To[0].IPBlock.Except) > 0 ||
		e.To[0].PodSelector != nil || e.To[0].NamespaceSelector != nil ||
		len(e.Ports) != 1 || e.Ports[0].Port == nil || e.Ports[0].Port.IntValue() != int(a.proxyPort) || e.Ports[0].EndPort != nil ||
		e.Ports[0].Protocol == nil || *e.Ports[0].Protocol != corev1.ProtocolTCP {
		return refusal("the NetworkPolicy may allow egress only to the egress proxy %s port %d", a.proxyCIDR, a.proxyPort)
	}
	return nil
}

func secretMeta(s *corev1.Secret) *metav1.ObjectMeta {
	if s == nil {
		return nil
	}
	return &s.ObjectMeta
}

func ptrStr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
