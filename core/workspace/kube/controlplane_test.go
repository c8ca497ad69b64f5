package kube

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
	"github.com/sluicehq/sluice/core/workspace/kube/kubetest"
)

// These tests talk to a real API server and etcd (kubetest.ControlPlane)
// with no node: pods are admitted and stay Pending. Where a test needs a
// node's answer it plays the kubelet, writing the pod's status through the
// status subresource as the kubelet would.

// TestRun_ObjectsAsCreated reads a run's pod, Secret and NetworkPolicy back
// from the API server and checks their shape, then cancels the run and
// checks that nothing is left.
func TestRun_ObjectsAsCreated(t *testing.T) {
	cfg := kubetest.ControlPlane(t)
	ns := kubetest.Namespace(t, cfg)
	cs := adminClient(t, cfg)
	for _, egress := range []bool{false, true} {
		o := Options{Namespace: ns, RuntimeClassName: "", ImagePullPolicy: "Never"}
		if egress {
			o.EgressProxy = "10.1.2.3"
		}
		r := newRuntime(t, cfg, o)
		spec := testSpec(t, fakeImage)
		spec.GitDirPath = t.TempDir()
		if egress {
			spec.Network = egressNetwork
			spec.Env = append(spec.Env, "HTTPS_PROXY=http://run:pw@10.1.2.3:3128")
			spec.SecretEnv = append(spec.SecretEnv, "HTTPS_PROXY")
		}
		done, cancel := runAsync(r, spec)
		name := podName(spec.RunID)
		pod := awaitPod(t, cs, ns, name, done)
		ctx := context.Background()
		// The run's own Secret holds what is the run's alone (the proxy
		// variables), and exists only when there is any.
		sec, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if egress && err != nil || !egress && !apierrors.IsNotFound(err) {
			t.Fatalf("the run's Secret (egress %v): %v", egress, err)
		}
		wsSec, err := cs.CoreV1().Secrets(ns).Get(ctx, wsSecretName(spec.WorkspaceID), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		np, err := cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkPodShape(t, pod, spec)
		if egress {
			checkSecretShape(t, sec, pod)
			t.Logf("run's secret: type=%s immutable=%v keys=%v labels=%v", sec.Type, *sec.Immutable, keys(sec.Data), sec.Labels)
		}
		checkWSSecretShape(t, wsSec, spec, map[string]string{"TOKEN": "s3cret-value"})
		checkPolicyShape(t, np, pod, egress)
		t.Logf("pod: %s", oneLine(pod.Spec))
		t.Logf("networkpolicy: %s", oneLine(np.Spec))
		t.Logf("workspace's secret: %s type=%s keys=%v labels=%v", wsSec.Name, wsSec.Type, keys(wsSec.Data), wsSec.Labels)

		cancel()
		res := <-done
		wantCode(t, res.err, errcode.Timeout, "cancelled")
		if !errors.Is(res.err, context.Canceled) {
			t.Fatalf("a cancelled run's error does not carry the cancel: %v", res.err)
		}
		// The workspace's Secret stays with the grant; the run's objects
		// are gone.
		if _, err := cs.CoreV1().Secrets(ns).Get(ctx, wsSec.Name, metav1.GetOptions{}); err != nil {
			t.Fatalf("the workspace's Secret went with the run: %v", err)
		}
		revokeGrants(t, cfg, ns)
		assertNothingLabelled(t, cs, ns)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func oneLine(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func checkPodShape(t *testing.T, pod *corev1.Pod, spec workspace.ContainerSpec) {
	t.Helper()
	s := pod.Spec
	fail := func(what string) { t.Helper(); t.Fatalf("pod as created: %s\n%s", what, oneLine(s)) }
	if s.RestartPolicy != corev1.RestartPolicyNever || s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken ||
		s.EnableServiceLinks == nil || *s.EnableServiceLinks || s.HostNetwork || s.HostPID || s.HostIPC {
		fail("restart policy, token, service links or host namespaces")
	}
	if s.TerminationGracePeriodSeconds == nil || *s.TerminationGracePeriodSeconds != 0 ||
		s.ActiveDeadlineSeconds == nil || *s.ActiveDeadlineSeconds != int64((spec.Limits.Timeout+deadlineMargin).Seconds()) {
		fail("grace period or active deadline")
	}
	sc := s.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		fail("pod security context")
	}
	// The pod's own uid and gid, drawn by its nonce from the range, not
	// the workspace's.
	if sc.RunAsUser == nil || sc.RunAsGroup == nil || *sc.RunAsGroup != *sc.RunAsUser || !defaultPodUIDs.contains(*sc.RunAsUser) ||
		*sc.RunAsUser != defaultPodUIDs.podUID(pod.Annotations[annotationNonce]) || itoa64(*sc.RunAsUser)+":"+itoa64(*sc.RunAsGroup) == spec.User {
		fail("the pod's uid and gid")
	}
	var vols []string
	for _, v := range s.Volumes {
		if v.EmptyDir == nil || v.HostPath != nil || v.Projected != nil || v.EmptyDir.SizeLimit == nil {
			fail("a volume that is not a bounded emptyDir: " + v.Name)
		}
		vols = append(vols, v.Name)
		if v.Name == volTmp && (v.EmptyDir.Medium != corev1.StorageMediumMemory || v.EmptyDir.SizeLimit.Value() != spec.Limits.TmpfsBytes) {
			fail("tmp volume")
		}
	}
	if !slices.Equal(vols, []string{volWorkspace, volGit, volTmp}) {
		fail("volumes " + strings.Join(vols, ","))
	}
	if len(s.Containers) != 2 || s.Containers[0].Name != containerKeeper || s.Containers[1].Name != containerRun {
		fail("containers")
	}
	for _, c := range s.Containers {
		csc := c.SecurityContext
		if csc == nil || !*csc.ReadOnlyRootFilesystem || *csc.AllowPrivilegeEscalation || *csc.Privileged ||
			!slices.Equal(csc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(csc.Capabilities.Add) > 0 {
			fail("container security context of " + c.Name)
		}
		if c.Image != spec.Image || c.ImagePullPolicy != corev1.PullNever {
			fail("image of " + c.Name)
		}
		for _, rn := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
			req, lim := c.Resources.Requests[rn], c.Resources.Limits[rn]
			if lim.IsZero() || req.Cmp(lim) != 0 {
				fail("requests and limits of " + c.Name + " " + string(rn))
			}
		}
	}
	run := s.Containers[1]
	if !run.Stdin || !run.StdinOnce || run.TTY {
		fail("the run container's stdin gate")
	}
	wantCmd := append([]string{"/bin/sh", "-c", runScript, "sluice-run", strconv.FormatInt(spec.Limits.PIDs, 10)}, spec.Argv...)
	if !strings.HasPrefix(runScript, pidLimitScript) {
		fail("the run's script does not set the PID limit first")
	}
	if !slices.Equal(run.Command, wantCmd) || len(run.Args) != 0 {
		fail("the run container's command")
	}
	if m := run.Resources.Limits[corev1.ResourceMemory]; m.Value() != spec.Limits.MemoryBytes {
		fail("the run's memory limit")
	}
	if c := run.Resources.Limits[corev1.ResourceCPU]; c.MilliValue() != int64(spec.Limits.CPUs*1000) {
		fail("the run's cpu limit")
	}
	for _, m := range run.VolumeMounts {
		if m.Name == volGit && (!m.ReadOnly || m.MountPath != workspace.GitMount) {
			fail("the repository's mount in the run container")
		}
	}
	var sawToken, sawPlain, sawProxy bool
	byRef := func(e corev1.EnvVar, from string) bool {
		return e.Value == "" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == from &&
			e.ValueFrom.SecretKeyRef.Key == e.Name && e.ValueFrom.SecretKeyRef.Optional != nil && !*e.ValueFrom.SecretKeyRef.Optional
	}
	for _, e := range run.Env {
		switch e.Name {
		case "TOKEN":
			sawToken = byRef(e, wsSecretName(spec.WorkspaceID))
		case "HTTPS_PROXY":
			sawProxy = byRef(e, pod.Name)
		case "PLAIN":
			sawPlain = e.Value == "visible"
		}
	}
	if !sawToken || !sawPlain || spec.Network != "" && !sawProxy {
		fail("a granted secret must come from the workspace's Secret by reference, the proxy from the run's, the plain variable by value")
	}
	whole, _ := json.Marshal(pod)
	if strings.Contains(string(whole), "s3cret-value") || strings.Contains(string(whole), "run:pw") {
		t.Fatal("the secret's value is in the pod object")
	}
	for k, v := range map[string]string{workspace.LabelWorkspace: spec.WorkspaceID, workspace.LabelRun: strings.ToLower(spec.RunID), labelManagedBy: managedBy} {
		got := pod.Labels[k]
		if k == workspace.LabelRun {
			got = strings.ToLower(got)
		}
		if got != v {
			fail("label " + k + " = " + pod.Labels[k])
		}
	}
	if pod.Labels[workspace.LabelStore] != labelValue(spec.StoreKey) || strings.Contains(pod.Labels[workspace.LabelStore], "/") ||
		pod.Annotations[workspace.LabelStore] != spec.StoreKey {
		fail("the store label must be the sanitized key, the annotation the exact one")
	}
	if pod.Name != "sluice-run-"+strings.ToLower(spec.RunID) {
		fail("name " + pod.Name)
	}
}

func itoa64(n int64) string { return resource.NewQuantity(n, resource.DecimalSI).String() }

// checkWSSecretShape checks a workspace's Secret as stored: its name,
// the store's and the workspace's labels (no run's), Opaque, changeable,
// exactly the values.
func checkWSSecretShape(t *testing.T, sec *corev1.Secret, spec workspace.ContainerSpec, values map[string]string) {
	t.Helper()
	if sec.Name != wsSecretName(spec.WorkspaceID) || sec.Labels[workspace.LabelWorkspace] != labelValue(spec.WorkspaceID) ||
		sec.Labels[workspace.LabelStore] != labelValue(spec.StoreKey) || sec.Labels[labelManagedBy] != managedBy || sec.Labels[workspace.LabelRun] != "" ||
		sec.Annotations[workspace.LabelWorkspace] != spec.WorkspaceID || sec.Annotations[workspace.LabelStore] != spec.StoreKey ||
		sec.Type != corev1.SecretTypeOpaque || sec.Immutable != nil && *sec.Immutable || !sameData(sec.Data, values) {
		t.Fatalf("workspace's secret as stored: %s", oneLine(sec.ObjectMeta))
	}
}

func checkSecretShape(t *testing.T, sec *corev1.Secret, pod *corev1.Pod) {
	t.Helper()
	if string(sec.Data["HTTPS_PROXY"]) != "http://run:pw@10.1.2.3:3128" || len(sec.Data) != 1 || sec.Immutable == nil || !*sec.Immutable ||
		sec.Labels[workspace.LabelRun] != pod.Labels[workspace.LabelRun] || sec.Labels[labelManagedBy] != managedBy {
		t.Fatalf("secret as created: %s", oneLine(sec))
	}
}

func checkPolicyShape(t *testing.T, np *networkingv1.NetworkPolicy, pod *corev1.Pod, egress bool) {
	t.Helper()
	s := np.Spec
	sel, err := metav1.LabelSelectorAsSelector(&s.PodSelector)
	ok := err == nil && !sel.Empty() && sel.Matches(labelsOf(pod)) &&
		slices.Equal(s.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) && len(s.Ingress) == 0
	if egress {
		ok = ok && len(s.Egress) == 1 && len(s.Egress[0].To) == 1 && s.Egress[0].To[0].IPBlock != nil &&
			s.Egress[0].To[0].IPBlock.CIDR == "10.1.2.3/32" && len(s.Egress[0].Ports) == 1 && s.Egress[0].Ports[0].Port.IntValue() == 3128
	} else {
		ok = ok && len(s.Egress) == 0
	}
	if !ok {
		t.Fatalf("network policy as created (egress %v): %s", egress, oneLine(s))
	}
}

func labelsOf(p *corev1.Pod) labels.Set { return labels.Set(p.Labels) }

// TestValidateRun_RefusesWeakenedObjects: each weakening of a run's
// objects is refused; the objects as built pass.
func TestValidateRun_RefusesWeakenedObjects(t *testing.T) {
	r := newRuntime(t, &rest.Config{Host: "https://127.0.0.1:1"}, Options{Namespace: "ns", EgressProxy: "10.1.2.3", RuntimeClassName: "gvisor"})
	build := func() (runObjects, allowed) {
		spec := testSpec(t, fakeImage)
		spec.GitDirPath = "/git"
		spec.Network = egressNetwork
		spec.Env = append(spec.Env, "HTTPS_PROXY=http://run:pw@10.1.2.3:3128")
		spec.SecretEnv = append(spec.SecretEnv, "HTTPS_PROXY")
		o, err := r.objects(spec)
		if err != nil {
			t.Fatal(err)
		}
		return o, allowed{nonce: o.pod.Annotations[annotationNonce], runCmd: runCommand(spec.Limits.PIDs, spec.Argv), image: fakeImage, uids: defaultPodUIDs, pids: spec.Limits.PIDs, runtimeClass: "gvisor",
			proxyCIDR: "10.1.2.3/32", proxyPort: 3128, secretEnv: spec.SecretEnv, wsSecret: wsSecretName(spec.WorkspaceID), maxDeadline: int64((spec.Limits.Timeout + deadlineMargin).Seconds())}
	}
	if o, a := build(); validateRun(o, a) != nil {
		t.Fatalf("the built objects are refused: %v", validateRun(o, a))
	}
	tr, fa := true, false
	zero := int64(0)
	cases := map[string]func(o *runObjects){
		"restartPolicy Always":     func(o *runObjects) { o.pod.Spec.RestartPolicy = corev1.RestartPolicyAlways },
		"token mounted":            func(o *runObjects) { o.pod.Spec.AutomountServiceAccountToken = &tr },
		"token default":            func(o *runObjects) { o.pod.Spec.AutomountServiceAccountToken = nil },
		"service links":            func(o *runObjects) { o.pod.Spec.EnableServiceLinks = &tr },
		"hostNetwork":              func(o *runObjects) { o.pod.Spec.HostNetwork = true },
		"hostPID":                  func(o *runObjects) { o.pod.Spec.HostPID = true },
		"hostIPC":                  func(o *runObjects) { o.pod.Spec.HostIPC = true },
		"shared process namespace": func(o *runObjects) { o.pod.Spec.ShareProcessNamespace = &tr },
		"service account":          func(o *runObjects) { o.pod.Spec.ServiceAccountName = "admin" },
		"no deadline":              func(o *runObjects) { o.pod.Spec.ActiveDeadlineSeconds = nil },
		"grace period":             func(o *runObjects) { g := int64(30); o.pod.Spec.TerminationGracePeriodSeconds = &g },
		"other runtime class":      func(o *runObjects) { rc := "runc"; o.pod.Spec.RuntimeClassName = &rc },
		"no runtime class":         func(o *runObjects) { o.pod.Spec.RuntimeClassName = nil },
		"runAsNonRoot false":       func(o *runObjects) { o.pod.Spec.SecurityContext.RunAsNonRoot = &fa },
		"root user":                func(o *runObjects) { o.pod.Spec.SecurityContext.RunAsUser = &zero },
		"root group":               func(o *runObjects) { o.pod.Spec.SecurityContext.RunAsGroup = &zero },
		// The PID limit counts by uid: the pod's must be its own.
		"the workspace's uid": func(o *runObjects) {
			u, g := int64(65534), int64(65534)
			o.pod.Spec.SecurityContext.RunAsUser, o.pod.Spec.SecurityContext.RunAsGroup = &u, &g
		},
		"uid past the range": func(o *runObjects) {
			u := defaultPodUIDs.first + defaultPodUIDs.count
			o.pod.Spec.SecurityContext.RunAsUser, o.pod.Spec.SecurityContext.RunAsGroup = &u, &u
		},
		"another pod's uid": func(o *runObjects) {
			u := defaultPodUIDs.podUID(o.pod.Annotations[annotationNonce] + "x")
			o.pod.Spec.SecurityContext.RunAsUser, o.pod.Spec.SecurityContext.RunAsGroup = &u, &u
		},
		"group not the uid's": func(o *runObjects) { g := int64(65534); o.pod.Spec.SecurityContext.RunAsGroup = &g },
		"no seccomp":          func(o *runObjects) { o.pod.Spec.SecurityContext.SeccompProfile = nil },
		"unconfined seccomp": func(o *runObjects) {
			o.pod.Spec.SecurityContext.SeccompProfile.Type = corev1.SeccompProfileTypeUnconfined
		},
		"fsGroup": func(o *runObjects) { o.pod.Spec.SecurityContext.FSGroup = &zero },
		"sysctl": func(o *runObjects) {
			o.pod.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "net.ipv4.ip_forward", Value: "1"}}
		},
		"hostPath volume": func(o *runObjects) {
			o.pod.Spec.Volumes[0].EmptyDir = nil
			o.pod.Spec.Volumes[0].HostPath = &corev1.HostPathVolumeSource{Path: "/"}
		},
		"emptyDir and hostPath": func(o *runObjects) { o.pod.Spec.Volumes[0].HostPath = &corev1.HostPathVolumeSource{Path: "/"} },
		"extra volume":          func(o *runObjects) { o.pod.Spec.Volumes = append(o.pod.Spec.Volumes, emptyVol("extra")) },
		"unbounded workspace":   func(o *runObjects) { o.pod.Spec.Volumes[0].EmptyDir.SizeLimit = nil },
		"tmp on disk":           func(o *runObjects) { o.pod.Spec.Volumes[2].EmptyDir.Medium = "" },
		"init container":        func(o *runObjects) { o.pod.Spec.InitContainers = []corev1.Container{o.pod.Spec.Containers[1]} },
		"third container":       func(o *runObjects) { o.pod.Spec.Containers = append(o.pod.Spec.Containers, o.pod.Spec.Containers[1]) },
		"other image":           func(o *runObjects) { o.pod.Spec.Containers[1].Image = "busybox:latest" },
		"writable root":         func(o *runObjects) { o.pod.Spec.Containers[1].SecurityContext.ReadOnlyRootFilesystem = &fa },
		"privilege escalation":  func(o *runObjects) { o.pod.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = &tr },
		"privileged":            func(o *runObjects) { o.pod.Spec.Containers[1].SecurityContext.Privileged = &tr },
		"capability added": func(o *runObjects) {
			o.pod.Spec.Containers[1].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
		},
		"capabilities kept":      func(o *runObjects) { o.pod.Spec.Containers[1].SecurityContext.Capabilities.Drop = nil },
		"container runs as root": func(o *runObjects) { o.pod.Spec.Containers[1].SecurityContext.RunAsUser = &zero },
		"tty":                    func(o *runObjects) { o.pod.Spec.Containers[1].TTY = true },
		"host port": func(o *runObjects) {
			o.pod.Spec.Containers[1].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}}
		},
		"pull Always":     func(o *runObjects) { o.pod.Spec.Containers[1].ImagePullPolicy = corev1.PullAlways },
		"no memory limit": func(o *runObjects) { delete(o.pod.Spec.Containers[1].Resources.Limits, corev1.ResourceMemory) },
		"request below limit": func(o *runObjects) {
			o.pod.Spec.Containers[1].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1m")
		},
		"no ephemeral storage": func(o *runObjects) {
			delete(o.pod.Spec.Containers[0].Resources.Limits, corev1.ResourceEphemeralStorage)
		},
		"repository writable":         func(o *runObjects) { o.pod.Spec.Containers[1].VolumeMounts[1].ReadOnly = false },
		"volume elsewhere":            func(o *runObjects) { o.pod.Spec.Containers[1].VolumeMounts[0].MountPath = "/etc" },
		"subPath":                     func(o *runObjects) { o.pod.Spec.Containers[1].VolumeMounts[0].SubPath = "x" },
		"no start gate":               func(o *runObjects) { o.pod.Spec.Containers[1].Stdin = false },
		"secret by value":             func(o *runObjects) { setEnv(o, "TOKEN", corev1.EnvVar{Name: "TOKEN", Value: "s3cret-value"}) },
		"configmap env":               func(o *runObjects) { o.pod.Spec.Containers[1].EnvFrom = []corev1.EnvFromSource{{}} },
		"policy without egress type":  func(o *runObjects) { o.policy.Spec.PolicyTypes = o.policy.Spec.PolicyTypes[:1] },
		"policy allows ingress":       func(o *runObjects) { o.policy.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{}} },
		"policy allows all egress":    func(o *runObjects) { o.policy.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}} },
		"policy egress to a /8":       func(o *runObjects) { o.policy.Spec.Egress[0].To[0].IPBlock.CIDR = "10.0.0.0/8" },
		"policy selects another pod":  func(o *runObjects) { o.policy.Spec.PodSelector.MatchLabels[workspace.LabelRun] = "other" },
		"policy selects every pod":    func(o *runObjects) { o.policy.Spec.PodSelector = metav1.LabelSelector{} },
		"policy egress on every port": func(o *runObjects) { o.policy.Spec.Egress[0].Ports = nil },
		"pod of another run":          func(o *runObjects) { o.pod.Annotations[annotationNonce] = "other" },
		"policy of another run":       func(o *runObjects) { o.policy.Annotations[annotationNonce] = "other" },
		"secret of another run":       func(o *runObjects) { o.secret.Annotations[annotationNonce] = "other" },
		"secret env from another Secret": func(o *runObjects) {
			setEnv(o, "TOKEN", corev1.EnvVar{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "another-runs-secret"}, Key: "TOKEN"}}})
		},
		"secret env under another key": func(o *runObjects) {
			setEnv(o, "TOKEN", corev1.EnvVar{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: envFrom(o, "TOKEN")}, Key: "OTHER", Optional: new(false)}}})
		},
		"granted secret from the run's Secret": func(o *runObjects) {
			setEnv(o, "TOKEN", corev1.EnvVar{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: o.pod.Name}, Key: "TOKEN", Optional: new(false)}}})
		},
		"proxy from the workspace's Secret": func(o *runObjects) {
			setEnv(o, "HTTPS_PROXY", corev1.EnvVar{Name: "HTTPS_PROXY", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: envFrom(o, "TOKEN")}, Key: "HTTPS_PROXY", Optional: new(false)}}})
		},
		"granted secret optional": func(o *runObjects) {
			setEnv(o, "TOKEN", corev1.EnvVar{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: envFrom(o, "TOKEN")}, Key: "TOKEN", Optional: new(true)}}})
		},
		"granted secret and a field": func(o *runObjects) {
			setEnv(o, "TOKEN", corev1.EnvVar{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: envFrom(o, "TOKEN")}, Key: "TOKEN", Optional: new(false)}}})
		},
		"toleration of every taint": func(o *runObjects) {
			o.pod.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		},
		"toleration of not-ready forever": func(o *runObjects) {
			o.pod.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
		},
		"nodeSelector": func(o *runObjects) {
			o.pod.Spec.NodeSelector = map[string]string{"node-role.kubernetes.io/control-plane": ""}
		},
		"affinity":           func(o *runObjects) { o.pod.Spec.Affinity = &corev1.Affinity{} },
		"pod resource claim": func(o *runObjects) { o.pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}} },
		"container claim":    func(o *runObjects) { o.pod.Spec.Containers[1].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}} },
		"keeper command":     func(o *runObjects) { o.pod.Spec.Containers[0].Command = []string{"/bin/sh", "-c", "anything"} },
		"keeper args":        func(o *runObjects) { o.pod.Spec.Containers[0].Args = []string{"x"} },
		"run command": func(o *runObjects) {
			o.pod.Spec.Containers[1].Command[len(o.pod.Spec.Containers[1].Command)-1] = "other"
		},
		"run command unguarded": func(o *runObjects) { o.pod.Spec.Containers[1].Command = []string{"echo", "hello"} },
		"run PID limit raised": func(o *runObjects) {
			o.pod.Spec.Containers[1].Command[4] = "4096"
		},
		"run without its PID limit": func(o *runObjects) {
			c := o.pod.Spec.Containers[1].Command
			o.pod.Spec.Containers[1].Command = append([]string{c[0], c[1], strings.TrimPrefix(c[2], pidLimitScript), c[3]}, c[5:]...)
		},
		"run args":           func(o *runObjects) { o.pod.Spec.Containers[1].Args = []string{"x"} },
		"run working dir":    func(o *runObjects) { o.pod.Spec.Containers[1].WorkingDir = "/" },
		"keeper working dir": func(o *runObjects) { o.pod.Spec.Containers[0].WorkingDir = "/tmp" },
		"gVisor mount hint": func(o *runObjects) {
			o.pod.Annotations["dev.gvisor.spec.mount.workspace.share"] = "shared"
		},
		"gVisor flag": func(o *runObjects) { o.pod.Annotations["dev.gvisor.flag.host-uds"] = "open" },
	}
	for name, mutate := range cases {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			o, a := build()
			mutate(&o)
			err := validateRun(o, a)
			wantCode(t, err, errcode.InvalidArgument, "refused")
		})
	}
	// A command built without the limit, or with another, is refused even
	// when it is the command the run allows.
	for name, cmd := range map[string]func(a allowed) []string{
		"no limit": func(a allowed) []string {
			return []string{"/bin/sh", "-c", `read -r _ || exit 125; "$@"; exit $?`, "sluice-run", "echo"}
		},
		"another limit": func(a allowed) []string { return runCommand(a.pids*2, []string{"echo"}) },
		"no range":      nil,
	} {
		o, a := build()
		if cmd == nil {
			a.uids = uidRange{}
		} else {
			a.runCmd = cmd(a)
			o.pod.Spec.Containers[1].Command = a.runCmd
		}
		err := validateRun(o, a)
		wantCode(t, err, errcode.InvalidArgument, "refused")
		t.Logf("%s: %v", name, err)
	}
	// The API server's default tolerations pass, and so do a nodeSelector
	// and tolerations the RuntimeClass's scheduling adds.
	o, a := build()
	secs := int64(300)
	o.pod.Spec.Tolerations = []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
		{Key: "sandbox", Operator: corev1.TolerationOpEqual, Value: "gvisor", Effect: corev1.TaintEffectNoSchedule},
	}
	o.pod.Spec.NodeSelector = map[string]string{"sandbox": "gvisor"}
	a.nodeSelector = map[string]string{"sandbox": "gvisor"}
	a.tolerations = []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpEqual, Value: "gvisor", Effect: corev1.TaintEffectNoSchedule}}
	if err := validateRun(o, a); err != nil {
		t.Fatalf("the RuntimeClass's scheduling is refused: %v", err)
	}
	a.nodeSelector, a.tolerations = nil, nil
	wantCode(t, validateRun(o, a), errcode.InvalidArgument, "RuntimeClass")

	// A run without a grant may not have the proxy rule at all.
	o, a = build()
	a.proxyCIDR, a.proxyPort = "", 0
	wantCode(t, validateRun(o, a), errcode.InvalidArgument, "egress")
}

