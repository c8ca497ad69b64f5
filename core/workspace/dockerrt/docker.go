package dockerrt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
)

// The egress network's name, and the fixed name of its bridge, which host
// firewall rules name.
const (
	egressNetName    = "sluice-egress"
	egressBridgeName = "sluice-egress0"
)

// killGrace is how long a killed container has to exit.
const killGrace = 20 * time.Second

// oomSettle bounds how long a run that died of SIGKILL nobody sent waits
// for the Engine's oom event. containerd before 2.2 may deliver a task's
// OOM after its exit, so the inspected OOMKilled flag can still be false
// when the container is already gone; the event stream then brings it.
const oomSettle = 3 * time.Second

// Docker is the Runtime backed by the local Docker Engine API.
type Docker struct {
	cli *client.Client

	netMu sync.Mutex
	net   *workspace.EgressNetwork
}

// New connects to the Engine named by the environment (DOCKER_HOST
// or the default socket), negotiating the API version, and checks that it
// answers.
func New(ctx context.Context) (*Docker, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, &errcode.Error{Code: errcode.Unsupported, Msg: "the Docker client cannot be configured", Err: err}
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		cli.Close()
		return nil, &errcode.Error{Code: errcode.Unsupported, Msg: "the Docker Engine is not reachable; install docker and start it to run commands in workspaces", Err: err}
	}
	return &Docker{cli: cli}, nil
}

// NewWithClient is the runtime over an Engine API client the caller made
// (one with its own transport, in tests); nothing is checked.
func NewWithClient(cli *client.Client) *Docker { return &Docker{cli: cli} }

// Client is the Engine API client (for diagnostics and tests).
func (d *Docker) Client() *client.Client { return d.cli }

// Close releases the client.
func (d *Docker) Close() error { return d.cli.Close() }

// Name implements Runtime.
func (d *Docker) Name() string { return "docker" }

// CheckImage implements Runtime: the image must be present under exactly
// this ID. Nothing is pulled: a workspace image is built or loaded by a
// human, and a registry is not trusted to serve the same bytes.
func (d *Docker) CheckImage(ctx context.Context, imageID string) error {
	if !workspace.ValidImageID(imageID) {
		return errcode.New(errcode.InvalidArgument, "the image must be given by ID (sha256:…)")
	}
	ins, err := d.cli.ImageInspect(ctx, imageID)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return &errcode.Error{Code: errcode.Unsupported, Msg: "the configured workspace image is not present in the Docker Engine", Err: err}
		}
		return &errcode.Error{Code: errcode.Internal, Msg: "the Docker Engine cannot inspect the workspace image", Err: err}
	}
	if ins.ID != imageID {
		return &errcode.Error{Code: errcode.InvalidArgument, Msg: fmt.Sprintf("the workspace image has ID %s, not the configured %s", ins.ID, imageID)}
	}
	return nil
}

