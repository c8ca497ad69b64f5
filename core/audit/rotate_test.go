package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/canonjson"
)

func TestLedger_RotationWithCheckpoint(t *testing.T) {
	key := newTestKey(t)
	path := ledgerPath(t)
	dir, base := filepath.Dir(path), filepath.Base(path)
	l := openLedger(t, Options{Path: path, Key: key.priv, MaxFileBytes: 2 << 10, MaxSegments: 2})
	appendN(t, l, 60)

	d, err := listLedgerDir(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.segments) != 2 || len(d.checkpoints) != 1 || len(d.tmp) != 0 || len(d.bad) != 0 {
		t.Fatalf("segments %d, checkpoints %d, tmp %d, bad %d", len(d.segments), len(d.checkpoints), len(d.tmp), len(d.bad))
	}
	first := d.segments[0].first
	cp := d.checkpoints[0].name
	if !strings.HasPrefix(cp, fmt.Sprintf("%s.checkpoint-%020d-", base, first)) || !strings.HasSuffix(cp, ".json") {
		t.Errorf("checkpoint %s does not name the first retained sequence %d", cp, first)
	}
	for _, s := range d.segments {
		fi, err := os.Stat(s.path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("segment %s mode %v, %v", s.name, fi.Mode(), err)
		}
		if fi.Size() > 2<<10 {
			t.Errorf("segment %s has %d bytes, over the limit", s.name, fi.Size())
		}
	}

	rep, err := Verify(path, key.pub(), VerifyOptions{RequireSigned: true})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if rep.CheckpointUsed != cp || !rep.CheckpointSigned || rep.FirstSeq != first || rep.LastSeq != 60 || rep.Segments != 3 {
		t.Errorf("report %+v", rep)
	}
	code, out, errOut := runVerify(path, "--pubkey", key.pubPath, "--require-signed")
	if code != 0 || !strings.Contains(out, "retention_checkpoint_used: "+cp+"\n") ||
		!strings.Contains(out, fmt.Sprintf("sequence: %d..60\n", first)) || !strings.Contains(out, "segments: 3\n") {
		t.Fatalf("verify-audit = %d\n%s%s", code, out, errOut)
	}

	expectFail := func(t *testing.T, want string) {
		t.Helper()
		code, _, errOut := runVerify(path, "--pubkey", key.pubPath)
		if code != 3 || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, stderr %q, want %q", code, errOut, want)
		}
	}
	cpPath := filepath.Join(dir, cp)
	aside := filepath.Join(t.TempDir(), "aside")

	t.Run("missing checkpoint", func(t *testing.T) {
		mustRename(t, cpPath, aside)
		defer mustRename(t, aside, cpPath)
		expectFail(t, "no retention checkpoint")
	})
	t.Run("second matching checkpoint", func(t *testing.T) {
		dup := filepath.Join(dir, fmt.Sprintf("%s.checkpoint-%020d-%s.json", base, first, "00000000-0000-4000-8000-000000000000"))
		data, _ := os.ReadFile(cpPath)
		os.WriteFile(dup, data, 0o600)
		defer os.Remove(dup)
		expectFail(t, "more than one retention checkpoint")
	})
	t.Run("forged checkpoint", func(t *testing.T) {
		data, _ := os.ReadFile(cpPath)
		os.WriteFile(cpPath, []byte(strings.Replace(string(data), `"createdAt":`, `"createdAt":1`, 1)), 0o600)
		defer os.WriteFile(cpPath, data, 0o600)
		expectFail(t, cp+" line 1: "+reasonSigInvalid)
	})
	t.Run("unsigned checkpoint under require-signed", func(t *testing.T) {
		data, _ := os.ReadFile(cpPath)
		m := decodeLine(t, string(data))
		delete(m, "signature")
		delete(m, "signatureKeyId")
		delete(m, "signatureVersion")
		stripped, _ := canonjson.Marshal(m)
		os.WriteFile(cpPath, stripped, 0o600)
		defer os.WriteFile(cpPath, data, 0o600)
		if code, _, errOut := runVerify(path, "--pubkey", key.pubPath, "--require-signed"); code != 3 || !strings.Contains(errOut, "unsigned checkpoint") {
			t.Errorf("exit %d %s", code, errOut)
		}
	})
	t.Run("segment renamed", func(t *testing.T) {
		s := d.segments[1]
		renamed := filepath.Join(dir, segmentName(base, s.first, s.last+1, s.segID))
		mustRename(t, s.path, renamed)
		defer mustRename(t, renamed, s.path)
		expectFail(t, reasonSegmentRange)
	})
	t.Run("segment relabelled with another id", func(t *testing.T) {
		s := d.segments[1]
		renamed := filepath.Join(dir, segmentName(base, s.first, s.last, "11111111-1111-4111-8111-111111111111"))
		mustRename(t, s.path, renamed)
		defer mustRename(t, renamed, s.path)
		expectFail(t, "line 1: "+reasonSegmentName)
	})
	t.Run("oldest segment deleted", func(t *testing.T) {
		s := d.segments[0]
		mustRename(t, s.path, aside)
		defer mustRename(t, aside, s.path)
		expectFail(t, "no retention checkpoint")
	})
	t.Run("middle of the chain missing", func(t *testing.T) {
		s := d.segments[1]
		mustRename(t, s.path, aside)
		defer mustRename(t, aside, s.path)
		expectFail(t, "audit.jsonl line 1: "+reasonSeqGap)
	})
	t.Run("stray file name", func(t *testing.T) {
		stray := filepath.Join(dir, base+".segment-junk")
		os.WriteFile(stray, nil, 0o600)
		defer os.Remove(stray)
		expectFail(t, "unrecognised segment or checkpoint file name")
	})

	// After the probes the ledger is whole again and still appendable.
	appendN(t, l, 5)
	if _, err := Verify(path, key.pub(), VerifyOptions{RequireSigned: true}); err != nil {
		t.Errorf("after restore: %v", err)
	}
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

