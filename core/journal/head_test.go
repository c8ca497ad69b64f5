package journal

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/core/audit"
)

// ledgerRecorder writes each event to a real ledger and says where.
type ledgerRecorder struct {
	l    *audit.Ledger
	fail atomic.Bool
}

func (r *ledgerRecorder) Record(ev Event) error { _, err := r.RecordHead(ev); return err }

func (r *ledgerRecorder) RecordHead(ev Event) (AuditHead, error) {
	if r.fail.Load() {
		return AuditHead{}, errors.New("disk full")
	}
	rc, err := r.l.Append(audit.Entry{EventType: ev.Type, ProposalID: ev.ProposalID, Result: "ok"})
	return AuditHead{Sequence: rc.Sequence, Hash: rc.EntryHash}, err
}

func TestJournal_AuditHead_KeptWithEachTransition(t *testing.T) {
	ledgerFile := filepath.Join(t.TempDir(), "audit", "audit.jsonl")
	l, err := audit.Open(audit.Options{Path: ledgerFile})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rec := &ledgerRecorder{l: l}
	clk := newClock()
	j, path := testJournal(t, Options{Recorder: rec, Now: clk.Now})

	if _, err := j.AuditHead(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("head of a new journal: %v, want ErrNotFound", err)
	}
	// Another writer of the same ledger (a sidecar) appends too: the head
	// is the journal's own last entry, not the ledger's.
	if _, err := l.Append(audit.Entry{Tool: "repo_status", Result: "ok"}); err != nil {
		t.Fatal(err)
	}
	p := newProposal(t, clk.Now(), "agent-a")
	if _, _, err := j.Submit(p); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(audit.Entry{Tool: "proposal_wait", Result: "ok"}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Reject(p.ID, "person", "no"); err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Verify(ledgerFile, nil, audit.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := j.AuditHead()
	if err != nil || h.Sequence != rep.LastSeq || h.Hash != rep.LastHash {
		t.Fatalf("head after reject: %+v %v, want the ledger's last entry %d %s", h, err, rep.LastSeq, rep.LastHash)
	}

	// A denial is recorded in its own transaction and moves the head too.
	if err := j.Deny(newProposal(t, clk.Now(), "agent-a"), "ops"); err != nil {
		t.Fatal(err)
	}
	h2, _ := j.AuditHead()
	if h2.Sequence != h.Sequence+1 {
		t.Fatalf("head after a denial: %+v, want sequence %d", h2, h.Sequence+1)
	}

	// A transition whose entry could not be written moves nothing.
	rec.fail.Store(true)
	if _, _, err := j.Submit(newProposal(t, clk.Now(), "agent-a")); !errors.Is(err, ErrAudit) {
		t.Fatalf("submit with a failing ledger: %v", err)
	}
	if h3, _ := j.AuditHead(); h3 != h2 {
		t.Fatalf("head moved on a failed transition: %+v, want %+v", h3, h2)
	}

	// It survives a reopen.
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2, err := Open(path, Options{Recorder: rec, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	if h4, err := j2.AuditHead(); err != nil || h4 != h2 {
		t.Fatalf("head after reopen: %+v %v, want %+v", h4, err, h2)
	}
}
