package gitx

import (
	"os/exec"
	"sync"
	"time"
)

// own are the git processes this process started and still waits for,
// each by its process group (every git runs in a group of its own, with
// the hooks and helpers it starts) and the moment before it started.
//
// The executor asks it when it tells a lock an interrupted execution left
// from one a running git holds: a git this Sluice started after the lock
// was written cannot hold it (git creates its lock files, it never takes
// over an existing one), however busy it is in the repository — the
// start-up's own look at the sealed objects, a preview being computed.
var own = struct {
	// starting is held for reading from a git's start until it is in
	// started, and for writing by OwnDuring: a look at the running
	// processes then sees no git of this process that started is missing.
	starting sync.RWMutex
	mu       sync.Mutex
	started  map[int]time.Time
}{started: map[int]time.Time{}}

func dropOwn(pid int) {
	own.mu.Lock()
	delete(own.started, pid)
	own.mu.Unlock()
}

// OwnDuring runs fn while no git of this process starts. fn's started
// tells when the git of this process whose process group is pgid started,
// if one runs: every git this process started and fn can see running is
// known to it.
func OwnDuring(fn func(started func(pgid int) (time.Time, bool))) {
	own.starting.Lock()
	defer own.starting.Unlock()
	fn(func(pgid int) (time.Time, bool) {
		own.mu.Lock()
		defer own.mu.Unlock()
		at, ok := own.started[pgid]
		return at, ok
	})
}

// startOwn starts ex and records it in own before a look can miss it.
func startOwn(ex *exec.Cmd) error {
	own.starting.RLock()
	defer own.starting.RUnlock()
	at := time.Now()
	if err := ex.Start(); err != nil {
		return err
	}
	own.mu.Lock()
	own.started[ex.Process.Pid] = at
	own.mu.Unlock()
	return nil
}