func TestLedger_BatchAcrossRotation(t *testing.T) {
	key := newTestKey(t)
	path := ledgerPath(t)
	l := openLedger(t, Options{Path: path, Key: key.priv, MaxFileBytes: 3 << 10, MaxSegments: 3})
	batch := make([]Entry, 40)
	for i := range batch {
		batch[i] = sampleEntry(i)
	}
	rs, err := l.AppendBatch(batch)
	if err != nil || len(rs) != 40 {
		t.Fatalf("AppendBatch: %d receipts, %v", len(rs), err)
	}
	rep, err := Verify(path, key.pub(), VerifyOptions{RequireSigned: true})
	if err != nil || rep.LastSeq != 40 || rep.CheckpointUsed == "none" || rep.Segments != 4 {
		t.Errorf("report %+v, %v", rep, err)
	}
}

// TestLedger_PruneResumesAfterCrash covers a crash after a checkpoint was
// written but before its segment was deleted: the next prune must reuse that
// checkpoint, not add a second one for the same sequence, and must refuse
// one that disagrees with the chain.
func TestLedger_PruneResumesAfterCrash(t *testing.T) {
	key := newTestKey(t)
	path := ledgerPath(t)
	l := openLedger(t, Options{Path: path, Key: key.priv, MaxFileBytes: 2 << 10, MaxSegments: 2})
	appendN(t, l, 30)
	d, _ := listLedgerDir(path)
	oldest, next := d.segments[0], d.segments[1]
	line, err := lastLineOfFile(oldest.path)
	if err != nil {
		t.Fatal(err)
	}
	info, _, reason := l.check.fields(line)
	if reason != "" {
		t.Fatal(reason)
	}
	lastHash := string(info.entryHash)
	for range 2 { // the crashed prune, then the resumed one
		d, _ = listLedgerDir(path)
		if err := l.ensureCheckpoint(d.checkpoints, next.first, lastHash, next.segID); err != nil {
			t.Fatal(err)
		}
	}
	d, _ = listLedgerDir(path)
	matching := 0
	for _, c := range d.checkpoints {
		if c.nextSeq == next.first {
			matching++
		}
	}
	if matching != 1 {
		t.Fatalf("%d checkpoints for sequence %d, want 1", matching, next.first)
	}
	// The interrupted state verifies (the old checkpoint still covers the
	// oldest segment), and so does the state after the next prune.
	if _, err := Verify(path, key.pub(), VerifyOptions{RequireSigned: true}); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 20)
	if _, err := Verify(path, key.pub(), VerifyOptions{RequireSigned: true}); err != nil {
		t.Fatal(err)
	}

	// A checkpoint that contradicts the chain stops pruning.
	d, _ = listLedgerDir(path)
	oldest, next = d.segments[0], d.segments[1]
	if err := l.ensureCheckpoint(d.checkpoints, next.first, sha256Hex([]byte("other")), next.segID); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := l.Append(sampleEntry(i)); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Append = %v, want ErrCorrupt", err)
			}
			break
		}
		if i > 50 {
			t.Fatal("pruning never met the contradicting checkpoint")
		}
	}
	if _, err := os.Stat(oldest.path); err != nil {
		t.Errorf("segment behind a bad checkpoint was deleted: %v", err)
	}
}
