package config

import (
	"errors"
	"os"
	"sync"
	"time"
)

// Live is a running process's view of config.json. The person changes the
// allowed roots, the workspace image and runtime, and the pending expiry
// while Sluice and its agents run (in the app, with `sluice roots add`, or
// by hand); a process that asks Live on every request sees each change on
// its next one, without a restart of the app or of any agent. The check is
// one stat of the file; the file is read and validated again only when its
// identity, size or modification time changed.
type Live struct {
	configDir, stateDir string

	mu   sync.Mutex
	seen fileStamp
	// reread is set when the file could not be looked at: the next look
	// reads it whatever its stamp.
	reread bool
	snap   *Snapshot
}

// Snapshot is one reading of the configuration.
type Snapshot struct {
	// Config is the configuration as last loaded successfully (the one
	// the process started with until the file changes).
	Config *Config
	// Err is set when the file changed and no longer loads: the message
	// names the bad key. Config then still holds the last good values;
	// callers decide what fails closed (the allowed roots do).
	Err error
}

// fileStamp identifies one version of config.json without reading it: an
// atomic save (WriteFileAtomic) renames a new file into place, so the
// identity changes even when size and time do not.
type fileStamp struct {
	info    os.FileInfo // nil: there was no file
	size    int64
	modTime time.Time
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return fileStamp{}, nil
	}
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{info: fi, size: fi.Size(), modTime: fi.ModTime()}, nil
}

func (a fileStamp) same(b fileStamp) bool {
	if a.info == nil || b.info == nil {
		return a.info == nil && b.info == nil
	}
	return os.SameFile(a.info, b.info) && a.size == b.size && a.modTime.Equal(b.modTime)
}

// NewLive starts from c, which the caller has just loaded (or built): the
// file as it is now counts as what c says. Environment variables keep
// overriding the file on every reload, exactly as in Load.
func NewLive(c *Config) *Live {
	l := &Live{configDir: c.ConfigDir, stateDir: c.StateDir, snap: &Snapshot{Config: c}}
	l.seen, _ = stampOf(c.File())
	return l
}

// Current returns the configuration as config.json says now. The pointer
// is the same as long as nothing changed, so a caller can cache what it
// derives from it.
func (l *Live) Current() *Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	path := l.snap.Config.File()
	st, err := stampOf(path)
	if err != nil {
		if l.snap.Err == nil || l.snap.Err.Error() != err.Error() {
			l.snap = &Snapshot{Config: l.snap.Config, Err: err}
		}
		l.reread = true
		return l.snap
	}
	if !l.reread && st.same(l.seen) {
		return l.snap
	}
	// The stamp is taken before the read: a save that lands while the
	// file is read is seen on the next call.
	l.seen, l.reread = st, false
	c, err := loadFrom(l.configDir, l.stateDir)
	if err != nil {
		l.snap = &Snapshot{Config: l.snap.Config, Err: err}
		return l.snap
	}
	l.snap = &Snapshot{Config: c}
	return l.snap
}
