package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/core/workspace"
)

// RoleYAML is the least the runtime needs: a Role in the workspace
// namespace (apply it there and bind it to Sluice's identity) and, only when
// a RuntimeClass is configured, a ClusterRole to read RuntimeClasses, which
// are cluster-scoped. Doctor checks exactly these permissions (a test
// keeps the two in step).
const RoleYAML = `# The Kubernetes workspace runtime's permissions, in its namespace:
# kubectl -n NAMESPACE apply -f this.yaml, then bind the Role to Sluice's
# identity with a RoleBinding.
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: sluice-workspaces
rules:
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["create", "delete", "get", "list", "watch"]
- apiGroups: [""]
  resources: ["pods/attach", "pods/exec"]
  verbs: ["create", "get"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["create", "delete", "get", "list", "update"]
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["create", "delete", "get", "list"]
---
# Only when a RuntimeClass is configured (e.g. gvisor): reading it. Bind
# with a ClusterRoleBinding.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: sluice-workspaces-runtimeclass
rules:
- apiGroups: ["node.k8s.io"]
  resources: ["runtimeclasses"]
  verbs: ["get"]
`

// permission is one verb on one resource the runtime uses.
type permission struct {
	Group, Resource, Subresource, Verb string
	// Cluster: cluster-scoped, needed only with a RuntimeClass.
	Cluster bool
}

func (p permission) String() string {
	r := p.Resource
	if p.Subresource != "" {
		r += "/" + p.Subresource
	}
	if p.Group != "" {
		r += "." + p.Group
	}
	return p.Verb + " " + r
}

// permissions are what the runtime's calls need: pods (create, watch,
// delete, exec and attach for the copies, the start gate and the kill),
// the run's Secret and NetworkPolicy, the workspace's Secret of granted
// secrets (updated on a grant or revoke), and reading the RuntimeClass. Both
// get and create on exec and attach: the streams upgrade with a GET, which
// newer API servers authorize as create as well.
func permissions() []permission {
	var out []permission
	add := func(group, res, sub string, cluster bool, verbs ...string) {
		for _, v := range verbs {
			out = append(out, permission{Group: group, Resource: res, Subresource: sub, Verb: v, Cluster: cluster})
		}
	}
	add("", "pods", "", false, "create", "delete", "get", "list", "watch")
	add("", "pods", "attach", false, "create", "get")
	add("", "pods", "exec", false, "create", "get")
	add("", "secrets", "", false, "create", "delete", "get", "list", "update")
	add("networking.k8s.io", "networkpolicies", "", false, "create", "delete", "get", "list")
	add("node.k8s.io", "runtimeclasses", "", true, "get")
	return out
}

// Finding is one result of Doctor.
type Finding struct {
	Name string
	// Status is "ok", "warn" or "fail".
	Status string
	Detail string
	// Hint says what to do about a warn or fail.
	Hint string
}

// probeTimeout bounds Doctor's probe run.
const probeTimeout = 3 * time.Minute

