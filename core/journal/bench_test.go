package journal

import (
	"fmt"
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
// and Reject without fsync (building is not what is measured).
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