func emptyVol(name string) corev1.Volume {
	q := resource.MustParse("1Mi")
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &q}}}
}

// envFrom is the Secret the run container's variable name comes from.
func envFrom(o *runObjects, name string) string {
	for _, e := range o.pod.Spec.Containers[1].Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return e.ValueFrom.SecretKeyRef.Name
		}
	}
	return ""
}

func setEnv(o *runObjects, name string, e corev1.EnvVar) {
	env := o.pod.Spec.Containers[1].Env
	for i := range env {
		if env[i].Name == name {
			env[i] = e
		}
	}
}

// TestRun_QuotaExceeded: a ResourceQuota the run's pod exceeds refuses it
// with an error naming the quota, and nothing is left.
func TestRun_QuotaExceeded(t *testing.T) {
	cfg := kubetest.ControlPlane(t)
	ns := kubetest.Namespace(t, cfg)
	cs := adminClient(t, cfg)
	ctx := context.Background()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "small-runs"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceLimitsMemory: resource.MustParse("128Mi")}}}
	if _, err := cs.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller manager computes the quota's usage; admission refuses
	// every pod until it has.
	waitFor(t, "the quota's status", func() bool {
		got, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, "small-runs", metav1.GetOptions{})
		return err == nil && got.Status.Hard != nil && got.Status.Used != nil
	})
	r := newRuntime(t, cfg, Options{Namespace: ns})
	_, err := r.Run(ctx, testSpec(t, fakeImage), &limitBuffer{max: 1}, &limitBuffer{max: 1})
	wantCode(t, err, errcode.Unavailable, `ResourceQuota "small-runs"`)
	revokeGrants(t, cfg, ns)
	assertNothingLabelled(t, cs, ns)
}

