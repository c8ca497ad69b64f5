package tokens

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/core/config"
)

// Errors callers branch on.
var (
	// ErrInvalid: the presented token matches no stored token (unknown,
	// revoked or malformed). Deliberately one error for all three.
	ErrInvalid = errors.New("invalid token")
	// ErrExists: a token with that name already exists.
	ErrExists = errors.New("a token with that name already exists")
	// ErrNotFound: no token has that name.
	ErrNotFound = errors.New("no token with that name")
	// ErrBadName: the name is not a valid agent name.
	ErrBadName = errors.New("token names are 1–64 characters of A-Z a-z 0-9 . _ : -")
)

// Prefix marks Sluice tokens so that secret scanners and people can tell
// what a leaked string is.
const Prefix = "sluice_"

// FileVersion of tokens.json.
const FileVersion = 1

// maxFileBytes bounds what Load accepts.
const maxFileBytes = 1 << 20

// namePattern is compiled on first use, not by every process that links
// the package.
var namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`) })

// ValidName reports whether name can name a token (and so an agent).
func ValidName(name string) bool { return namePattern().MatchString(name) }

// Token is a stored token: never the secret, only its hash.
type Token struct {
	Name      string    `json:"name"`
	Hash      string    `json:"hash"` // "sha256:<hex>"
	CreatedAt time.Time `json:"createdAt"`
}

type file struct {
	Version int     `json:"version"`
	Tokens  []Token `json:"tokens"`
}

// Store is tokens.json. It is safe for concurrent use, and Verify picks up
// changes made by other processes.
type Store struct {
	path string

	mu     sync.Mutex
	loaded []Token
	stamp  fileStamp
}

type fileStamp struct {
	ok    bool
	size  int64
	mtime time.Time
	ino   uint64
}

// Open returns the store at path ($XDG_CONFIG_HOME/sluice/tokens.json by
// convention; see DefaultPath). The file need not exist yet.
func Open(path string) *Store { return &Store{path: path} }

// DefaultPath is tokens.json in the config directory.
func DefaultPath(c *config.Config) string { return filepath.Join(c.ConfigDir, "tokens.json") }

// Path of the store's file.
func (s *Store) Path() string { return s.path }

// Hash returns the stored form of a token.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Create makes a new token named name and returns its secret, which is not
// stored and cannot be shown again.
func (s *Store) Create(name string) (string, error) {
	if !ValidName(name) {
		return "", ErrBadName
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	secret := Prefix + base64.RawURLEncoding.EncodeToString(raw)
	err := s.update(func(list []Token) ([]Token, error) {
		for _, t := range list {
			if t.Name == name {
				return nil, fmt.Errorf("%w: %q (revoke it first: sluice-sidecar token revoke --name %s)", ErrExists, name, name)
			}
		}
		return append(list, Token{Name: name, Hash: Hash(secret), CreatedAt: time.Now().UTC().Truncate(time.Second)}), nil
	})
	if err != nil {
		return "", err
	}
	return secret, nil
}

// Revoke deletes the token named name.
func (s *Store) Revoke(name string) error {
	return s.update(func(list []Token) ([]Token, error) {
		out := list[:0]
		found := false
		for _, t := range list {
			if t.Name == name {
				found = true
				continue
			}
			out = append(out, t)
		}
		if !found {
			return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
		}
		return out, nil
	})
}

// List returns the stored tokens sorted by name.
func (s *Store) List() ([]Token, error) {
	list, err := s.current()
	if err != nil {
		return nil, err
	}
	out := append([]Token(nil), list...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Verify returns the token that secret belongs to, or ErrInvalid. Every
// stored hash is compared, in constant time, so the time taken says nothing
// about which token (if any) came close.
func (s *Store) Verify(secret string) (Token, error) {
	list, err := s.current()
	if err != nil {
		return Token{}, err
	}
	if !strings.HasPrefix(secret, Prefix) || len(secret) > 256 {
		return Token{}, ErrInvalid
	}
	want := []byte(Hash(secret))
	match := -1
	for i, t := range list {
		if subtle.ConstantTimeCompare(want, []byte(t.Hash)) == 1 {
			match = i
		}
	}
	if match < 0 {
		return Token{}, ErrInvalid
	}
	return list[match], nil
}

// current returns the tokens, re-reading the file when it changed.
func (s *Store) current() ([]Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := stampOf(s.path)
	if err != nil {
		return nil, err
	}
	if st.ok && st == s.stamp && s.loaded != nil {
		return s.loaded, nil
	}
	list, err := s.read()
	if err != nil {
		return nil, err
	}
	s.loaded, s.stamp = list, st
	return list, nil
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return fileStamp{}, nil
	}
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{ok: true, size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi)}, nil
}

// read loads the file, refusing a symlink, a file open to other users, or
// one that does not parse: a broken token file must stop the server, not
// let it run without authentication.
func (s *Store) read() ([]Token, error) {
	fi, err := os.Lstat(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return []Token{}, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("token file %s is not a regular file", s.path)
	}
	if config.PrivateModeEnforced && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("token file %s has mode %04o; it must be 0600 (chmod 600 %s)", s.path, fi.Mode().Perm(), s.path)
	}
	if fi.Size() > maxFileBytes {
		return nil, fmt.Errorf("token file %s is too large", s.path)
	}
	b, err := os.ReadFile(s.path)
	if err != nil {
		return nil, err
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("token file %s: %w", s.path, err)
	}
	if f.Version != FileVersion {
		return nil, fmt.Errorf("token file %s: unsupported version %d", s.path, f.Version)
	}
	seen := map[string]bool{}
	for _, t := range f.Tokens {
		if !ValidName(t.Name) || seen[t.Name] || !strings.HasPrefix(t.Hash, "sha256:") || len(t.Hash) != len("sha256:")+64 {
			return nil, fmt.Errorf("token file %s: malformed entry %q", s.path, t.Name)
		}
		seen[t.Name] = true
	}
	if f.Tokens == nil {
		f.Tokens = []Token{}
	}
	return f.Tokens, nil
}

// update applies fn under an exclusive lock and writes the result
// atomically.
func (s *Store) update(fn func([]Token) ([]Token, error)) error {
	dir := filepath.Dir(s.path)
	if err := config.EnsurePrivateDir(dir); err != nil {
		return err
	}
	unlock, err := lockPath(s.path + ".lock")
	if err != nil {
		return fmt.Errorf("lock %s: %w", s.path, err)
	}
	defer unlock()
	list, err := s.read()
	if err != nil {
		return err
	}
	list, err = fn(append([]Token(nil), list...))
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(file{Version: FileVersion, Tokens: list}, "", "  ")
	if err != nil {
		return err
	}
	if err := config.WriteFileAtomic(s.path, append(b, '\n'), 0o600); err != nil {
		return err
	}
	s.mu.Lock()
	s.loaded = nil
	s.mu.Unlock()
	return nil
}
