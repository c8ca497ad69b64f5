package dockerrt

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
)

// AllowedMounts is what a workspace container may see of the host: its
// own tree (read-write), its repository (read-only) and, for granted runs,
// the egress network.
type AllowedMounts struct {
	Tree          string
	GitDir        string
	EgressNetwork string
	RuntimeName   string
}

// ValidateContainerConfig is the last gate before the Engine API: every
// container configuration Sluice creates passes through it, so a bug
// elsewhere cannot produce a container that is privileged, shares a host
// namespace, sees a device, a host path other than its workspace, or the
// Docker socket, runs as root, keeps a capability or has no limits. It
// checks the whole configuration, not just what Sluice sets today.
func ValidateContainerConfig(cfg *container.Config, hc *container.HostConfig, nc *network.NetworkingConfig, allow AllowedMounts) error {
	if cfg == nil || hc == nil {
		return refusal("the container configuration is incomplete")
	}
	if err := checkProcess(cfg); err != nil {
		return err
	}
	if err := checkPrivilege(hc); err != nil {
		return err
	}
	if err := checkNamespaces(hc, nc, allow.EgressNetwork); err != nil {
		return err
	}
	if err := checkHostAccess(hc, allow); err != nil {
		return err
	}
	if err := checkResources(hc); err != nil {
		return err
	}
	if hc.Runtime != "" && hc.Runtime != allow.RuntimeName {
		return refusal("runtime %q is not the configured one", hc.Runtime)
	}
	return nil
}

// checkProcess checks the image and what runs from it, as whom.
func checkProcess(cfg *container.Config) error {
	if !workspace.ValidImageID(cfg.Image) {
		return refusal("the image must be given by ID (sha256:…)")
	}
	if err := checkUser(cfg.User); err != nil {
		return err
	}
	if len(cfg.Cmd) == 0 {
		return refusal("the command is empty")
	}
	if len(cfg.Entrypoint) != 0 && !(len(cfg.Entrypoint) == 1 && cfg.Entrypoint[0] == "") {
		return refusal("an entrypoint must not wrap the command")
	}
	if cfg.Tty || cfg.OpenStdin || cfg.AttachStdin {
		return refusal("no terminal or stdin is attached to a run")
	}
	if len(cfg.Volumes) != 0 || len(cfg.ExposedPorts) != 0 || cfg.Healthcheck != nil || len(cfg.OnBuild) != 0 {
		return refusal("volumes, ports, health checks and build triggers are not allowed")
	}
	if cfg.WorkingDir != workspace.WorkspaceMount {
		return refusal("the working directory must be " + workspace.WorkspaceMount)
	}
	for _, kv := range cfg.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !workspace.ValidEnvName(k) {
			return refusal("an environment entry is malformed")
		}
		if k == "DOCKER_HOST" || strings.Contains(kv, "docker.sock") {
			return refusal("the environment must not point at the Docker socket")
		}
	}
	return nil
}

func checkPrivilege(hc *container.HostConfig) error {
	if hc.Privileged {
		return refusal("privileged mode is refused")
	}
	if len(hc.CapAdd) != 0 {
		return refusal("no capability may be added")
	}
	if !hasFold(hc.CapDrop, "ALL") {
		return refusal("every capability must be dropped (CapDrop ALL)")
	}
	if err := checkSecurityOpts(hc.SecurityOpt); err != nil {
		return err
	}
	if !hc.ReadonlyRootfs {
		return refusal("the root filesystem must be read-only")
	}
	if hc.MaskedPaths != nil || hc.ReadonlyPaths != nil {
		// nil keeps Docker's defaults; an empty list would unmask /proc.
		return refusal("masked and read-only paths must keep Docker's defaults")
	}
	if hc.UsernsMode.IsHost() {
		return refusal("the host user namespace is refused")
	}
	return nil
}