// restrictedConfig is a rest.Config for a new service account bound to
// the rules of RoleYAML's Role, minus drop (a "verb resource" pair).
func restrictedConfig(t *testing.T, admin *rest.Config, ns string, drop ...string) *rest.Config {
	t.Helper()
	cs := adminClient(t, admin)
	ctx := context.Background()
	role, _ := roleYAMLDocs(t)
	var rules []rbacv1.PolicyRule
	for _, rule := range role.Rules {
		for _, res := range rule.Resources {
			var verbs []string
			for _, v := range rule.Verbs {
				if !slices.Contains(drop, v+" "+res) {
					verbs = append(verbs, v)
				}
			}
			if len(verbs) > 0 {
				rules = append(rules, rbacv1.PolicyRule{APIGroups: rule.APIGroups, Resources: []string{res}, Verbs: verbs})
			}
		}
	}
	role.Rules = rules
	role.Namespace = ns
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sluice"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "sluice"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &rest.Config{Host: admin.Host, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData, CAFile: admin.CAFile}}
}

// roleYAMLDocs parses RoleYAML's two documents.
func roleYAMLDocs(t testing.TB) (*rbacv1.Role, *rbacv1.ClusterRole) {
	t.Helper()
	docs := strings.Split(RoleYAML, "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("RoleYAML has %d documents, want a Role and a ClusterRole", len(docs))
	}
	var role rbacv1.Role
	var cr rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &role); err != nil || role.Kind != "Role" {
		t.Fatalf("RoleYAML's first document is not a Role: %v", err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &cr); err != nil || cr.Kind != "ClusterRole" {
		t.Fatalf("RoleYAML's second document is not a ClusterRole: %v", err)
	}
	return &role, &cr
}

