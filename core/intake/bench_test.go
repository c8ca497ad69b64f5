package intake

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// fileRecorder stands in for the audit ledger's cost: one appended line
// and one fsync per event.
type fileRecorder struct {
	mu sync.Mutex
	f  *os.File
}

func newFileRecorder(b *testing.B) *fileRecorder {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "audit.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return &fileRecorder{f: f}
}

func (r *fileRecorder) Record(ev journal.Event) error {
	line, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.f.Write(append(line, '\n')); err != nil {
		return err
	}
	return r.f.Sync()
}

// visibility waits for proposals to show up on the app's change feed.
type visibility struct {
	mu      sync.Mutex
	waiting map[string]chan struct{}
}

func watch(b *testing.B, j *journal.Journal) *visibility {
	v := &visibility{waiting: map[string]chan struct{}{}}
	ch, cancel := j.Subscribe()
	b.Cleanup(cancel)
	go func() {
		for c := range ch {
			v.mu.Lock()
			if w, ok := v.waiting[c.ID]; ok {
				close(w)
				delete(v.waiting, c.ID)
			}
			v.mu.Unlock()
		}
	}()
	return v
}

func (v *visibility) expect(id string) <-chan struct{} {
	w := make(chan struct{})
	v.mu.Lock()
	v.waiting[id] = w
	v.mu.Unlock()
	return w
}

func report(b *testing.B, lat []time.Duration, elapsed time.Duration) {
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(float64(len(lat))*p))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "ops/s")
}

func recorders(b *testing.B) map[string]func() journal.Recorder {
	return map[string]func() journal.Recorder{
		"recorder=memory":     func() journal.Recorder { return &memRecorder{} },
		"recorder=fsync-file": func() journal.Recorder { return newFileRecorder(b) },
	}
}

// BenchmarkSubmit_EndToEnd measures one sidecar's submit: HTTP through the
// client, validation, one fsynced bbolt transaction with its audit event,
// until the change reaches a subscriber (what the app's UI listens to).
func BenchmarkSubmit_EndToEnd(b *testing.B) {
	for _, name := range []string{"recorder=memory", "recorder=fsync-file"} {
		b.Run(name, func(b *testing.B) {
			e := newEnv(b, envOptions{pendingCap: 1 << 30, recorder: recorders(b)[name]()})
			v := watch(b, e.j)
			props := make([]proposal.Proposal, b.N)
			for i := range props {
				props[i] = e.branchProposal(b, "agent-a")
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				seen := v.expect(props[i].ID)
				t0 := time.Now()
				if _, err := e.client.SubmitProposal(b.Context(), "agent-a", props[i]); err != nil {
					b.Fatal(err)
				}
				<-seen
				lat = append(lat, time.Since(t0))
			}
			elapsed := time.Since(start)
			b.StopTimer()
			report(b, lat, elapsed)
		})
	}
}

// BenchmarkSubmit_Concurrent20 has 20 sidecar clients (own connection,
// own agent name) submit at once.
func BenchmarkSubmit_Concurrent20(b *testing.B) {
	const clients = 20
	for _, name := range []string{"recorder=memory", "recorder=fsync-file"} {
		b.Run(name, func(b *testing.B) {
			e := newEnv(b, envOptions{pendingCap: 1 << 30, recorder: recorders(b)[name]()})
			v := watch(b, e.j)
			type worker struct {
				c     *gateway.Client
				agent string
				props []proposal.Proposal
				lat   []time.Duration
			}
			ws := make([]*worker, clients)
			for i := range ws {
				c, err := gateway.NewClient(e.srv.Addr(), e.token)
				if err != nil {
					b.Fatal(err)
				}
				w := &worker{c: c, agent: fmt.Sprintf("agent-%02d", i)}
				for n := i; n < b.N; n += clients {
					w.props = append(w.props, e.branchProposal(b, w.agent))
				}
				ws[i] = w
			}
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for _, w := range ws {
				wg.Go(func() {
					for _, p := range w.props {
						seen := v.expect(p.ID)
						t0 := time.Now()
						if _, err := w.c.SubmitProposal(b.Context(), w.agent, p); err != nil {
							b.Error(err)
							return
						}
						<-seen
						w.lat = append(w.lat, time.Since(t0))
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			var lat []time.Duration
			for _, w := range ws {
				lat = append(lat, w.lat...)
			}
			report(b, lat, elapsed)
		})
	}
}

// BenchmarkBoltFsyncTx is the floor: one bbolt read-write transaction that
// puts a record-sized value and fsyncs on commit, on the same disk.
func BenchmarkBoltFsyncTx(b *testing.B) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "floor.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err })
	value := make([]byte, 1200) // about the size of a stored record
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		t0 := time.Now()
		err := db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("b")).Put(binary.BigEndian.AppendUint64(nil, uint64(i)), value)
		})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	elapsed := time.Since(start)
	b.StopTimer()
	report(b, lat, elapsed)
}
