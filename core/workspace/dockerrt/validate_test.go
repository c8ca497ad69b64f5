package dockerrt

import (
	"github.com/sluicehq/sluice/core/workspace"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"

	"github.com/sluicehq/sluice/core/errcode"
)

func testSpec() workspace.ContainerSpec {
	return workspace.ContainerSpec{
		WorkspaceID: "ws1",
		RunID:       "run1",
		StoreKey:    "store",
		Image:       "sha256:" + strings.Repeat("ab", 32),
		Argv:        []string{"true"},
		Env:         []string{"PATH=/bin", "HOME=/tmp", "LANG=C.UTF-8"},
		User:        "65534:65534",
		TreePath:    "/state/workspaces/ws1/tree",
		GitDirPath:  "/state/workspaces/ws1/git",
		Limits:      workspace.DefaultLimits,
	}
}

func TestValidateContainerConfig_DefaultIsHardened(t *testing.T) {
	spec := testSpec()
	cfg, hc, nc := (&Docker{}).ContainerConfig(spec)
	allow := AllowedMounts{Tree: spec.TreePath, GitDir: spec.GitDirPath}
	if err := ValidateContainerConfig(cfg, hc, nc, allow); err != nil {
		t.Fatalf("the runtime's own configuration is refused: %v", err)
	}
	if hc.NetworkMode != "none" || !hc.ReadonlyRootfs || hc.Privileged || len(hc.CapDrop) != 1 || hc.CapDrop[0] != "ALL" {
		t.Fatalf("not hardened: %+v", hc)
	}
	for _, m := range hc.Mounts {
		if m.Target == workspace.GitMount && !m.ReadOnly {
			t.Fatalf("the repository is mounted writable")
		}
	}
	// With egress, only the egress network is allowed.
	spec.Network = "sluice-egress"
	cfg, hc, nc = (&Docker{}).ContainerConfig(spec)
	allow.EgressNetwork = "sluice-egress"
	if err := ValidateContainerConfig(cfg, hc, nc, allow); err != nil {
		t.Fatalf("egress configuration refused: %v", err)
	}
}

