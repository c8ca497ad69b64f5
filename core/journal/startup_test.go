package journal

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/core/proposal"
)

// checkStartup reports where the expiry index and the state counts
// disagree with a full scan of the records.
func checkStartup(tx *bolt.Tx) error {
	wantExpiry, wantCounts := map[string]string{}, map[string]int{}
	err := tx.Bucket(bucketProposals).ForEach(func(k, v []byte) error {
		var rec Record
		if err := json.Unmarshal(v, &rec); err != nil {
			return err
		}
		wantCounts[string(rec.State)]++
		if rec.State == proposal.Pending {
			wantExpiry[string(expiryKey(rec.Proposal.ExpiresAt, rec.Proposal.ID))] = rec.Proposal.Agent
		}
		return nil
	})
	if err != nil {
		return err
	}
	gotExpiry, gotCounts := map[string]string{}, map[string]int{}
	tx.Bucket(bucketByExpiry).ForEach(func(k, v []byte) error { gotExpiry[string(k)] = string(v); return nil })
	tx.Bucket(bucketStateCount).ForEach(func(k, v []byte) error {
		gotCounts[string(k)] = int(binary.BigEndian.Uint64(v))
		return nil
	})
	if !maps.Equal(gotExpiry, wantExpiry) {
		return fmt.Errorf("expiry index %q, the pending records %q", gotExpiry, wantExpiry)
	}
	if !maps.Equal(gotCounts, wantCounts) {
		return fmt.Errorf("state counts %v, the records %v", gotCounts, wantCounts)
	}
	return nil
}

// TestStartup_ExpiryAndCountsMatchRecords: the expiry index holds exactly
// the pending proposals and the state counts are the records' states,
// after submits, decisions, expiries (ExpireDue expires exactly the
// proposals that are due, soonest first), a prune, a reopen and a rebuild
// at Open; Count answers as a scan would.
func TestStartup_ExpiryAndCountsMatchRecords(t *testing.T) {
	clk := newClock()
	opts := Options{Recorder: &memRecorder{}, Now: clk.Now, PendingCap: 1000, Retention: time.Hour}
	j, path := testJournal(t, opts)
	var ids []string
	for i := range 12 {
		p := newProposal(t, clk.Now(), fmt.Sprintf("agent-%d", i%3))
		// Expiries out of order with submission.
		p.ExpiresAt = proposal.At(clk.Now().Add(time.Duration(1+(i*7)%12) * time.Minute))
		reseal(t, &p)
		if _, _, err := j.Submit(p); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	check := func(when string) {
		t.Helper()
		if err := j.db.View(checkStartup); err != nil {
			t.Errorf("%s: %v", when, err)
		}
		recs, err := j.List(Filter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range []proposal.State{proposal.Pending, proposal.Rejected, proposal.Expired, proposal.Approved} {
			want := 0
			for _, r := range recs {
				if r.State == st {
					want++
				}
			}
			if got, err := j.Count(st); err != nil || got != want {
				t.Errorf("%s: Count(%s) %d, %v; the records hold %d", when, st, got, err, want)
			}
		}
	}
	check("submitted")
	if _, err := j.Reject(ids[0], "owner:web", ""); err != nil {
		t.Fatal(err)
	}
	p1 := mustGet(t, j, ids[1]).Proposal
	if _, err := j.Approve(p1.ID, p1.Digest, "owner:web", ""); err != nil {
		t.Fatal(err)
	}
	check("decided")
	clk.Advance(6*time.Minute + 30*time.Second)
	var wantDue []string
	for _, id := range ids[2:] {
		if r := mustGet(t, j, id); !clk.Now().Before(r.Proposal.ExpiresAt.Time) {
			wantDue = append(wantDue, id)
		}
	}
	expired, err := j.ExpireDue()
	if err != nil {
		t.Fatal(err)
	}
	if len(wantDue) == 0 || len(wantDue) == len(ids)-2 {
		t.Fatalf("the fixture has %d of %d due", len(wantDue), len(ids)-2)
	}
	if !slices.Equal(slices.Sorted(slices.Values(expired)), slices.Sorted(slices.Values(wantDue))) {
		t.Errorf("expired %v, due %v", expired, wantDue)
	}
	check("expired")
	clk.Advance(2 * time.Hour)
	if n, err := j.Prune(); err != nil || n == 0 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	check("pruned")
	j.Close()
	if j, err = Open(path, opts); err != nil {
		t.Fatal(err)
	}
	check("reopened")
	j.Close()
	dropBuckets(t, path, bucketByExpiry, bucketStateCount)
	if j, err = Open(path, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	check("after the indexes were built again")
}