// TestRoleYAML_AgreesWithDoctor: the permissions Doctor checks are exactly
// those RoleYAML grants.
func TestRoleYAML_AgreesWithDoctor(t *testing.T) {
	role, cr := roleYAMLDocs(t)
	grant := map[string]bool{}
	expand := func(rules []rbacv1.PolicyRule, cluster bool) {
		for _, rule := range rules {
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, v := range rule.Verbs {
						resource, sub, _ := strings.Cut(res, "/")
						grant[permission{Group: g, Resource: resource, Subresource: sub, Verb: v, Cluster: cluster}.String()+" "+strconvB(cluster)] = true
					}
				}
			}
		}
	}
	expand(role.Rules, false)
	expand(cr.Rules, true)
	need := map[string]bool{}
	for _, p := range permissions() {
		need[p.String()+" "+strconvB(p.Cluster)] = true
	}
	for k := range need {
		if !grant[k] {
			t.Errorf("Doctor checks %q, which RoleYAML does not grant", k)
		}
	}
	for k := range grant {
		if !need[k] {
			t.Errorf("RoleYAML grants %q, which Doctor does not check (and the runtime should not need)", k)
		}
	}
}

func strconvB(b bool) string {
	if b {
		return "cluster"
	}
	return "namespaced"
}

// TestRun_Forbidden: an identity whose Role lacks "create pods" gets a
// Forbidden error naming the verb and resource and pointing at the Role,
// and Doctor's permission findings name exactly what is missing; with the
// whole Role every finding is ok.
func TestRun_Forbidden(t *testing.T) {
	admin := kubetest.ControlPlane(t)
	ns := kubetest.Namespace(t, admin)
	cfg := restrictedConfig(t, admin, ns, "create pods")
	r := newRuntime(t, cfg, Options{Namespace: ns})
	ctx := context.Background()
	_, err := r.Run(ctx, testSpec(t, fakeImage), &limitBuffer{max: 1}, &limitBuffer{max: 1})
	wantCode(t, err, errcode.Forbidden, "create pods", "RoleYAML")
	revokeGrants(t, admin, ns)
	assertNothingLabelled(t, adminClient(t, admin), ns)
	var failed []string
	for _, f := range r.checkPermissions(ctx) {
		if f.Status != "ok" {
			failed = append(failed, f.Name+": "+f.Detail)
		}
	}
	if !slices.Equal(failed, []string{"rbac pods: not allowed: create"}) {
		t.Fatalf("Doctor's permission findings: %q", failed)
	}

	ns2 := kubetest.Namespace(t, admin)
	full := newRuntime(t, restrictedConfig(t, admin, ns2), Options{Namespace: ns2})
	for _, f := range full.checkPermissions(ctx) {
		if f.Status != "ok" {
			t.Errorf("with RoleYAML's Role: %+v", f)
		}
	}
	if _, err := full.Containers(ctx, ""); err != nil {
		t.Fatalf("with RoleYAML's Role, Containers: %v", err)
	}
}