func TestValidateContainerConfig_Refusals(t *testing.T) {
	yes := true
	cases := []struct {
		name   string
		mutate func(*container.Config, *container.HostConfig, **network.NetworkingConfig)
	}{
		{"privileged", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) { h.Privileged = true }},
		{"cap add", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.CapAdd = []string{"NET_ADMIN"}
		}},
		{"caps kept", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.CapDrop = []string{"NET_RAW"}
		}},
		{"host network", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.NetworkMode = "host"
		}},
		{"bridge network", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.NetworkMode = "bridge"
		}},
		{"default network", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) { h.NetworkMode = "" }},
		{"other container's network", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.NetworkMode = "container:abc"
		}},
		{"none plus an endpoint", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			*n = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{"bridge": {}}}
		}},
		{"host pid", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) { h.PidMode = "host" }},
		{"other container's pid", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.PidMode = "container:abc"
		}},
		{"host ipc", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) { h.IpcMode = "host" }},
		{"shareable ipc", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.IpcMode = "shareable"
		}},
		{"host uts", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) { h.UTSMode = "host" }},
		{"host userns", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.UsernsMode = "host"
		}},
		{"host cgroupns", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.CgroupnsMode = "host"
		}},
		{"device", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.Devices = []container.DeviceMapping{{PathOnHost: "/dev/kvm", PathInContainer: "/dev/kvm", CgroupPermissions: "rwm"}}
		}},
		{"device request", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.DeviceRequests = []container.DeviceRequest{{Count: -1}}
		}},
		{"device cgroup rule", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.DeviceCgroupRules = []string{"c *:* rwm"}
		}},
		{"docker.sock bind", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.Binds = []string{"/var/run/docker.sock:/var/run/docker.sock"}
		}},
		{"docker.sock mount", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.Mounts = append(h.Mounts, mount.Mount{Type: mount.TypeBind, Source: "/var/run/docker.sock", Target: "/var/run/docker.sock"})
		}},
		{"docker.sock under the tree's name", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.Mounts[0].Source = "/run/docker.sock"
		}},
		{"host path mount", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.Mounts = append(h.Mounts, mount.Mount{Type: mount.TypeBind, Source: "/home/person/.ssh", Target: "/ssh", ReadOnly: true})
		}},
		{"tree elsewhere", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.Mounts[0].Target = "/"
		}},
		{"parent of the tree", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.Mounts[0].Source = "/state/workspaces/ws1"
		}},
		{"tree missing", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.Mounts = h.Mounts[1:]
		}},
		{"repository writable", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.Mounts[1].ReadOnly = false
		}},
		{"volume", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.Mounts = append(h.Mounts, mount.Mount{Type: mount.TypeVolume, Source: "data", Target: "/data"})
		}},
		{"volumes from", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.VolumesFrom = []string{"other"}
		}},
		{"shared propagation", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.Mounts[0].BindOptions = &mount.BindOptions{Propagation: mount.PropagationRShared}
		}},
		{"root user", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) { c.User = "0:0" }},
		{"root by name", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) { c.User = "root" }},
		{"root group", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) { c.User = "1000:0" }},
		{"no user", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) { c.User = "" }},
		{"writable root", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.ReadonlyRootfs = false
		}},
		{"no no-new-privileges", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) { h.SecurityOpt = nil }},
		{"seccomp unconfined", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.SecurityOpt = append(h.SecurityOpt, "seccomp=unconfined")
		}},
		{"apparmor unconfined", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.SecurityOpt = append(h.SecurityOpt, "apparmor:unconfined")
		}},
		{"unmasked proc", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.MaskedPaths = []string{}
		}},
		{"no memory limit", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) { h.Memory = 0 }},
		{"swap", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) { h.MemorySwap = -1 }},
		{"oom killer off", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.OomKillDisable = &yes
		}},
		{"no pid limit", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) { h.PidsLimit = nil }},
		{"no cpu limit", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) { h.NanoCPUs = 0 }},
		{"tmpfs elsewhere", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.Tmpfs["/etc"] = "size=1m"
		}},
		{"unbounded tmpfs", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.Tmpfs["/tmp"] = "rw"
		}},
		{"published port", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.PublishAllPorts = true
		}},
		{"extra host", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.ExtraHosts = []string{"host.docker.internal:host-gateway"}
		}},
		{"sysctl", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.Sysctls = map[string]string{"net.ipv4.ip_forward": "1"}
		}},
		{"log driver", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.LogConfig.Type = "json-file"
		}},
		{"restart", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			h.RestartPolicy.Name = "always"
		}},
		{"other runtime", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) { h.Runtime = "kata" }},
		{"image by tag", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			c.Image = "busybox:latest"
		}},
		{"entrypoint", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			c.Entrypoint = []string{"/bin/sh", "-c"}
		}},
		{"tty", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) { c.Tty = true }},
		{"docker host env", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) {
			c.Env = append(c.Env, "DOCKER_HOST=unix:///var/run/docker.sock")
		}},
		{"cgroup parent", func(c *container.Config, h *container.HostConfig, n **network.NetworkingConfig) { h.CgroupParent = "/" }},
	}
	spec := testSpec()
	allow := AllowedMounts{Tree: spec.TreePath, GitDir: spec.GitDirPath}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, hc, nc := (&Docker{}).ContainerConfig(spec)
			tc.mutate(cfg, hc, &nc)
			err := ValidateContainerConfig(cfg, hc, nc, allow)
			if err == nil {
				t.Fatalf("accepted")
			}
			if !errcode.IsCode(err, errcode.InvalidArgument) || !strings.HasPrefix(err.Error(), "container configuration refused") {
				t.Fatalf("error %v (code %s), want a refusal", err, errcode.Of(err))
			}
		})
	}
	t.Run("egress network not granted", func(t *testing.T) {
		s := testSpec()
		s.Network = "sluice-egress"
		cfg, hc, nc := (&Docker{}).ContainerConfig(s)
		if err := ValidateContainerConfig(cfg, hc, nc, allow); err == nil {
			t.Fatalf("a network was accepted without an egress grant")
		}
	})
}
