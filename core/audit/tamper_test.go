package audit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyCommand_Tamper applies one kind of tampering per case to a
// freshly written signed ledger and expects exit 3 with the failure located.
func TestVerifyCommand_Tamper(t *testing.T) {
	other := newTestKey(t)
	const secret = "inspected working tree status"
	tests := []struct {
		name   string
		tamper func(t *testing.T, lines []string) ([]string, bool) // lines, terminated
		where  string                                              // expected in stderr
	}{
		{"mutated field", func(t *testing.T, l []string) ([]string, bool) {
			l[2] = strings.Replace(l[2], `"risk":"low"`, `"risk":"none"`, 1)
			return l, true
		}, "line 3: " + reasonHashMismatch},
		{"deleted line", func(t *testing.T, l []string) ([]string, bool) {
			return append(l[:2:2], l[3:]...), true
		}, "line 3: " + reasonSeqGap},
		{"duplicated line", func(t *testing.T, l []string) ([]string, bool) {
			return append(l[:3:3], l[2:]...), true
		}, "line 4: " + reasonSeqGap},
		{"swapped lines", func(t *testing.T, l []string) ([]string, bool) {
			l[1], l[2] = l[2], l[1]
			return l, true
		}, "line 2: " + reasonSeqGap},
		{"relabelled signatureKeyId", func(t *testing.T, l []string) ([]string, bool) {
			m := decodeLine(t, l[4])
			m["signatureKeyId"] = KeyID(other.pub())
			l[4] = rehash(t, m)
			return l, true
		}, "line 5: " + reasonKeyIDMismatch},
		{"rehashed edit with stale signature", func(t *testing.T, l []string) ([]string, bool) {
			last := len(l) - 1
			m := decodeLine(t, l[last])
			m["result"] = "denied"
			l[last] = rehash(t, m)
			return l, true
		}, "line 6: " + reasonSigInvalid},
		{"signature stripped", func(t *testing.T, l []string) ([]string, bool) {
			m := decodeLine(t, l[5])
			delete(m, "signature")
			l[5] = rehash(t, m)
			return l, true
		}, "line 6: " + reasonSigFields},
		{"blank line", func(t *testing.T, l []string) ([]string, bool) {
			return append(l[:3:3], append([]string{""}, l[3:]...)...), true
		}, "line 4: " + reasonBlank},
		{"unterminated last line", func(t *testing.T, l []string) ([]string, bool) {
			return l, false
		}, "line 6: " + reasonUnterminated},
		{"not json", func(t *testing.T, l []string) ([]string, bool) {
			l[0] = l[0][:len(l[0])-1]
			return l, true
		}, "line 1: " + reasonJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, path, _ := signedLedger(t, 6)
			lines, terminated := tt.tamper(t, readLines(t, path))
			writeLines(t, path, lines, terminated)

			code, out, errOut := runVerify(path, "--pubkey", key.pubPath)
			if code != 3 {
				t.Fatalf("exit %d, want 3\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			if !strings.Contains(errOut, "audit.jsonl "+tt.where) {
				t.Errorf("stderr %q does not contain %q", errOut, tt.where)
			}
			if strings.Contains(errOut, secret) || strings.Contains(errOut, "sha256:") {
				t.Errorf("failure message repeats entry contents: %s", errOut)
			}
			if strings.Contains(out, "ok") {
				t.Errorf("stdout claims ok: %s", out)
			}
		})
	}
}

func TestVerifyCommand_WrongPublicKey(t *testing.T) {
	key, other := newTestKey(t), newTestKey(t)
	path := ledgerPath(t)
	appendN(t, openLedger(t, Options{Path: path, Key: key.priv}), 2)
	code, _, errOut := runVerify(path, "--pubkey", other.pubPath)
	if code != 3 || !strings.Contains(errOut, "line 1: "+reasonKeyIDMismatch) {
		t.Errorf("exit %d, stderr %s", code, errOut)
	}
	// A key with the same id prefix but different bytes still fails on the
	// signature itself.
	forged := append([]byte(nil), key.pub()...)
	forged[31] ^= 1
	if _, err := Verify(path, forged, VerifyOptions{}); err == nil || !strings.Contains(err.Error(), reasonSigInvalid) {
		t.Errorf("same-id different key: %v", err)
	}
	// Pointing --pubkey at the private key file works: it holds the public half.
	if code, _, errOut := runVerify(path, "--pubkey", key.privPath); code != 0 {
		t.Errorf("private key as --pubkey: exit %d %s", code, errOut)
	}
}

func TestVerifyCommand_Usage(t *testing.T) {
	key, path, _ := signedLedger(t, 1)
	notKey := filepath.Join(t.TempDir(), "not-a-key.pem")
	os.WriteFile(notKey, []byte("hello\n"), 0o644)
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"no file", []string{"--pubkey", key.pubPath}, 2},
		{"two files", []string{path, path, "--pubkey", key.pubPath}, 2},
		{"no pubkey", []string{path}, 2},
		{"unknown flag", []string{path, "--pubkey", key.pubPath, "--frobnicate"}, 2},
		{"missing key file", []string{path, "--pubkey", filepath.Join(t.TempDir(), "nope.pem")}, 2},
		{"key file not PEM", []string{path, "--pubkey", notKey}, 2},
		{"flags before file", []string{"--require-signed", "--pubkey", key.pubPath, path}, 0},
		{"flags after file", []string{path, "--pubkey", key.pubPath, "--require-signed"}, 0},
		{"file after --", []string{"--pubkey", key.pubPath, "--", path}, 0},
		{"missing ledger", []string{filepath.Join(t.TempDir(), "none.jsonl"), "--pubkey", key.pubPath}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runVerify(tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
		})
	}
}

func TestVerify_EmptyLedger(t *testing.T) {
	key := newTestKey(t)
	path := ledgerPath(t)
	openLedger(t, Options{Path: path})
	code, out, errOut := runVerify(path, "--pubkey", key.pubPath, "--require-signed")
	want := "entries: 0\nchained: 0\nlegacy: 0\nsigned: 0\nunsigned: 0\nsegments: 1\nsequence: none\nretention_checkpoint_used: none\nok\n"
	if code != 0 || out != want {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}

func TestVerify_NoGenesis(t *testing.T) {
	key, path, _ := signedLedger(t, 3)
	// Dropping the head of an unrotated ledger leaves a chain that starts
	// after 1 with no checkpoint to vouch for it.
	writeLines(t, path, readLines(t, path)[1:], true)
	code, _, errOut := runVerify(path, "--pubkey", key.pubPath)
	if code != 3 || !strings.Contains(errOut, "no retention checkpoint") {
		t.Errorf("exit %d %s", code, errOut)
	}
}

func TestVerify_RejectsMalformedPublicKey(t *testing.T) {
	path := ledgerPath(t)
	openLedger(t, Options{Path: path})
	if _, err := Verify(path, make([]byte, 5), VerifyOptions{}); !errors.Is(err, ErrKeyInvalid) {
		t.Errorf("Verify with a 5-byte key = %v, want ErrKeyInvalid", err)
	}
}
