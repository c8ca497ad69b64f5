package audit

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/core/config"
)

// Key errors. Every refusal by the key functions wraps exactly one of these;
// unsafe files also wrap the matching file-safety sentinel (ErrSymlink,
// ErrHardLink, ErrNotRegular, ErrOwner).
var (
	// ErrKeyMissing: there is no file at the key path.
	ErrKeyMissing = errors.New("audit: key file missing")

	// ErrKeyEmpty: the key file has no content.
	ErrKeyEmpty = errors.New("audit: key file is empty")

	// ErrKeyTooLarge: the key file is over 64 KiB, far more than any PEM
	// key, so it is not read.
	ErrKeyTooLarge = errors.New("audit: key file is larger than 64 KiB")

	// ErrKeyPermissions: a private key is readable or writable by group or
	// others, or owned by another user.
	ErrKeyPermissions = errors.New("audit: private key permissions are too open")

	// ErrKeyUnsafe: a private key is a symlink, has more than one hard link,
	// is not a regular file, or changed while it was being opened.
	ErrKeyUnsafe = errors.New("audit: private key file is unsafe")

	// ErrKeyInvalid: the file is not a PEM "PRIVATE KEY" (PKCS#8) or
	// "PUBLIC KEY" (PKIX) holding an Ed25519 key.
	ErrKeyInvalid = errors.New("audit: not an Ed25519 PEM key")

	// ErrKeyExists: GenerateKey will not overwrite an existing key file.
	ErrKeyExists = errors.New("audit: key file already exists")

	// ErrKeyMismatch: the public key file does not belong to the private key.
	ErrKeyMismatch = errors.New("audit: public key does not match the private key")
)

const maxKeyFileBytes = 64 << 10

// KeyID names a public key in entries and checkpoints: the first 8 bytes of
// the raw 32-byte Ed25519 key as 16 lowercase hex digits.
func KeyID(pub ed25519.PublicKey) string {
	if len(pub) < 8 {
		return ""
	}
	return hex.EncodeToString(pub[:8])
}

// GenerateKey creates an Ed25519 key pair: the private key as PKCS#8 PEM at
// privPath (0600) and the public key as PKIX PEM at pubPath (0644). Missing
// parent directories are created 0700. It refuses with ErrKeyExists when
// either file exists, and never leaves a half-written key at either path.
func GenerateKey(privPath, pubPath string) error {
	for _, p := range []string{privPath, pubPath} {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s: %w", p, ErrKeyExists)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("audit: generating key: %w", err)
	}
	privPEM, err := encodePrivate(priv)
	if err != nil {
		return err
	}
	pubPEM, err := encodePublic(pub)
	if err != nil {
		return err
	}
	if err := publishNew(privPath, privPEM, 0o600); err != nil {
		return err
	}
	if err := publishNew(pubPath, pubPEM, 0o644); err != nil {
		if errors.Is(err, ErrKeyExists) && samePublicFile(pubPath, pub) {
			// A concurrent EnsureKey derived the same public key from the
			// private key just published; that is the file we wanted.
			return nil
		}
		os.Remove(privPath)
		return err
	}
	return nil
}

// EnsureKey loads the private key at privPath, creating the pair on first
// use. created reports whether this call made it. A public key file that is
// missing is written from the private key; one that exists must match it.
// Processes racing through EnsureKey on first run all end up with the one key
// that won.
func EnsureKey(privPath, pubPath string) (priv ed25519.PrivateKey, created bool, err error) {
	switch err := GenerateKey(privPath, pubPath); {
	case err == nil:
		created = true
	case errors.Is(err, ErrKeyExists):
	default:
		return nil, false, err
	}
	priv, err = loadPrivateKeySettled(privPath)
	if err != nil {
		return nil, false, err
	}
	pub := priv.Public().(ed25519.PublicKey)
	got, err := LoadPublicKey(pubPath)
	if errors.Is(err, ErrKeyMissing) {
		pubPEM, perr := encodePublic(pub)
		if perr != nil {
			return nil, false, perr
		}
		if perr := publishNew(pubPath, pubPEM, 0o644); perr != nil && !errors.Is(perr, ErrKeyExists) {
			return nil, false, perr
		}
		got, err = LoadPublicKey(pubPath)
	}
	if err != nil {
		return nil, false, err
	}
	if !pub.Equal(got) {
		return nil, false, fmt.Errorf("%s: %w", pubPath, ErrKeyMismatch)
	}
	return priv, created, nil
}

// loadPrivateKeySettled retries briefly over the instant in which a
// concurrent GenerateKey has linked the new key but not yet removed its
// temporary name (the file then has two links).
func loadPrivateKeySettled(path string) (ed25519.PrivateKey, error) {
	var err error
	for range 50 {
		var k ed25519.PrivateKey
		if k, err = LoadPrivateKey(path); err == nil || !errors.Is(err, ErrHardLink) {
			return k, err
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil, err
}

// LoadPrivateKey reads a PKCS#8 PEM Ed25519 private key. It refuses a missing
// (ErrKeyMissing), empty (ErrKeyEmpty) or oversized (ErrKeyTooLarge) file, a
// symlink, a hard-linked or non-regular file (ErrKeyUnsafe), a file whose
// mode grants group or others any access or that another user owns
// (ErrKeyPermissions), and anything that is not an Ed25519 PKCS#8 PEM block
// (ErrKeyInvalid).
func LoadPrivateKey(path string) (ed25519.PrivateKey, error) {
	block, err := readKeyPEM(path, true)
	if err != nil {
		return nil, err
	}
	if block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s: PEM type %q, want \"PRIVATE KEY\": %w", path, block.Type, ErrKeyInvalid)
	}
	return parsePrivate(path, block.Bytes)
}

