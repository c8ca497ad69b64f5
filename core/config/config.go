package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Errors callers branch on.
var (
	// ErrInvalid is wrapped by every validation failure; the message names
	// the offending key.
	ErrInvalid = errors.New("invalid configuration")
	// ErrUnsafeDir is returned when a Sluice directory is a symlink, not a
	// directory, or readable by other users.
	ErrUnsafeDir = errors.New("unsafe directory")
)

// Toolset names known to the sidecar. propose_more (plans, linked
// worktrees, submodule pointers), workspace_search (list, glob and grep in
// a workspace), fleet (many repositories) and safety (restore points and
// reflog movements) hold tools a session enables when it needs them.
var KnownToolsets = []string{"git", "propose", "propose_more", "workspace", "workspace_search", "fleet", "safety"}

// DefaultToolsets are enabled when nothing else is configured.
var DefaultToolsets = []string{"git", "propose", "workspace"}

// Config is the whole of Sluice's configuration after env > file > defaults
// have been applied and validated.
type Config struct {
	// ConfigDir holds configuration and secrets: config.json, gateway.json,
	// the audit signing key. $XDG_CONFIG_HOME/sluice.
	ConfigDir string `json:"-"`
	// StateDir holds data: the journal, the audit ledger, presence files.
	// $XDG_STATE_HOME/sluice.
	StateDir string `json:"-"`

	// AllowedRoots confines every repository path an agent names.
	// Canonical (symlinks resolved) absolute paths.
	AllowedRoots []string `json:"allowedRoots"`
	// PendingExpiry is how long a pending proposal waits for a decision.
	PendingExpiry time.Duration `json:"-"`
	// PolicyFile, when set, must exist and parse (fail closed).
	PolicyFile string `json:"policyFile"`
	// Toolsets enabled in the sidecar.
	Toolsets []string `json:"toolsets"`
	// Notifications toggles desktop notifications.
	Notifications bool `json:"-"`
	// AuditKeyFile is the Ed25519 private key (PKCS#8 PEM) that signs
	// ledger entries. Empty means the default path in ConfigDir.
	AuditKeyFile string `json:"auditKeyFile"`
	// AuditKeyConfigured is true when AuditKeyFile was set explicitly
	// (file or env). A configured key must exist: it is never created
	// behind the person's back, and never silently replaced by no key.
	AuditKeyConfigured bool `json:"-"`
	// AuditSigning is on by default; turning it off is explicit.
	AuditSigning bool `json:"-"`
	// Retention of terminal proposals in the journal.
	Retention time.Duration `json:"-"`
	// RestorePointRetention is how long a restore point stays
	// restorable after its operation ended; the app's hourly tend removes
	// older ones (see apply.Executor.TendRestorePoints), keeping those of
	// proposals that need reconciliation and each repository's newest.
	RestorePointRetention time.Duration `json:"-"`
	// WorkspaceImage is the image ID ("sha256:<64 hex>") that workspace
	// runs use. An ID rather than a tag, so that what runs is exactly what
	// the person chose; empty means workspaces are unsupported.
	WorkspaceImage string `json:"workspaceImage"`
	// WorkspaceRuntime is the container runtime for workspace runs; empty
	// means the Engine's default (runc). "runsc" selects gVisor, which the
	// Engine must have configured.
	WorkspaceRuntime string `json:"workspaceRuntime"`
	// Kubernetes configures workspaceRuntime "kubernetes".
	Kubernetes Kubernetes `json:"kubernetes"`
	// WebAddr is where `sluice serve` listens: a loopback IP literal with
	// a port. The port stays the same across restarts so that an open tab
	// reconnects; ":0" picks a free one each time.
	WebAddr string `json:"webAddr"`
	// WebAddrConfigured is true when WebAddr was set explicitly (file or
	// env): a configured address that is taken stops `sluice serve`, the
	// default one falls back to a free port.
	WebAddrConfigured bool `json:"-"`
}

