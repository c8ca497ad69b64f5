//go:build unix

package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
)

func TestSecrets_SealedAtRestAndBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, false)
	a := freshWS(t, m)
	b := freshWS(t, m)
	const value = "ghp_SUPERSECRETvalue1234567890"
	if err := m.Grant(a.ID, "GH_TOKEN", value); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(m.opts.ConfigDir, secretKeyFile)
	st, err := os.Stat(key)
	if err != nil || st.Mode().Perm() != 0o600 || st.Size() != 32 {
		t.Fatalf("key file: %v %v", st, err)
	}
	raw, err := os.ReadFile(filepath.Join(m.dir(a.ID), secretsFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), value) || strings.Contains(string(raw), "SUPERSECRET") {
		t.Fatalf("the secret is stored in clear: %s", raw)
	}
	meta, _ := os.ReadFile(m.metaPath(a.ID))
	if strings.Contains(string(meta), value) || !strings.Contains(string(meta), "GH_TOKEN") {
		t.Fatalf("meta.json: %s", meta)
	}
	got, err := m.secretValues(a.ID)
	if err != nil || got["GH_TOKEN"] != value {
		t.Fatalf("secretValues: %v %v", got, err)
	}
	// A sealed value copied to another workspace does not open, nor one
	// renamed within its own.
	var doc secretsDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	sealed := doc.Secrets["GH_TOKEN"]
	if err := m.writeSecrets(b.ID, &secretsDoc{Version: doc.Version, Secrets: map[string]sealedSecret{"GH_TOKEN": sealed}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.secretValues(b.ID); err == nil {
		t.Fatalf("a secret sealed for another workspace opened")
	}
	if err := m.writeSecrets(a.ID, &secretsDoc{Version: doc.Version, Secrets: map[string]sealedSecret{"OTHER": sealed}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.secretValues(a.ID); err == nil {
		t.Fatalf("a secret renamed within its workspace opened")
	}
	if err := m.writeSecrets(a.ID, &doc); err != nil {
		t.Fatal(err)
	}
	// A second Manager on the same directories reads the same key.
	m2, err := Open(m.opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m2.secretValues(a.ID); err != nil || got["GH_TOKEN"] != value {
		t.Fatalf("reopened: %v %v", got, err)
	}

	for _, bad := range [][2]string{{"PATH", "xxxxxxxx"}, {"LD_PRELOAD", "/x.so"}, {"HTTP_PROXY", "http://x"}, {"1BAD", "xxxxxxxx"}, {"OK", "abc"}, {"OK", "a\x00bcdefg"}} {
		if err := m.Grant(a.ID, bad[0], bad[1]); !errcode.IsCode(err, errcode.InvalidArgument) {
			t.Errorf("Grant(%q): %v", bad[0], err)
		}
	}

	if rev, err := m.RevokeSecret(a.ID, "GH_TOKEN"); err != nil || rev.CopyLeft {
		t.Fatal(rev, err)
	}
	if _, err := os.Stat(filepath.Join(m.dir(a.ID), secretsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("revoked secrets file remains: %v", err)
	}
	if err := m.Grant(a.ID, "GH_TOKEN", value); err != nil {
		t.Fatal(err)
	}
	rep, err := m.Destroy(ctx, a.ID)
	if err != nil || !rep.TreeRemoved {
		t.Fatalf("Destroy: %+v %v", rep, err)
	}
	if _, err := os.Stat(m.dir(a.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("destroyed workspace directory remains")
	}
}

func TestSecrets_KeyFileMustBePrivate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "config")
	if _, err := openSecretStore(dir); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, secretKeyFile), 0o644)
	if _, err := openSecretStore(dir); err == nil {
		t.Fatalf("a world-readable key was accepted")
	}
}
