//go:build unix

package dockerrt

import (
	"bytes"
	"context"
	"github.com/sluicehq/sluice/core/workspace"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"

	"github.com/sluicehq/sluice/core/errcode"
)

func sessionSpec(image string, binds []workspace.SessionBind, cmd ...string) workspace.SessionContainerSpec {
	return workspace.SessionContainerSpec{
		Session: "0123456789abcdef0123456789abcdef", Image: image, RuntimeName: testRuntime, User: "65534:65534",
		Cmd: cmd, Env: []string{"HOME=/tmp", "PATH=/bin"}, WorkingDir: "/", Binds: binds,
		Limits: workspace.Limits{MemoryBytes: 256 << 20, CPUs: 1, PIDs: 128, TmpfsBytes: 64 << 20},
	}
}

func TestValidateSessionContainer_Refusals(t *testing.T) {
	img := "sha256:" + strings.Repeat("a", 64)
	binds := []workspace.SessionBind{{Source: "/srv/copy", Target: "/home/p/src/shop"}, {Source: "/srv/objects", Target: "/home/p/src/shop/.git/sluice-origin", ReadOnly: true}}
	cases := map[string]func(*container.Config, *container.HostConfig){
		"image by name":    func(c *container.Config, _ *container.HostConfig) { c.Image = "busybox:latest" },
		"root":             func(c *container.Config, _ *container.HostConfig) { c.User = "0:0" },
		"an entrypoint":    func(c *container.Config, _ *container.HostConfig) { c.Entrypoint = []string{"/bin/sh", "-c"} },
		"DOCKER_HOST":      func(c *container.Config, _ *container.HostConfig) { c.Env = append(c.Env, "DOCKER_HOST=unix:///x") },
		"privileged":       func(_ *container.Config, h *container.HostConfig) { h.Privileged = true },
		"a capability":     func(_ *container.Config, h *container.HostConfig) { h.CapAdd = []string{"SYS_ADMIN"} },
		"the host network": func(_ *container.Config, h *container.HostConfig) { h.NetworkMode = "host" },
		"a bridge":         func(_ *container.Config, h *container.HostConfig) { h.NetworkMode = "bridge" },
		"the host pid":     func(_ *container.Config, h *container.HostConfig) { h.PidMode = "host" },
		"a device": func(_ *container.Config, h *container.HostConfig) {
			h.Devices = []container.DeviceMapping{{PathOnHost: "/dev/kvm"}}
		},
		"a -v bind": func(_ *container.Config, h *container.HostConfig) { h.Binds = []string{"/:/host"} },
		"the docker socket": func(_ *container.Config, h *container.HostConfig) {
			h.Mounts = append(h.Mounts, bindMount("/var/run/docker.sock", "/run/d.sock", false))
		},
		"an unnamed path": func(_ *container.Config, h *container.HostConfig) {
			h.Mounts = append(h.Mounts, bindMount("/home/p/.ssh", "/home/p/.ssh", true))
		},
		"objects writable": func(_ *container.Config, h *container.HostConfig) { h.Mounts[1].ReadOnly = false },
		"a moved target":   func(_ *container.Config, h *container.HostConfig) { h.Mounts[0].Target = "/elsewhere" },
		"shared propagation": func(_ *container.Config, h *container.HostConfig) {
			h.Mounts[0].BindOptions = &mount.BindOptions{Propagation: mount.PropagationRShared}
		},
		"a volume": func(_ *container.Config, h *container.HostConfig) {
			h.Mounts = append(h.Mounts, mount.Mount{Type: mount.TypeVolume, Target: "/v"})
		},
		"tmpfs elsewhere": func(_ *container.Config, h *container.HostConfig) { h.Tmpfs["/home/p"] = "rw" },
		"a log driver":    func(_ *container.Config, h *container.HostConfig) { h.LogConfig.Type = "json-file" },
		"a restart policy": func(_ *container.Config, h *container.HostConfig) {
			h.RestartPolicy.Name = container.RestartPolicyAlways
		},
		"no memory limit":     func(_ *container.Config, h *container.HostConfig) { h.Memory = 0 },
		"no pids limit":       func(_ *container.Config, h *container.HostConfig) { h.PidsLimit = nil },
		"a relative cwd":      func(c *container.Config, _ *container.HostConfig) { c.WorkingDir = "src" },
		"no command":          func(c *container.Config, _ *container.HostConfig) { c.Cmd = nil },
		"writable root":       func(_ *container.Config, h *container.HostConfig) { h.ReadonlyRootfs = false },
		"an anonymous volume": func(c *container.Config, _ *container.HostConfig) { c.Volumes = map[string]struct{}{"/data": {}} },
		"a health check": func(c *container.Config, _ *container.HostConfig) {
			c.Healthcheck = &container.HealthConfig{Test: []string{"CMD", "true"}}
		},
	}
	cfg, hc := sessionConfig(sessionSpec(img, binds, "/run/sluice/bin/sluice-sidecar", "sandbox-init", "--", "claude"))
	if err := ValidateSessionContainer(cfg, hc, binds); err != nil {
		t.Fatalf("the session's own configuration is refused: %v", err)
	}
	for name, mutate := range cases {
		cfg, hc := sessionConfig(sessionSpec(img, binds, "/run/sluice/bin/sluice-sidecar", "sandbox-init", "--", "claude"))
		mutate(cfg, hc)
		err := ValidateSessionContainer(cfg, hc, binds)
		if !errcode.IsCode(err, errcode.InvalidArgument) || !strings.HasPrefix(err.Error(), "container configuration refused") {
			t.Errorf("%s: got %v (code %q), want a refusal", name, err, errcode.Of(err))
		}
	}
}

