package audit

import (
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncLog records which files (by inode) a ledger synced.
type syncLog struct {
	mu     sync.Mutex
	inodes []uint64
}

func (s *syncLog) hook(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.inodes = append(s.inodes, fi.Sys().(*syscall.Stat_t).Ino)
	s.mu.Unlock()
	return f.Sync()
}

func (s *syncLog) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inodes)
}

func (s *syncLog) has(ino uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, i := range s.inodes {
		if i == ino {
			return true
		}
	}
	return false
}

func inodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func TestLedger_AppendSoon_InTheFileAtOnceSyncedSoon(t *testing.T) {
	key := newTestKey(t)
	path := ledgerPath(t)
	l := openLedger(t, Options{Path: path, Key: key.priv})
	var log syncLog
	l.syncFile = log.hook
	// The test fires the scheduled sync itself, so nothing here waits on a
	// timer and no stalled goroutine can sync early or late.
	var timers []func()
	var afters []time.Duration
	l.afterFunc = func(d time.Duration, f func()) {
		afters = append(afters, d)
		timers = append(timers, f)
	}

	r, err := l.AppendSoon(sampleEntry(1))
	if err != nil {
		t.Fatal(err)
	}
	if n := log.count(); n != 0 {
		t.Fatalf("AppendSoon synced %d times before returning", n)
	}
	// Every reader sees it at once, and the chain verifies.
	if lines := readLines(t, path); len(lines) != 1 {
		t.Fatalf("%d lines after AppendSoon, want 1", len(lines))
	}
	if _, err := Verify(path, key.pub(), VerifyOptions{RequireSigned: true}); err != nil {
		t.Fatal(err)
	}
	// A second one in the window adds no second sync.
	if _, err := l.AppendSoon(sampleEntry(2)); err != nil {
		t.Fatal(err)
	}
	if len(timers) != 1 || afters[0] != SyncSoonWithin {
		t.Fatalf("two entries written soon scheduled syncs after %v, want one after %v", afters, SyncSoonWithin)
	}
	if n := log.count(); n != 0 {
		t.Fatalf("%d syncs before the scheduled one fired", n)
	}
	timers[0]()
	if n := log.count(); n != 1 || !log.has(inodeOf(t, path)) {
		t.Fatalf("%d syncs for two entries written soon, want 1 of the active file", n)
	}
	// The next entry links to it.
	r2, err := l.Append(sampleEntry(3))
	if err != nil {
		t.Fatal(err)
	}
	if r2.Sequence != r.Sequence+2 {
		t.Errorf("sequence %d after %d and one more, want %d", r2.Sequence, r.Sequence, r.Sequence+2)
	}
}

func TestLedger_AppendSoon_CloseSyncs(t *testing.T) {
	path := ledgerPath(t)
	l, err := Open(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	var log syncLog
	l.syncFile = log.hook
	l.soonAfter = time.Hour // only Close may sync here
	if _, err := l.AppendSoon(sampleEntry(1)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !log.has(inodeOf(t, path)) {
		t.Fatal("Close returned without syncing the entry AppendSoon wrote")
	}
	// The timer that fires after Close finds the ledger closed and does nothing.
	if err := l.syncSoon(); err != ErrClosed {
		t.Errorf("syncSoon after Close: %v", err)
	}
}

func TestLedger_AppendSoon_RotationSyncsTheFileItRenames(t *testing.T) {
	key := newTestKey(t)
	path := ledgerPath(t)
	l := openLedger(t, Options{Path: path, Key: key.priv, MaxFileBytes: 2 << 10, MaxSegments: 4})
	var log syncLog
	l.syncFile = log.hook
	l.soonAfter = time.Hour // only the rotation may sync here
	if _, err := l.AppendSoon(sampleEntry(0)); err != nil {
		t.Fatal(err)
	}
	first := inodeOf(t, path)
	for i := 1; inodeOf(t, path) == first; i++ {
		if _, err := l.AppendSoon(sampleEntry(i)); err != nil {
			t.Fatal(err)
		}
	}
	// The file that became a segment was synced by the rotation itself,
	// not left for a timer that opens the new active file.
	if !log.has(first) {
		t.Fatal("the rotated file was not synced before it was renamed")
	}
	if _, err := Verify(path, key.pub(), VerifyOptions{RequireSigned: true}); err != nil {
		t.Fatal(err)
	}
}