// LoadPublicKey reads a PKIX PEM ("PUBLIC KEY") Ed25519 public key. It also
// accepts a PKCS#8 private key PEM and returns its public half, so a verifier
// can be pointed at either file. Permissions are not checked: the key is
// public.
func LoadPublicKey(path string) (ed25519.PublicKey, error) {
	block, err := readKeyPEM(path, false)
	if err != nil {
		return nil, err
	}
	switch block.Type {
	case "PUBLIC KEY":
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %v", path, ErrKeyInvalid, err)
		}
		pub, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("%s: %T is not Ed25519: %w", path, k, ErrKeyInvalid)
		}
		return pub, nil
	case "PRIVATE KEY":
		priv, err := parsePrivate(path, block.Bytes)
		if err != nil {
			return nil, err
		}
		return priv.Public().(ed25519.PublicKey), nil
	}
	return nil, fmt.Errorf("%s: PEM type %q: %w", path, block.Type, ErrKeyInvalid)
}

func parsePrivate(path string, der []byte) (ed25519.PrivateKey, error) {
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrKeyInvalid, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: %T is not Ed25519: %w", path, k, ErrKeyInvalid)
	}
	return priv, nil
}

// readKeyPEM reads a key file with readKeyFile and decodes the one PEM
// block it must hold, and nothing else.
func readKeyPEM(path string, private bool) (*pem.Block, error) {
	data, err := readKeyFile(path, private)
	if err != nil {
		return nil, err
	}
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block: %w", path, ErrKeyInvalid)
	}
	if len(block.Headers) != 0 {
		return nil, fmt.Errorf("%s: encrypted or annotated PEM is not supported: %w", path, ErrKeyInvalid)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("%s: data after the PEM block: %w", path, ErrKeyInvalid)
	}
	return block, nil
}

// readKeyFile reads at most maxKeyFileBytes. For a private key it also
// applies the file-safety rules, checking the opened descriptor against the
// name so that a swap between the checks and the read is caught.
func readKeyFile(path string, private bool) ([]byte, error) {
	what := "public key"
	if private {
		what = "private key"
	}
	stat := os.Stat
	if private {
		stat = os.Lstat
	}
	fi, err := stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s %s: %w", what, path, ErrKeyMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s %s: %w: %w", what, path, ErrKeyUnsafe, ErrSymlink)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %s: %w: %w", what, path, ErrKeyUnsafe, ErrNotRegular)
	}
	flag := os.O_RDONLY
	if private {
		flag |= oNoFollow
		if config.PrivateModeEnforced && fi.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("%s %s: mode %#o: %w", what, path, fi.Mode().Perm(), ErrKeyPermissions)
		}
		if !ownedByUs(fi) {
			return nil, fmt.Errorf("%s %s: %w: %w", what, path, ErrKeyPermissions, ErrOwner)
		}
	}
	if fi.Size() == 0 {
		return nil, fmt.Errorf("%s %s: %w", what, path, ErrKeyEmpty)
	}
	if fi.Size() > maxKeyFileBytes {
		return nil, fmt.Errorf("%s %s: %w", what, path, ErrKeyTooLarge)
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		if isSymlinkErr(err) {
			return nil, fmt.Errorf("%s %s: %w: %w", what, path, ErrKeyUnsafe, ErrSymlink)
		}
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	defer f.Close()
	if private {
		ofi, err := f.Stat()
		if err != nil {
			return nil, err
		}
		if !os.SameFile(fi, ofi) {
			return nil, fmt.Errorf("%s %s: replaced while opening: %w", what, path, ErrKeyUnsafe)
		}
		n, err := linkCount(f, ofi)
		if err != nil {
			return nil, err
		}
		if n > 1 {
			return nil, fmt.Errorf("%s %s: %w: %w", what, path, ErrKeyUnsafe, ErrHardLink)
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	switch {
	case len(data) == 0:
		return nil, fmt.Errorf("%s %s: %w", what, path, ErrKeyEmpty)
	case len(data) > maxKeyFileBytes:
		return nil, fmt.Errorf("%s %s: %w", what, path, ErrKeyTooLarge)
	}
	return data, nil
}

func encodePrivate(priv ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func encodePublic(pub ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

func samePublicFile(path string, pub ed25519.PublicKey) bool {
	got, err := LoadPublicKey(path)
	return err == nil && pub.Equal(got)
}

// publishNew writes data to a temporary file beside path, syncs it, and then
// links it into place, which fails if path exists. Readers therefore see
// either no file or the whole key, and an existing key is never replaced.
func publishNew(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+filepath.Base(path)+".tmp-"+uuid.NewString())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm) // the umask may have narrowed a public key's mode
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", path, ErrKeyExists)
		}
		return err
	}
	if err := os.Remove(tmp); err != nil {
		return err
	}
	return syncDir(dir)
}
