package audit

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/core/canonjson"
)

func TestLedger_RoundTripSigned(t *testing.T) {
	key := newTestKey(t)
	path := ledgerPath(t)
	now := time.UnixMilli(1_700_000_000_123)
	l := openLedger(t, Options{Path: path, Key: key.priv, Now: func() time.Time { return now }})
	rs := appendN(t, l, 10)
	for i, r := range rs {
		if r.Sequence != uint64(i+1) || !isDigest([]byte(r.EntryHash)) || r.ID == "" {
			t.Fatalf("receipt %d = %+v", i, r)
		}
	}

	lines := readLines(t, path)
	if len(lines) != 10 {
		t.Fatalf("%d lines, want 10", len(lines))
	}
	first := decodeLine(t, lines[0])
	for k, want := range map[string]any{
		"auditSchemaVersion": json.Number("1"), "auditChainVersion": json.Number("1"),
		"sequence": json.Number("1"), "previousHash": "genesis",
		"timestamp": json.Number("1700000000123"), "signatureVersion": json.Number("3"),
		"signatureKeyId": KeyID(key.pub()), "tool": "repo_status", "risk": "low",
		"duration_ms": json.Number("1"),
	} {
		if first[k] != want {
			t.Errorf("%s = %#v, want %#v", k, first[k], want)
		}
	}
	second := decodeLine(t, lines[1])
	if second["previousHash"] != first["entryHash"] || second["segmentId"] != first["segmentId"] {
		t.Error("second entry does not link to the first")
	}

	// The line is canonical, and entryHash and signature follow the format
	// definitions when recomputed independently here.
	if canon, _ := canonjson.Marshal(json.RawMessage(lines[0])); string(canon) != lines[0] {
		t.Error("written line is not canonical")
	}
	sig := first["signature"].(string)
	delete(first, "signature")
	withHash, _ := canonjson.Marshal(first)
	hash := first["entryHash"]
	delete(first, "entryHash")
	hashInput, _ := canonjson.Marshal(first)
	if sha256Hex(hashInput) != hash {
		t.Error("entryHash is not sha256 of the canonical entry without entryHash and signature")
	}
	rawSig, err := sigEncoding.DecodeString(sig)
	if err != nil || !ed25519.Verify(key.pub(), withHash, rawSig) {
		t.Errorf("signature does not verify over canonical entry without signature: %v", err)
	}
	if strings.Contains(lines[0], "/home/someone") {
		t.Error("a raw path reached the ledger")
	}

	rep, err := Verify(path, key.pub(), VerifyOptions{RequireSigned: true})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	want := Report{Entries: 10, Chained: 10, Signed: 10, Segments: 1, FirstSeq: 1, LastSeq: 10, CheckpointUsed: "none", LastHash: rs[9].EntryHash}
	if rep != want {
		t.Errorf("report = %+v, want %+v", rep, want)
	}
	code, out, errOut := runVerify(path, "--pubkey", key.pubPath, "--require-signed")
	wantOut := "entries: 10\nchained: 10\nlegacy: 0\nsigned: 10\nunsigned: 0\nsegments: 1\nsequence: 1..10\nretention_checkpoint_used: none\nok\n"
	if code != 0 || out != wantOut {
		t.Errorf("verify-audit = %d\n%s\nstderr: %s", code, out, errOut)
	}
}

