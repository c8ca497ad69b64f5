package audit

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fuzzKey is fixed so that the checked-in seed corpus can hold lines signed
// by it.
var fuzzKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))

func FuzzVerifyLine(f *testing.F) {
	f.Add([]byte(`{"tool":"legacy"}`))
	f.Add([]byte(`{"auditChainVersion":1}`))
	f.Add([]byte(`[1,2,3]`))
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, c := range []*lineChecker{
			newLineChecker(fuzzKey.Public().(ed25519.PublicKey)),
			newLineChecker(nil),
			{foreignKeysOK: true},
		} {
			info, reason := c.check(line)
			if reason == "" && !info.legacy && (info.seq == 0 || !isDigest(info.entryHash)) {
				t.Fatalf("accepted a chained line without a sequence or hash: %q", line)
			}
			again, reason2 := c.check(line)
			if reason != reason2 || again.seq != info.seq {
				t.Fatal("checking is not deterministic")
			}
			parseCheckpoint(line, c)
		}
	})
}

// TestFuzzSeeds_SignedEntryVerifies keeps the checked-in seed meaningful: it
// must reach the end of the signature check, not fail early.
func TestFuzzSeeds_SignedEntryVerifies(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "fuzz", "FuzzVerifyLine", "signed-entry"))
	if err != nil {
		t.Fatal(err)
	}
	_, lit, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
	line, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lit, "[]byte("), ")"))
	if err != nil {
		t.Fatal(err)
	}
	c := newLineChecker(fuzzKey.Public().(ed25519.PublicKey))
	if info, reason := c.check([]byte(line)); reason != "" || !info.signed {
		t.Errorf("seed does not verify: %q", reason)
	}
}
