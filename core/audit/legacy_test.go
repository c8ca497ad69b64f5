package audit

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/canonjson"
)

// fluxgitLegacy builds the lines FluxGit wrote before its chain: one
// unsigned, one signed with signature version 1 (the key id is not in
// the signed bytes), one signed with no version at all.
func fluxgitLegacy(t *testing.T, k testKey) []string {
	t.Helper()
	sign := func(m map[string]any, withKid bool) string {
		t.Helper()
		signed := map[string]any{}
		for key, v := range m {
			if key == "signatureKeyId" && !withKid {
				continue
			}
			signed[key] = v
		}
		msg, err := canonjson.Marshal(signed)
		if err != nil {
			t.Fatal(err)
		}
		m["signature"] = sigEncoding.EncodeToString(ed25519.Sign(k.priv, msg))
		line, err := canonjson.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(line)
	}
	return []string{
		`{"tool":"repo.status","ts":"2024-01-01T00:00:00Z","summary":"ünïcode – kept as is"}`,
		sign(map[string]any{"tool": "operation.preview.merge", "signatureKeyId": KeyID(k.pub()), "signatureVersion": 1}, false),
		sign(map[string]any{"event_type": "decision", "result": "ok"}, false),
	}
}

// anchorOf folds lines as FluxGit does, written here from its definition.
func anchorOf(t *testing.T, lines []string) string {
	t.Helper()
	var prev [32]byte
	for _, l := range lines {
		canon, err := canonjson.Marshal(decodeLine(t, l))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		h.Write([]byte("fluxgit-mcp-legacy-prefix-v1\x00"))
		h.Write(prev[:])
		h.Write(canon)
		copy(prev[:], h.Sum(nil))
	}
	return "legacy-sha256:" + hex.EncodeToString(prev[:])
}

func legacyLedger(t *testing.T, k testKey, legacy []string) string {
	t.Helper()
	path := ledgerPath(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	writeLines(t, path, legacy, true)
	l := openLedger(t, Options{Path: path, Key: k.priv})
	if rs := appendN(t, l, 3); rs[0].Sequence != 1 {
		t.Fatalf("first chained sequence %d, want 1", rs[0].Sequence)
	}
	return path
}

func TestVerify_FluxGitLegacyPrefix_AnchoredAndCounted(t *testing.T) {
	k := newTestKey(t)
	legacy := fluxgitLegacy(t, k)
	path := legacyLedger(t, k, legacy)
	lines := readLines(t, path)
	first := decodeLine(t, lines[3])
	if got, want := first["previousHash"], anchorOf(t, legacy); got != want {
		t.Fatalf("first chained entry links to %v, want the legacy anchor %s", got, want)
	}
	rep, err := Verify(path, k.pub(), VerifyOptions{})
	if err != nil || rep.Legacy != 3 || rep.LegacySigned != 2 || rep.Chained != 3 || rep.FirstSeq != 1 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	code, out, stderr := runVerify(path, "--pubkey", k.pubPath)
	if code != ExitOK || !strings.Contains(out, "entries: 6\nchained: 3\nlegacy: 3\n") {
		t.Fatalf("verify-audit: exit %d\n%s%s", code, out, stderr)
	}
	// --require-signed still requires every legacy line's signature.
	code, _, stderr = runVerify(path, "--pubkey", k.pubPath, "--require-signed")
	if code != ExitIntegrity || !strings.Contains(stderr, "line 1: "+reasonLegacyUnsigned) {
		t.Fatalf("--require-signed with an unsigned legacy line: exit %d %s", code, stderr)
	}
	signedOnly := legacyLedger(t, k, legacy[1:])
	if code, out, stderr := runVerify(signedOnly, "--pubkey", k.pubPath, "--require-signed"); code != ExitOK || !strings.Contains(out, "legacy: 2\n") {
		t.Fatalf("--require-signed with signed legacy lines: exit %d\n%s%s", code, out, stderr)
	}
}

func TestVerify_FluxGitLegacyPrefix_TamperRefused(t *testing.T) {
	k := newTestKey(t)
	legacy := fluxgitLegacy(t, k)
	path := legacyLedger(t, k, legacy)
	lines := readLines(t, path)

	edited := strings.Replace(lines[0], "repo.status", "repo.statuz", 1)
	genesis := decodeLine(t, lines[3])
	genesis["previousHash"] = genesisHash
	for _, f := range []string{"signature", "signatureKeyId", "signatureVersion"} {
		delete(genesis, f) // a forger without the key
	}
	forgedSig := decodeLine(t, lines[1])
	forgedSig["tool"] = "operation.preview.reset"
	forged, _ := canonjson.Marshal(forgedSig)

	for _, tc := range []struct {
		name   string
		lines  []string
		reason string
	}{
		{"an unsigned legacy line edited", append([]string{edited}, lines[1:]...), "line 4: " + reasonLegacyAnchor},
		{"a legacy line deleted", append(lines[:1:1], lines[2:]...), "line 3: " + reasonLegacyAnchor},
		{"a signed legacy line edited", append([]string{lines[0], string(forged)}, lines[2:]...), "line 2: " + reasonSigInvalid},
		{"legacy lines dropped, anchor kept", lines[3:], "line 1: " + reasonLegacyLink},
		{"the chain relinked to genesis", append(lines[:3:3], append([]string{rehash(t, genesis)}, lines[4:]...)...), "line 4: " + reasonLegacyAnchor},
		{"a legacy line after the chain started", append(lines[:6:6], legacy[0]), "line 7: " + reasonLegacyPlacement},
	} {
		writeLines(t, path, tc.lines, true)
		code, _, stderr := runVerify(path, "--pubkey", k.pubPath)
		if code != ExitIntegrity || !strings.Contains(stderr, tc.reason) {
			t.Errorf("%s: exit %d %q, want %q", tc.name, code, stderr, tc.reason)
		}
	}
}
