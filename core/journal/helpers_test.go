package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/core/proposal"
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// memRecorder keeps events in memory and can be told to fail.
type memRecorder struct {
	mu     sync.Mutex
	events []Event
	fail   atomic.Bool
}

func (m *memRecorder) Record(ev Event) error {
	if m.fail.Load() {
		return errors.New("disk full")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, ev)
	return nil
}

func (m *memRecorder) types() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, e := range m.events {
		out = append(out, e.Type)
	}
	return out
}

// testJournal opens a real journal in t.TempDir(); on cleanup it closes it
// and runs bbolt's consistency check on the file.
func testJournal(t testing.TB, opts Options) (*Journal, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		j.Close()
		checkDB(t, path)
	})
	return j, path
}

// checkDB runs bbolt's consistency check on a closed journal file.
func checkDB(t testing.TB, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Errorf("reopen for check: %v", err)
		return
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
	if err != nil {
		t.Errorf("bbolt check: %v", err)
	}
	if err := db.View(checkTimeIndex); err != nil {
		t.Errorf("time index: %v", err)
	}
	if err := db.View(checkPendingPaths); err != nil {
		t.Errorf("pending paths index: %v", err)
	}
	if err := db.View(checkText); err != nil {
		t.Errorf("text bucket: %v", err)
	}
	if err := db.View(checkRules); err != nil {
		t.Errorf("rule index: %v", err)
	}
	if err := db.View(checkSessionsAndRuleNames); err != nil {
		t.Errorf("session and rule-name indexes: %v", err)
	}
	if err := db.View(checkStartup); err != nil {
		t.Errorf("expiry index and state counts: %v", err)
	}
}

// checkTimeIndex reports where a time index and the records disagree: a
// record without its key, or a key without its record.
func checkTimeIndex(tx *bolt.Tx) error {
	want := map[string]map[string]bool{}
	err := tx.Bucket(bucketProposals).ForEach(func(k, v []byte) error {
		var rec Record
		if err := json.Unmarshal(v, &rec); err != nil {
			return err
		}
		for _, ix := range timeIndexes {
			if want[string(ix.bucket)] == nil {
				want[string(ix.bucket)] = map[string]bool{}
			}
			want[string(ix.bucket)][string(ix.key(indexedOf(rec.Proposal, rec.State)))] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, ix := range timeIndexes {
		b := tx.Bucket(ix.bucket)
		if b == nil {
			return fmt.Errorf("no %s index", ix.bucket)
		}
		n := 0
		err = b.ForEach(func(k, _ []byte) error {
			if !want[string(ix.bucket)][string(k)] {
				return fmt.Errorf("%s: key %q has no record", ix.bucket, k)
			}
			n++
			return nil
		})
		if err == nil && n != len(want[string(ix.bucket)]) {
			err = fmt.Errorf("%s: %d keys for %d records", ix.bucket, n, len(want[string(ix.bucket)]))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

var seq atomic.Int64

// newProposal builds a sealed commit proposal by agent, created now.
func newProposal(t testing.TB, now time.Time, agent string, paths ...string) proposal.Proposal {
	t.Helper()
	if len(paths) == 0 {
		paths = []string{"README.md"}
	}
	p := proposal.Proposal{
		ID:     fmt.Sprintf("p-%d", seq.Add(1)),
		Op:     proposal.OpCommit,
		Repo:   "/work/repo",
		Args:   &proposal.CommitArgs{Message: "update", Paths: paths, Branch: "agent/x"},
		Reason: "keep the readme current",
		Agent:  agent,
		Pinned: proposal.Pinned{Refs: map[string]string{
			"HEAD":               "0123456789abcdef0123456789abcdef01234567",
			"refs/heads/agent/x": "0123456789abcdef0123456789abcdef01234567",
		}},
		CreatedAt: proposal.At(now),
		ExpiresAt: proposal.At(now.Add(15 * time.Minute)),
	}
	if err := p.Seal(); err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return p
}

func reseal(t testing.TB, p *proposal.Proposal) {
	t.Helper()
	if err := p.Seal(); err != nil {
		t.Fatalf("Seal: %v", err)
	}
}

// checkPendingPaths reports where the pending paths index and the
// pending records disagree.
func checkPendingPaths(tx *bolt.Tx) error {
	want := map[string]string{}
	err := tx.Bucket(bucketProposals).ForEach(func(k, v []byte) error {
		var rec Record
		if err := json.Unmarshal(v, &rec); err != nil {
			return err
		}
		if rec.State == proposal.Pending {
			for _, key := range pathKeys(rec.Proposal) {
				want[string(key)] = rec.Proposal.Agent
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	n := 0
	err = tx.Bucket(bucketPendingPaths).ForEach(func(k, v []byte) error {
		if a, ok := want[string(k)]; !ok || a != string(v) {
			return fmt.Errorf("key %q (%q) has no pending record", k, v)
		}
		n++
		return nil
	})
	if err == nil && n != len(want) {
		err = fmt.Errorf("%d keys for %d of the pending records' paths", n, len(want))
	}
	return err
}

// checkText reports where the text bucket and the records disagree.
func checkText(tx *bolt.Tx) error {
	n := 0
	err := tx.Bucket(bucketProposals).ForEach(func(k, v []byte) error {
		var rec Record
		if err := json.Unmarshal(v, &rec); err != nil {
			return err
		}
		// Present for each record (a test may rewrite a record's words
		// behind the journal's back, so not compared).
		if tx.Bucket(bucketByText).Get(timeKey(rec.Proposal.CreatedAt, rec.Proposal.ID)) == nil {
			return fmt.Errorf("%s has no words", k)
		}
		n++
		return nil
	})
	if err != nil {
		return err
	}
	if m := tx.Bucket(bucketByText).Stats().KeyN; m != n {
		return fmt.Errorf("%d values for %d records", m, n)
	}
	return nil
}

// checkRules reports where the rule index and the records' decisions
// disagree.
func checkRules(tx *bolt.Tx) error {
	want := map[string]string{}
	err := tx.Bucket(bucketProposals).ForEach(func(k, v []byte) error {
		var rec Record
		if err := json.Unmarshal(v, &rec); err != nil {
			return err
		}
		if r := ruleOf(rec.Decision); r != "" {
			want[string(timeKey(rec.Decision.At, rec.Proposal.ID))] = r
		}
		return nil
	})
	if err != nil {
		return err
	}
	n := 0
	err = tx.Bucket(bucketByRule).ForEach(func(k, v []byte) error {
		if want[string(k)] != string(v) {
			return fmt.Errorf("key %q names rule %q, the record %q", k, v, want[string(k)])
		}
		n++
		return nil
	})
	if err == nil && n != len(want) {
		err = fmt.Errorf("%d keys for %d records approved by rules", n, len(want))
	}
	return err
}