// fileConfig is the on-disk shape of config.json. Durations are strings
// ("15m") so that the file stays readable.
type fileConfig struct {
	AllowedRoots  []string `json:"allowedRoots,omitempty"`
	PendingExpiry string   `json:"pendingExpiry,omitempty"`
	PolicyFile    string   `json:"policyFile,omitempty"`
	Toolsets      []string `json:"toolsets,omitempty"`
	Notifications *bool    `json:"notifications,omitempty"`
	AuditKeyFile  string   `json:"auditKeyFile,omitempty"`
	AuditSigning  *bool    `json:"auditSigning,omitempty"`
	Retention     string   `json:"retention,omitempty"`
	// RestorePointRetention is a duration ("720h").
	RestorePointRetention string `json:"restorePointRetention,omitempty"`
	// WorkspaceImage is set by hand (or SLUICE_WORKSPACE_IMAGE).
	WorkspaceImage string `json:"workspaceImage,omitempty"`
	// WorkspaceRuntime is set by hand (or SLUICE_WORKSPACE_RUNTIME).
	WorkspaceRuntime string `json:"workspaceRuntime,omitempty"`
	// Kubernetes is set by hand.
	Kubernetes *Kubernetes `json:"kubernetes,omitempty"`
	// WebAddr is set by hand (or SLUICE_WEB_ADDR).
	WebAddr string `json:"webAddr,omitempty"`
}

// Defaults.
const (
	// DefaultPendingExpiry is long enough that a proposal made while the
	// person is away is still there when they come back.
	DefaultPendingExpiry = 24 * time.Hour
	// MaxPendingExpiry is the longest a proposal may wait: a decision
	// taken a week later is taken on a repository that has moved on.
	MaxPendingExpiry = 7 * 24 * time.Hour
	DefaultRetention = 90 * 24 * time.Hour
	// DefaultRestorePointRetention keeps a month of operations to undo.
	DefaultRestorePointRetention = 30 * 24 * time.Hour
	// DefaultWebAddr is where `sluice serve` listens unless told otherwise.
	DefaultWebAddr = "127.0.0.1:7733"
)

// Paths resolves the XDG directories without touching the file system.
func Paths() (configDir, stateDir string, err error) {
	home, _ := os.UserHomeDir()
	cfg := xdg("XDG_CONFIG_HOME", home, ".config")
	st := xdg("XDG_STATE_HOME", home, filepath.Join(".local", "state"))
	if cfg == "" || st == "" {
		return "", "", fmt.Errorf("%w: neither XDG_CONFIG_HOME/XDG_STATE_HOME nor HOME is set to an absolute path", ErrInvalid)
	}
	return filepath.Join(cfg, "sluice"), filepath.Join(st, "sluice"), nil
}

// xdg follows the XDG base directory rule: a relative value is ignored.
func xdg(env, home, fallback string) string {
	if v := os.Getenv(env); v != "" && filepath.IsAbs(v) {
		return filepath.Clean(v)
	}
	if home == "" || !filepath.IsAbs(home) {
		return ""
	}
	return filepath.Join(home, fallback)
}

// Load resolves the configuration: defaults, then config.json in the config
// directory, then environment variables. It does not create directories.
func Load() (*Config, error) {
	configDir, stateDir, err := Paths()
	if err != nil {
		return nil, err
	}
	return loadFrom(configDir, stateDir)
}

// loadFrom is Load for the given directories.
func loadFrom(configDir, stateDir string) (*Config, error) {
	c := &Config{
		ConfigDir:     configDir,
		StateDir:      stateDir,
		PendingExpiry: DefaultPendingExpiry,
		Toolsets:      append([]string(nil), DefaultToolsets...),
		Notifications: true,
		AuditSigning:  true,
		Retention:     DefaultRetention,

		RestorePointRetention: DefaultRestorePointRetention,
	}
	if err := c.applyFile(filepath.Join(configDir, "config.json")); err != nil {
		return nil, err
	}
	if err := c.applyEnv(); err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Config) applyFile(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("config: read %s: %w", path, err)
	}
	var f fileConfig
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	if dec.Decode(new(json.RawMessage)) != io.EOF {
		return fmt.Errorf("%w: %s: trailing data after the JSON object", ErrInvalid, path)
	}
	if f.AllowedRoots != nil {
		c.AllowedRoots = f.AllowedRoots
	}
	if f.PendingExpiry != "" {
		d, err := time.ParseDuration(f.PendingExpiry)
		if err != nil {
			return fmt.Errorf("%w: pendingExpiry: %v", ErrInvalid, err)
		}
		c.PendingExpiry = d
	}
	if f.Retention != "" {
		d, err := time.ParseDuration(f.Retention)
		if err != nil {
			return fmt.Errorf("%w: retention: %v", ErrInvalid, err)
		}
		c.Retention = d
	}
	if f.RestorePointRetention != "" {
		d, err := time.ParseDuration(f.RestorePointRetention)
		if err != nil {
			return fmt.Errorf("%w: restorePointRetention: %v", ErrInvalid, err)
		}
		c.RestorePointRetention = d
	}
	if f.PolicyFile != "" {
		c.PolicyFile = f.PolicyFile
	}
	if f.Toolsets != nil {
		c.Toolsets = f.Toolsets
	}
	if f.Notifications != nil {
		c.Notifications = *f.Notifications
	}
	if f.AuditKeyFile != "" {
		c.AuditKeyFile = f.AuditKeyFile
	}
	if f.AuditSigning != nil {
		c.AuditSigning = *f.AuditSigning
	}
	if f.WorkspaceRuntime != "" {
		c.WorkspaceRuntime = f.WorkspaceRuntime
	}
	if f.WorkspaceImage != "" {
		c.WorkspaceImage = f.WorkspaceImage
	}
	if f.Kubernetes != nil {
		c.Kubernetes = *f.Kubernetes
	}
	if f.WebAddr != "" {
		c.WebAddr = f.WebAddr
	}
	return nil
}

