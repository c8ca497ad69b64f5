package audit

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// privateDir returns a fresh 0700 directory.
func privateDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "audit")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestOpen_FileSafety(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T) string // returns the ledger path
		want  error
	}{
		{"log is a symlink", func(t *testing.T) string {
			dir := privateDir(t)
			target := filepath.Join(dir, "elsewhere.jsonl")
			os.WriteFile(target, nil, 0o600)
			path := filepath.Join(dir, "audit.jsonl")
			os.Symlink(target, path)
			return path
		}, ErrSymlink},
		{"dangling symlink", func(t *testing.T) string {
			dir := privateDir(t)
			path := filepath.Join(dir, "audit.jsonl")
			os.Symlink(filepath.Join(dir, "would-be-created"), path)
			return path
		}, ErrSymlink},
		{"lock is a symlink", func(t *testing.T) string {
			dir := privateDir(t)
			path := filepath.Join(dir, "audit.jsonl")
			os.WriteFile(filepath.Join(dir, "other"), nil, 0o600)
			os.Symlink(filepath.Join(dir, "other"), path+".lock")
			return path
		}, ErrSymlink},
		{"log is hard-linked", func(t *testing.T) string {
			dir := privateDir(t)
			path := filepath.Join(dir, "audit.jsonl")
			os.WriteFile(path, nil, 0o600)
			os.Link(path, filepath.Join(dir, "copy.jsonl"))
			return path
		}, ErrHardLink},
		{"lock is hard-linked", func(t *testing.T) string {
			dir := privateDir(t)
			path := filepath.Join(dir, "audit.jsonl")
			os.WriteFile(path+".lock", nil, 0o600)
			os.Link(path+".lock", filepath.Join(dir, "lock-copy"))
			return path
		}, ErrHardLink},
		{"directory 0755", func(t *testing.T) string {
			dir := privateDir(t)
			os.Chmod(dir, 0o755)
			return filepath.Join(dir, "audit.jsonl")
		}, ErrPermissions},
		{"log 0644", func(t *testing.T) string {
			dir := privateDir(t)
			path := filepath.Join(dir, "audit.jsonl")
			os.WriteFile(path, nil, 0o644)
			os.Chmod(path, 0o644)
			return path
		}, ErrPermissions},
		{"log is a directory", func(t *testing.T) string {
			dir := privateDir(t)
			path := filepath.Join(dir, "audit.jsonl")
			os.Mkdir(path, 0o700)
			return path
		}, ErrNotRegular},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.setup(t)
			l, err := Open(Options{Path: path})
			if err == nil {
				l.Close()
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("Open = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestOpen_CreatesPrivateFiles(t *testing.T) {
	path := ledgerPath(t)
	openLedger(t, Options{Path: path})
	for p, want := range map[string]os.FileMode{
		filepath.Dir(path): 0o700 | os.ModeDir,
		path:               0o600,
		path + ".lock":     0o600,
	} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v (%v)", p, fi.Mode(), want, err)
		}
	}
}

// TestAppend_RefusesSwappedLog: a symlink planted after Open is still refused.
func TestAppend_RefusesSwappedLog(t *testing.T) {
	path := ledgerPath(t)
	l := openLedger(t, Options{Path: path})
	appendN(t, l, 1)
	target := filepath.Join(filepath.Dir(path), "target")
	os.Rename(path, target)
	os.Symlink(target, path)
	if _, err := l.Append(sampleEntry(0)); !errors.Is(err, ErrSymlink) {
		t.Errorf("Append through symlink = %v, want ErrSymlink", err)
	}
}

func TestAppend_FailsClosed(t *testing.T) {
	tests := map[string]func(t *testing.T, path string){
		// Permission bits do not stop root, so make the path unwritable by
		// what it is rather than by its mode.
		"log replaced by a directory": func(t *testing.T, path string) {
			os.Remove(path)
			os.Mkdir(path, 0o700)
		},
		"directory removed": func(t *testing.T, path string) {
			os.RemoveAll(filepath.Dir(path))
		},
		"log replaced by a corrupt record": func(t *testing.T, path string) {
			os.WriteFile(path, []byte("garbage\n"), 0o600)
		},
	}
	for name, breakIt := range tests {
		t.Run(name, func(t *testing.T) {
			path := ledgerPath(t)
			l := openLedger(t, Options{Path: path})
			appendN(t, l, 2)
			breakIt(t, path)
			r, err := l.Append(sampleEntry(0))
			if err == nil {
				t.Fatalf("Append succeeded (%+v) on a broken ledger", r)
			}
			if r != (Receipt{}) {
				t.Errorf("failed Append returned a receipt %+v", r)
			}
		})
	}
}