// TestRun_NamespaceMissingAndServerUnreachable: typed errors before
// anything is made.
func TestRun_NamespaceMissingAndServerUnreachable(t *testing.T) {
	cfg := kubetest.ControlPlane(t)
	r := newRuntime(t, cfg, Options{Namespace: "no-such-namespace-" + randomID(t)})
	_, err := r.Run(context.Background(), testSpec(t, fakeImage), &limitBuffer{max: 1}, &limitBuffer{max: 1})
	wantCode(t, err, errcode.Unsupported, "does not exist")

	down := rest.CopyConfig(cfg)
	down.Host = "https://127.0.0.1:1"
	if _, err := NewForConfig(down, Options{Namespace: "x"}); err != nil {
		t.Fatal(err)
	}
	rd := newRuntime(t, down, Options{Namespace: "x"})
	_, err = rd.Containers(context.Background(), "")
	wantCode(t, err, errcode.Unavailable, "cannot be reached")

	for _, o := range []Options{{}, {Namespace: "Bad_NS"}, {Namespace: "ok", ImagePullPolicy: "Always"}, {Namespace: "ok", EgressProxy: "proxy.example"}, {Namespace: "ok", EgressProxy: "10.1.2.3:3128"}} {
		_, err := NewForConfig(cfg, o)
		wantCode(t, err, errcode.InvalidArgument)
	}
	_, err = New(context.Background(), Options{Namespace: "x", Kubeconfig: writeKubeconfig(t, "https://127.0.0.1:1")})
	wantCode(t, err, errcode.Unavailable)
}

