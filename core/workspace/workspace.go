package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
)

// State is where a workspace is in its life.
type State string

const (
	// StateCreating: the import has not finished. A workspace found in
	// this state at start-up is half-created and Reconcile removes it.
	StateCreating State = "creating"
	// StateReady: open for file edits and runs.
	StateReady State = "ready"
	// StateSealed: its commits were handed off; it takes no more changes,
	// its secrets and egress grants are revoked.
	StateSealed State = "sealed"
	// StateDestroying: Destroy started; Reconcile finishes it.
	StateDestroying State = "destroying"
)

// SourceKind says where a workspace's files came from.
type SourceKind string

const (
	// SourceRepo: a clone of a local repository at an exact commit.
	SourceRepo SourceKind = "repo"
	// SourceSnapshot: a defended copy of a directory that is not a
	// repository.
	SourceSnapshot SourceKind = "snapshot"
	// SourceFresh: an empty tree.
	SourceFresh SourceKind = "fresh"
)

// Source describes what to import.
type Source struct {
	Kind SourceKind `json:"kind"`
	// Path is the repository (repo) or directory (snapshot): absolute.
	// The canonical path is what is recorded.
	Path string `json:"path,omitempty"`
	// Commit is the revision to check out (repo). Empty means HEAD. It is
	// resolved to a full SHA at creation, and that SHA is the base.
	Commit string `json:"commit,omitempty"`
	// Depth > 0 makes a shallow clone with that much history (repo).
	Depth int `json:"depth,omitempty"`
	// GitInit makes the repository visible inside the container for
	// snapshot and fresh sources (a repo source always has it).
	GitInit bool `json:"gitInit,omitempty"`
}

// Skipped is an entry a snapshot left out, and why.
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Workspace is a workspace's persisted metadata (meta.json).
type Workspace struct {
	ID     string `json:"id"`
	State  State  `json:"state"`
	Source Source `json:"source"`
	// Base is the commit the workspace started from ("" when it started
	// empty). Diff and handoff checks compare against it.
	Base string `json:"base,omitempty"`
	// Head is the last commit made by Commit (Base until then).
	Head string `json:"head,omitempty"`
	// GitVisible is set when the repository is mounted (read-only) at
	// /workspace/.git inside the container.
	GitVisible bool `json:"gitVisible"`
	// Agent is the agent that created the workspace, by the rule
	// proposals follow (the sanitized MCP client name, or the HTTP bearer
	// identity). The sidecar's workspace tools answer only that agent, and
	// the app hands off only its workspaces; as for proposals, a client
	// name over stdio is attribution rather than authentication.
	Agent      string    `json:"agent,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	LastUsedAt time.Time `json:"lastUsedAt"`
	// Lease is how long the workspace may stay idle before Expire destroys
	// it.
	Lease time.Duration `json:"lease"`
	// Egress lists the host[:port] entries a human granted.
	Egress []string `json:"egress,omitempty"`
	// Secrets lists the names (never values) of granted secrets.
	Secrets []string `json:"secrets,omitempty"`
	// Skipped lists what a snapshot left out.
	Skipped []Skipped `json:"skipped,omitempty"`
	// Files and Bytes are the size of the imported tree.
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`
	Runs  int   `json:"runs"`
}

// ExpiresAt is when the lease runs out if nothing touches the workspace.
func (w *Workspace) ExpiresAt() time.Time { return w.LastUsedAt.Add(w.Lease) }