// Doctor checks what runs need: the API server (and its version), the
// namespace, every permission (SelfSubjectAccessReview), the RuntimeClass
// when one is configured, and the image, by running `true` in a probe pod
// made exactly as a run's (and deleted after), which shows that a pod's own
// PID limit can be set in the image. It also says what it cannot check:
// whether NetworkPolicy is enforced.
func (r *Runtime) Doctor(ctx context.Context, image string) []Finding {
	var out []Finding
	add := func(name, status, detail, hint string) { out = append(out, Finding{name, status, detail, hint}) }
	v, err := r.serverVersion(ctx)
	if err != nil {
		add("cluster", "fail", err.Error(), "check the kubeconfig, its context and that the API server is reachable from here")
		return out
	}
	add("cluster", "ok", "API server "+r.cfg.Host+" answers, version "+v, "")

	ns := r.opt.Namespace
	if err := r.namespaceExists(ctx); err != nil {
		add("namespace", "fail", err.Error(), "kubectl create namespace "+ns)
		return out
	}
	add("namespace", "ok", "namespace "+ns+" exists", "")

	out = append(out, r.checkPermissions(ctx)...)

	if rc := r.opt.RuntimeClassName; rc != "" {
		if info, err := r.CheckRuntime(ctx, ""); err != nil {
			add("runtimeclass", "fail", err.Error(), "create the RuntimeClass (its handler configured on every node) or clear the configured one")
		} else {
			add("runtimeclass", "ok", "RuntimeClass "+info.Name+" exists", "")
		}
	} else {
		add("runtimeclass", "warn", "no RuntimeClass is configured: runs use the cluster's default container runtime", "configure a sandboxing RuntimeClass (gVisor's runsc, Kata) for a stronger boundary than a container")
	}
	// The probe pod sets its PID limit as a run's does, so it shows
	// whether the image's shell can; its finding stays last.
	imgErr := r.CheckImage(ctx, image)
	var probeErr error
	if imgErr == nil {
		probeErr = r.probe(ctx, image)
	}
	out = append(out, r.pidsFinding(imgErr, probeErr))
	add("networkpolicy", "warn", "every run has a deny-all NetworkPolicy, but only a network plugin that enforces NetworkPolicy makes it so, which the API cannot show",
		"use a network plugin that enforces NetworkPolicy (Calico, Cilium, …)")
	if imgErr != nil {
		add("image", "fail", imgErr.Error(), "configure the image as name@sha256:<digest>")
		return out
	}
	out = append(out, probeFinding(probeErr))
	return out
}

// pidsFinding says what bounds a pod's processes, from the probe pod's
// run: its PID limit set and checked, or why it was not.
func (r *Runtime) pidsFinding(imgErr, probeErr error) Finding {
	switch {
	case errors.Is(probeErr, errNoPIDLimit):
		return Finding{"pids", "fail", probeErr.Error(),
			"use an image whose /bin/sh sets RLIMIT_NPROC with ulimit -u or ulimit -p (bash, dash, busybox, mksh, zsh do)"}
	case imgErr != nil || probeErr != nil:
		return Finding{"pids", "warn", "not shown: the probe pod did not run (see image)", "fix the image, then run doctor again"}
	}
	return Finding{"pids", "ok", fmt.Sprintf("a probe pod ran under a uid of its own (of %s) and set and checked its PID limit (RLIMIT_NPROC) before its program started; "+
		"nothing else on the nodes may run under those uids (Sluice cannot see that), and a kubelet podPidsLimit, where set, bounds every pod as well", r.uids), ""}
}

// DoctorSessionImage checks the image confined sessions run in
// (kubernetes.sessionImage): pinned by digest, and a probe pod made as a
// run's finds /bin/sh and tar in it, which a session pod's keeper needs.
// Whether it carries the agent's CLI is the session's to say: it names
// the program it cannot find.
func (r *Runtime) DoctorSessionImage(ctx context.Context, image string) Finding {
	const name, hint = "session image", "build the session image with the agents' CLIs, /bin/sh and tar, load it onto the nodes and pin it as name@sha256:<digest>"
	if err := r.CheckImage(ctx, image); err != nil {
		return Finding{name, "fail", err.Error(), hint}
	}
	if err := r.probeArgv(ctx, image, []string{"/bin/sh", "-c", "command -v tar >/dev/null"}); err != nil {
		return Finding{name, "fail", "a probe pod looking for /bin/sh and tar in the session image failed: " + err.Error(), hint}
	}
	return Finding{name, "ok", "a probe pod found /bin/sh and tar in the session image", ""}
}

func probeFinding(err error) Finding {
	if err != nil {
		return Finding{"image", "fail", "a probe pod running `true` in the image failed: " + err.Error(), "load the image onto the nodes; it needs /bin/sh and tar"}
	}
	return Finding{"image", "ok", "a probe pod ran `true` in the image with the runs' hardening", ""}
}

// probe runs `true` as a run would, on an empty tree.
func (r *Runtime) probe(ctx context.Context, image string) error {
	return r.probeArgv(ctx, image, []string{"true"})
}