// EngineRuntimes lists the OCI runtimes the Engine has (sorted, the
// containerd shim names left out) and its default, for the settings
// screen's choice.
func (d *Docker) EngineRuntimes(ctx context.Context) (names []string, def string, err error) {
	info, err := d.cli.Info(ctx)
	if err != nil {
		return nil, "", &errcode.Error{Code: errcode.Internal, Msg: "the Docker Engine cannot list its runtimes", Err: err}
	}
	for n := range info.Runtimes {
		if !strings.HasPrefix(n, "io.containerd.") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	def = info.DefaultRuntime
	if def == "" {
		def = "runc"
	}
	return names, def, nil
}

// CheckRuntime implements Runtime with the Engine's own list of runtimes
// (its daemon configuration). The check happens before a container is
// created, so that a runtime the Engine lacks is named in the error rather
// than buried in a create failure.
func (d *Docker) CheckRuntime(ctx context.Context, name string) (workspace.RuntimeInfo, error) {
	info, err := d.cli.Info(ctx)
	if err != nil {
		return workspace.RuntimeInfo{}, &errcode.Error{Code: errcode.Internal, Msg: "the Docker Engine cannot list its runtimes", Err: err}
	}
	if name == "" {
		name = info.DefaultRuntime
		if name == "" {
			name = "runc"
		}
	}
	rt, ok := info.Runtimes[name]
	if !ok {
		have := make([]string, 0, len(info.Runtimes))
		for n := range info.Runtimes {
			have = append(have, n)
		}
		sort.Strings(have)
		return workspace.RuntimeInfo{}, &errcode.Error{Code: errcode.Unsupported, Data: map[string]any{"runtime": name, "engineRuntimes": have},
			Msg: fmt.Sprintf("the configured workspace runtime %q is not a runtime of the Docker Engine (it has: %s); "+
				"register it in the Engine's daemon configuration (/etc/docker/daemon.json) and reload the Engine, "+
				"or change workspaceRuntime; Sluice never runs a workspace under another runtime instead", name, strings.Join(have, ", "))}
	}
	noNet, hostUDS := false, false
	for i, a := range rt.Args {
		if a == "--network=none" || (a == "--network" && i+1 < len(rt.Args) && rt.Args[i+1] == "none") {
			noNet = true
		}
		if a == "--host-uds=open" || a == "--host-uds=all" || (a == "--host-uds" && i+1 < len(rt.Args) && (rt.Args[i+1] == "open" || rt.Args[i+1] == "all")) {
			hostUDS = true
		}
	}
	return workspace.RuntimeInfo{Name: name, NoNetwork: noNet, HostUDS: hostUDS}, nil
}

// ContainerConfig turns a spec into Engine API configuration. Everything the
// hardening needs is set here, explicitly, and ValidateContainerConfig
// checks it again.
func (d *Docker) ContainerConfig(spec workspace.ContainerSpec) (*container.Config, *container.HostConfig, *network.NetworkingConfig) {
	cfg := &container.Config{
		Image:      spec.Image,
		Cmd:        append([]string(nil), spec.Argv...),
		Entrypoint: []string{""},
		Env:        append([]string(nil), spec.Env...),
		User:       spec.User,
		WorkingDir: workspace.WorkspaceMount,
		Hostname:   "workspace",
		Labels: map[string]string{
			workspace.LabelWorkspace: spec.WorkspaceID,
			workspace.LabelStore:     spec.StoreKey,
			workspace.LabelRun:       spec.RunID,
		},
		AttachStdout: true,
		AttachStderr: true,
		// A run that is stopped gets SIGKILL at once: there is nothing to
		// shut down gracefully, and waiting only holds resources.
		StopTimeout: new(int),
	}
	mounts := []mount.Mount{{
		Type:        mount.TypeBind,
		Source:      spec.TreePath,
		Target:      workspace.WorkspaceMount,
		BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
	}}
	if spec.GitDirPath != "" {
		mounts = append(mounts, mount.Mount{
			Type:        mount.TypeBind,
			Source:      spec.GitDirPath,
			Target:      workspace.GitMount,
			ReadOnly:    true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
		})
	}
	netMode := "none"
	var nc *network.NetworkingConfig
	if spec.Network != "" {
		netMode = spec.Network
		nc = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{spec.Network: {}}}
	}
	hc := hardened(spec.Limits, spec.RuntimeName, netMode, mounts,
		map[string]string{"/tmp": fmt.Sprintf("rw,nosuid,nodev,size=%d,mode=1777", spec.Limits.TmpfsBytes)})
	return cfg, hc, nc
}

