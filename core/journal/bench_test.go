package journal

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/proposal"
)

// BenchmarkJournal_Submit is one submit straight into the journal: strict
// validation, digest check, one fsynced bbolt transaction, with an
// in-memory recorder. The gateway benchmarks add HTTP and the audit fsync.
func BenchmarkJournal_Submit(b *testing.B) {
	j, _ := testJournal(b, Options{Recorder: &memRecorder{}, PendingCap: 1 << 30})
	props := make([]proposal.Proposal, 0, b.N)
	for range b.N {
		props = append(props, newProposal(b, time.Now(), "agent-a"))
	}
	b.ResetTimer()
	for _, p := range props {
		if _, _, err := j.Submit(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJournal_HistoryFirstPage is History's first page (the newest
// 200 records, no filter) from a journal of 0 (the baseline), 100, 1,000, 10,000
// and 100,000 decided records. Each journal is built once, through Submit
// and Reject without fsync (building is not what is measured). The
// search rows look for words no record holds, the costliest search (the
// page is never full): "match" reads and decodes every record for the
// filter, as History's search did (up to 10,000 records: at 100,000 it
// takes seconds an operation); "words" looks in the stored words of each
// record first (Filter.Text), as it does now.
func BenchmarkJournal_HistoryFirstPage(b *testing.B) {
	for _, n := range []int{0, 100, 1_000, 10_000, 100_000} {
		j := decidedJournal(b, n)
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			for range b.N {
				recs, err := j.List(Filter{Limit: 200})
				if err != nil {
					b.Fatal(err)
				}
				if len(recs) != min(n, 200) {
					b.Fatalf("%d records on the first page of %d", len(recs), n)
				}
			}
		})
		// The same page at every size: a journal of 100 records has only
		// 100 rows to show, so its first page is set beside a first page
		// of 100 from every larger journal.
		if n >= 100 {
			b.Run(fmt.Sprintf("records=%d/page=100", n), func(b *testing.B) {
				for range b.N {
					recs, err := j.List(Filter{Limit: 100})
					if err != nil {
						b.Fatal(err)
					}
					if len(recs) != 100 {
						b.Fatalf("%d records on a first page of 100 from %d", len(recs), n)
					}
				}
			})
		}
		match := func(r Record) bool { return strings.Contains(SearchText(r.Proposal), "no such words") }
		for _, f := range []struct {
			name string
			f    Filter
		}{
			{"match", Filter{Limit: 200, Match: match}},
			{"words", Filter{Limit: 200, Match: match, Text: "no such words"}},
		} {
			if f.name == "match" && n > 10_000 {
				continue // seconds an operation, a hundred times
			}
			b.Run(fmt.Sprintf("records=%d/search=%s", n, f.name), func(b *testing.B) {
				for range b.N {
					if recs, err := j.List(f.f); err != nil || len(recs) != 0 {
						b.Fatalf("%d found, %v", len(recs), err)
					}
				}
			})
		}
	}
}

// decidedJournal opens a journal holding n rejected proposals, one a
// second apart, in b.TempDir().
func decidedJournal(b *testing.B, n int) *Journal {
	b.Helper()
	clk := newClock()
	j, _ := testJournal(b, Options{Recorder: discardRecorder{}, Now: clk.Now, PendingCap: 1 << 30})
	j.db.NoSync = true
	start := time.Now()
	for range n {
		p := newProposal(b, clk.Now(), "agent-a")
		if _, _, err := j.Submit(p); err != nil {
			b.Fatal(err)
		}
		if _, err := j.Reject(p.ID, "owner:web", ""); err != nil {
			b.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	j.db.NoSync = false
	b.Logf("%d records built in %s", n, time.Since(start).Round(time.Millisecond))
	return j
}

// discardRecorder keeps no events: a journal of 100,000 records would
// otherwise hold 200,000 of them in memory.
type discardRecorder struct{}

func (discardRecorder) Record(Event) error { return nil }

// BenchmarkJournal_PendingFirstPage is the pending list's page as the app
// reads it (API.Pending): the oldest pending records, and each one's
// collisions, from a journal of 100, 1,000, 10,000 and 100,000 pending
// proposals in one repository, each of a file of its own. The page is
// 100 cards at every size (the app's holds up to 500), so that each size
// reads the same page.
func BenchmarkJournal_PendingFirstPage(b *testing.B) {
	for _, n := range []int{100, 1_000, 10_000, 100_000} {
		j, _ := mixedJournal(b, n, n)
		b.Run(fmt.Sprintf("pending=%d", n), func(b *testing.B) {
			for range b.N {
				pendingPage(b, j, 100)
			}
		})
	}
}

// BenchmarkJournal_StartupLists is what the app reads of the journal as
// it starts and its screens first load, from a journal of 100, 1,000,
// 10,000 and 100,000 records (one in ten pending, the others decided):
// Open, Recover, the pending count, the pending list's first page with
// collisions, History's first page, the approved records to run, the
// repositories whose sealed objects are tended, and the feed of what
// rules approved.
func BenchmarkJournal_StartupLists(b *testing.B) {
	for _, n := range []int{100, 1_000, 10_000, 100_000} {
		j, path := mixedJournal(b, n, n/10)
		j.Close()
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			for range b.N {
				// The clock of the records: none has expired.
				j, err := Open(path, Options{Recorder: discardRecorder{}, PendingCap: 1 << 30, Now: newClock().Now})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := j.Recover(func(Record) error { return nil }); err != nil {
					b.Fatal(err)
				}
				// The app's maintenance prunes at start (under the write
				// lock every submit waits for): nothing here is old.
				if pruned, err := j.Prune(); err != nil || pruned != 0 {
					b.Fatalf("pruned %d, %v", pruned, err)
				}
				if c, err := j.Count(proposal.Pending); err != nil || c != n/10 {
					b.Fatalf("count %d, %v", c, err)
				}
				pendingPage(b, j, min(n/10, 100))
				if recs, err := j.List(Filter{Limit: 200}); err != nil || len(recs) != min(n, 200) {
					b.Fatalf("History: %d, %v", len(recs), err)
				}
				if _, err := j.List(Filter{States: []proposal.State{proposal.Approved}}); err != nil {
					b.Fatal(err)
				}
				if _, err := j.Repos(); err != nil {
					b.Fatal(err)
				}
				if _, err := j.ApprovedByRules(50); err != nil {
					b.Fatal(err)
				}
				j.Close()
			}
		})
	}
}

// pendingPage reads the pending list's first page and its collisions.
func pendingPage(b *testing.B, j *Journal, want int) {
	recs, err := j.List(Filter{States: []proposal.State{proposal.Pending}, Oldest: true, Limit: 100})
	if err != nil || len(recs) != want {
		b.Fatalf("%d pending on the page, want %d: %v", len(recs), want, err)
	}
	for _, r := range recs {
		if _, err := j.Collisions(r.Proposal); err != nil {
			b.Fatal(err)
		}
	}
}

// mixedJournal opens a journal in b.TempDir() holding n proposals, one a
// second apart, the newest pending of them pending and the others
// rejected; each touches a file of its own.
func mixedJournal(b *testing.B, n, pending int) (*Journal, string) {
	b.Helper()
	clk := newClock()
	path := filepath.Join(b.TempDir(), "journal.db")
	j, err := Open(path, Options{Recorder: discardRecorder{}, Now: clk.Now, PendingCap: 1 << 30, PendingExpiry: 2000 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	j.db.NoSync = true
	start := time.Now()
	for i := range n {
		p := newProposal(b, clk.Now(), "agent-a", fmt.Sprintf("d%02d/f%06d.txt", i%100, i))
		p.ExpiresAt = proposal.At(clk.Now().Add(1000 * time.Hour))
		reseal(b, &p)
		if _, _, err := j.Submit(p); err != nil {
			b.Fatal(err)
		}
		if i < n-pending {
			if _, err := j.Reject(p.ID, "owner:web", ""); err != nil {
				b.Fatal(err)
			}
		}
		clk.Advance(time.Second)
	}
	j.db.NoSync = false
	b.Logf("%d records (%d pending) built in %s", n, pending, time.Since(start).Round(time.Millisecond))
	return j, path
}
