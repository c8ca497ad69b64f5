package kube

// Design, and why.
//
// One pod per run, as the Docker runtime has one container per run: Run
// creates the run's objects, starts the program, waits for it and deletes
// everything, verifying it is gone, before it returns. A pod kept per
// workspace would let a background process left by one run (a daemon, a
// sleeping writer) tamper with the next run's files or output, which the
// Docker runtime never allows.
//
// The pod has two containers of the same image. "keeper" only waits; it
// holds the emptyDir volumes so that the tree can be copied in before the
// program starts and copied out after it ended (exec into keeper, tar both
// ways). "run" is the program: sh stays PID 1 in front of it (so a kill -9
// -1 exec'd into the container reaches every process the program started,
// which a kill aimed at PID 1 itself would not), and the program only
// starts once sh has read a line from stdin. Sluice writes that line after
// it has attached, so no byte of output is written before someone reads
// it, and stdout and stderr stay apart (no TTY).
//
// The workspace does not live on the node: a node has no access to the
// host's tree, and a hostPath would hand the workspace a path on the node.
// The tree is packed on the host (workspace.PackTree), unpacked into an
// emptyDir, and after the run the tree is packed in the pod and replaced on
// the host from that untrusted archive (workspace.ReplaceTree), as the file
// tools would have. The repository is copied into its own emptyDir and
// mounted read-only in the run container, as the Docker runtime binds it.
//
// Nothing runs with more than it needs, and validatePod checks it again
// just before the pod is created (see validate.go): no service account
// token, no service links, no host namespaces, no volumes but the three
// emptyDirs, the pod's own non-root uid:gid, seccomp RuntimeDefault, a read-only root,
// no privilege escalation, every capability dropped, requests equal to
// limits for cpu, memory and ephemeral storage, and a PID limit of its
// own: Kubernetes has no field for one, so each pod runs under a uid of its
// own (drawn from Options.PodUIDs) and Sluice's first step in the run
// container sets RLIMIT_NPROC to the run's PID limit, checks that it took
// and refuses to start the program otherwise (see pidlimit.go); the
// node's podPidsLimit, where set, bounds the pod as well.
// activeDeadlineSeconds is the run's timeout plus a margin: a backstop
// should Sluice die mid-run; Sluice's own timer kills the program at its
// timeout, counted from when the start gate opened (the program cannot
// start before); a run whose time ran out before that never starts its
// program.
//
// Each run draws a nonce, put on all its objects: an object of the run's
// name without it (another run's leftover under a reused run ID) refuses
// the run and is never deleted; one with it (a retried create whose first
// attempt was stored) is the run's and is checked as stored.
//
// Network: every run has a NetworkPolicy selecting its pod that denies all
// ingress and egress; a run with an egress grant may reach the configured
// egress proxy (an IP and port) and nothing else. A NetworkPolicy is only
// enforced by a network plugin that enforces it: the API server accepts it
// either way, and neither Sluice nor Doctor can prove enforcement from the
// API. Secrets granted to a workspace live in a Secret of the workspace
// while they are granted (see secrets.go), the proxy variables in a Secret
// of the run; the pod takes both by secretKeyRef, so the pod spec
// (readable by anyone who may read pods) holds none of their values.
//
// What the node keeps: the kubelet writes container output to the node's
// log files until the pod is deleted, unredacted; the Docker runtime keeps
// no log at all. Whoever administers the node can read a run's output.
//
// Removal is verified by the pod's absence from the API, which only means
// something if the kubelet removed it: Remove deletes with a grace period
// (1 s; keeper exits at once on SIGTERM), so the object goes only once the
// node has stopped the containers. A grace period of 0 would remove the
// object at once, before the node stopped anything.
//
// Cost: on the single-node test cluster (2 loaded cores) a run of `true`
// took 3.5–5.6 s (median 4.4 s; the Docker runtime 0.39–0.69 s in the same
// run), about 1 s to start the pod, 0.1–0.3 s for each copy, and 2.9–3.2 s
// for the node to confirm the pod's removal.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
)

