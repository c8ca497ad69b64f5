package journal

import (
	"bytes"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/core/proposal"
)

// TestOpen_TimeIndexMissing_Rebuilt: a journal written before the time
// indexes existed, or one that lost them, gets them back whole at Open,
// and History reads them in the same order as before.
func TestOpen_TimeIndexMissing_Rebuilt(t *testing.T) {
	clk := newClock()
	opts := Options{Recorder: &memRecorder{}, Now: clk.Now, PendingCap: 100}
	j, path := testJournal(t, opts)
	var want []string
	for i := range 12 {
		p := newProposal(t, clk.Now(), "agent-a")
		if _, _, err := j.Submit(p); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if _, err := j.Reject(p.ID, "owner:web", ""); err != nil {
				t.Fatal(err)
			}
		}
		want = append(want, p.ID)
		if i%2 == 0 {
			clk.Advance(time.Second)
		}
	}
	before := ids(t, j, Filter{})
	beforeAgent := ids(t, j, Filter{Agent: "agent-a"})
	j.Close()

	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, ix := range timeIndexes {
			if err := tx.DeleteBucket(ix.bucket); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	j, err = Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	if err := j.db.View(checkTimeIndex); err != nil {
		t.Fatalf("after reopening: %v", err)
	}
	after := ids(t, j, Filter{})
	if !slices.Equal(after, before) || len(after) != len(want) {
		t.Errorf("after rebuilding: %v, before: %v", after, before)
	}
	if got := ids(t, j, Filter{Agent: "agent-a"}); !slices.Equal(got, beforeAgent) || len(got) != len(want) {
		t.Errorf("agent-a's after rebuilding: %v, before: %v", got, beforeAgent)
	}
}