// Run implements Runtime. One container per run: created, attached before
// it starts (so no output is missed), waited for, inspected for the OOM
// flag, then force-removed and checked gone.
func (d *Docker) Run(ctx context.Context, spec workspace.ContainerSpec, stdout, stderr io.Writer) (st workspace.ExitStatus, err error) {
	cfg, hc, nc := d.ContainerConfig(spec)
	if err := ValidateContainerConfig(cfg, hc, nc, allowedMounts(spec)); err != nil {
		return st, err
	}
	// Cleanup must happen even when ctx is cancelled (a destroyed
	// workspace, a client that went away).
	bg := context.WithoutCancel(ctx)
	created, err := createUncancelled(ctx, func(cctx context.Context) (container.CreateResponse, error) {
		return d.cli.ContainerCreate(cctx, cfg, hc, nc, nil, "")
	})
	if err != nil {
		return st, cancelledOr(ctx, &errcode.Error{Code: errcode.Internal, Msg: "the Docker Engine refused to create the run's container", Err: err})
	}
	st.ContainerID = created.ID
	defer func() {
		rctx, cancel := context.WithTimeout(bg, 30*time.Second)
		defer cancel()
		if rerr := d.Remove(rctx, created.ID); rerr != nil && err == nil {
			err = rerr
		}
	}()
	if ctx.Err() != nil {
		return st, cancelledOr(ctx, ctx.Err())
	}

	attach, err := d.cli.ContainerAttach(ctx, created.ID, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return st, cancelledOr(ctx, &errcode.Error{Code: errcode.Internal, Msg: "cannot attach to the run's container", Err: err})
	}
	defer attach.Close()
	waitCtx, cancelWait := context.WithCancel(bg)
	defer cancelWait()
	waitC, waitErrC := d.cli.ContainerWait(waitCtx, created.ID, container.WaitConditionNextExit)
	// Subscribed before the start, so no oom event of this container is
	// missed (see oomSettle).
	oomC, _ := d.cli.Events(waitCtx, events.ListOptions{Filters: filters.NewArgs(
		filters.Arg("type", string(events.ContainerEventType)),
		filters.Arg("container", created.ID),
		filters.Arg("event", string(events.ActionOOM)))})
	if err := d.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return st, cancelledOr(ctx, &errcode.Error{Code: errcode.Internal, Msg: "the Docker Engine could not start the run's container", Err: err})
	}
	copyErrC := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, stderr, attach.Reader)
		copyErrC <- err
	}()

	k := &killer{cli: d.cli, bg: bg, id: created.ID, cutStream: attach.Close}
	seen, err := watchRun(ctx, spec.Limits.Timeout, waitC, waitErrC, copyErrC, k)
	st.ExitCode, st.TimedOut, st.OutputStopped = seen.exitCode, seen.timedOut, seen.outputStopped
	if err != nil {
		return st, err
	}
	if !seen.copyDone {
		awaitCopy(copyErrC, attach.Close)
	}
	if state := d.exitState(bg, created.ID); state != nil {
		st.OOMKilled = state.OOMKilled
		if !st.TimedOut && !st.OutputStopped {
			st.ExitCode = state.ExitCode
		}
	}
	if !st.OOMKilled {
		st.OOMKilled = oomReported(oomC, st.ExitCode == 137 && !seen.killed)
	}
	if seen.cancelled != nil {
		return st, &errcode.Error{Code: errcode.Timeout, Msg: "the run was cancelled", Err: seen.cancelled}
	}
	return st, nil
}

func allowedMounts(spec workspace.ContainerSpec) AllowedMounts {
	allow := AllowedMounts{Tree: spec.TreePath, GitDir: spec.GitDirPath, RuntimeName: spec.RuntimeName}
	if spec.Network != "" {
		allow.EgressNetwork = spec.Network
	}
	return allow
}

// killer stops a run's container. Once a kill was sent, the container
// gets killGrace to be gone before it is force-removed; a run never
// outlives its limits by much.
type killer struct {
	cli *client.Client
	bg  context.Context
	id  string
	// cutStream closes the attach stream.
	cutStream func()
	// grace is set by the first kill and fires killGrace after it.
	grace <-chan time.Time
}

