package workspace

import (
	"context"
	"errors"
	"io"
	"regexp"
	"sync"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
)

// Runtime runs one container to completion for one workspace run. It is the
// seam between workspaces and what executes them: the local Docker Engine
// today (Docker), a Kubernetes runtime (a pod per run) next. A Runtime
// never decides policy: the hardening is fixed by ContainerSpec and checked
// again by the implementation just before it creates anything.
type Runtime interface {
	// Name identifies the runtime in evidence ("docker").
	Name() string
	// CheckImage verifies that the image with this exact ID is present.
	// IDs are content digests, so a present ID is the verified image.
	CheckImage(ctx context.Context, imageID string) error
	// Run creates, starts, waits for and removes one container, streaming
	// its output to stdout and stderr. A write error from either writer
	// (ErrStopOutput) stops the container. The container is removed, and
	// its removal verified, before Run returns, whatever happened.
	Run(ctx context.Context, spec ContainerSpec, stdout, stderr io.Writer) (ExitStatus, error)
	// CheckRuntime verifies that the OCI runtime name ("" for the Engine's
	// default) is one the Engine has, and describes it. A runtime it does
	// not have is an error naming it: never a silent fall back to another.
	CheckRuntime(ctx context.Context, name string) (RuntimeInfo, error)
	// Containers lists every container labelled as belonging to the store.
	Containers(ctx context.Context, storeKey string) ([]ContainerInfo, error)
	// Remove force-removes a container and verifies that it is gone.
	Remove(ctx context.Context, containerID string) error
	// EgressNetwork makes sure the network for granted runs exists: one on
	// which containers reach the host's egress proxy and nothing else.
	EgressNetwork(ctx context.Context) (EgressNetwork, error)
}

// ContainerSpec is everything a run's container is made from. It is
// runtime-neutral; the Docker runtime turns it into Engine API
// configuration and validates that.
type ContainerSpec struct {
	WorkspaceID string
	RunID       string
	StoreKey    string
	// Image is an image ID (sha256:…), already verified.
	Image string
	// Argv is the command; never a shell string built on the host.
	Argv []string
	// Env is the complete environment (KEY=VALUE); the runtime adds nothing
	// from the host.
	Env []string
	// SecretEnv names the entries of Env that hold granted secrets (and the
	// proxy variables, which carry a granted run's egress credentials): a
	// runtime that would otherwise write Env where others can read it (a
	// Kubernetes pod spec) keeps these apart.
	SecretEnv []string
	// User is uid:gid, never root.
	User string
	// TreePath is the workspace tree, mounted read-write at /workspace.
	TreePath string
	// GitDirPath, when set, is mounted read-only at /workspace/.git.
	GitDirPath string
	Limits     Limits
	// Network is "" (no network at all) or the egress network's name.
	Network string
	// RuntimeName selects an OCI runtime (e.g. "runsc").
	RuntimeName string
	// RunKey is a secret of this run alone, drawn by the Run that makes
	// the spec; its record holds only its hash (RunResult.KeyHash). The
	// app carries out a sidecar's run only for the spec that holds it
	// (AcceptRun), so nobody who merely reads the run's record, or finds
	// one a crash left running, can have a command of their own run in
	// its name. Runtimes do not use it.
	RunKey string
}

// ExitStatus is what a finished container reports.
type ExitStatus struct {
	ExitCode  int
	OOMKilled bool
	TimedOut  bool
	// OutputStopped is set when the run was stopped for producing far more
	// output than can be kept.
	OutputStopped bool
	ContainerID   string
}

// RuntimeInfo describes the OCI runtime runs use.
type RuntimeInfo struct {
	// Name is the runtime's name ("runc", "runsc"), the Engine's default
	// resolved.
	Name string
	// NoNetwork is set when the runtime gives containers no network at
	// all (runsc registered with --network=none): such a runtime cannot
	// carry a run with an egress grant.
	NoNetwork bool
	// HostUDS is set when the runtime lets a container connect to host
	// Unix sockets bound into it (runsc with --host-uds=open): a confined
	// session reaches its sidecar and proxy that way.
	HostUDS bool
}

// ContainerInfo is a labelled container found by Containers.
type ContainerInfo struct {
	ID          string
	WorkspaceID string
	RunID       string
	State       string
	// Kept marks what a workspace keeps while it lives rather than a run:
	// the copy of its granted secrets (SecretCopies). Stop leaves it,
	// Destroy removes it with the rest, and Reconcile leaves a living
	// workspace's to its grants.
	Kept bool
}

// EgressNetwork is the network of granted runs.
type EgressNetwork struct {
	Name string
	// Gateway is the host's address on that network; the egress proxy
	// listens there.
	Gateway string
	// Bridge is the host interface of the network.
	Bridge string
}