// Options configure the runtime.
type Options struct {
	// Kubeconfig is a kubeconfig file's path; "" uses client-go's default
	// loading rules (KUBECONFIG, then ~/.kube/config).
	Kubeconfig string
	// Context is the kubeconfig context; "" is its current context.
	Context string
	// Namespace is where every run's objects are created. Required.
	Namespace string
	// RuntimeClassName is the pods' RuntimeClass; "" is the cluster's
	// default (e.g. "gvisor").
	RuntimeClassName string
	// ImagePullPolicy is "IfNotPresent" (the default) or "Never".
	ImagePullPolicy string
	// EgressProxy is the IP at which pods reach Sluice's egress proxy (an
	// address of the machine Sluice runs on). Each process serving
	// workspaces listens on a port of its own there, which a granted run's
	// proxy variables name; its NetworkPolicy allows that IP and port
	// alone. Unset, egress grants are refused (EgressNetwork is
	// Unsupported): a run is never given a network it was not meant to
	// have.
	EgressProxy string
	// WorkspaceBytes bounds the workspace and repository volumes (each)
	// and the run container's ephemeral storage; 0 is 8 GiB.
	WorkspaceBytes int64
	// PodUIDs is the range of uids pods run under, "FIRST-LAST": each pod
	// draws one, which its PID limit counts by (see pidlimit.go), so
	// nothing else on the nodes may use them. "" is 1879048192-1895825407
	// (0x70000000 and the 2^24 uids after it).
	PodUIDs string
	Logger  *slog.Logger
}

// Runtime runs workspace runs as pods in one namespace. It implements
// workspace.Runtime.
type Runtime struct {
	cs    kubernetes.Interface
	cfg   *rest.Config
	opt   Options
	log   *slog.Logger
	proxy *net.TCPAddr
	// uids are the pods' uids (Options.PodUIDs).
	uids uidRange
}

var _ workspace.Runtime = (*Runtime)(nil)

// defaultWorkspaceBytes is Options.WorkspaceBytes' default.
const defaultWorkspaceBytes = 8 << 30

// New loads the kubeconfig, connects and checks that the API server
// answers. An API server that cannot be reached is Unavailable; options
// that cannot be used are InvalidArgument.
func New(ctx context.Context, o Options) (*Runtime, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: "the kubeconfig cannot be used: " + err.Error(), Err: err}
	}
	r, err := NewForConfig(cfg, o)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := r.serverVersion(pctx); err != nil {
		return nil, err
	}
	return r, nil
}

// NewForConfig makes a runtime from a client configuration; it does not
// contact the API server.
func NewForConfig(cfg *rest.Config, o Options) (*Runtime, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if cfg == nil {
		return nil, errcode.New(errcode.InvalidArgument, "the Kubernetes client configuration is missing")
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = "sluice"
	}
	// A run makes about twenty requests; client-go's default of 5 a second
	// would make concurrent runs wait on the client, not the server (which
	// has its own fairness and answers 429, retried, when it must).
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = 50, 100
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: "the Kubernetes client configuration cannot be used: " + err.Error(), Err: err}
	}
	if o.ImagePullPolicy == "" {
		o.ImagePullPolicy = string(corev1.PullIfNotPresent)
	}
	if o.WorkspaceBytes == 0 {
		o.WorkspaceBytes = defaultWorkspaceBytes
	}
	r := &Runtime{cs: cs, cfg: cfg, opt: o, log: o.Logger}
	r.uids, _ = parseUIDRange(o.PodUIDs) // checked above
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if o.EgressProxy != "" {
		r.proxy = &net.TCPAddr{IP: net.ParseIP(o.EgressProxy)}
	}
	return r, nil
}

// check refuses options no runtime could work with, naming the option.
func (o Options) check() error {
	if o.Namespace == "" {
		return errcode.New(errcode.InvalidArgument, "the Kubernetes namespace for workspaces must be set")
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return errcode.New(errcode.InvalidArgument, "the Kubernetes namespace %q is not a valid namespace name: %s", o.Namespace, strings.Join(errs, "; "))
	}
	if o.RuntimeClassName != "" {
		if errs := validation.IsDNS1123Subdomain(o.RuntimeClassName); len(errs) > 0 {
			return errcode.New(errcode.InvalidArgument, "the RuntimeClass name %q is not valid: %s", o.RuntimeClassName, strings.Join(errs, "; "))
		}
	}
	switch corev1.PullPolicy(o.ImagePullPolicy) {
	case "", corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return errcode.New(errcode.InvalidArgument, "the image pull policy must be IfNotPresent or Never, not %q (Always would trust a registry to serve the same bytes each time; the image is pinned by digest anyway)", o.ImagePullPolicy)
	}
	if o.EgressProxy != "" {
		if net.ParseIP(o.EgressProxy) == nil {
			return errcode.New(errcode.InvalidArgument, "the egress proxy must be given as an IP (a NetworkPolicy names addresses, not host names; the port is each process's own), not %q", o.EgressProxy)
		}
	}
	if o.WorkspaceBytes < 0 {
		return errcode.New(errcode.InvalidArgument, "the workspace volume size must be positive")
	}
	if _, err := parseUIDRange(o.PodUIDs); err != nil {
		return err
	}
	return nil
}