func TestLedger_RoundTripUnsigned(t *testing.T) {
	key := newTestKey(t)
	path := ledgerPath(t)
	l := openLedger(t, Options{Path: path})
	appendN(t, l, 5)
	if strings.Contains(readLines(t, path)[0], "signature") {
		t.Error("unsigned ledger wrote signature fields")
	}
	code, out, errOut := runVerify("--pubkey", key.pubPath, path)
	if code != 0 || !strings.Contains(out, "signed: 0\nunsigned: 5\n") {
		t.Errorf("verify-audit = %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = runVerify(path, "--pubkey", key.pubPath, "--require-signed")
	if code != 3 || !strings.Contains(errOut, "line 1: "+reasonUnsigned) {
		t.Errorf("--require-signed on unsigned ledger = %d, %s", code, errOut)
	}
}

func TestLedger_ReopenContinuesChain(t *testing.T) {
	key := newTestKey(t)
	path := ledgerPath(t)
	l, err := Open(Options{Path: path, Key: key.priv})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 3)
	l.Close()
	if _, err := l.Append(sampleEntry(0)); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
	l2 := openLedger(t, Options{Path: path, Key: key.priv})
	rs := appendN(t, l2, 2)
	if rs[1].Sequence != 5 {
		t.Errorf("sequence after reopen = %d, want 5", rs[1].Sequence)
	}
	if _, err := Verify(path, key.pub(), VerifyOptions{}); err != nil {
		t.Error(err)
	}
}

func TestLedger_TwoHandlesInOneProcess(t *testing.T) {
	key := newTestKey(t)
	path := ledgerPath(t)
	a := openLedger(t, Options{Path: path, Key: key.priv})
	b := openLedger(t, Options{Path: path, Key: key.priv})
	done := make(chan error, 2)
	for _, l := range []*Ledger{a, b} {
		go func() {
			for i := range 20 {
				if _, err := l.Append(sampleEntry(i)); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Verify(path, key.pub(), VerifyOptions{RequireSigned: true})
	if err != nil || rep.LastSeq != 40 {
		t.Errorf("report %+v, %v", rep, err)
	}
}

func TestLedger_AppendBatch(t *testing.T) {
	key := newTestKey(t)
	path := ledgerPath(t)
	l := openLedger(t, Options{Path: path, Key: key.priv})
	appendN(t, l, 1)
	batch := make([]Entry, 50)
	for i := range batch {
		batch[i] = sampleEntry(i)
	}
	rs, err := l.AppendBatch(batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 50 || rs[0].Sequence != 2 || rs[49].Sequence != 51 {
		t.Errorf("receipts %d, first %d, last %d", len(rs), rs[0].Sequence, rs[len(rs)-1].Sequence)
	}
	// One invalid entry refuses the whole batch before anything is written.
	batch[10].Tool = ""
	if _, err := l.AppendBatch(batch); !errors.Is(err, ErrInvalidEntry) {
		t.Errorf("batch with invalid entry: %v", err)
	}
	if n := len(readLines(t, path)); n != 51 {
		t.Errorf("%d lines after refused batch, want 51", n)
	}
	if _, err := Verify(path, key.pub(), VerifyOptions{RequireSigned: true}); err != nil {
		t.Error(err)
	}
}

func TestEntry_Validation(t *testing.T) {
	l := openLedger(t, Options{Path: ledgerPath(t)})
	valid := Entry{EventType: "proposal.approved"}
	tests := map[string]func(e *Entry){
		"neither tool nor event":   func(e *Entry) { e.EventType = "" },
		"both tool and event":      func(e *Entry) { e.Tool = "x" },
		"raw path as repo scope":   func(e *Entry) { e.RepoScope = "/home/u/repo" },
		"raw args as fingerprint":  func(e *Entry) { e.ArgsFingerprint = `{"path":"/etc"}` },
		"negative duration":        func(e *Entry) { e.DurationMS = -1 },
		"oversized field":          func(e *Entry) { e.Risk = strings.Repeat("x", 300) },
		"control char in field":    func(e *Entry) { e.Result = "ok\nforged" },
		"data float":               func(e *Entry) { e.Data = map[string]any{"f": 1.5} },
		"data nested map":          func(e *Entry) { e.Data = map[string]any{"m": map[string]any{}} },
		"data reserved key":        func(e *Entry) { e.Data = map[string]any{"sequence": 1} },
		"data long string":         func(e *Entry) { e.Data = map[string]any{"s": strings.Repeat("x", 600)} },
		"data too many keys":       func(e *Entry) { e.Data = manyKeys(20) },
		"invalid utf-8 session id": func(e *Entry) { e.SessionID = "\xff" },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			e := valid
			mutate(&e)
			if _, err := l.Append(e); !errors.Is(err, ErrInvalidEntry) {
				t.Errorf("Append = %v, want ErrInvalidEntry", err)
			}
		})
	}
	if _, err := l.Append(valid); err != nil {
		t.Errorf("valid entry refused: %v", err)
	}
}

func manyKeys(n int) map[string]any {
	m := map[string]any{}
	for i := range n {
		m[fmt.Sprintf("k%d", i)] = i
	}
	return m
}

func TestEntry_SummaryTruncated(t *testing.T) {
	path := ledgerPath(t)
	l := openLedger(t, Options{Path: path})
	long := strings.Repeat("é", 600) + "\xff"
	if _, err := l.Append(Entry{EventType: "x", Summary: long}); err != nil {
		t.Fatal(err)
	}
	got := decodeLine(t, readLines(t, path)[0])["summary"].(string)
	if n := utf8.RuneCountInString(got); n != MaxSummaryRunes || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("summary has %d runes, valid %v: %q", n, utf8.ValidString(got), got[len(got)-8:])
	}
	if short := truncateSummary("héllo"); short != "héllo" {
		t.Errorf("short summary changed: %q", short)
	}
}

func TestLedger_LegacyLines(t *testing.T) {
	key := newTestKey(t)
	path := ledgerPath(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	legacy := []string{`{"tool":"old_tool","ts":"2024-01-01T00:00:00Z"}`, `{"event_type":"old_event"}`}
	writeLines(t, path, legacy, true)
	l := openLedger(t, Options{Path: path, Key: key.priv})
	rs := appendN(t, l, 3)
	if rs[0].Sequence != 1 {
		t.Fatalf("first chained sequence %d", rs[0].Sequence)
	}
	code, out, errOut := runVerify(path, "--pubkey", key.pubPath)
	if code != 0 || !strings.Contains(out, "entries: 5\nchained: 3\nlegacy: 2\nsigned: 3\n") {
		t.Errorf("verify = %d\n%s%s", code, out, errOut)
	}
	// A legacy line has no signature, so --require-signed refuses it.
	if code, _, errOut := runVerify(path, "--pubkey", key.pubPath, "--require-signed"); code != 3 || !strings.Contains(errOut, reasonLegacyUnsigned) {
		t.Errorf("--require-signed = %d %s", code, errOut)
	}
	// Legacy lines are accepted only before the chain starts.
	lines := readLines(t, path)
	writeLines(t, path, append(lines, legacy[0]), true)
	if code, _, errOut := runVerify(path, "--pubkey", key.pubPath); code != 3 || !strings.Contains(errOut, "line 6: "+reasonLegacyPlacement) {
		t.Errorf("legacy after chain = %d %s", code, errOut)
	}
	// A chained line with its version stripped is not legacy.
	m := decodeLine(t, lines[4])
	delete(m, "auditChainVersion")
	stripped, _ := canonjson.Marshal(m)
	writeLines(t, path, append(lines[:4:4], string(stripped)), true)
	if code, _, errOut := runVerify(path, "--pubkey", key.pubPath); code != 3 || !strings.Contains(errOut, reasonLegacyChain) {
		t.Errorf("stripped chain version = %d %s", code, errOut)
	}
}

func TestTail(t *testing.T) {
	key := newTestKey(t)
	path := ledgerPath(t)
	if got, err := Tail(path, 5); err != nil || len(got) != 0 {
		t.Errorf("Tail of missing ledger = %v, %v", got, err)
	}
	l := openLedger(t, Options{Path: path, Key: key.priv, MaxFileBytes: 4 << 10, MaxSegments: 10})
	appendN(t, l, 40)
	// Leave a write in flight: Tail must skip it.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"partial":`)
	f.Close()

	got, err := Tail(path, 25)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 25 {
		t.Fatalf("Tail returned %d entries, want 25", len(got))
	}
	for i, m := range got {
		if want := json.Number(fmt.Sprint(16 + i)); m["sequence"] != want {
			t.Errorf("entry %d has sequence %v, want %v", i, m["sequence"], want)
		}
	}
	if all, _ := Tail(path, 1000); len(all) != 40 {
		t.Errorf("Tail(1000) = %d entries, want 40", len(all))
	}
}