// TestCheckImageAndRuntime: only digest-pinned references; a RuntimeClass
// the cluster lacks is named, never replaced.
func TestCheckImageAndRuntime(t *testing.T) {
	cfg := kubetest.ControlPlane(t)
	ctx := context.Background()
	r := newRuntime(t, cfg, Options{Namespace: "x", RuntimeClassName: "sandboxed"})
	if err := r.CheckImage(ctx, fakeImage); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"busybox", "busybox:1.36", "sha256:" + strings.Repeat("a", 64), "busybox@sha256:abc", "Busybox@sha256:" + strings.Repeat("a", 64)} {
		wantCode(t, r.CheckImage(ctx, bad), errcode.InvalidArgument, "digest")
	}
	_, err := r.CheckRuntime(ctx, "")
	wantCode(t, err, errcode.Unsupported, `RuntimeClass "sandboxed"`)
	_, err = r.CheckRuntime(ctx, "other")
	wantCode(t, err, errcode.InvalidArgument)
	cs := adminClient(t, cfg)
	if _, err := cs.NodeV1().RuntimeClasses().Create(ctx, runtimeClass("sandboxed", "runsc"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.NodeV1().RuntimeClasses().Delete(context.Background(), "sandboxed", metav1.DeleteOptions{})
	})
	info, err := r.CheckRuntime(ctx, "")
	if err != nil || !strings.HasPrefix(info.Name, "sandboxed") {
		t.Fatalf("CheckRuntime: %+v %v", info, err)
	}
}