// Options configure a Manager.
type Options struct {
	// StateDir holds workspaces, under StateDir/workspaces (required).
	StateDir string
	// ConfigDir holds the secrets key file (required).
	ConfigDir string
	// Runtime runs containers. Nil means runs are unsupported; files,
	// diffs and seals still work.
	Runtime Runtime
	// SecretCopies keeps a copy of each workspace's granted secrets where
	// its runs read them (see SecretCopies). Nil uses Runtime when it is
	// one. Set it when the runtime that needs copies cannot be reached, to
	// one that fails: grants then fail rather than go uncopied.
	SecretCopies SecretCopies
	// Image is the image ID ("sha256:<64 hex>") every run uses. It is
	// verified against the runtime before the first run.
	Image string
	// RuntimeName selects an OCI runtime, e.g. "runsc" for gVisor.
	RuntimeName string
	// AllowedRoots, when set, confines repo and snapshot sources.
	AllowedRoots gitx.Roots
	// Lease is the default idle lease (DefaultLease when zero).
	Lease time.Duration
	// Limits are the default run limits; zero fields take DefaultLimits.
	// They may not exceed HardLimits.
	Limits Limits
	// ContainerUID/GID is the user runs execute as. Zero means: the
	// current user when Sluice does not run as root (the tree is already
	// its own), else 65534:65534 (nobody), with the tree handed to it.
	ContainerUID, ContainerGID int
	// SnapshotMaxFiles and SnapshotMaxBytes cap a snapshot import
	// (DefaultSnapshotMaxFiles/Bytes when zero).
	SnapshotMaxFiles int64
	SnapshotMaxBytes int64
	// EgressFirewall installs host firewall rules (iptables; needs root)
	// so that a container on the egress network can reach the proxy port
	// and nothing else on the host. Without it, services listening on all
	// host addresses are reachable from granted runs (see egress.go).
	EgressFirewall bool
	// OnEgressDenied is told of every request the egress proxy refuses.
	OnEgressDenied func(Denial)
	// GitPath is an absolute path to git; empty searches PATH.
	GitPath string
	// OwnPlaces are Sluice's own configuration and data: a seal refuses a
	// change to any of them in the repository it hands off into.
	OwnPlaces *config.Places
	// Logger receives operational logs (never file contents or secrets).
	Logger *slog.Logger
	// Now is the clock (tests).
	Now func() time.Time
}

// Defaults.
const (
	DefaultLease            = 4 * time.Hour
	DefaultSnapshotMaxFiles = 100_000
	DefaultSnapshotMaxBytes = 2 << 30
	nobodyID                = 65534
)

// Manager owns the workspaces under one state directory. It is safe for
// concurrent use; concurrent operations on one workspace are refused with
// ErrLocked rather than interleaved, also across processes.
type Manager struct {
	opts     Options
	root     string // StateDir/workspaces
	storeKey string // label value telling this store's containers apart
	git      *gitRunner
	secrets  *secretStore
	copies   SecretCopies
	own      owner
	log      *slog.Logger
	now      func() time.Time

	mu     sync.Mutex
	active map[string]*activeRun // runs in flight, by workspace
	// admitted holds, by workspace, the last runs AcceptRun admitted
	// (admittedKept of them): each is carried out once. An older one's
	// record says running only if its Run died, and then nobody holds its
	// key. stops counts, by workspace, the Stops and Destroys, so that a
	// run waiting for admission while one comes is refused.
	admitted map[string][]string
	stops    map[string]uint64
	// waiting, when set, is told each time awaitRunEnd begins to wait (a
	// seam for the tests).
	waiting func()

	// dirMu closes the window between a new workspace's directory and
	// its lock: Create holds it shared until the lock is taken, and
	// Reconcile's scan holds it exclusive, so the scan never mistakes a
	// workspace being made for one a crash left without a lock.
	dirMu sync.RWMutex

	imageMu      sync.Mutex
	imageChecked string
	runtimeInfo  *RuntimeInfo

	egressMu sync.Mutex
	egress   *egressHost
}