// Container paths and labels.
const (
	WorkspaceMount = "/workspace"
	GitMount       = "/workspace/.git"
	LabelWorkspace = "sluice.workspace"
	LabelStore     = "sluice.store"
	LabelRun       = "sluice.run"
	LabelEgress    = "sluice.egress"
	containerPath  = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	containerHome  = "/tmp"
	containerLang  = "C.UTF-8"
)

// The patterns of this package are compiled on first use: the sidecar links
// it for the workspace tools, and a session that never opens a workspace
// should not carry their programs.
var (
	imageIDRe     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256:[0-9a-f]{64}$`) })
	runtimeNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`) })
)

// ValidImageID reports whether s is an image ID (sha256: and 64 hex
// digits), the only form in which a run names its image.
func ValidImageID(s string) bool { return imageIDRe().MatchString(s) }

// ValidRuntimeName reports whether s can name an OCI runtime.
func ValidRuntimeName(s string) bool { return runtimeNameRe().MatchString(s) }

// ErrStopOutput is returned by a run's output writer once a run has
// produced so much more output than can be kept that it is stopped. A
// Runtime that sees it from a writer stops the run's container and
// reports ExitStatus.OutputStopped.
var ErrStopOutput = errors.New("output limit: run stopped")

// ErrRunNotRemoved is in the Err chain of a Runtime.Run error when the run
// ended and its tree was copied back, but what the run was made of (its
// container, pod, Secret) could not all be removed. The ExitStatus is then
// the run's: the run happened and its changes are applied (running it
// again would apply them twice); what is left is listed by Containers and
// removed by Reconcile or Destroy.
var ErrRunNotRemoved = errors.New("the run's changes were applied but its objects could not all be removed")

// Limits bound one run.
type Limits struct {
	Timeout     time.Duration `json:"timeout"`
	MemoryBytes int64         `json:"memoryBytes"`
	OutputBytes int64         `json:"outputBytes"`
	CPUs        float64       `json:"cpus"`
	PIDs        int64         `json:"pids"`
	TmpfsBytes  int64         `json:"tmpfsBytes"`
}

// HardLimits can be configured up to and never past.
var HardLimits = Limits{
	Timeout:     10 * time.Minute,
	MemoryBytes: 4 << 30,
	OutputBytes: 4 << 20,
	CPUs:        16,
	PIDs:        4096,
	TmpfsBytes:  1 << 30,
}

// DefaultLimits apply where nothing else is configured.
var DefaultLimits = Limits{
	Timeout:     2 * time.Minute,
	MemoryBytes: 1 << 30,
	OutputBytes: 1 << 20,
	CPUs:        1,
	PIDs:        256,
	TmpfsBytes:  256 << 20,
}

// withDefaults fills zero fields from def and refuses anything negative or
// above HardLimits.
func (l Limits) withDefaults(def Limits) (Limits, error) {
	if l.Timeout == 0 {
		l.Timeout = def.Timeout
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = def.MemoryBytes
	}
	if l.OutputBytes == 0 {
		l.OutputBytes = def.OutputBytes
	}
	if l.CPUs == 0 {
		l.CPUs = def.CPUs
	}
	if l.PIDs == 0 {
		l.PIDs = def.PIDs
	}
	if l.TmpfsBytes == 0 {
		l.TmpfsBytes = def.TmpfsBytes
	}
	return l, l.within(HardLimits)
}

// within checks every field against max; a run's limits must be within
// the Manager's, which are within HardLimits.
func (l Limits) within(max Limits) error {
	if l.MemoryBytes > 0 && l.MemoryBytes < 6<<20 {
		return errcode.New(errcode.InvalidArgument, "the memory limit must be at least 6 MiB")
	}
	checks := []struct {
		name     string
		v, limit float64
		max      int64
	}{
		{"timeoutSeconds", l.Timeout.Seconds(), max.Timeout.Seconds(), int64(max.Timeout.Seconds())},
		{"memoryBytes", float64(l.MemoryBytes), float64(max.MemoryBytes), max.MemoryBytes},
		{"outputBytes", float64(l.OutputBytes), float64(max.OutputBytes), max.OutputBytes},
		{"cpus", l.CPUs, max.CPUs, int64(max.CPUs)},
		{"pids", float64(l.PIDs), float64(max.PIDs), max.PIDs},
		{"tmpfsBytes", float64(l.TmpfsBytes), float64(max.TmpfsBytes), max.TmpfsBytes},
	}
	for _, c := range checks {
		if c.v <= 0 {
			return errcode.New(errcode.InvalidArgument, "the %s limit must be positive", c.name)
		}
		if c.v > c.limit {
			return &errcode.Error{Code: errcode.InvalidArgument, Msg: "the " + c.name + " limit is above what is allowed; limits can only be lowered", Data: LimitData{Limit: c.name, Max: c.max}}
		}
	}
	return nil
}