func TestLoadPrivateKey_Refusals(t *testing.T) {
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ecKey)
	ecPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER})

	tests := []struct {
		name  string
		setup func(t *testing.T, good testKey) string
		want  []error
	}{
		{"missing", func(t *testing.T, good testKey) string {
			return filepath.Join(t.TempDir(), "none.pem")
		}, []error{ErrKeyMissing}},
		{"empty", func(t *testing.T, good testKey) string {
			return writeKeyFile(t, nil, 0o600)
		}, []error{ErrKeyEmpty}},
		{"over 64 KiB", func(t *testing.T, good testKey) string {
			return writeKeyFile(t, make([]byte, 65<<10), 0o600)
		}, []error{ErrKeyTooLarge}},
		{"mode 0644", func(t *testing.T, good testKey) string {
			data, _ := os.ReadFile(good.privPath)
			return writeKeyFile(t, data, 0o644)
		}, []error{ErrKeyPermissions}},
		{"mode 0640", func(t *testing.T, good testKey) string {
			data, _ := os.ReadFile(good.privPath)
			return writeKeyFile(t, data, 0o640)
		}, []error{ErrKeyPermissions}},
		{"symlink", func(t *testing.T, good testKey) string {
			link := filepath.Join(t.TempDir(), "link.pem")
			os.Symlink(good.privPath, link)
			return link
		}, []error{ErrKeyUnsafe, ErrSymlink}},
		{"hard link", func(t *testing.T, good testKey) string {
			link := filepath.Join(filepath.Dir(good.privPath), "hard.pem")
			os.Link(good.privPath, link)
			return link
		}, []error{ErrKeyUnsafe, ErrHardLink}},
		{"directory", func(t *testing.T, good testKey) string {
			return t.TempDir()
		}, []error{ErrKeyUnsafe, ErrNotRegular}},
		{"not PEM", func(t *testing.T, good testKey) string {
			return writeKeyFile(t, []byte("not a key\n"), 0o600)
		}, []error{ErrKeyInvalid}},
		{"public key PEM", func(t *testing.T, good testKey) string {
			data, _ := os.ReadFile(good.pubPath)
			return writeKeyFile(t, data, 0o600)
		}, []error{ErrKeyInvalid}},
		{"ECDSA PKCS#8", func(t *testing.T, good testKey) string {
			return writeKeyFile(t, ecPEM, 0o600)
		}, []error{ErrKeyInvalid}},
		{"garbage after PEM", func(t *testing.T, good testKey) string {
			data, _ := os.ReadFile(good.privPath)
			return writeKeyFile(t, append(data, "trailing"...), 0o600)
		}, []error{ErrKeyInvalid}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			good := newTestKey(t)
			path := tt.setup(t, good)
			_, err := LoadPrivateKey(path)
			for _, want := range tt.want {
				if !errors.Is(err, want) {
					t.Errorf("LoadPrivateKey = %v, want %v", err, want)
				}
			}
		})
	}
}

func writeKeyFile(t *testing.T, data []byte, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, mode)
	return path
}