func bindMount(src, dst string, ro bool) mount.Mount {
	return mount.Mount{Type: mount.TypeBind, Source: src, Target: dst, ReadOnly: ro}
}

// TestSessionContainer_SeesOnlyItsBinds runs a session's container on the
// real Engine (and, in the re-run, under runsc): it sees exactly its binds,
// writes only where a bind is writable, is not root, has no network but
// loopback, gets its stdin and gives back its exit code; Remove leaves
// nothing, and RemoveSessionContainers finds one by its label.
func TestSessionContainer_SeesOnlyItsBinds(t *testing.T) {
	d := needDocker(t)
	img := needImage(t, d)
	base := t.TempDir()
	rw, ro := filepath.Join(base, "rw"), filepath.Join(base, "ro")
	for _, dir := range []string{rw, ro} {
		if err := os.MkdirAll(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o777)
	}
	if err := os.WriteFile(filepath.Join(ro, "given"), []byte("read-only content\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	binds := []workspace.SessionBind{{Source: rw, Target: "/work/copy"}, {Source: ro, Target: "/work/copy/ro", ReadOnly: true}}
	script := `read line; echo "stdin: $line"; id -u; cat /work/copy/ro/given; echo made > /work/copy/made;
echo x > /work/copy/ro/planted 2>/dev/null && echo RO-WRITABLE; ls /var/run/docker.sock /run/docker.sock 2>&1 | grep -v 'No such' ;
ls ` + base + ` 2>/dev/null && echo HOST-PATH-SEEN; cat /proc/net/dev | grep -c : ; exit 7`
	var out, errOut syncBuf
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := d.StartSession(ctx, sessionSpec(img, binds, "sh", "-c", script), strings.NewReader("hello\n"), &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	code, err := run.Wait()
	if err != nil || code != 7 {
		t.Fatalf("exit %d (%v), want 7:\n%s\n%s", code, err, out.String(), errOut.String())
	}
	got := out.String()
	for _, want := range []string{"stdin: hello", "65534", "read-only content"} {
		if !strings.Contains(got, want) {
			t.Errorf("the container printed no %q:\n%s\n%s", want, got, errOut.String())
		}
	}
	for _, bad := range []string{"RO-WRITABLE", "docker.sock", "HOST-PATH-SEEN"} {
		if strings.Contains(got, bad) {
			t.Errorf("the container printed %q:\n%s", bad, got)
		}
	}
	// Only loopback: /proc/net/dev lists the header's two lines and lo.
	if lines := strings.Fields(got); lines[len(lines)-1] != "1" {
		t.Errorf("interfaces other than loopback:\n%s", got)
	}
	if b, err := os.ReadFile(filepath.Join(rw, "made")); err != nil || string(b) != "made\n" {
		t.Errorf("the writable bind did not take the write: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(ro, "planted")); err == nil {
		t.Errorf("the read-only bind took a write")
	}
	if err := run.Remove(); err != nil {
		t.Fatal(err)
	}
	if left := sessionContainers(t, d, "0123456789abcdef0123456789abcdef"); left != 0 {
		t.Fatalf("%d containers left after Remove", left)
	}

	// A launcher that died left one running: the app removes it by label.
	spec := sessionSpec(img, nil, "sleep", "600")
	spec.Session = "fedcba9876543210fedcba9876543210"
	left, err := d.StartSession(ctx, spec, nil, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	_ = left
	if n := sessionContainers(t, d, spec.Session); n != 1 {
		t.Fatalf("%d containers of the session run, want 1", n)
	}
	if err := d.RemoveSessionContainers(ctx, spec.Session); err != nil {
		t.Fatal(err)
	}
	if n := sessionContainers(t, d, spec.Session); n != 0 {
		t.Fatalf("%d containers of the session left after RemoveSessionContainers", n)
	}
}

func sessionContainers(t *testing.T, d *Docker, id string) int {
	t.Helper()
	list, err := d.cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelSession+"="+id))})
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
