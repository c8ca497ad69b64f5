package dockerrt

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
)

// A confined session's agent in a container (`sluice run --runtime
// docker|runsc`): the workspace image, under the Engine's default runtime
// or gVisor for a kernel of its own, with the same hardening as a run (no
// capabilities, no-new-privileges, a read-only root, limits, no network,
// no log driver) and exactly the host paths the session names: its copy,
// the person's objects (read-only), its confined HOME, the allowed roots
// and the agent's own install (read-only), Sluice's sidecar binary and the
// session's two sockets. Unlike a run it has the person's terminal (or
// stdin), and it lives as long as the agent does.

// LabelSession marks a session's container with the session's id, so the
// app can stop what a launcher that died left running.
const LabelSession = "dev.sluice.session"

// sessionConfig turns a spec into Engine API configuration.
func sessionConfig(s workspace.SessionContainerSpec) (*container.Config, *container.HostConfig) {
	cfg := &container.Config{
		Image: s.Image, Cmd: slices.Clone(s.Cmd), Entrypoint: []string{""}, Env: slices.Clone(s.Env),
		User: s.User, WorkingDir: s.WorkingDir, Hostname: "sluice-session",
		Labels:       map[string]string{LabelSession: s.Session},
		Tty:          s.TTY,
		OpenStdin:    true,
		StdinOnce:    true,
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
	}
	var mounts []mount.Mount
	for _, b := range s.Binds {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: b.Source, Target: b.Target, ReadOnly: b.ReadOnly,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	}
	hc := hardened(s.Limits, s.RuntimeName, "none", mounts, map[string]string{
		"/tmp": fmt.Sprintf("rw,nosuid,nodev,size=%d,mode=1777", s.Limits.TmpfsBytes),
		// The sockets are bound under /run/sluice, on this tmpfs.
		"/run": "rw,nosuid,nodev,size=1048576,mode=755",
	})
	// The agent's first look at its terminal sees the person's size.
	hc.ConsoleSize = [2]uint{s.Rows, s.Cols}
	return cfg, hc
}

// ValidateSessionContainer checks a session's container as
// ValidateContainerConfig checks a run's: the same refusals of privilege,
// host namespaces, devices, the Docker socket and unlimited resources; no
// network at all; and host paths only those binds names (allow).
func ValidateSessionContainer(cfg *container.Config, hc *container.HostConfig, allow []workspace.SessionBind) error {
	if cfg == nil || hc == nil {
		return refusal("the container configuration is incomplete")
	}
	if err := checkSessionConfig(cfg); err != nil {
		return err
	}
	if err := checkPrivilege(hc); err != nil {
		return err
	}
	if err := checkNamespaces(hc, nil, ""); err != nil {
		return err
	}
	if hc.NetworkMode != "none" {
		return refusal("a session's container has no network")
	}
	if len(hc.Devices) != 0 || len(hc.DeviceRequests) != 0 || len(hc.Binds) != 0 || len(hc.VolumesFrom) != 0 || hc.VolumeDriver != "" {
		return refusal("devices, binds and volumes are refused; only the session's mounts are allowed")
	}
	if err := checkSessionMounts(hc, allow); err != nil {
		return err
	}
	return checkResources(hc)
}

// checkSessionConfig is ValidateSessionContainer's check of what runs: an
// image by ID, an unprivileged user, the session's own command in an
// absolute directory, nothing exposed or triggered, and an environment
// that does not point at the Docker socket.
func checkSessionConfig(cfg *container.Config) error {
	if !workspace.ValidImageID(cfg.Image) {
		return refusal("the image must be given by ID (sha256:…)")
	}
	if err := checkUser(cfg.User); err != nil {
		return err
	}
	if len(cfg.Cmd) == 0 || (len(cfg.Entrypoint) != 0 && !(len(cfg.Entrypoint) == 1 && cfg.Entrypoint[0] == "")) {
		return refusal("the command is the session's own, with no entrypoint around it")
	}
	if !filepath.IsAbs(cfg.WorkingDir) {
		return refusal("the working directory must be absolute")
	}
	if len(cfg.Volumes) != 0 || len(cfg.ExposedPorts) != 0 || cfg.Healthcheck != nil || len(cfg.OnBuild) != 0 {
		return refusal("volumes, exposed ports, health checks and build triggers are refused")
	}
	return checkSessionEnv(cfg.Env)
}

// checkSessionEnv refuses a malformed environment entry and any that
// points at the Docker socket.
func checkSessionEnv(env []string) error {
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !workspace.ValidEnvName(k) || k == "DOCKER_HOST" || strings.Contains(kv, "docker.sock") {
			return refusal("an environment entry is malformed or points at the Docker socket")
		}
	}
	return nil
}

