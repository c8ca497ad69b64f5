package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/canonjson"
)

// sha256Hex is the ledger's form of a SHA-256 digest.
func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func TestArgsFingerprint(t *testing.T) {
	a, err := ArgsFingerprint(map[string]any{"b": 1, "a": "x"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ArgsFingerprint(json.RawMessage(`{"a":"x","b":1}`))
	if a != b {
		t.Errorf("key order changed the fingerprint: %s vs %s", a, b)
	}
	if want := sha256Hex([]byte(`{"a":"x","b":1}`)); a != want {
		t.Errorf("ArgsFingerprint = %s, want %s", a, want)
	}
	if _, err := ArgsFingerprint(map[string]any{"f": 0.5}); !errors.Is(err, canonjson.ErrNonInteger) {
		t.Errorf("float args: %v", err)
	}
}

func TestRepoScope(t *testing.T) {
	got := RepoScope("/home/u/src/repo/")
	if got != RepoScope("/home/u/src/repo") {
		t.Error("a trailing slash changed the scope")
	}
	if !strings.HasPrefix(got, "repoPath:sha256:") || len(got) != len("repoPath:sha256:")+64 {
		t.Errorf("RepoScope = %q", got)
	}
	if strings.Contains(got, "/home") {
		t.Error("scope leaks the path")
	}
}