// Name implements workspace.Runtime.
func (r *Runtime) Name() string { return "kubernetes" }

// Namespace is the namespace runs are created in.
func (r *Runtime) Namespace() string { return r.opt.Namespace }

// Clientset is the API client (for diagnostics and tests).
func (r *Runtime) Clientset() kubernetes.Interface { return r.cs }

func (r *Runtime) serverVersion(ctx context.Context) (string, error) {
	v, err := r.cs.Discovery().ServerVersion()
	if err == nil {
		return v.GitVersion, nil
	}
	if ctx.Err() != nil {
		err = errors.Join(err, ctx.Err())
	}
	return "", apiError(err, "reach the Kubernetes API server", "", "")
}

// digestRefRe is a digest-pinned image reference: a name, then
// @sha256: and 64 hex digits (a tag before the digest is allowed and
// ignored by the node).
var digestRefRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9]+(?:[._/:-][a-zA-Z0-9]+|__|[._-]{2,})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?@sha256:[0-9a-f]{64}$`)
})

// CheckImage implements workspace.Runtime. The image must be pinned by
// digest (name@sha256:…): a tag can name other bytes tomorrow. Whether a
// node has the image cannot be asked through the API; a run whose image is
// missing fails with an error naming it (see waitStarted).
func (r *Runtime) CheckImage(ctx context.Context, image string) error {
	if !digestRefRe().MatchString(image) {
		return &errcode.Error{Code: errcode.InvalidArgument, Data: map[string]any{"image": image},
			Msg: fmt.Sprintf("the workspace image %q must be pinned by digest (name@sha256:<64 hex digits>); a tag can name other bytes tomorrow", image)}
	}
	return nil
}

// CheckRuntime implements workspace.Runtime: name is "" or the configured
// RuntimeClass (a run never picks another; see checkRuntimeName); "" is
// the configured one, or the cluster's default when none is. A class the
// cluster lacks is an error naming it, never a fall back to the default.
func (r *Runtime) CheckRuntime(ctx context.Context, name string) (workspace.RuntimeInfo, error) {
	if err := r.checkRuntimeName(name); err != nil {
		return workspace.RuntimeInfo{}, err
	}
	name = r.opt.RuntimeClassName
	if name == "" {
		return workspace.RuntimeInfo{Name: "default"}, nil
	}
	rc, err := withRetry(ctx, func(ctx context.Context) (string, error) {
		rc, err := r.cs.NodeV1().RuntimeClasses().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return rc.Handler, nil
	})
	if apierrors.IsNotFound(err) {
		return workspace.RuntimeInfo{}, &errcode.Error{Code: errcode.Unsupported, Data: map[string]any{"runtimeClass": name},
			Msg: fmt.Sprintf("the cluster has no RuntimeClass %q; create it (its handler must be configured on the nodes) or change the workspace runtime; Sluice never runs a workspace under another runtime instead", name), Err: err}
	}
	if err != nil {
		return workspace.RuntimeInfo{}, apiError(err, "get", "runtimeclasses", name)
	}
	return workspace.RuntimeInfo{Name: name + " (" + rc + ")"}, nil
}

// checkRuntimeName refuses a runtime name that is not the configured
// RuntimeClass: the class a run's pod uses is the configuration's alone,
// so that whoever may write a run's spec cannot move it to a weaker
// runtime (runc instead of gVisor).
func (r *Runtime) checkRuntimeName(name string) error {
	if name == "" || name == r.opt.RuntimeClassName {
		return nil
	}
	return &errcode.Error{Code: errcode.InvalidArgument, Data: map[string]any{"runtime": name},
		Msg: fmt.Sprintf("the workspace runtime %q is not the RuntimeClass the Kubernetes runtime is configured with (%q); a run uses the configured one only", name, r.opt.RuntimeClassName)}
}

// EgressNetwork implements workspace.Runtime. Pods reach the egress proxy
// at the configured address; without one, egress cannot be granted.
func (r *Runtime) EgressNetwork(ctx context.Context) (workspace.EgressNetwork, error) {
	if r.proxy == nil {
		return workspace.EgressNetwork{}, errcode.New(errcode.Unsupported,
			"the Kubernetes runtime has no egress proxy configured, so a run cannot reach granted hosts; configure the IP at which pods reach this machine, or revoke the egress grant")
	}
	return workspace.EgressNetwork{Name: egressNetwork, Gateway: r.proxy.IP.String()}, nil
}

// egressNetwork is the Network of a granted run's spec.
const egressNetwork = "sluice-egress-proxy"

// Containers implements workspace.Runtime: one entry per run that has any
// object left (its pod, or a Secret or NetworkPolicy a crash left behind
// before the pod was made), and one per workspace Secret (Kept), so that
// removing each leaves nothing labelled.
func (r *Runtime) Containers(ctx context.Context, storeKey string) ([]workspace.ContainerInfo, error) {
	sel := workspace.LabelWorkspace
	if storeKey != "" {
		sel = workspace.LabelStore + "=" + labelValue(storeKey)
	}
	sel += "," + labelManagedBy + "=" + managedBy
	lo := metav1.ListOptions{LabelSelector: sel}
	byName := map[string]workspace.ContainerInfo{}
	add := func(m metav1.ObjectMeta, state string) {
		if storeKey != "" && m.Annotations[workspace.LabelStore] != "" && m.Annotations[workspace.LabelStore] != storeKey {
			return
		}
		if _, ok := byName[m.Name]; ok && state == "" {
			return
		}
		byName[m.Name] = workspace.ContainerInfo{ID: m.Name, WorkspaceID: m.Annotations[workspace.LabelWorkspace], RunID: m.Annotations[workspace.LabelRun], State: state}
	}
	pods, err := withRetry(ctx, func(ctx context.Context) (*corev1.PodList, error) {
		return r.cs.CoreV1().Pods(r.opt.Namespace).List(ctx, lo)
	})
	if err != nil {
		return nil, apiError(err, "list", "pods", "")
	}
	for _, p := range pods.Items {
		add(p.ObjectMeta, strings.ToLower(string(p.Status.Phase)))
	}
	secrets, err := r.listMeta(ctx, "secrets", func(ctx context.Context) (runtime.Object, error) {
		return r.cs.CoreV1().Secrets(r.opt.Namespace).List(ctx, lo)
	})
	if err != nil {
		return nil, err
	}
	pols, err := r.listMeta(ctx, "networkpolicies", func(ctx context.Context) (runtime.Object, error) {
		return r.cs.NetworkingV1().NetworkPolicies(r.opt.Namespace).List(ctx, lo)
	})
	if err != nil {
		return nil, err
	}
	for _, m := range slices.Concat(secrets, pols) {
		if _, ok := byName[m.Name]; !ok {
			add(m, "orphaned")
		}
	}
	// A workspace's Secret is no run's: it lives while its secrets are
	// granted (see secrets.go). It is listed, so that Destroy removes it
	// with the rest, as kept, so that Stop and Reconcile leave it to the
	// grants.
	for _, m := range secrets {
		if c, ok := byName[m.Name]; ok && isWSSecretName(m.Name) && c.RunID == "" {
			c.Kept, c.State = true, "kept"
			byName[m.Name] = c
		}
	}
	out := make([]workspace.ContainerInfo, 0, len(byName))
	for _, c := range byName {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// listMeta lists a resource's objects (with retries) and returns each
// one's name and annotations, which is what Containers reads of them.
func (r *Runtime) listMeta(ctx context.Context, resource string, list func(context.Context) (runtime.Object, error)) ([]metav1.ObjectMeta, error) {
	l, err := withRetry(ctx, list)
	if err != nil {
		return nil, apiError(err, "list", resource, "")
	}
	items, err := meta.ExtractList(l)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot read the list of %s", resource)
	}
	out := make([]metav1.ObjectMeta, 0, len(items))
	for _, it := range items {
		a, err := meta.Accessor(it)
		if err != nil {
			return nil, errcode.Wrap(errcode.Internal, err, "cannot read the list of %s", resource)
		}
		out = append(out, metav1.ObjectMeta{Name: a.GetName(), Annotations: a.GetAnnotations()})
	}
	return out, nil
}

// removeWait bounds how long Remove waits for the run's objects to be
// gone; a pod is gone once its node has stopped its containers.
const removeWait = 90 * time.Second

// Remove implements workspace.Runtime: it deletes the run's pod, then its
// NetworkPolicy and Secret (the policy outlives the pod, so the pod is never
// without it), and verifies each is gone.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	return r.remove(ctx, id, func(string) bool { return true })
}

// remove deletes those of the run's objects whose resource ours names.
func (r *Runtime) remove(ctx context.Context, id string, ours func(resource string) bool) error {
	if errs := validation.IsDNS1123Label(id); len(errs) > 0 || !strings.HasPrefix(id, namePrefix) && !strings.HasPrefix(id, sessionPrefix) && !isWSSecretName(id) {
		return errcode.New(errcode.InvalidArgument, "%q is not the name of a workspace run's pod", id)
	}
	if isWSSecretName(id) {
		// A workspace's Secret is a Secret alone.
		ours = func(resource string) bool { return resource == "secrets" }
	}
	ctx, cancel := context.WithTimeout(ctx, removeWait)
	defer cancel()
	ns := r.opt.Namespace
	// Grace 1, not 0: a delete with grace 0 removes the pod from the API at
	// once, before the node has stopped anything, so "gone" would prove
	// nothing. With a grace period the kubelet deletes the object only
	// after the containers stopped (the pod's own grace period is 0, so it
	// kills at once).
	grace := int64(1)
	bgProp := metav1.DeletePropagationBackground
	steps := []struct {
		resource string
		del      func(context.Context) error
		get      func(context.Context) error
	}{
		{"pods",
			func(ctx context.Context) error {
				return r.cs.CoreV1().Pods(ns).Delete(ctx, id, metav1.DeleteOptions{GracePeriodSeconds: &grace, PropagationPolicy: &bgProp})
			},
			func(ctx context.Context) error {
				_, err := r.cs.CoreV1().Pods(ns).Get(ctx, id, metav1.GetOptions{})
				return err
			}},
		{"networkpolicies",
			func(ctx context.Context) error {
				return r.cs.NetworkingV1().NetworkPolicies(ns).Delete(ctx, id, metav1.DeleteOptions{PropagationPolicy: &bgProp})
			},
			func(ctx context.Context) error {
				_, err := r.cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, id, metav1.GetOptions{})
				return err
			}},
		{"secrets",
			func(ctx context.Context) error {
				return r.cs.CoreV1().Secrets(ns).Delete(ctx, id, metav1.DeleteOptions{PropagationPolicy: &bgProp})
			},
			func(ctx context.Context) error {
				_, err := r.cs.CoreV1().Secrets(ns).Get(ctx, id, metav1.GetOptions{})
				return err
			}},
	}
	for _, s := range steps {
		if !ours(s.resource) {
			continue
		}
		_, err := withRetry(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, s.del(ctx) })
		if err != nil && !apierrors.IsNotFound(err) {
			return apiError(err, "delete", s.resource, id)
		}
		if err := r.awaitGone(ctx, s.resource, id, s.get); err != nil {
			return err
		}
	}
	return nil
}

// awaitGone polls until get answers NotFound. A poll and not a watch: a
// deleted object's last event can be missed between a get and a watch,
// and a get answers the question itself.
func (r *Runtime) awaitGone(ctx context.Context, resource, id string, get func(context.Context) error) error {
	delay := 50 * time.Millisecond
	for {
		err := get(ctx)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil && !retriable(err) && ctx.Err() == nil {
			return apiError(err, "get", resource, id)
		}
		select {
		case <-ctx.Done():
			return &errcode.Error{Code: errcode.Internal, Msg: fmt.Sprintf("the run's %s %s is still present after its deletion", strings.TrimSuffix(resource, "s"), id), Err: ctx.Err()}
		case <-time.After(delay):
		}
		delay = min(delay*2, 250*time.Millisecond)
	}
}
