package journal

import (
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