func runtimeClass(name, handler string) *nodev1.RuntimeClass {
	return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler}
}

// writeKubeconfig writes a kubeconfig naming server (no credentials).
func writeKubeconfig(t testing.TB, server string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	doc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + server + "\n    insecure-skip-tls-verify: true\n" +
		"contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user: {}\ncurrent-context: c\n"
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNew_KubeconfigContexts: New loads the named kubeconfig and context;
// the current context is used when none is named, and a context the file
// lacks is an invalid option.
func TestNew_KubeconfigContexts(t *testing.T) {
	cfg := kubetest.ControlPlane(t)
	ns := kubetest.Namespace(t, cfg)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["real"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthority: cfg.CAFile, CertificateAuthorityData: cfg.CAData}
	kc.Clusters["down"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificate: cfg.CertFile, ClientKey: cfg.KeyFile,
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["good"] = &clientcmdapi.Context{Cluster: "real", AuthInfo: "admin"}
	kc.Contexts["bad"] = &clientcmdapi.Context{Cluster: "down", AuthInfo: "admin"}
	kc.CurrentContext = "bad"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := New(ctx, Options{Kubeconfig: path, Context: "good", Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if r.Name() != "kubernetes" {
		t.Fatalf("Name %q", r.Name())
	}
	if _, err := r.Containers(ctx, ""); err != nil {
		t.Fatal(err)
	}
	_, err = New(ctx, Options{Kubeconfig: path, Namespace: ns})
	wantCode(t, err, errcode.Unavailable)
	_, err = New(ctx, Options{Kubeconfig: path, Context: "missing", Namespace: ns})
	wantCode(t, err, errcode.InvalidArgument, "kubeconfig")
	t.Setenv("KUBECONFIG", path)
	_, err = New(ctx, Options{Context: "good", Namespace: ns})
	if err != nil {
		t.Fatalf("KUBECONFIG from the environment: %v", err)
	}
}

// TestRun_AdmittedUnderRestrictedPodSecurity: the run's pod meets the
// "restricted" Pod Security Standard, so a namespace that enforces it
// admits it.
func TestRun_AdmittedUnderRestrictedPodSecurity(t *testing.T) {
	cfg := kubetest.ControlPlane(t)
	ns := kubetest.Namespace(t, cfg)
	cs := adminClient(t, cfg)
	ctx := context.Background()
	n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	n.Labels["pod-security.kubernetes.io/enforce-version"] = "latest"
	if _, err := cs.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The same namespace refuses a pod that is not restricted.
	bad := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: fakeImage}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, bad, metav1.CreateOptions{}); err == nil {
		t.Fatal("the namespace does not enforce the restricted standard")
	}
	r := newRuntime(t, cfg, Options{Namespace: ns})
	spec := testSpec(t, fakeImage)
	done, cancel := runAsync(r, spec)
	awaitPod(t, cs, ns, podName(spec.RunID), done)
	cancel()
	wantCode(t, (<-done).err, errcode.Timeout, "cancelled")
	revokeGrants(t, cfg, ns)
	assertNothingLabelled(t, cs, ns)
}

// TestDoctor_NamespaceMissingAndForbidden: Doctor names a missing
// namespace (and stops there), and a restricted identity's missing verbs.
func TestDoctor_NamespaceMissingAndForbidden(t *testing.T) {
	admin := kubetest.ControlPlane(t)
	ctx := context.Background()
	fs := newRuntime(t, admin, Options{Namespace: "no-such-ns-" + randomID(t)}).Doctor(ctx, fakeImage)
	if len(fs) != 2 || fs[0].Name != "cluster" || fs[0].Status != "ok" || fs[1].Name != "namespace" || fs[1].Status != "fail" || !strings.Contains(fs[1].Detail, "does not exist") {
		t.Fatalf("missing namespace: %+v", fs)
	}
	ns := kubetest.Namespace(t, admin)
	r := newRuntime(t, restrictedConfig(t, admin, ns, "watch pods", "delete secrets"), Options{Namespace: ns, RuntimeClassName: "absent"})
	// checkPermissions is Doctor's permission part (the whole Doctor would
	// also wait for its probe pod, which no node here runs).
	got := map[string]Finding{}
	for _, f := range r.checkPermissions(ctx) {
		got[f.Name] = f
	}
	if got["rbac pods"].Detail != "not allowed: watch" || got["rbac secrets"].Detail != "not allowed: delete" ||
		got["rbac runtimeclasses.node.k8s.io"].Detail != "not allowed: get" || got["rbac pods/exec"].Status != "ok" {
		t.Fatalf("permission findings: %+v", got)
	}
}
