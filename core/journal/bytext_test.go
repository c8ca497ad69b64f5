package journal

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestList_Text_ReadsOnlyWhatItFinds: a search by text finds what a
// filter over every record finds, in pages, without reading a record
// whose words do not hold the text (one that cannot be decoded does not
// matter), and after the words are built again at Open for a journal
// without them.
func TestList_Text_ReadsOnlyWhatItFinds(t *testing.T) {
	clk := newClock()
	j, path := testJournal(t, Options{Recorder: &memRecorder{}, Now: clk.Now, PendingCap: 100})
	var made []string
	for i := range 40 {
		p := newProposal(t, clk.Now(), fmt.Sprintf("agent-%d", i%3))
		p.Reason = fmt.Sprintf("Routine update %d", i)
		if i%7 == 3 {
			p.Reason = "Fix the FLAKY clock test"
		}
		reseal(t, &p)
		if _, _, err := j.Submit(p); err != nil {
			t.Fatal(err)
		}
		made = append(made, p.ID)
		clk.Advance(time.Second)
	}
	search := func(f Filter) []string {
		t.Helper()
		var out []string
		f.Limit = 2
		for {
			page := ids(t, j, f)
			if len(page) == 0 {
				return out
			}
			out = append(out, page...)
			f.After = page[len(page)-1]
		}
	}
	all := func(text string, more func(Record) bool) []string {
		recs, err := j.List(Filter{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs {
			if strings.Contains(SearchText(r.Proposal), text) && (more == nil || more(r)) {
				out = append(out, r.Proposal.ID)
			}
		}
		return out
	}
	check := func(when string) {
		t.Helper()
		for _, c := range []struct {
			f    Filter
			more func(Record) bool
		}{
			{Filter{Text: "flaky clock"}, nil},
			{Filter{Text: "agent-1"}, nil},
			{Filter{Text: "flaky", Agent: "agent-2"}, func(r Record) bool { return r.Proposal.Agent == "agent-2" }},
			{Filter{Text: "routine update 1"}, nil},
			{Filter{Text: "nowhere"}, nil},
		} {
			if got, want := search(c.f), all(c.f.Text, c.more); !slices.Equal(got, want) {
				t.Errorf("%s: %+v: %v, want %v", when, c.f, got, want)
			}
		}
	}
	check("as written")

	// A record without the text is never read.
	var saved []byte
	err := j.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketProposals)
		saved = bytes.Clone(b.Get([]byte(made[0])))
		return b.Put([]byte(made[0]), []byte("{not json"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := j.List(Filter{Text: "flaky"}); err != nil || len(got) != 6 {
		t.Errorf("a search beside an unreadable record: %d, %v", len(got), err)
	}
	if err := j.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketProposals).Put([]byte(made[0]), saved) }); err != nil {
		t.Fatal(err)
	}

	// A journal from before the words were kept.
	j.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketByText) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if j, err = Open(path, Options{Recorder: &memRecorder{}, Now: clk.Now, PendingCap: 100}); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	check("after the words were built again")
}
