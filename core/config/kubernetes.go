package config

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
)

// RuntimeKubernetes is the workspaceRuntime that runs workspaces as pods
// in a Kubernetes namespace instead of containers of the local Docker
// Engine. Any other workspaceRuntime value names an OCI runtime of the
// Engine (runc, runsc).
const RuntimeKubernetes = "kubernetes"

// Kubernetes configures the Kubernetes workspace runtime (config.json's
// "kubernetes" object). It is read only when workspaceRuntime is
// "kubernetes".
type Kubernetes struct {
	// Kubeconfig is the kubeconfig file; empty means client-go's default
	// rules (KUBECONFIG, then ~/.kube/config).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Context is the kubeconfig context; empty means its current one.
	Context string `json:"context,omitempty"`
	// Namespace holds every pod, NetworkPolicy and Secret Sluice makes.
	Namespace string `json:"namespace,omitempty"`
	// Image is the workspace image as a digest-pinned reference
	// (NAME@sha256:<64 hex>): a tag could change under Sluice, a digest
	// cannot.
	Image string `json:"image,omitempty"`
	// SessionImage is the image confined sessions run in under `sluice run
	// --runtime kubernetes`, digest-pinned like Image. It carries the
	// agents' CLIs (a pod cannot show the person's install) and /bin/sh and
	// tar; empty means sessions do not run on the cluster.
	SessionImage string `json:"sessionImage,omitempty"`
	// RuntimeClassName selects a RuntimeClass (gvisor); empty means the
	// cluster's default.
	RuntimeClassName string `json:"runtimeClassName,omitempty"`
	// ImagePullPolicy is IfNotPresent (default) or Never.
	ImagePullPolicy string `json:"imagePullPolicy,omitempty"`
	// EgressProxy is the IP at which pods with an egress grant reach
	// Sluice's allowlisting proxy on this machine (each serving process
	// listens on a port of its own there); empty means grants are refused.
	EgressProxy string `json:"egressProxy,omitempty"`
	// PodUIDs is the range of uids pods run under, "FIRST-LAST" (both
	// included, at least 1,024, at most up to 2147483646): each pod draws
	// one of its own, by which its PID limit is counted, so nothing else
	// on the nodes may use them. Empty means 1879048192-1895825407.
	PodUIDs string `json:"podUIDs,omitempty"`
}

// OnKubernetes says whether workspaces run as Kubernetes pods.
func (c *Config) OnKubernetes() bool { return c.WorkspaceRuntime == RuntimeKubernetes }

// WorkspaceRunImage is the image workspace runs use: the Kubernetes
// image on Kubernetes, the Engine's image ID otherwise.
func (c *Config) WorkspaceRunImage() string {
	if c.OnKubernetes() {
		return c.Kubernetes.Image
	}
	return c.WorkspaceImage
}

// WorkspaceOCIRuntime is the OCI runtime name a workspace Manager checks
// and runs under: empty on Kubernetes, where the RuntimeClass says it.
func (c *Config) WorkspaceOCIRuntime() string {
	if c.OnKubernetes() {
		return ""
	}
	return c.WorkspaceRuntime
}

var (
	// dnsLabelRe is a Kubernetes namespace name (RFC 1123 label).
	dnsLabelRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`) })
	// dnsSubdomainRe is a RuntimeClass name (RFC 1123 subdomain).
	dnsSubdomainRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	})
	// digestRefRe is NAME@sha256:<64 hex>, NAME as a registry accepts it.
	digestRefRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._/-][a-z0-9]+)*)*@sha256:[0-9a-f]{64}$`)
	})
)

// DigestPinned says whether ref is NAME@sha256:<64 hex>.
func DigestPinned(ref string) bool { return digestRefRe().MatchString(ref) }