func (c *Config) applyEnv() error {
	if v, ok := os.LookupEnv("SLUICE_ALLOWED_ROOTS"); ok {
		c.AllowedRoots = splitList(v, string(os.PathListSeparator))
	}
	if v := os.Getenv("SLUICE_PENDING_EXPIRY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%w: SLUICE_PENDING_EXPIRY: %v", ErrInvalid, err)
		}
		c.PendingExpiry = d
	}
	if v, ok := os.LookupEnv("SLUICE_POLICY_FILE"); ok {
		c.PolicyFile = v
	}
	if v, ok := os.LookupEnv("SLUICE_TOOLSETS"); ok {
		c.Toolsets = splitList(v, ",")
	}
	if v := os.Getenv("SLUICE_NOTIFICATIONS"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%w: SLUICE_NOTIFICATIONS: %v", ErrInvalid, err)
		}
		c.Notifications = b
	}
	if v, ok := os.LookupEnv("SLUICE_AUDIT_KEY"); ok {
		c.AuditKeyFile = v
	}
	if v := os.Getenv("SLUICE_AUDIT_SIGNING"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%w: SLUICE_AUDIT_SIGNING: %v", ErrInvalid, err)
		}
		c.AuditSigning = b
	}
	if v, ok := os.LookupEnv("SLUICE_WORKSPACE_IMAGE"); ok {
		c.WorkspaceImage = strings.TrimSpace(v)
	}
	if v, ok := os.LookupEnv("SLUICE_WORKSPACE_RUNTIME"); ok {
		c.WorkspaceRuntime = strings.TrimSpace(v)
	}
	if v := strings.TrimSpace(os.Getenv("SLUICE_WEB_ADDR")); v != "" {
		c.WebAddr = v
	}
	return nil
}