// TestList_AfterAndLimit_WalkTheTimeIndex: pages of every record, and of
// the records a filter keeps, follow List's order (newest first, equal
// times by id) without a gap or a repeat, pending and decided alike.
func TestList_AfterAndLimit_WalkTheTimeIndex(t *testing.T) {
	clk := newClock()
	j, _ := testJournal(t, Options{Recorder: &memRecorder{}, Now: clk.Now, PendingCap: 100})
	for i := range 25 {
		agent := "agent-a"
		if i%2 == 1 {
			agent = "agent-b"
		}
		p := newProposal(t, clk.Now(), agent)
		if i%5 == 0 {
			p.Repo = "/work/other"
			reseal(t, &p)
		}
		if _, _, err := j.Submit(p); err != nil {
			t.Fatal(err)
		}
		if i%4 == 0 {
			if _, err := j.Reject(p.ID, "owner:web", ""); err != nil {
				t.Fatal(err)
			}
		}
		// Three proposals share each millisecond.
		if i%3 == 2 {
			clk.Advance(time.Millisecond)
		}
	}
	// The order List gave before the index: every record, sorted.
	var all []Record
	err := j.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketProposals).ForEach(func(k, v []byte) error {
			rec, err := j.cache.decodeRecord(string(k), v)
			all = append(all, rec)
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(all, listOrder)

	for _, f := range []Filter{
		{},
		{Agent: "agent-b"},
		{Repo: "/work/other"},
		{Repo: "/work/repo", Agent: "agent-a"},
		{Repo: "/work/nowhere"},
		{Agent: "agent-b", States: []proposal.State{proposal.Rejected}},
		{States: []proposal.State{proposal.Rejected}},
		{States: []proposal.State{proposal.Pending, proposal.Rejected}},
		{States: []proposal.State{proposal.Rejected, proposal.Pending, proposal.Rejected}},
		{States: []proposal.State{proposal.Pending}},
		{States: []proposal.State{proposal.Pending}, Repo: "/work/other"},
		{States: []proposal.State{proposal.Pending, proposal.Approved}, Repo: "/work/repo", Agent: "agent-a"},
		{States: []proposal.State{proposal.Rejected}, Repo: "/work/other"},
		{Match: func(r Record) bool { return r.Proposal.ID[len(r.Proposal.ID)-1] == '1' }},
	} {
		var want []string
		for _, r := range all {
			if f.matches(r) {
				want = append(want, r.Proposal.ID)
			}
		}
		if whole := ids(t, j, f); !slices.Equal(whole, want) {
			t.Errorf("%+v: %v, want %v", f, whole, want)
		}
		var paged []string
		f.Limit = 4
		for {
			page := ids(t, j, f)
			if len(page) > f.Limit {
				t.Fatalf("%d on a page of %d", len(page), f.Limit)
			}
			if len(page) == 0 {
				break
			}
			paged = append(paged, page...)
			f.After = page[len(page)-1]
		}
		if !slices.Equal(paged, want) {
			t.Errorf("%+v in pages: %v, want %v", f, paged, want)
		}
		// Oldest first, whole and in pages: the same records reversed.
		f.Oldest, f.Limit, f.After = true, 0, ""
		slices.Reverse(want)
		if whole := ids(t, j, f); !slices.Equal(whole, want) {
			t.Errorf("%+v: %v, want %v", f, whole, want)
		}
		paged = nil
		f.Limit = 4
		for {
			page := ids(t, j, f)
			if len(page) == 0 {
				break
			}
			paged = append(paged, page...)
			f.After = page[len(page)-1]
		}
		if !slices.Equal(paged, want) {
			t.Errorf("%+v in pages: %v, want %v", f, paged, want)
		}
	}
}

func ids(t *testing.T, j *Journal, f Filter) []string {
	t.Helper()
	recs, err := j.List(f)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, r := range recs {
		out = append(out, r.Proposal.ID)
	}
	return out
}

// TestList_OpenStates_ReadOnlyThePage: a page of open records (the
// pending list, the lists read at start-up) reads the records on it and
// no others: a record that cannot be decoded, off the page, is never
// read.
func TestList_OpenStates_ReadOnlyThePage(t *testing.T) {
	clk := newClock()
	j, _ := testJournal(t, Options{Recorder: &memRecorder{}, Now: clk.Now, PendingCap: 100})
	var all []string
	for range 30 {
		p := newProposal(t, clk.Now(), "agent-a")
		if _, _, err := j.Submit(p); err != nil {
			t.Fatal(err)
		}
		all = append(all, p.ID)
		clk.Advance(time.Second)
	}
	// A record made unreadable, off the page.
	spoil := func(ids ...string) func() {
		var saved [][]byte
		err := j.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketProposals)
			for _, id := range ids {
				saved = append(saved, bytes.Clone(b.Get([]byte(id))))
				if err := b.Put([]byte(id), []byte("{not json")); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return func() {
			j.db.Update(func(tx *bolt.Tx) error {
				for i, id := range ids {
					if err := tx.Bucket(bucketProposals).Put([]byte(id), saved[i]); err != nil {
						return err
					}
				}
				return nil
			})
		}
	}
	open := []proposal.State{proposal.Pending, proposal.Approved, proposal.Executing}
	restore := spoil(all[0])
	newest, err := j.List(Filter{States: open, Limit: 5})
	if err != nil || len(newest) != 5 || newest[0].Proposal.ID != all[29] {
		t.Errorf("newest first, the oldest unreadable: %d records, %v", len(newest), err)
	}
	restore()
	restore = spoil(all[29])
	oldest, err := j.List(Filter{States: []proposal.State{proposal.Pending}, Limit: 5, Oldest: true})
	if err != nil || len(oldest) != 5 || oldest[0].Proposal.ID != all[0] {
		t.Errorf("oldest first, the newest unreadable: %d records, %v", len(oldest), err)
	}
	restore()
	if n, err := j.Count(proposal.Pending); err != nil || n != 30 {
		t.Errorf("Count(pending) = %d, %v", n, err)
	}
}
