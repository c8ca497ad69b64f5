package tokens

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	return Open(filepath.Join(t.TempDir(), "sluice", "tokens.json"))
}

func TestStore_CreateVerifyListRevoke(t *testing.T) {
	s := newStore(t)
	secret, err := s.Create("build-bot")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, Prefix) || len(secret) < 40 {
		t.Fatalf("secret %q", secret)
	}
	tok, err := s.Verify(secret)
	if err != nil || tok.Name != "build-bot" {
		t.Fatalf("Verify: %+v %v", tok, err)
	}
	raw, _ := os.ReadFile(s.Path())
	if strings.Contains(string(raw), secret) || strings.Contains(string(raw), strings.TrimPrefix(secret, Prefix)) {
		t.Fatal("the secret is stored in clear")
	}
	if st, _ := os.Stat(s.Path()); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	if st, _ := os.Stat(filepath.Dir(s.Path())); st.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v", st.Mode().Perm())
	}
	if _, err := s.Create("build-bot"); !errors.Is(err, ErrExists) {
		t.Errorf("duplicate name: %v", err)
	}
	if _, err := s.Create("bad name"); !errors.Is(err, ErrBadName) {
		t.Errorf("bad name: %v", err)
	}
	other, _ := s.Create("chatgpt")
	list, err := s.List()
	if err != nil || len(list) != 2 || list[0].Name != "build-bot" || list[1].Name != "chatgpt" {
		t.Fatalf("List: %+v %v", list, err)
	}
	if err := s.Revoke("build-bot"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(secret); !errors.Is(err, ErrInvalid) {
		t.Errorf("revoked token verified: %v", err)
	}
	if _, err := s.Verify(other); err != nil {
		t.Errorf("other token broken by revoke: %v", err)
	}
	if err := s.Revoke("build-bot"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second revoke: %v", err)
	}
}

func TestStore_Verify_Rejects(t *testing.T) {
	s := newStore(t)
	secret, _ := s.Create("a")
	for _, bad := range []string{"", "sluice_", secret + "x", strings.TrimPrefix(secret, Prefix), strings.Repeat("sluice_x", 100)} {
		if _, err := s.Verify(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Verify(%q) = %v", bad, err)
		}
	}
}

// A server holding one Store sees a revocation made through another (the
// CLI) at once.
func TestStore_RevokeByOtherProcess_SeenImmediately(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice", "tokens.json")
	server, cli := Open(path), Open(path)
	secret, err := cli.Create("agent")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.Verify(secret); err != nil {
		t.Fatal(err)
	}
	if err := cli.Revoke("agent"); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Verify(secret); !errors.Is(err, ErrInvalid) {
		t.Fatalf("revoked token still accepted by the running server: %v", err)
	}
}

func TestStore_UnsafeFile_Refused(t *testing.T) {
	s := newStore(t)
	if _, err := s.Create("a"); err != nil {
		t.Fatal(err)
	}
	os.Chmod(s.Path(), 0o644)
	if _, err := s.List(); err == nil || !strings.Contains(err.Error(), "0600") {
		t.Errorf("group-readable token file accepted: %v", err)
	}
	os.Chmod(s.Path(), 0o600)
	os.WriteFile(s.Path(), []byte("{not json"), 0o600)
	if _, err := s.Verify("sluice_x"); err == nil || errors.Is(err, ErrInvalid) {
		t.Errorf("a corrupt file must be an error, not an invalid token: %v", err)
	}
	link := filepath.Join(t.TempDir(), "link.json")
	os.Symlink(s.Path(), link)
	if _, err := Open(link).List(); err == nil {
		t.Error("symlinked token file accepted")
	}
}

func TestStore_ConcurrentCreate_NoneLost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice", "tokens.json")
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if _, err := Open(path).Create("agent-" + string(rune('a'+i))); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	list, err := Open(path).List()
	if err != nil || len(list) != 8 {
		t.Fatalf("want 8 tokens, got %d (%v)", len(list), err)
	}
}
