package audit

import (
	"errors"
	"strings"
	"testing"
)

func TestVerify_ExpectHead_TruncatedTailReported(t *testing.T) {
	k, path, rs := signedLedger(t, 6)
	head := Head{Sequence: rs[5].Sequence, Hash: rs[5].EntryHash}

	// Intact: the head is held.
	rep, err := Verify(path, k.pub(), VerifyOptions{RequireSigned: true, ExpectHead: &head})
	if err != nil || !rep.HeadChecked || rep.LastHash != head.Hash {
		t.Fatalf("intact ledger: %+v %v", rep, err)
	}

	// The last two whole records deleted: the chain alone still verifies,
	// the expected head does not.
	writeLines(t, path, readLines(t, path)[:4], true)
	if _, err := Verify(path, k.pub(), VerifyOptions{RequireSigned: true}); err != nil {
		t.Fatalf("a truncated chain verifies alone (that is why the head is needed): %v", err)
	}
	_, err = Verify(path, k.pub(), VerifyOptions{RequireSigned: true, ExpectHead: &head})
	var ve *VerifyError
	if !errors.As(err, &ve) || !strings.Contains(ve.Reason, "entries missing after sequence 4") {
		t.Fatalf("truncated ledger with the expected head: %v, want entries missing after sequence 4", err)
	}
	code, _, stderr := runVerify(path, "--pubkey", k.pubPath, "--expect-head", head.String())
	if code != ExitIntegrity || !strings.Contains(stderr, "entries missing after sequence 4") {
		t.Fatalf("verify-audit --expect-head on a truncated ledger: exit %d %s", code, stderr)
	}
}

func TestVerify_ExpectHead_RewrittenEntryRefused(t *testing.T) {
	k, path, rs := signedLedger(t, 3)
	// A head whose sequence is held but whose hash is another entry's:
	// what a ledger rewritten from that point on would show.
	other := Head{Sequence: rs[1].Sequence, Hash: rs[2].EntryHash}
	_, err := Verify(path, k.pub(), VerifyOptions{ExpectHead: &other})
	var ve *VerifyError
	if !errors.As(err, &ve) || !strings.Contains(ve.Reason, "not the expected head") {
		t.Fatalf("wrong hash at the expected sequence: %v", err)
	}
	// An older head of an intact ledger that has grown since is fine.
	older := Head{Sequence: rs[0].Sequence, Hash: rs[0].EntryHash}
	if rep, err := Verify(path, k.pub(), VerifyOptions{ExpectHead: &older}); err != nil || !rep.HeadChecked {
		t.Fatalf("an older head of a grown ledger: %+v %v", rep, err)
	}
}

func TestVerifyCommand_PrintHead_RoundTrips(t *testing.T) {
	k, path, rs := signedLedger(t, 2)
	code, out, stderr := runVerify(path, "--pubkey", k.pubPath, "--print-head")
	want := "head: " + Head{Sequence: 2, Hash: rs[1].EntryHash}.String() + "\n"
	if code != ExitOK || !strings.Contains(out, want) {
		t.Fatalf("--print-head: exit %d\n%s%s, want %q", code, out, stderr, want)
	}
	anchor := strings.TrimPrefix(strings.TrimSuffix(want, "\n"), "head: ")
	code, out, stderr = runVerify(path, "--pubkey", k.pubPath, "--expect-head", anchor)
	if code != ExitOK || !strings.Contains(out, "expected_head: held\n") {
		t.Fatalf("--expect-head with the printed anchor: exit %d\n%s%s", code, out, stderr)
	}
}

func TestVerifyCommand_ExpectHead_BadValueIsUsage(t *testing.T) {
	k, path, _ := signedLedger(t, 1)
	hex := strings.Repeat("a", 64)
	for _, bad := range []string{"", "5", "0:sha256:" + hex, "-1:" + hex, "x:" + hex, "3:sha256:abc", "3:sha256:" + strings.Repeat("A", 64), "3:md5:" + hex} {
		if bad == "" {
			continue
		}
		code, out, stderr := runVerify(path, "--pubkey", k.pubPath, "--expect-head", bad)
		if code != ExitUsage || out != "" || !strings.Contains(stderr, "expect-head") {
			t.Errorf("--expect-head %q: exit %d out %q err %q, want usage error 2", bad, code, out, stderr)
		}
	}
	for _, good := range []string{"3:sha256:" + hex, "3:" + hex} {
		if h, err := ParseHead(good); err != nil || h.Hash != "sha256:"+hex || h.Sequence != 3 {
			t.Errorf("ParseHead(%q) = %+v %v", good, h, err)
		}
	}
}