func splitList(v, sep string) []string {
	var out []string
	for _, p := range strings.Split(v, sep) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (c *Config) validate() error {
	roots := make([]string, 0, len(c.AllowedRoots))
	for _, r := range c.AllowedRoots {
		if !filepath.IsAbs(r) {
			return fmt.Errorf("%w: allowedRoots: %q is not an absolute path", ErrInvalid, r)
		}
		canon, err := filepath.EvalSymlinks(r)
		if err != nil {
			return fmt.Errorf("%w: allowedRoots: %q cannot be resolved: %v", ErrInvalid, r, err)
		}
		st, err := os.Stat(canon)
		if err != nil || !st.IsDir() {
			return fmt.Errorf("%w: allowedRoots: %q is not a directory", ErrInvalid, r)
		}
		if canon == string(filepath.Separator) {
			return fmt.Errorf("%w: allowedRoots: the file system root is too broad", ErrInvalid)
		}
		roots = append(roots, canon)
	}
	c.AllowedRoots = roots
	if c.PendingExpiry < time.Minute || c.PendingExpiry > MaxPendingExpiry {
		return fmt.Errorf("%w: pendingExpiry: %s is outside 1m..168h (7 days)", ErrInvalid, c.PendingExpiry)
	}
	if c.Retention < time.Hour {
		return fmt.Errorf("%w: retention: %s is shorter than 1h", ErrInvalid, c.Retention)
	}
	if c.RestorePointRetention < time.Hour {
		return fmt.Errorf("%w: restorePointRetention: %s is shorter than 1h", ErrInvalid, c.RestorePointRetention)
	}
	for _, t := range c.Toolsets {
		if !contains(KnownToolsets, t) {
			return fmt.Errorf("%w: toolsets: unknown toolset %q (known: %s)", ErrInvalid, t, strings.Join(KnownToolsets, ","))
		}
	}
	if c.PolicyFile != "" && !filepath.IsAbs(c.PolicyFile) {
		return fmt.Errorf("%w: policyFile: %q is not an absolute path", ErrInvalid, c.PolicyFile)
	}
	if err := checkPolicyOutsideRoots(c.PolicyFile, c.ConfigDir, roots); err != nil {
		return err
	}
	if c.WorkspaceRuntime != "" && !workspaceRuntimeRe().MatchString(c.WorkspaceRuntime) {
		return fmt.Errorf("%w: workspaceRuntime: %q is not a runtime name (for gVisor: runsc; for pods in a cluster: kubernetes)", ErrInvalid, c.WorkspaceRuntime)
	}
	if c.OnKubernetes() {
		if err := c.Kubernetes.validate(); err != nil {
			return err
		}
	}
	if c.WorkspaceImage != "" && !workspaceImageRe().MatchString(c.WorkspaceImage) {
		return fmt.Errorf("%w: workspaceImage: %q is not an image ID (sha256:<64 hex digits>); a tag could change under Sluice, an ID cannot (docker image inspect --format '{{.Id}}' IMAGE)", ErrInvalid, c.WorkspaceImage)
	}
	c.WebAddrConfigured = c.WebAddr != ""
	if c.WebAddr == "" {
		c.WebAddr = DefaultWebAddr
	}
	if err := CheckLoopbackAddr(c.WebAddr); err != nil {
		return fmt.Errorf("%w: webAddr: %v", ErrInvalid, err)
	}
	c.AuditKeyConfigured = c.AuditKeyFile != ""
	if c.AuditKeyFile == "" {
		c.AuditKeyFile = filepath.Join(c.ConfigDir, "audit-key.pem")
	} else if !filepath.IsAbs(c.AuditKeyFile) {
		return fmt.Errorf("%w: auditKeyFile: %q is not an absolute path", ErrInvalid, c.AuditKeyFile)
	}
	return nil
}

// CheckLoopbackAddr accepts a loopback IP literal with a port
// ("127.0.0.1:7733", "[::1]:0"): the UI is never reachable from another
// machine, and a host name could resolve anywhere.
func CheckLoopbackAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not HOST:PORT: %v", addr, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("%q is not a loopback IP address (127.0.0.1 or [::1])", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q has no valid port", addr)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// GatewayFile is where the running app publishes its gateway address and
// sidecar token.
func (c *Config) GatewayFile() string { return filepath.Join(c.ConfigDir, "gateway.json") }

// AuditPublicKeyFile is the public half of AuditKeyFile.
func (c *Config) AuditPublicKeyFile() string { return auditPubPath(c.AuditKeyFile) }

// AuditLog is the active ledger file.
func (c *Config) AuditLog() string { return filepath.Join(c.StateDir, "audit", "audit.jsonl") }

// JournalFile is the app's bbolt journal.
func (c *Config) JournalFile() string { return filepath.Join(c.StateDir, "journal.db") }

// WorkspaceDir holds the workspaces' trees, repositories and metadata,
// shared by the app and every sidecar.
func (c *Config) WorkspaceDir() string { return filepath.Join(c.StateDir, "workspaces") }

// workspaceRuntimeRe bounds a runtime name to what the Engine accepts. It and
// workspaceImageRe are compiled on first use, not by every process that
// links the package.
var workspaceRuntimeRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,63}$`) })

// workspaceImageRe is the only accepted form of WorkspaceImage.
var workspaceImageRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256:[0-9a-f]{64}$`) })

// PresenceDir holds one presence file per running sidecar.
func (c *Config) PresenceDir() string { return filepath.Join(c.StateDir, "presence") }

// EnsureDirs creates the config and state directories with mode 0700 and
// refuses existing ones that are symlinks or open to other users.
func (c *Config) EnsureDirs() error {
	for _, d := range []string{c.ConfigDir, c.StateDir} {
		if err := EnsurePrivateDir(d); err != nil {
			return err
		}
	}
	return nil
}

// EnsurePrivateDir creates dir (and missing parents) with mode 0700. An
// existing dir must be a real directory (not a symlink) with no group or
// other permission bits.
func EnsurePrivateDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(dir), err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return CheckPrivateDir(dir)
}

// PrivateModeEnforced is true where mode bits mean what they say. Windows
// reports synthetic ones (0777 for any directory); access there is
// governed by the ACLs of the per-user directories instead.
const PrivateModeEnforced = runtime.GOOS != "windows"

// CheckPrivateDir reports whether dir is a real directory with mode 0700 or
// stricter (where modes are enforced).
func CheckPrivateDir(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnsafeDir, dir, err)
	}
	if st.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%w: %s is a symlink", ErrUnsafeDir, dir)
	}
	if !st.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrUnsafeDir, dir)
	}
	if perm := st.Mode().Perm(); PrivateModeEnforced && perm&0o077 != 0 {
		return fmt.Errorf("%w: %s has mode %04o; it must not be accessible to other users (chmod 700 %s)", ErrUnsafeDir, dir, perm, dir)
	}
	return nil
}

