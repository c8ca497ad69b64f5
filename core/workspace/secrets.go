package workspace

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
)

// Secrets are granted by a human to one workspace, kept sealed with
// AES-256-GCM at rest (a random key in a 0600 file in the config
// directory, a fresh nonce per secret, and the workspace id and secret
// name as additional data so a sealed value cannot be moved to another
// workspace or name), handed to a run only through the Engine API
// environment (never argv), redacted from everything a run reports, and
// revoked on seal and destroy.

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
// call it. Granting a name again replaces the value.
func (m *Manager) Grant(id, name, value string) error {
	if !secretNameRe().MatchString(name) || slices.Contains(reservedEnv, name) || strings.HasPrefix(name, "LD_") {
		return errcode.New(errcode.InvalidArgument, "a secret name must be an environment variable name (^[A-Za-z_][A-Za-z0-9_]{0,63}$) and not PATH, HOME, LANG, LD_* or a proxy variable")
	}
	if len(value) < minSecretBytes || len(value) > maxSecretBytes || strings.ContainsRune(value, 0) {
		// Very short values would make redaction replace ordinary text.
		return errcode.New(errcode.InvalidArgument, "a secret value must be %d to %d bytes without NUL", minSecretBytes, maxSecretBytes)
	}
	return m.editSecrets(id, true, func(doc *secretsDoc) error {
		if _, ok := doc.Secrets[name]; !ok && len(doc.Secrets) >= maxSecretsPerWS {
			return errcode.New(errcode.InvalidArgument, "a workspace holds at most %d secrets", maxSecretsPerWS)
		}
		doc.Secrets[name] = m.secrets.seal(id, name, value)
		return nil
	})
}

// RevokeSecret removes one granted secret.
func (m *Manager) RevokeSecret(id, name string) error {
	return m.editSecrets(id, false, func(doc *secretsDoc) error {
		delete(doc.Secrets, name)
		return nil
	})
}

// editSecrets changes a workspace's secrets under its exclusive lock
// (needReady as for open), then records their names in the metadata.
func (m *Manager) editSecrets(id string, needReady bool, edit func(*secretsDoc) error) error {
	w, unlock, err := m.open(id, true, needReady)
	if err != nil {
		return err
	}
	defer unlock()
	doc, err := m.readSecrets(id)
	if err != nil {
		return err
	}
	if err := edit(doc); err != nil {
		return err
	}
	if err := m.writeSecrets(id, doc); err != nil {
		return err
	}
	w.Secrets = sortedKeys(doc.Secrets)
	w.LastUsedAt = m.now()
	return m.writeMeta(w)
}

// revokeAllLocked drops every secret and egress grant; the caller holds
// the exclusive lock and writes the metadata.
func (m *Manager) revokeAllLocked(w *Workspace) error {
	if err := m.writeSecrets(w.ID, &secretsDoc{Version: 1}); err != nil {
		return err
	}
	w.Secrets = nil
	w.Egress = nil
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