// checkSecurityOpts requires no-new-privileges and refuses options that
// turn a confinement off.
func checkSecurityOpts(opts []string) error {
	nnp := false
	for _, o := range opts {
		lo := strings.ToLower(strings.ReplaceAll(o, ":", "="))
		switch {
		case lo == "no-new-privileges" || lo == "no-new-privileges=true":
			nnp = true
		case strings.HasPrefix(lo, "seccomp=unconfined"), strings.HasPrefix(lo, "apparmor=unconfined"),
			strings.HasPrefix(lo, "label=disable"), strings.HasPrefix(lo, "systempaths=unconfined"),
			strings.HasPrefix(lo, "no-new-privileges=false"):
			return refusal("security option %q is refused", o)
		case strings.HasPrefix(lo, "seccomp="):
			return refusal("a custom seccomp profile is refused")
		}
	}
	if !nnp {
		return refusal("no-new-privileges must be set")
	}
	return nil
}

// checkNamespaces requires the container's own namespaces, and a network
// that is none or the egress network.
func checkNamespaces(hc *container.HostConfig, nc *network.NetworkingConfig, egressNetwork string) error {
	if hc.PidMode != "" && hc.PidMode != "private" {
		return refusal("the PID namespace must be the container's own")
	}
	switch hc.IpcMode {
	case "", "private", "none":
	default:
		return refusal("the IPC namespace must be the container's own")
	}
	if hc.UTSMode != "" {
		return refusal("the UTS namespace must be the container's own")
	}
	if hc.CgroupnsMode != "" && hc.CgroupnsMode != "private" {
		return refusal("the cgroup namespace must be the container's own")
	}
	if hc.Cgroup != "" || hc.CgroupParent != "" {
		return refusal("the container must not join another cgroup")
	}
	if err := checkNetwork(hc.NetworkMode, nc, egressNetwork); err != nil {
		return err
	}
	if len(hc.PortBindings) != 0 || hc.PublishAllPorts || len(hc.Links) != 0 || len(hc.ExtraHosts) != 0 ||
		len(hc.DNS) != 0 || len(hc.DNSOptions) != 0 || len(hc.DNSSearch) != 0 {
		return refusal("ports, links, extra hosts and DNS settings are not allowed")
	}
	if len(hc.Sysctls) != 0 {
		return refusal("sysctls are not allowed")
	}
	return nil
}

func checkNetwork(mode container.NetworkMode, nc *network.NetworkingConfig, egressNetwork string) error {
	switch string(mode) {
	case "none":
		if nc != nil && len(nc.EndpointsConfig) != 0 {
			return refusal("a container without network must not join networks")
		}
	case "":
		return refusal("the network mode must be set explicitly")
	default:
		if egressNetwork == "" || string(mode) != egressNetwork {
			return refusal("network mode %q is refused; only none or the egress network are allowed", mode)
		}
		if nc != nil {
			for name := range nc.EndpointsConfig {
				if name != egressNetwork {
					return refusal("only the egress network may be joined")
				}
			}
		}
	}
	return nil
}

// checkHostAccess refuses devices, every host path but the workspace's
// own mounts, and what would leave the run behind on the host: a log, an
// ID file, a restart.
func checkHostAccess(hc *container.HostConfig, allow AllowedMounts) error {
	if len(hc.Devices) != 0 || len(hc.DeviceRequests) != 0 || len(hc.DeviceCgroupRules) != 0 {
		return refusal("devices are refused")
	}
	if len(hc.Binds) != 0 || len(hc.VolumesFrom) != 0 || hc.VolumeDriver != "" {
		return refusal("binds and volumes are refused; only the workspace mounts are allowed")
	}
	if err := checkMounts(hc.Mounts, allow); err != nil {
		return err
	}
	for target, opts := range hc.Tmpfs {
		if target != "/tmp" {
			return refusal("tmpfs is allowed at /tmp only")
		}
		if !strings.Contains(opts, "size=") {
			return refusal("the tmpfs at /tmp must have a size limit")
		}
	}
	if hc.ContainerIDFile != "" {
		return refusal("a container ID file is a host path")
	}
	if hc.LogConfig.Type != "none" {
		// Output is captured (and redacted) by Sluice; a log driver would
		// keep an unredacted copy on the host.
		return refusal("the log driver must be none")
	}
	if hc.RestartPolicy.Name != "" && hc.RestartPolicy.Name != container.RestartPolicyDisabled {
		return refusal("a run must not restart")
	}
	return nil
}