func (k *killer) kill() {
	if k.grace != nil {
		return
	}
	k.grace = time.After(killGrace)
	for attempt := 0; attempt < 2; attempt++ {
		kctx, cancel := context.WithTimeout(k.bg, 5*time.Second)
		err := k.cli.ContainerKill(kctx, k.id, "KILL")
		cancel()
		// Killing a container that already exited is a conflict:
		// nothing is left to do.
		if err == nil || cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) {
			return
		}
		// The Engine does not process a kill while it is blocked
		// writing output nobody reads (a stalled OnOutput): cut the
		// stream and try again, then fall back to removal.
		k.cutStream()
	}
	rctx, cancel := context.WithTimeout(k.bg, 10*time.Second)
	defer cancel()
	_ = k.cli.ContainerRemove(rctx, k.id, container.RemoveOptions{Force: true})
}

// runWatch is what watchRun saw of a run until its container exited.
type runWatch struct {
	exitCode      int
	timedOut      bool
	outputStopped bool
	// killed: Sluice sent the container a kill.
	killed bool
	// copyDone: the output copy ended (copyErrC was read).
	copyDone bool
	// cancelled is ctx's error if ctx ended first.
	cancelled error
}

// watchRun waits for a started run's container to exit, killing it at
// its timeout, when ctx ends or when its output was stopped. An error
// means the exit could not be seen.
func watchRun(ctx context.Context, timeout time.Duration, waitC <-chan container.WaitResponse, waitErrC, copyErrC <-chan error, k *killer) (runWatch, error) {
	var seen runWatch
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for exited := false; !exited; {
		select {
		case w := <-waitC:
			exited = true
			seen.exitCode = int(w.StatusCode)
		case err := <-waitErrC:
			return seen, &errcode.Error{Code: errcode.Internal, Msg: "lost track of the run's container", Err: err}
		case <-timer.C:
			seen.timedOut = true
			k.kill()
		case <-ctx.Done():
			if seen.cancelled == nil {
				seen.cancelled = ctx.Err()
				k.kill()
			}
		case <-k.grace:
			return seen, &errcode.Error{Code: errcode.Internal, Msg: "the run's container did not stop after it was killed"}
		case err := <-copyErrC:
			seen.copyDone = true
			copyErrC = nil
			if errors.Is(err, workspace.ErrStopOutput) {
				seen.outputStopped = true
				// Nobody reads the stream any more: close it first, or the
				// Engine blocks writing to it and does not process the kill.
				k.cutStream()
				k.kill()
			}
		}
	}
	seen.killed = k.grace != nil
	return seen, nil
}

// awaitCopy waits for the output copy to end. The attach stream ends when
// the container's stdio closes; a process that left a child holding them
// open is cut off.
func awaitCopy(copyErrC <-chan error, cutStream func()) {
	select {
	case <-copyErrC:
	case <-time.After(5 * time.Second):
		cutStream()
		<-copyErrC
	}
}

// exitState is the exited container's state, or nil if it cannot be
// inspected.
func (d *Docker) exitState(bg context.Context, id string) *container.State {
	ictx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	ins, err := d.cli.ContainerInspect(ictx, id)
	if err != nil {
		return nil
	}
	return ins.State
}

// oomReported reports whether the Engine's event stream carried an oom
// event for the run. When the run died of a SIGKILL Sluice did not send
// (wait), the event may still be on its way and is waited for, for at
// most oomSettle; otherwise only what has already arrived counts.
func oomReported(oomC <-chan events.Message, wait bool) bool {
	if !wait {
		select {
		case _, ok := <-oomC:
			return ok
		default:
			return false
		}
	}
	t := time.NewTimer(oomSettle)
	defer t.Stop()
	select {
	case _, ok := <-oomC:
		return ok
	case <-t.C:
		return false
	}
}

// cancelledOr reports a run whose context ended while the Engine was
// still preparing it as cancelled, not as an Engine failure.
func cancelledOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return &errcode.Error{Code: errcode.Timeout, Msg: "the run was cancelled", Err: ctx.Err()}
	}
	return err
}