func TestGenerateKey(t *testing.T) {
	k := newTestKey(t)
	for p, want := range map[string]os.FileMode{k.privPath: 0o600, k.pubPath: 0o644} {
		if fi, err := os.Stat(p); err != nil || fi.Mode() != want {
			t.Errorf("%s mode %v, want %v", p, fi.Mode(), want)
		}
	}
	before, _ := os.ReadFile(k.privPath)
	if err := GenerateKey(k.privPath, k.pubPath+".new"); !errors.Is(err, ErrKeyExists) {
		t.Errorf("GenerateKey over existing key = %v, want ErrKeyExists", err)
	}
	if after, _ := os.ReadFile(k.privPath); string(after) != string(before) {
		t.Error("existing private key was changed")
	}
	if _, err := os.Stat(k.pubPath + ".new"); !errors.Is(err, os.ErrNotExist) {
		t.Error("a refused GenerateKey left a file behind")
	}
	pub, err := LoadPublicKey(k.pubPath)
	if err != nil || !pub.Equal(k.pub()) {
		t.Errorf("LoadPublicKey = %v", err)
	}
	if id := KeyID(pub); len(id) != 16 || id != strings.ToLower(id) {
		t.Errorf("KeyID = %q", id)
	}
	entries, _ := os.ReadDir(filepath.Dir(k.privPath))
	if len(entries) != 2 {
		t.Errorf("key directory holds %d files, want 2 (temporary files left?)", len(entries))
	}
}

func TestEnsureKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cfg")
	priv, pub := filepath.Join(dir, "audit.key"), filepath.Join(dir, "audit.pub")
	k1, created, err := EnsureKey(priv, pub)
	if err != nil || !created {
		t.Fatalf("first EnsureKey: created %v, %v", created, err)
	}
	k2, created, err := EnsureKey(priv, pub)
	if err != nil || created || !k1.Equal(k2) {
		t.Fatalf("second EnsureKey: created %v, same %v, %v", created, k1.Equal(k2), err)
	}
	// A lost public key is rewritten from the private key.
	os.Remove(pub)
	if _, _, err := EnsureKey(priv, pub); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadPublicKey(pub); err != nil || !got.Equal(k1.Public()) {
		t.Errorf("rewritten public key: %v", err)
	}
	// A public key from another pair is refused.
	other := newTestKey(t)
	data, _ := os.ReadFile(other.pubPath)
	os.WriteFile(pub, data, 0o644)
	if _, _, err := EnsureKey(priv, pub); !errors.Is(err, ErrKeyMismatch) {
		t.Errorf("mismatched public key: %v", err)
	}
	// An orphaned public key is not silently paired with a new private key.
	os.Remove(priv)
	if _, _, err := EnsureKey(priv, pub); !errors.Is(err, ErrKeyMissing) {
		t.Errorf("orphaned public key: %v", err)
	}
}

func TestEnsureKey_Concurrent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cfg")
	priv, pub := filepath.Join(dir, "audit.key"), filepath.Join(dir, "audit.pub")
	const n = 8
	keys := make(chan []byte, n)
	errs := make(chan error, n)
	for range n {
		go func() {
			k, _, err := EnsureKey(priv, pub)
			errs <- err
			keys <- k
		}()
	}
	var first []byte
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		k := <-keys
		if first == nil {
			first = k
		} else if string(k) != string(first) {
			t.Fatal("concurrent EnsureKey calls returned different keys")
		}
	}
}

func TestKeygenCommand(t *testing.T) {
	dir := t.TempDir()
	defPriv, defPub := filepath.Join(dir, "d", "audit.key"), filepath.Join(dir, "d", "audit.pub")
	var out, errOut strings.Builder
	if code := KeygenCommand(nil, defPriv, defPub, &out, &errOut); code != 0 {
		t.Fatalf("keygen = %d: %s", code, errOut.String())
	}
	pub, err := LoadPublicKey(defPub)
	if err != nil {
		t.Fatal(err)
	}
	want := "private key: " + defPriv + "\npublic key: " + defPub + "\nkey id: " + KeyID(pub) + "\n"
	if out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
	if code := KeygenCommand(nil, defPriv, defPub, &out, &errOut); code != 1 {
		t.Errorf("keygen over existing key = %d, want 1", code)
	}
	custom := filepath.Join(dir, "c", "k.pem")
	out.Reset()
	if code := KeygenCommand([]string{"--out", custom}, defPriv, defPub, &out, &errOut); code != 0 {
		t.Fatalf("keygen --out = %d: %s", code, errOut.String())
	}
	if _, err := LoadPrivateKey(custom); err != nil {
		t.Error(err)
	}
	if _, err := LoadPublicKey(custom + ".pub"); err != nil {
		t.Error(err)
	}
	if code := KeygenCommand([]string{"extra"}, defPriv, defPub, &out, &errOut); code != 2 {
		t.Errorf("keygen with a positional argument = %d, want 2", code)
	}
}