func checkResources(hc *container.HostConfig) error {
	if hc.Memory <= 0 || hc.Memory > workspace.HardLimits.MemoryBytes {
		return refusal("a memory limit within %d bytes is required", workspace.HardLimits.MemoryBytes)
	}
	if hc.MemorySwap != hc.Memory {
		return refusal("swap must not extend the memory limit")
	}
	if hc.OomKillDisable != nil && *hc.OomKillDisable {
		return refusal("the OOM killer must stay enabled")
	}
	if hc.PidsLimit == nil || *hc.PidsLimit <= 0 || *hc.PidsLimit > workspace.HardLimits.PIDs {
		return refusal("a PID limit within %d is required", workspace.HardLimits.PIDs)
	}
	if hc.NanoCPUs <= 0 || float64(hc.NanoCPUs) > workspace.HardLimits.CPUs*1e9 {
		return refusal("a CPU limit is required")
	}
	return nil
}

func checkMounts(ms []mount.Mount, allow AllowedMounts) error {
	if allow.Tree == "" || !filepath.IsAbs(allow.Tree) {
		return refusal("the workspace tree is not known")
	}
	sawTree := false
	for _, m := range ms {
		if m.Type != mount.TypeBind {
			return refusal("only bind mounts of the workspace are allowed")
		}
		if strings.Contains(m.Source, "docker.sock") || strings.Contains(m.Target, "docker.sock") {
			return refusal("the Docker socket must never be mounted")
		}
		src := filepath.Clean(m.Source)
		switch {
		case src == filepath.Clean(allow.Tree) && m.Target == workspace.WorkspaceMount && !m.ReadOnly:
			sawTree = true
		case allow.GitDir != "" && src == filepath.Clean(allow.GitDir) && m.Target == workspace.GitMount && m.ReadOnly:
		default:
			return refusal("host path mounts are refused except the workspace tree (read-write) and its repository (read-only)")
		}
		if m.BindOptions != nil && (m.BindOptions.Propagation != "" && m.BindOptions.Propagation != mount.PropagationRPrivate && m.BindOptions.Propagation != mount.PropagationPrivate) {
			return refusal("mount propagation must be private")
		}
	}
	if !sawTree {
		return refusal("the workspace tree must be mounted at " + workspace.WorkspaceMount)
	}
	return nil
}

// checkUser accepts numeric uid:gid (or uid) other than root. Names are
// refused: what a name means is decided by the image's /etc/passwd.
func checkUser(u string) error {
	if u == "" {
		return refusal("the container user must be set (non-root uid:gid)")
	}
	uid, gid, hasGID := strings.Cut(u, ":")
	parts := []string{uid}
	if hasGID {
		parts = append(parts, gid)
	}
	for _, part := range parts {
		n, err := strconv.ParseUint(part, 10, 32)
		if err != nil {
			return refusal("the container user must be numeric uid:gid")
		}
		if n == 0 {
			return refusal("the container must not run as root or in the root group")
		}
	}
	return nil
}

func hasFold(list []string, want string) bool {
	for _, s := range list {
		if strings.EqualFold(s, want) {
			return true
		}
	}
	return false
}

func refusal(format string, a ...any) *errcode.Error {
	return &errcode.Error{Code: errcode.InvalidArgument, Msg: "container configuration refused: " + fmt.Sprintf(format, a...)}
}