// validate checks the Kubernetes settings when they are in use.
func (k Kubernetes) validate() error {
	if k.Kubeconfig != "" && !filepath.IsAbs(k.Kubeconfig) {
		return fmt.Errorf("%w: kubernetes.kubeconfig: %q is not an absolute path", ErrInvalid, k.Kubeconfig)
	}
	if k.Namespace == "" {
		return fmt.Errorf("%w: kubernetes.namespace: workspaceRuntime is kubernetes, so a namespace is needed (its pods, NetworkPolicies and Secrets are Sluice's)", ErrInvalid)
	}
	if !dnsLabelRe().MatchString(k.Namespace) {
		return fmt.Errorf("%w: kubernetes.namespace: %q is not a namespace name", ErrInvalid, k.Namespace)
	}
	if k.Image == "" || !DigestPinned(k.Image) {
		return fmt.Errorf("%w: kubernetes.image: %q is not a digest-pinned image (NAME@sha256:<64 hex digits>); a tag could change under Sluice, a digest cannot", ErrInvalid, k.Image)
	}
	if k.SessionImage != "" && !DigestPinned(k.SessionImage) {
		return fmt.Errorf("%w: kubernetes.sessionImage: %q is not a digest-pinned image (NAME@sha256:<64 hex digits>)", ErrInvalid, k.SessionImage)
	}
	if k.RuntimeClassName != "" && (len(k.RuntimeClassName) > 253 || !dnsSubdomainRe().MatchString(k.RuntimeClassName)) {
		return fmt.Errorf("%w: kubernetes.runtimeClassName: %q is not a RuntimeClass name", ErrInvalid, k.RuntimeClassName)
	}
	switch k.ImagePullPolicy {
	case "", "IfNotPresent", "Never":
	default:
		return fmt.Errorf("%w: kubernetes.imagePullPolicy: %q (IfNotPresent or Never; Always would fetch by tag semantics Sluice pins away)", ErrInvalid, k.ImagePullPolicy)
	}
	if k.EgressProxy != "" && net.ParseIP(k.EgressProxy) == nil {
		// A NetworkPolicy allows addresses, not names; the port is each
		// serving process's own.
		return fmt.Errorf("%w: kubernetes.egressProxy: %q is not an IP (the address at which pods reach this machine)", ErrInvalid, k.EgressProxy)
	}
	if k.PodUIDs != "" && !validUIDRange(k.PodUIDs) {
		return fmt.Errorf("%w: kubernetes.podUIDs: %q is not FIRST-LAST with 1 ≤ FIRST, LAST ≤ 2147483646 and at least 1024 uids (a range nothing else on the nodes uses: each pod's PID limit is counted by its uid)", ErrInvalid, k.PodUIDs)
	}
	return nil
}

// validUIDRange says whether s is FIRST-LAST as kube.Options.PodUIDs
// takes it.
func validUIDRange(s string) bool {
	m := uidRangeRe().FindStringSubmatch(s)
	if m == nil {
		return false
	}
	first, err1 := strconv.ParseInt(m[1], 10, 64)
	last, err2 := strconv.ParseInt(m[2], 10, 64)
	return err1 == nil && err2 == nil && first >= 1 && last <= 1<<31-2 && last-first+1 >= 1024
}

var uidRangeRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]{1,10})-([0-9]{1,10})$`) })

// KubeconfigFiles are the kubeconfig files the Kubernetes runtime reads
// its credentials from: the configured one, else each file KUBECONFIG
// lists. (~/.kube, the default, is hidden from confined sessions with the
// other credential stores.) Empty unless workspaces run on Kubernetes.
func (c *Config) KubeconfigFiles() []string {
	if !c.OnKubernetes() {
		return nil
	}
	if c.Kubernetes.Kubeconfig != "" {
		return []string{c.Kubernetes.Kubeconfig}
	}
	var out []string
	for _, f := range filepath.SplitList(os.Getenv("KUBECONFIG")) {
		if filepath.IsAbs(f) {
			out = append(out, filepath.Clean(f))
		}
	}
	return out
}
