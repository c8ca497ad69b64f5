package audit

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/canonjson"
)

// testKey is a key pair on disk with the loaded private key.
type testKey struct {
	priv              ed25519.PrivateKey
	privPath, pubPath string
}

func newTestKey(t testing.TB) testKey {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "keys")
	k := testKey{privPath: filepath.Join(dir, "audit.key"), pubPath: filepath.Join(dir, "audit.pub")}
	if err := GenerateKey(k.privPath, k.pubPath); err != nil {
		t.Fatalf("GenerateKey: %v", err)
	}
	var err error
	if k.priv, err = LoadPrivateKey(k.privPath); err != nil {
		t.Fatalf("LoadPrivateKey: %v", err)
	}
	return k
}

func (k testKey) pub() ed25519.PublicKey { return k.priv.Public().(ed25519.PublicKey) }

// ledgerPath returns a ledger path in a fresh directory that Open will
// create 0700.
func ledgerPath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "state", "audit", "audit.jsonl")
}

func openLedger(t testing.TB, opts Options) *Ledger {
	t.Helper()
	l, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// signedLedger is a new ledger at a fresh path holding n entries signed
// with a fresh key.
func signedLedger(t testing.TB, n int) (testKey, string, []Receipt) {
	t.Helper()
	k := newTestKey(t)
	path := ledgerPath(t)
	l := openLedger(t, Options{Path: path, Key: k.priv})
	return k, path, appendN(t, l, n)
}

func sampleEntry(i int) Entry {
	return Entry{
		Tool:            "repo_status",
		RepoScope:       RepoScope("/home/someone/src/project"),
		ArgsFingerprint: mustFingerprint(map[string]any{"i": i}),
		Risk:            "low",
		Approval:        "auto",
		Result:          "ok",
		SessionID:       "agent-session-1",
		DurationMS:      int64(i + 1),
		Summary:         "inspected working tree status",
		Data:            map[string]any{"n": i, "cached": i%2 == 0},
	}
}

func mustFingerprint(v any) string {
	fp, err := ArgsFingerprint(v)
	if err != nil {
		panic(err)
	}
	return fp
}

func appendN(t testing.TB, l *Ledger, n int) []Receipt {
	t.Helper()
	var rs []Receipt
	for i := range n {
		r, err := l.Append(sampleEntry(i))
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		rs = append(rs, r)
	}
	return rs
}

// runVerify runs VerifyCommand and returns its exit code and output.
func runVerify(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := VerifyCommand(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func readLines(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(data), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func writeLines(t testing.TB, path string, lines []string, terminated bool) {
	t.Helper()
	s := strings.Join(lines, "\n")
	if terminated && len(lines) > 0 {
		s += "\n"
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func decodeLine(t testing.TB, line string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decoding line: %v", err)
	}
	return m
}

// rehash recomputes entryHash the way the format defines it, which is what
// a forger without the signing key can do.
func rehash(t testing.TB, m map[string]any) string {
	t.Helper()
	delete(m, "entryHash")
	sig, hasSig := m["signature"]
	delete(m, "signature")
	h, err := canonjson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	m["entryHash"] = sha256Hex(h)
	if hasSig {
		m["signature"] = sig
	}
	line, err := canonjson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(line)
}
