package workspace

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// Secrets are granted by a human to one workspace, kept sealed with
// AES-256-GCM at rest (a random key in a 0600 file in the config
// directory, a fresh nonce per secret, and the workspace id and secret
// name as additional data so a sealed value cannot be moved to another
// workspace or name), handed to a run only through the Engine API
// environment (never argv) or, where runs read them from a cluster, kept
// there in a copy that follows the grants (SecretCopies), redacted from
// everything a run reports, and revoked on seal and destroy.

const (
	secretKeyFile   = "workspace-secrets.key"
	secretsFile     = "secrets.json"
	minSecretBytes  = 4
	maxSecretBytes  = 8 << 10
	maxSecretsPerWS = 32
)

var secretNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`) })

// reservedEnv are names a secret may not take: the run's fixed environment
// and the proxy settings of granted egress.
var reservedEnv = []string{"PATH", "HOME", "LANG", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "ALL_PROXY", "all_proxy"}

type secretStore struct {
	aead cipher.AEAD
}

func openSecretStore(configDir string) (*secretStore, error) {
	if err := config.EnsurePrivateDir(configDir); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot prepare the config directory: %v", err)
	}
	key, err := loadOrCreateKey(filepath.Join(configDir, secretKeyFile))
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot use the secrets key")
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot use the secrets key")
	}
	return &secretStore{aead: aead}, nil
}

func loadOrCreateKey(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollowFlag, 0o600)
	if err == nil {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			f.Close()
			os.Remove(path)
			return nil, errcode.Wrap(errcode.Internal, err, "cannot generate the secrets key")
		}
		_, werr := f.Write(key)
		serr := f.Sync()
		cerr := f.Close()
		if err := errors.Join(werr, serr, cerr); err != nil {
			os.Remove(path)
			return nil, errcode.Wrap(errcode.Internal, err, "cannot write the secrets key")
		}
		return key, nil
	}
	if !errors.Is(err, os.ErrExist) {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot create the secrets key")
	}
	st, err := os.Lstat(path)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot read the secrets key")
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o077 != 0 {
		return nil, &errcode.Error{Code: errcode.Internal, Msg: "the workspace secrets key file must be a regular file readable by its owner only (chmod 600)"}
	}
	r, err := os.OpenFile(path, os.O_RDONLY|noFollowFlag, 0)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot read the secrets key")
	}
	defer r.Close()
	key, err := io.ReadAll(io.LimitReader(r, 64))
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot read the secrets key")
	}
	if len(key) != 32 {
		return nil, &errcode.Error{Code: errcode.Internal, Msg: "the workspace secrets key file is not a 32-byte key"}
	}
	return key, nil
}

type sealedSecret struct {
	Nonce      []byte `json:"nonce"`
	Ciphertext []byte `json:"ciphertext"`
}

type secretsDoc struct {
	Version int                     `json:"version"`
	Secrets map[string]sealedSecret `json:"secrets"`
}

func secretAAD(id, name string) []byte {
	return []byte("sluice-workspace-secret\x00" + id + "\x00" + name)
}

func (s *secretStore) seal(id, name, value string) sealedSecret {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return sealedSecret{Nonce: nonce, Ciphertext: s.aead.Seal(nil, nonce, []byte(value), secretAAD(id, name))}
}

func (s *secretStore) open(id, name string, sealed sealedSecret) (string, error) {
	if len(sealed.Nonce) != s.aead.NonceSize() {
		return "", errcode.Wrap(errcode.Internal, nil, "a sealed secret is malformed")
	}
	pt, err := s.aead.Open(nil, sealed.Nonce, sealed.Ciphertext, secretAAD(id, name))
	if err != nil {
		return "", errcode.Wrap(errcode.Internal, err, "a sealed secret cannot be opened (wrong key or tampered)")
	}
	return string(pt), nil
}

func (m *Manager) readSecrets(id string) (*secretsDoc, error) {
	doc := &secretsDoc{Version: 1, Secrets: map[string]sealedSecret{}}
	b, err := os.ReadFile(filepath.Join(m.dir(id), secretsFile))
	if errors.Is(err, os.ErrNotExist) {
		return doc, nil
	}
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot read the workspace secrets")
	}
	if err := json.Unmarshal(b, doc); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "the workspace secrets file is corrupt")
	}
	if doc.Secrets == nil {
		doc.Secrets = map[string]sealedSecret{}
	}
	return doc, nil
}

func (m *Manager) writeSecrets(id string, doc *secretsDoc) error {
	path := filepath.Join(m.dir(id), secretsFile)
	if len(doc.Secrets) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return errcode.Wrap(errcode.Internal, err, "cannot remove the workspace secrets")
		}
		return nil
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot encode the workspace secrets")
	}
	if err := config.WriteFileAtomic(path, b, 0o600); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot write the workspace secrets")
	}
	return nil
}

// Grant gives a workspace a secret, available to its runs as the
// environment variable name. It is a human's decision: no agent tool may
// call it. Granting a name again replaces the value. Where runs read their
// secrets from a copy (SecretCopies), the copy takes the secret first: a
// grant the copy cannot take (the cluster unreachable or refusing) fails
// and is not recorded.
func (m *Manager) Grant(id, name, value string) error {
	if !secretNameRe().MatchString(name) || slices.Contains(reservedEnv, name) || strings.HasPrefix(name, "LD_") {
		return errcode.New(errcode.InvalidArgument, "a secret name must be an environment variable name (^[A-Za-z_][A-Za-z0-9_]{0,63}$) and not PATH, HOME, LANG, LD_* or a proxy variable")
	}
	if len(value) < minSecretBytes || len(value) > maxSecretBytes || strings.ContainsRune(value, 0) {
		// Very short values would make redaction replace ordinary text.
		return errcode.New(errcode.InvalidArgument, "a secret value must be %d to %d bytes without NUL", minSecretBytes, maxSecretBytes)
	}
	_, err := m.editSecrets(id, true, true, func(doc *secretsDoc) error {
		if _, ok := doc.Secrets[name]; !ok && len(doc.Secrets) >= maxSecretsPerWS {
			return errcode.New(errcode.InvalidArgument, "a workspace holds at most %d secrets", maxSecretsPerWS)
		}
		doc.Secrets[name] = m.secrets.seal(id, name, value)
		return nil
	})
	return err
}

// SecretRevocation says what RevokeSecret did besides the revocation
// itself, which always happens.
type SecretRevocation struct {
	// CopyLeft is set when the copy a cluster keeps for the workspace's
	// runs (SecretCopies) could not be changed: the secret is revoked
	// here, and no run is given it, but the cluster still holds it until
	// Sluice removes it, before the next run of any workspace and at
	// start-up.
	CopyLeft bool `json:"copyLeft,omitempty"`
	// Reason is why the copy could not be changed.
	Reason string `json:"reason,omitempty"`
}

// RevokeSecret removes one granted secret. The revocation happens even
// when a copy of it cannot be removed now (see SecretRevocation). A name
// that is not granted is ErrSecretNotGranted: nothing is written and no
// copy is touched.
func (m *Manager) RevokeSecret(id, name string) (SecretRevocation, error) {
	return m.editSecrets(id, false, false, func(doc *secretsDoc) error {
		if _, ok := doc.Secrets[name]; !ok {
			return &errcode.Error{Code: ErrSecretNotGranted.Code, Msg: ErrSecretNotGranted.Msg, Data: map[string]string{"name": name}}
		}
		delete(doc.Secrets, name)
		return nil
	})
}

// editSecrets changes a workspace's secrets under its exclusive lock
// (needReady as for open), then records their names in the metadata. With
// SecretCopies, a grant is written to the copy before it is recorded here,
// a revocation after; a mark in the store (markCopy) says, from before the
// first write until the two agree, that the copy may hold more than is
// granted, so that a crash or a failure anywhere between leaves it to be
// put right (syncCopy).
func (m *Manager) editSecrets(id string, needReady, grant bool, edit func(*secretsDoc) error) (SecretRevocation, error) {
	var rev SecretRevocation
	w, unlock, err := m.open(id, true, needReady)
	if err != nil {
		return rev, err
	}
	defer unlock()
	doc, err := m.readSecrets(id)
	if err != nil {
		return rev, err
	}
	if err := edit(doc); err != nil {
		return rev, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), secretCopyWait)
	defer cancel()
	if m.copies != nil {
		if err := m.markCopy(id); err != nil {
			return rev, err
		}
		if grant {
			if err := m.putCopy(ctx, id, doc); err != nil {
				// Not recorded. Should the cluster have stored it after all
				// (an answer lost on the way), the mark takes it back out.
				return rev, &errcode.Error{Code: errcode.Of(err), Data: dataOf(err), Err: err,
					Msg: "the secret was not granted: the cluster that runs the workspace's runs could not keep it: " + err.Error()}
			}
		}
	}
	if err := m.writeSecrets(id, doc); err != nil {
		if grant && m.copies != nil {
			// The copy holds a secret that is not granted: put it back to
			// the grants now (the mark stays if that fails too).
			_ = m.syncCopy(ctx, id)
		}
		return rev, err
	}
	w.Secrets = sortedKeys(doc.Secrets)
	w.LastUsedAt = m.now()
	if err := m.writeMeta(w); err != nil {
		return rev, err
	}
	if m.copies == nil {
		return rev, nil
	}
	if grant {
		m.unmarkCopy(id)
		return rev, nil
	}
	if err := m.putCopy(ctx, id, doc); err != nil {
		m.log.Warn("workspace: a revoked secret is still in the cluster's copy; it is removed before the next run and at start-up", "workspace", id, "err", err)
		return SecretRevocation{CopyLeft: true, Reason: err.Error()}, nil
	}
	m.unmarkCopy(id)
	return rev, nil
}

// revokeAllLocked drops every secret and egress grant; the caller holds
// the exclusive lock and writes the metadata. A copy of the secrets
// (SecretCopies, or a kept object the runtime lists) is removed after; one
// that cannot be removed now stays marked and goes before the next run and
// at start-up.
func (m *Manager) revokeAllLocked(ctx context.Context, w *Workspace) error {
	had := len(w.Secrets) > 0 || m.copyMarked(w.ID)
	if had {
		if err := m.markCopy(w.ID); err != nil {
			return err
		}
	}
	if err := m.writeSecrets(w.ID, &secretsDoc{Version: 1}); err != nil {
		return err
	}
	w.Secrets = nil
	w.Egress = nil
	if had {
		if err := m.syncCopy(ctx, w.ID); err != nil && !errors.Is(err, errNoCopyKeeper) {
			m.log.Warn("workspace: the cluster's copy of revoked secrets could not be removed yet; it is removed before the next run and at start-up", "workspace", w.ID, "err", err)
		}
	}
	return nil
}

// secretValues opens a workspace's secrets for one run.
func (m *Manager) secretValues(id string) (map[string]string, error) {
	doc, err := m.readSecrets(id)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(doc.Secrets))
	for name, s := range doc.Secrets {
		v, err := m.secrets.open(id, name, s)
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// SecretCopies is a runtime whose runs read their secrets from a copy it
// keeps outside this process (Kubernetes: a Secret per workspace, which the
// node reads from the API server). The copy lives as long as the grant:
// Grant writes it before the grant is recorded (a grant the copy cannot
// take is not made); RevokeSecret, Seal and Destroy change or delete it
// after the local revocation; what could not be removed then is marked in
// the store and removed before the next run of any workspace
// (SyncSecretCopies) and at start-up (Reconcile), which also removes copies
// of workspaces that are gone and names no longer granted. The Manager
// uses Options.SecretCopies, or its Runtime when that implements this.
type SecretCopies interface {
	// PutSecrets makes the workspace's copy hold exactly values (created,
	// replaced, or deleted when values is empty), verified as stored.
	PutSecrets(ctx context.Context, storeKey, workspaceID string, values map[string]string) error
	// SecretCopies lists the store's copies.
	SecretCopies(ctx context.Context, storeKey string) ([]SecretCopy, error)
}

// SecretCopy is one workspace's copy: the names it holds.
type SecretCopy struct {
	WorkspaceID string
	Names       []string
}

// secretCopyWait bounds a grant's or revocation's calls to the copy.
const secretCopyWait = 60 * time.Second

// copyMarkDir holds one empty file per workspace whose copy may hold more
// than its grants (a revocation that could not reach it, or a change in
// progress). Not a workspace id, so the directory scan passes it by.
func (m *Manager) copyMarkDir() string { return filepath.Join(m.root, ".secret-copies") }

func (m *Manager) markCopy(id string) error {
	if err := config.EnsurePrivateDir(m.copyMarkDir()); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot prepare the secret copies' marks: %v", err)
	}
	if err := config.WriteFileAtomic(filepath.Join(m.copyMarkDir(), id), nil, 0o600); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot mark the workspace's secret copy")
	}
	return nil
}

func (m *Manager) unmarkCopy(id string) {
	if err := os.Remove(filepath.Join(m.copyMarkDir(), id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		m.log.Warn("workspace: cannot remove a secret copy's mark (it is looked at again)", "workspace", id, "err", err)
	}
}

func (m *Manager) copyMarked(id string) bool {
	_, err := os.Lstat(filepath.Join(m.copyMarkDir(), id))
	return err == nil
}

// markedCopies are the workspaces whose copies are marked.
func (m *Manager) markedCopies() ([]string, error) {
	ents, err := os.ReadDir(m.copyMarkDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot list the secret copies' marks")
	}
	var out []string
	for _, e := range ents {
		if proposal.ValidID(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// putCopy writes the secrets of doc to the workspace's copy.
func (m *Manager) putCopy(ctx context.Context, id string, doc *secretsDoc) error {
	values := make(map[string]string, len(doc.Secrets))
	for name, s := range doc.Secrets {
		v, err := m.secrets.open(id, name, s)
		if err != nil {
			return err
		}
		values[name] = v
	}
	return m.copies.PutSecrets(ctx, m.storeKey, id, values)
}

// errNoCopyKeeper: this Manager cannot reach the copy (a sidecar's, for a
// copy that must be changed rather than removed); the app does it.
var errNoCopyKeeper = errcode.New(errcode.Unsupported, "the workspace's secret copy can only be changed by the app")

// syncCopy makes the workspace's copy hold exactly its grants (none for a
// workspace that is gone) and removes its mark. The caller holds the
// workspace's lock, or its run does, or the workspace is gone. A Manager
// without SecretCopies can still remove a copy its runtime lists as kept.
func (m *Manager) syncCopy(ctx context.Context, id string) error {
	doc, err := m.readSecrets(id)
	if err != nil {
		return err
	}
	switch {
	case m.copies != nil:
		err = m.putCopy(ctx, id, doc)
	case len(doc.Secrets) == 0 && m.opts.Runtime != nil:
		_, err = m.removeContainers(ctx, func(c ContainerInfo) bool { return c.Kept && c.WorkspaceID == id })
	default:
		return errNoCopyKeeper
	}
	if err != nil {
		return err
	}
	m.unmarkCopy(id)
	return nil
}

// SyncSecretCopies removes from the copies what is no longer granted, for
// every marked workspace no operation holds. A run's start calls it, so
// that a revoked secret's copy is gone before any run; so do the app's
// sweeps. It returns what could not be done.
func (m *Manager) SyncSecretCopies(ctx context.Context) error {
	return m.syncMarked(ctx, "")
}

// syncMarked is SyncSecretCopies; held is a workspace whose lock the
// caller's run holds (its copy is synced without the lock).
func (m *Manager) syncMarked(ctx context.Context, held string) error {
	errs, err := m.syncMarkedEach(ctx, held)
	if err != nil {
		return err
	}
	var all []error
	for id, e := range errs {
		all = append(all, fmt.Errorf("workspace %s: %w", id, e))
	}
	return errors.Join(all...)
}

// syncMarkedEach syncs every marked copy as syncMarked does and returns
// what failed, by workspace.
func (m *Manager) syncMarkedEach(ctx context.Context, held string) (map[string]error, error) {
	ids, err := m.markedCopies()
	if err != nil {
		return nil, err
	}
	errs := map[string]error{}
	for _, id := range ids {
		// A workspace an operation holds keeps its own copy; one this
		// Manager cannot change is the app's to do.
		if err := m.syncLocked(ctx, id, held); err != nil && !errors.Is(err, ErrLocked) && !errors.Is(err, errNoCopyKeeper) {
			errs[id] = err
		}
	}
	return errs, nil
}

// syncLocked takes the workspace's lock (unless held is its id) and syncs
// its copy; a workspace some operation holds is ErrLocked (that operation
// keeps its copy), one that is gone has nothing granted.
func (m *Manager) syncLocked(ctx context.Context, id, held string) error {
	if id == held {
		return m.syncCopy(ctx, id)
	}
	unlock, err := m.lockWS(id, true)
	if errors.Is(err, ErrNotFound) {
		return m.syncCopy(ctx, id)
	}
	if err != nil {
		return err
	}
	defer unlock()
	return m.syncCopy(ctx, id)
}

// syncBeforeRun is SyncSecretCopies before a run of the workspace held:
// with SecretCopies every copy left behind is tried, and the run does not
// start while its own workspace's revoked secret is still in the cluster.
// Another workspace's copy that cannot be synced yet is logged, not held
// against this run: its pod can reference only its own workspace's
// Secret (the pod's validation pins the reference).
func (m *Manager) syncBeforeRun(ctx context.Context, held string) error {
	if m.copies == nil {
		return nil
	}
	errs, err := m.syncMarkedEach(ctx, held)
	if err != nil {
		return err
	}
	for id, e := range errs {
		if id != held {
			m.log.Warn("workspace: a revoked secret's copy in the cluster could not be removed yet; the sweep tries again", "workspace", id, "err", e)
			continue
		}
		err = fmt.Errorf("workspace %s: %w", id, e)
		return &errcode.Error{Code: errcode.Of(err), Data: dataOf(err), Err: err,
			Msg: "no run of this workspace starts while its revoked secret is still in the cluster, and it could not be removed yet: " + err.Error()}
	}
	return nil
}

// reconcileCopies brings every copy back to its workspace's grants at
// start-up: marked ones, copies of workspaces that are gone, names no
// longer granted, and a granted workspace without one. Workspaces an
// operation holds are left to it.
func (m *Manager) reconcileCopies(ctx context.Context, rep *ReconcileReport) error {
	if m.copies == nil {
		return m.syncMarked(ctx, "")
	}
	ids := map[string]bool{}
	marked, err := m.markedCopies()
	if err != nil {
		return err
	}
	for _, id := range marked {
		ids[id] = true
	}
	copies, err := m.copies.SecretCopies(ctx, m.storeKey)
	if err != nil {
		return err
	}
	for _, c := range copies {
		ids[c.WorkspaceID] = true
	}
	list, err := m.List()
	if err != nil {
		return err
	}
	for _, w := range list {
		if len(w.Secrets) > 0 {
			ids[w.ID] = true
		}
	}
	var errs []error
	for _, id := range sortedKeys(ids) {
		if !proposal.ValidID(id) {
			continue
		}
		err := m.syncLocked(ctx, id, "")
		if errors.Is(err, ErrLocked) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("workspace %s: %w", id, err))
			continue
		}
		rep.SecretCopiesSynced = append(rep.SecretCopiesSynced, id)
	}
	return errors.Join(errs...)
}

// dataOf is the Data of the first *errcode.Error in err's chain.
func dataOf(err error) any {
	if e, ok := errcode.As(err); ok {
		return e.Data
	}
	return nil
}