// createWait bounds a container's create, which the run's or session's
// context does not cancel (see createUncancelled).
const createWait = 60 * time.Second

// createUncancelled creates a container without letting ctx cancel the
// request: the Engine finishes a create whose caller went away, and that
// container would be left with nobody knowing its id to remove it (a
// workspace destroyed during a run's create found one more container
// after it had removed them all). The caller removes what was created
// and then sees ctx's end.
func createUncancelled(ctx context.Context, create func(context.Context) (container.CreateResponse, error)) (container.CreateResponse, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createWait)
	defer cancel()
	return create(cctx)
}

// runscThreadHeadroom is added to a run's PID limit under runsc (see
// config).
const runscThreadHeadroom = 64

// removeWait bounds how long Remove waits for the Engine to finish a
// removal it accepted; a loaded Engine can take seconds.
const removeWait = 60 * time.Second

// Remove implements Runtime: force-remove, then prove it with an inspect
// that answers not found. A removal that fails in the Engine's own
// clean-up is tried again until removeWait: a loaded Engine that handles a
// container's exit late can fail a removal that races it ("unable to
// remove filesystem …: directory not empty", which leaves the container
// Dead), and the next removal of the Dead container succeeds; so does one
// tried again after a removal already in progress failed. Other errors
// (an Engine that is gone, a refusal) are not tried again.
func (d *Docker) Remove(ctx context.Context, containerID string) error {
	deadline := time.Now().Add(removeWait)
	for try := 0; ; try++ {
		err := d.cli.ContainerRemove(ctx, containerID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || cerrdefs.IsNotFound(err) {
			break
		}
		if !removalRaced(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return &errcode.Error{Code: errcode.Internal, Msg: "the Docker Engine could not remove a workspace container", Err: err}
		}
		if try == 0 {
			slog.Warn("dockerrt: the Engine failed to remove a container; trying again", "container", containerID, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond << min(try, 4)):
		}
	}
	for {
		_, err := d.cli.ContainerInspect(ctx, containerID)
		if cerrdefs.IsNotFound(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return &errcode.Error{Code: errcode.Internal, Msg: "a workspace container is still present after removal", Err: err}
		}
		// Removal of a container that is being removed is in progress.
		select {
		case <-ctx.Done():
			return &errcode.Error{Code: errcode.Internal, Msg: "a workspace container is still present after removal", Err: ctx.Err()}
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// removalRaced reports whether a failed removal is one the Engine's own
// clean-up made fail, which a later removal gets past: its files could
// not be deleted yet (the container is left Dead), or another removal of
// it is under way.
func removalRaced(err error) bool {
	msg := err.Error()
	return cerrdefs.IsConflict(err) || strings.Contains(msg, "unable to remove filesystem") || strings.Contains(msg, "is already in progress")
}

// Containers implements Runtime.
func (d *Docker) Containers(ctx context.Context, storeKey string) ([]workspace.ContainerInfo, error) {
	f := filters.NewArgs(filters.Arg("label", workspace.LabelWorkspace))
	if storeKey != "" {
		f.Add("label", workspace.LabelStore+"="+storeKey)
	}
	list, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, &errcode.Error{Code: errcode.Internal, Msg: "the Docker Engine cannot list workspace containers", Err: err}
	}
	out := make([]workspace.ContainerInfo, 0, len(list))
	for _, c := range list {
		out = append(out, workspace.ContainerInfo{ID: c.ID, WorkspaceID: c.Labels[workspace.LabelWorkspace], RunID: c.Labels[workspace.LabelRun], State: string(c.State)})
	}
	return out, nil
}

// EgressNetwork implements Runtime. The network is internal (Docker gives
// it no route out and drops forwarding to other interfaces), labelled, and
// has a fixed bridge name so that host firewall rules can name it. Its
// gateway address is the host's, where the egress proxy listens.
func (d *Docker) EgressNetwork(ctx context.Context) (workspace.EgressNetwork, error) {
	d.netMu.Lock()
	defer d.netMu.Unlock()
	if d.net != nil {
		return *d.net, nil
	}
	ins, err := d.cli.NetworkInspect(ctx, egressNetName, network.InspectOptions{})
	if cerrdefs.IsNotFound(err) {
		_, cerr := d.cli.NetworkCreate(ctx, egressNetName, network.CreateOptions{
			Driver:   "bridge",
			Internal: true,
			Labels:   map[string]string{workspace.LabelEgress: "1"},
			Options: map[string]string{
				"com.docker.network.bridge.name":                 egressBridgeName,
				"com.docker.network.bridge.enable_icc":           "false",
				"com.docker.network.bridge.enable_ip_masquerade": "false",
			},
		})
		// A conflict: another process created it meanwhile.
		if cerr != nil && !cerrdefs.IsConflict(cerr) {
			return workspace.EgressNetwork{}, &errcode.Error{Code: errcode.Internal, Msg: "the Docker Engine cannot create the egress network", Err: cerr}
		}
		ins, err = d.cli.NetworkInspect(ctx, egressNetName, network.InspectOptions{})
	}
	if err != nil {
		return workspace.EgressNetwork{}, &errcode.Error{Code: errcode.Internal, Msg: "the Docker Engine cannot inspect the egress network", Err: err}
	}
	if !ins.Internal || ins.Labels[workspace.LabelEgress] != "1" {
		return workspace.EgressNetwork{}, &errcode.Error{Code: errcode.Internal, Msg: "a network named " + egressNetName + " exists but is not Sluice's internal egress network"}
	}
	var gw string
	for _, c := range ins.IPAM.Config {
		if ip := net.ParseIP(c.Gateway); ip != nil && ip.To4() != nil {
			gw = c.Gateway
			break
		}
	}
	if gw == "" {
		return workspace.EgressNetwork{}, &errcode.Error{Code: errcode.Internal, Msg: "the egress network has no IPv4 gateway"}
	}
	bridge := ins.Options["com.docker.network.bridge.name"]
	if bridge == "" {
		bridge = "br-" + ins.ID[:12]
	}
	d.net = &workspace.EgressNetwork{Name: egressNetName, Gateway: gw, Bridge: bridge}
	return *d.net, nil
}

// hardened is the host configuration of every container Sluice starts (a
// workspace's run, a confined session's agent): no capabilities, no new
// privileges, a read-only root, private IPC and cgroup namespaces, no log
// driver, no core dumps, and the limits: memory without swap, CPUs no
// more than the machine has, PIDs with runsc's headroom.
func hardened(lim workspace.Limits, runtimeName, netMode string, mounts []mount.Mount, tmpfs map[string]string) *container.HostConfig {
	pids := lim.PIDs
	if runtimeName == "runsc" {
		// Under gVisor the Engine's PID limit counts the sandbox's own
		// host threads as well as the workload's processes, and the
		// sandbox's grow with blocking system calls on a loaded machine.
		// Headroom for them keeps a busy machine from killing a run that
		// stays within its limit; a fork loop still meets it.
		pids = min(pids+runscThreadHeadroom, workspace.HardLimits.PIDs)
	}
	cpus := min(lim.CPUs, float64(runtime.NumCPU()))
	return &container.HostConfig{
		NetworkMode:    container.NetworkMode(netMode),
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		ReadonlyRootfs: true,
		IpcMode:        "private",
		CgroupnsMode:   "private",
		Tmpfs:          tmpfs,
		Mounts:         mounts,
		LogConfig:      container.LogConfig{Type: "none"},
		Runtime:        runtimeName,
		ShmSize:        64 << 20,
		Resources: container.Resources{
			Memory:     lim.MemoryBytes,
			MemorySwap: lim.MemoryBytes,
			NanoCPUs:   int64(cpus * 1e9),
			PidsLimit:  &pids,
			Ulimits:    []*container.Ulimit{{Name: "core", Soft: 0, Hard: 0}},
		},
	}
}
