// Package workspace owns disposable, isolated workspaces: importing trusted
// source, scoped file access, runs and their evidence, and sealing a
// workspace's commits into a proposal. What executes a run is a Runtime:
// the Docker Engine's is package dockerrt (and a Kubernetes one package
// kube); this package links neither, so the sidecar, which reaches the
// runtime through the app's gateway, carries no container client.
//
// # Life of a workspace
//
// Manager.Create imports a source (a repository at an exact commit, a
// defended snapshot of a directory, or an empty tree). Agents then use the
// file tools (ReadFile, WriteFile, EditFile, ListFiles, Glob, Grep) and Run,
// which executes an argv in a fresh container. Diff shows the change against
// the base commit, Commit records it inside the workspace, Seal runs the
// handoff checks and closes the workspace, and FetchInto moves the commits
// into the person's repository under refs/sluice/ for the executor. Destroy
// (or Expire, for idle leases) removes everything and verifies it.
// Reconcile cleans up after a crash.
//
// # Layout and durability
//
// Each workspace is a directory under <StateDir>/workspaces/<id>: meta.json
// (replaced atomically: a crash leaves the old or the new metadata), a lock
// file (flock: concurrent operations get ErrLocked, across processes too),
// secrets.json (sealed), runs/ (evidence, output redacted), git/ (the
// repository) and tree/ (the files). A workspace left in state "creating"
// or "destroying" by a crash is removed by Reconcile.
//
// A runtime that cannot mount tree/ (a Kubernetes pod) carries it as tar:
// PackTree before a run, ReplaceTree after it, which reads the pod's
// archive as hostile and swaps a staged copy in with one
// renameat2(RENAME_EXCHANGE); a crash leaves tree/ old or new and at most
// one sibling tree.sluice-replace-*, which Reconcile removes (see
// tree_archive.go).
//
// # Isolation choices
//
// The repository lives beside the tree, not in it: the container sees it
// read-only at /workspace/.git and can never write its config or hooks, so
// Sluice's own git, which later diffs and commits the tree on the host, runs
// nothing the container planted. That git also runs with an environment
// built from nothing, no global or system config and hooks, fsmonitor,
// credential helpers and transports switched off.
//
// The container runs as a non-root user that owns the tree. When Sluice runs
// as an ordinary user, that is Sluice's own uid:gid (the tree is already
// theirs and nothing can be given away). When Sluice runs as root, the tree
// and repository are handed to 65534:65534 (nobody) or the configured user.
//
// Every container configuration passes dockerrt.ValidateContainerConfig
// before it reaches the Engine: no privilege, capabilities, host namespaces, devices,
// host paths other than the workspace, or Docker socket; read-only root,
// no-new-privileges, memory, CPU and PID limits, no network (or only the
// egress network), no log driver. The image is pinned by ID and checked
// with ImageInspect before the first run; the configured OCI runtime (runsc
// for gVisor) is checked against the Engine's list, and a runtime it lacks
// fails every run rather than falling back to the default.
//
// While a run goes on its evidence file is a record marked running, with
// the output so far, which other processes sharing the store read (see
// live.go).
//
// Egress is off by default. A human may grant exact host[:port] entries;
// granted runs join an internal Docker network whose only exit is Sluice's
// allowlisting proxy on the host. On Docker Engine 20.10 such a network can
// still reach host services that listen on all addresses; EgressFirewall
// (root only) closes that with iptables rules. See egress.go.
package workspace