// WriteFileAtomic writes data to path via a temporary file in the same
// directory, fsyncs it, renames it into place and fsyncs the directory, so
// that a crash leaves either the old or the new content.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return replaceFile(path, data, perm, true)
}

// ReplaceFile replaces path with data atomically (a reader sees the old
// file or the new one, never a part) but without WriteFileAtomic's two
// fsyncs: for files a crash may lose, whose readers skip an unreadable
// one (a sidecar's presence file, rewritten on an agent's calls).
func ReplaceFile(path string, data []byte, perm os.FileMode) error {
	return replaceFile(path, data, perm, false)
}

// replaceFile writes data to a temporary file beside path and renames it
// over path; durable syncs the file before and the directory after.
func replaceFile(path string, data []byte, perm os.FileMode, durable bool) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer os.Remove(name)
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if durable {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(name, path); err != nil {
		return err
	}
	if !durable {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Version of Sluice, stamped at build time with
// -ldflags "-X github.com/sluicehq/sluice/core/config.Version=…".
var Version = "dev"

// auditPubPath is where the public half of a configured key lives:
// beside it, with ".pub.pem" (or ".pub" for keys not named *.pem).
func auditPubPath(key string) string {
	if strings.HasSuffix(key, ".pem") {
		return strings.TrimSuffix(key, ".pem") + ".pub.pem"
	}
	return key + ".pub"
}

// Settings are the person-editable part of config.json, as the settings
// screen shows and saves them.
type Settings struct {
	AllowedRoots  []string `json:"allowedRoots"`
	PendingExpiry string   `json:"pendingExpiry"`
	PolicyFile    string   `json:"policyFile"`
	Toolsets      []string `json:"toolsets"`
	Notifications bool     `json:"notifications"`
}

// envKeys maps settings to the environment variables that override them.
var envKeys = map[string]string{
	"allowedRoots":  "SLUICE_ALLOWED_ROOTS",
	"pendingExpiry": "SLUICE_PENDING_EXPIRY",
	"policyFile":    "SLUICE_POLICY_FILE",
	"toolsets":      "SLUICE_TOOLSETS",
	"notifications": "SLUICE_NOTIFICATIONS",
}

// OverriddenByEnv lists the settings that an environment variable
// currently overrides (saving them in the file has no effect until the
// variable is unset).
func OverriddenByEnv() []string {
	var out []string
	for _, k := range []string{"allowedRoots", "pendingExpiry", "policyFile", "toolsets", "notifications"} {
		if _, ok := os.LookupEnv(envKeys[k]); ok {
			out = append(out, k)
		}
	}
	return out
}

// Settings returns c's editable settings.
func (c *Config) Settings() Settings {
	return Settings{
		AllowedRoots:  append([]string{}, c.AllowedRoots...),
		PendingExpiry: c.PendingExpiry.String(),
		PolicyFile:    c.PolicyFile,
		Toolsets:      append([]string{}, c.Toolsets...),
		Notifications: c.Notifications,
	}
}

// SaveSettings validates s exactly as Load would and writes it into
// config.json (atomically, 0600), keeping the file's other keys. Nothing is
// written when a value is invalid.
func (c *Config) SaveSettings(s Settings) error {
	d, err := time.ParseDuration(s.PendingExpiry)
	if err != nil {
		return fmt.Errorf("%w: pendingExpiry: %v", ErrInvalid, err)
	}
	probe := &Config{ConfigDir: c.ConfigDir, StateDir: c.StateDir, AllowedRoots: s.AllowedRoots, PendingExpiry: d,
		PolicyFile: s.PolicyFile, Toolsets: s.Toolsets, Retention: c.Retention, RestorePointRetention: c.RestorePointRetention, AuditKeyFile: c.AuditKeyFile}
	if err := probe.validate(); err != nil {
		return err
	}
	path := filepath.Join(c.ConfigDir, "config.json")
	var f fileConfig
	if b, err := os.ReadFile(path); err == nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f.AllowedRoots = s.AllowedRoots
	f.PendingExpiry = s.PendingExpiry
	f.PolicyFile = s.PolicyFile
	f.Toolsets = s.Toolsets
	n := s.Notifications
	f.Notifications = &n
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := EnsurePrivateDir(c.ConfigDir); err != nil {
		return err
	}
	return WriteFileAtomic(path, append(b, '\n'), 0o600)
}
