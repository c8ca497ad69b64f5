package journal

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
)

// TestCoded_RealFailures: the journal's own failures, met through its real
// API, get the code every boundary answers with, and keep their sentinel.
func TestCoded_RealFailures(t *testing.T) {
	failing := false
	j, _ := testJournal(t, Options{Recorder: RecorderFunc(func(Event) error {
		if failing {
			return errors.New("write audit.jsonl: no space left on device")
		}
		return nil
	})})
	now := time.Now()
	stored := newProposal(t, now, "agent-a")
	if _, _, err := j.Submit(stored); err != nil {
		t.Fatal(err)
	}
	late := newProposal(t, now.Add(-time.Hour), "agent-a")
	_, _, lateErr := j.Submit(late)
	_, _, dupErr := j.Submit(stored)
	_, missingErr := j.Get("no-such-proposal")
	_, mismatchErr := j.Approve(stored.ID, "sha256:0000", "owner:web", "")
	failing = true
	_, auditErr := j.Approve(stored.ID, stored.Digest, "owner:web", "")
	failing = false
	if _, err := j.Reject(stored.ID, "owner:web", "no"); err != nil {
		t.Fatal(err)
	}
	_, terminalErr := j.Reject(stored.ID, "owner:web", "again")

	for _, c := range []struct {
		name     string
		err      error
		sentinel error
		code     errcode.Code
	}{
		{"expired before it arrived", lateErr, ErrExpired, errcode.InvalidArgument},
		{"stored twice", dupErr, ErrDuplicateID, errcode.Conflict},
		{"missing", missingErr, ErrNotFound, errcode.ProposalNotFound},
		{"another digest", mismatchErr, ErrDigestMismatch, errcode.DigestMismatch},
		{"ledger unwritable", auditErr, ErrAudit, errcode.AuditFailed},
		{"decided already", terminalErr, ErrNotPending, errcode.ProposalTerminal},
	} {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		got := Coded(c.err)
		if errcode.Of(got) != c.code || !errors.Is(got, c.sentinel) {
			t.Errorf("%s: Coded(%v) = %s %q; want code %s, still %v", c.name, c.err, errcode.Of(got), got, c.code, c.sentinel)
		}
	}
	if got := Coded(errors.New("other")); errcode.Of(got) != errcode.Internal || got.Error() != "other" {
		t.Errorf("an error that is no sentinel became %v", got)
	}
}