// checkSessionBind allows m only when it is one of the binds the session
// names, privately propagated.
func checkSessionBind(m mount.Mount, allow []workspace.SessionBind) error {
	if m.Type != mount.TypeBind || strings.Contains(m.Source, "docker.sock") || strings.Contains(m.Target, "docker.sock") {
		return refusal("only the session's bind mounts are allowed, never the Docker socket")
	}
	if !slices.ContainsFunc(allow, func(b workspace.SessionBind) bool {
		return filepath.Clean(b.Source) == filepath.Clean(m.Source) && b.Target == m.Target && (b.ReadOnly == m.ReadOnly || m.ReadOnly)
	}) {
		return refusal("host path %s is not one the session names", m.Target)
	}
	if m.BindOptions != nil && m.BindOptions.Propagation != "" && m.BindOptions.Propagation != mount.PropagationRPrivate && m.BindOptions.Propagation != mount.PropagationPrivate {
		return refusal("mount propagation must be private")
	}
	return nil
}

// checkSessionMounts allows only the binds the session names (read-only
// where it says so), privately propagated, and never the Docker socket;
// tmpfs at /tmp and /run; no ID file, log driver or restart.
func checkSessionMounts(hc *container.HostConfig, allow []workspace.SessionBind) error {
	for _, m := range hc.Mounts {
		if err := checkSessionBind(m, allow); err != nil {
			return err
		}
	}
	for target := range hc.Tmpfs {
		if target != "/tmp" && target != "/run" {
			return refusal("tmpfs is allowed at /tmp and /run only")
		}
	}
	if hc.ContainerIDFile != "" || hc.LogConfig.Type != "none" || (hc.RestartPolicy.Name != "" && hc.RestartPolicy.Name != container.RestartPolicyDisabled) {
		return refusal("no ID file, log driver or restart")
	}
	return nil
}

// SessionContainer is a session's container that runs.
type SessionContainer struct {
	d      *Docker
	id     string
	tty    bool
	closed chan struct{}
}

// StartSession creates, attaches to and starts a session's container, with
// in, out and errOut as its streams (with TTY, in and out are the
// terminal's, raw).
func (d *Docker) StartSession(ctx context.Context, s workspace.SessionContainerSpec, in io.Reader, out, errOut io.Writer) (*SessionContainer, error) {
	cfg, hc := sessionConfig(s)
	if err := ValidateSessionContainer(cfg, hc, s.Binds); err != nil {
		return nil, err
	}
	created, err := createUncancelled(ctx, func(cctx context.Context) (container.CreateResponse, error) {
		return d.cli.ContainerCreate(cctx, cfg, hc, nil, nil, "")
	})
	if err != nil {
		return nil, &errcode.Error{Code: errcode.Internal, Msg: "the Docker Engine refused to create the session's container: " + err.Error(), Err: err}
	}
	c := &SessionContainer{d: d, id: created.ID, tty: s.TTY, closed: make(chan struct{})}
	if err := ctx.Err(); err != nil {
		c.Remove()
		return nil, &errcode.Error{Code: errcode.Timeout, Msg: "the session was cancelled while its container was created", Err: err}
	}
	attach, err := d.cli.ContainerAttach(ctx, created.ID, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		c.Remove()
		return nil, &errcode.Error{Code: errcode.Internal, Msg: "cannot attach to the session's container", Err: err}
	}
	if err := d.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		attach.Close()
		c.Remove()
		return nil, &errcode.Error{Code: errcode.Internal, Msg: "the Docker Engine could not start the session's container: " + err.Error(), Err: err}
	}
	go func() {
		if in != nil {
			io.Copy(attach.Conn, in)
		}
		attach.CloseWrite()
	}()
	go func() {
		defer close(c.closed)
		defer attach.Close()
		if s.TTY {
			io.Copy(out, attach.Reader)
			return
		}
		stdcopy.StdCopy(out, errOut, attach.Reader)
	}()
	return c, nil
}

// Wait waits for the container to exit and returns its exit code.
func (c *SessionContainer) Wait() (int, error) {
	waitC, errC := c.d.cli.ContainerWait(context.Background(), c.id, container.WaitConditionNotRunning)
	select {
	case w := <-waitC:
		// What it printed last reaches the person before the code does:
		// the attached stream ends once the container is gone (the bound
		// is for an Engine that never closes it).
		select {
		case <-c.closed:
		case <-time.After(time.Minute):
		}
		return int(w.StatusCode), nil
	case err := <-errC:
		return 1, &errcode.Error{Code: errcode.Internal, Msg: "waiting for the session's container failed", Err: err}
	}
}

// Signal sends sig to the container's first process (sandbox-init).
func (c *SessionContainer) Signal(sig string) error {
	return c.d.cli.ContainerKill(context.Background(), c.id, sig)
}

// Resize gives the container's terminal a size.
func (c *SessionContainer) Resize(rows, cols uint) error {
	if !c.tty {
		return nil
	}
	return c.d.cli.ContainerResize(context.Background(), c.id, container.ResizeOptions{Height: rows, Width: cols})
}

// Remove removes the container (killing it if it runs).
func (c *SessionContainer) Remove() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.d.Remove(ctx, c.id)
}

// RemoveSessionContainers removes every container of session id: what a
// launcher that died left running.
func (d *Docker) RemoveSessionContainers(ctx context.Context, id string) error {
	list, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelSession+"="+id))})
	if err != nil {
		return &errcode.Error{Code: errcode.Internal, Msg: "cannot list the session's containers", Err: err}
	}
	for _, c := range list {
		if err := d.Remove(ctx, c.ID); err != nil {
			return err
		}
	}
	return nil
}