// Open prepares the state directory and returns a Manager. It does not
// contact the runtime; call Reconcile at start-up.
func Open(opts Options) (*Manager, error) {
	if !sysSupported {
		return nil, ErrUnsupportedOS
	}
	if opts.StateDir == "" || !filepath.IsAbs(opts.StateDir) {
		return nil, errcode.New(errcode.InvalidArgument, "workspace StateDir must be an absolute path")
	}
	if opts.ConfigDir == "" || !filepath.IsAbs(opts.ConfigDir) {
		return nil, errcode.New(errcode.InvalidArgument, "workspace ConfigDir must be an absolute path")
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	lim, err := opts.Limits.withDefaults(DefaultLimits)
	if err != nil {
		return nil, err
	}
	opts.Limits = lim
	if opts.SnapshotMaxFiles <= 0 {
		opts.SnapshotMaxFiles = DefaultSnapshotMaxFiles
	}
	if opts.SnapshotMaxBytes <= 0 {
		opts.SnapshotMaxBytes = DefaultSnapshotMaxBytes
	}
	// An image ID pins the Engine's image; a runtime that pulls by name
	// (Kubernetes) is given NAME@sha256:<digest>, which pins it as well.
	if opts.Image != "" && !imageIDRe().MatchString(opts.Image) && !config.DigestPinned(opts.Image) {
		return nil, errcode.New(errcode.InvalidArgument, "workspace Image must be an image ID (sha256:<64 hex digits>) or a digest-pinned reference (NAME@sha256:<64 hex digits>), not a tag")
	}
	if opts.RuntimeName != "" && !runtimeNameRe().MatchString(opts.RuntimeName) {
		return nil, errcode.New(errcode.InvalidArgument, "workspace RuntimeName %q is not a runtime name", opts.RuntimeName)
	}
	own, err := chooseOwner(opts.ContainerUID, opts.ContainerGID)
	if err != nil {
		return nil, err
	}
	opts.ContainerUID, opts.ContainerGID = own.uid, own.gid
	root := filepath.Join(opts.StateDir, "workspaces")
	if err := config.EnsurePrivateDir(opts.StateDir); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot prepare the state directory: %v", err)
	}
	if err := config.EnsurePrivateDir(root); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot prepare the workspace directory: %v", err)
	}
	// git gets an empty HOME of its own so that no user config, credential
	// helper or attributes file of the person applies to workspace clones.
	home := filepath.Join(root, ".git-home")
	if err := config.EnsurePrivateDir(home); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot prepare git's home: %v", err)
	}
	g, err := newGitRunner(opts.GitPath, home)
	if err != nil {
		return nil, err
	}
	sec, err := openSecretStore(opts.ConfigDir)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	sum := sha256.Sum256([]byte(root))
	copies := opts.SecretCopies
	if copies == nil {
		copies, _ = opts.Runtime.(SecretCopies)
	}
	return &Manager{
		copies:   copies,
		opts:     opts,
		root:     root,
		storeKey: hex.EncodeToString(sum[:8]),
		git:      g,
		secrets:  sec,
		own:      own,
		log:      log,
		now:      now,
		active:   map[string]*activeRun{},
		admitted: map[string][]string{},
		stops:    map[string]uint64{},
	}, nil
}

// chooseOwner decides which user runs in the container and owns the tree.
// As root, Sluice hands the tree to an unprivileged user (nobody by
// default); otherwise the container runs as Sluice's own user, which
// already owns the tree and cannot give files away.
func chooseOwner(uid, gid int) (owner, error) {
	euid, egid := os.Geteuid(), os.Getegid()
	if euid < 0 { // not Unix
		return owner{}, ErrUnsupportedOS
	}
	if euid == 0 {
		if uid == 0 && gid == 0 {
			uid, gid = nobodyID, nobodyID
		}
		if uid <= 0 || gid <= 0 {
			return owner{}, errcode.New(errcode.InvalidArgument, "the container user must not be root or in the root group")
		}
		return owner{uid: uid, gid: gid, chown: true}, nil
	}
	if (uid != 0 || gid != 0) && (uid != euid || gid != egid) {
		return owner{}, errcode.New(errcode.InvalidArgument, "ContainerUID/GID must be Sluice's own user (%d:%d) unless Sluice runs as root: only root can hand the tree to another user", euid, egid)
	}
	if egid == 0 {
		return owner{}, errcode.New(errcode.InvalidArgument, "the container must not run in the root group; run Sluice with another primary group")
	}
	return owner{uid: euid, gid: egid}, nil
}

// Close stops the egress proxy, if it was started, and removes its
// firewall rules. Workspaces are left as they are.
func (m *Manager) Close() error {
	m.egressMu.Lock()
	defer m.egressMu.Unlock()
	if m.egress != nil {
		err := m.egress.close()
		m.egress = nil
		return err
	}
	return nil
}

// Runtime is the runtime the Manager runs containers with (nil without
// one).
func (m *Manager) Runtime() Runtime { return m.opts.Runtime }

// StoreKey is the label value that marks this store's containers.
func (m *Manager) StoreKey() string { return m.storeKey }

// ContainerUser is the uid:gid runs execute as.
func (m *Manager) ContainerUser() string {
	return fmt.Sprintf("%d:%d", m.own.uid, m.own.gid)
}

func (m *Manager) dir(id string) string      { return filepath.Join(m.root, id) }
func (m *Manager) treeDir(id string) string  { return filepath.Join(m.root, id, "tree") }
func (m *Manager) gitDir(id string) string   { return filepath.Join(m.root, id, "git") }
func (m *Manager) metaPath(id string) string { return filepath.Join(m.root, id, "meta.json") }
func (m *Manager) runsDir(id string) string  { return filepath.Join(m.root, id, "runs") }