// probeArgv runs argv as a run would, on an empty tree.
func (r *Runtime) probeArgv(ctx context.Context, image string, argv []string) error {
	dir, err := os.MkdirTemp("", "sluice-kube-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tree := dir + "/tree"
	if err := os.Mkdir(tree, 0o755); err != nil {
		return err
	}
	lim := workspace.DefaultLimits
	lim.Timeout = time.Minute
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	id := fmt.Sprintf("probe-%d", time.Now().UnixNano())
	st, err := r.Run(ctx, workspace.ContainerSpec{
		WorkspaceID: id, RunID: id, StoreKey: "doctor", Image: image, Argv: argv,
		User: probeUser(), TreePath: tree, Limits: lim,
	}, &limitBuffer{max: 1 << 10}, &limitBuffer{max: 1 << 10})
	if err != nil {
		return err
	}
	if st.ExitCode != 0 {
		return fmt.Errorf("`%s` exited %d", strings.Join(argv, " "), st.ExitCode)
	}
	return nil
}

// namespaceExists asks with a dry-run create of a Secret, which needs only
// the runtime's own permissions (reading namespaces is not one of them).
func (r *Runtime) namespaceExists(ctx context.Context) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: namePrefix + "doctor-", Labels: map[string]string{labelManagedBy: managedBy}}}
	_, err := r.cs.CoreV1().Secrets(r.opt.Namespace).Create(ctx, s, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || apierrors.IsForbidden(err) {
		// Forbidden: the permission findings say so; a missing namespace
		// answers NotFound before authorization matters.
		return nil
	}
	return apiError(err, "create", "secrets", "")
}

// checkPermissions asks the API server, for each permission, whether this
// identity has it, and gives one finding per resource.
func (r *Runtime) checkPermissions(ctx context.Context) []Finding {
	type res struct {
		name    string
		missing []string
		err     error
	}
	var order []string
	byRes := map[string]*res{}
	for _, p := range permissions() {
		if p.Cluster && r.opt.RuntimeClassName == "" {
			continue
		}
		key := strings.TrimPrefix(p.String(), p.Verb+" ")
		rr := byRes[key]
		if rr == nil {
			rr = &res{name: key}
			byRes[key] = rr
			order = append(order, key)
		}
		ok, err := r.allowed(ctx, p)
		if err != nil {
			rr.err = err
			continue
		}
		if !ok {
			rr.missing = append(rr.missing, p.Verb)
		}
	}
	var out []Finding
	for _, k := range order {
		rr := byRes[k]
		f := Finding{Name: "rbac " + k, Status: "ok", Detail: "allowed"}
		switch {
		case rr.err != nil:
			f.Status, f.Detail, f.Hint = "fail", "cannot ask the API server: "+rr.err.Error(), "check that SelfSubjectAccessReview is allowed (it is for every authenticated user by default)"
		case len(rr.missing) > 0:
			f.Status, f.Detail, f.Hint = "fail", "not allowed: "+strings.Join(rr.missing, ", "), "apply the runtime's Role (kube.RoleYAML) in namespace "+r.opt.Namespace+" and bind it to this identity"
		}
		out = append(out, f)
	}
	return out
}

func (r *Runtime) allowed(ctx context.Context, p permission) (bool, error) {
	ns := r.opt.Namespace
	if p.Cluster {
		ns = ""
	}
	rev := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
		Namespace: ns, Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource}}}
	got, err := withRetry(ctx, func(ctx context.Context) (*authv1.SelfSubjectAccessReview, error) {
		return r.cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, rev, metav1.CreateOptions{})
	})
	if err != nil {
		return false, apiError(err, "create", "selfsubjectaccessreviews", "")
	}
	return got.Status.Allowed, nil
}

// probeUser is the probe's uid:gid: this process's own, as a workspace's
// tree would be owned, or nobody's when this process is root.
func probeUser() string {
	if os.Getuid() == 0 {
		return "65534:65534"
	}
	return fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
}
