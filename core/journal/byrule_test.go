package journal

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/core/errcode"
)

// TestApprovedByRules_NewestFirstReadsOnlyThem: the feed of what rules
// approved is every record a rule approved, newest first, cut at the
// limit, without reading another record; a retry, a person's decision,
// drops its mark; the index is built again at Open for a journal without
// it.
func TestApprovedByRules_NewestFirstReadsOnlyThem(t *testing.T) {
	clk := newClock()
	j, path := testJournal(t, Options{Recorder: &memRecorder{}, Now: clk.Now, PendingCap: 100})
	var byRule, others []string
	for i := range 20 {
		p := newProposal(t, clk.Now(), "agent-a")
		if _, _, err := j.Submit(p); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		switch {
		case i%3 == 0:
			if _, err := j.ApproveAuto(p.ID, p.Digest, fmt.Sprintf("rule-%d", i%2)); err != nil {
				t.Fatal(err)
			}
			byRule = append(byRule, p.ID)
		case i%3 == 1:
			if _, err := j.Approve(p.ID, p.Digest, "owner:web", ""); err != nil {
				t.Fatal(err)
			}
			others = append(others, p.ID)
		default:
			others = append(others, p.ID)
		}
	}
	// The oldest approved by a rule fails and is retried by a person.
	retried := byRule[0]
	if _, err := j.Fail(retried, "executor", Outcome{Code: errcode.StaleBase, Message: "moved"}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Retry(retried, mustGet(t, j, retried).Proposal.Digest, "owner:web", ""); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(byRule[1:])
	slices.Reverse(want)
	check := func(when string) {
		t.Helper()
		for _, limit := range []int{2, 100} {
			recs, err := j.ApprovedByRules(limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range recs {
				got = append(got, r.Proposal.ID)
			}
			if w := want[:min(limit, len(want))]; !slices.Equal(got, w) {
				t.Errorf("%s: limit %d: %v, want %v", when, limit, got, w)
			}
		}
	}
	check("as written")
	// A record no rule approved is never read.
	var saved []byte
	spoil := func(v []byte) {
		if err := j.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketProposals)
			if saved == nil {
				saved = bytes.Clone(b.Get([]byte(others[0])))
			}
			return b.Put([]byte(others[0]), v)
		}); err != nil {
			t.Fatal(err)
		}
	}
	spoil([]byte("{not json"))
	check("beside an unreadable record")
	spoil(saved)

	j.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketByRule) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if j, err = Open(path, Options{Recorder: &memRecorder{}, Now: clk.Now, PendingCap: 100}); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	check("after the index was built again")
}

func mustGet(t *testing.T, j *Journal, id string) Record {
	t.Helper()
	rec, err := j.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}
