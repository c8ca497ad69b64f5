package presence

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/core/config"
)

// Limits of a presence file.
const (
	// MaxRepos kept per file, most recent first.
	MaxRepos = 16
	// MaxPaths kept per repository: the paths of the last proposals.
	MaxPaths = 64
	// StaleAfter: a file of a dead process older than this is swept.
	StaleAfter = 24 * time.Hour
	// WriteInterval: Touch rewrites the file at most this often; calls in
	// between are folded into the next write.
	WriteInterval = time.Second
	// maxFileBytes bounds what Scan reads.
	maxFileBytes = 64 << 10
)

// FileVersion of the presence file format.
const FileVersion = 1

// ClientInfo is what the MCP client said about itself at initialize.
type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// Repo is one repository's entry in a presence file.
type Repo struct {
	// Path is canonical (symlinks resolved).
	Path     string    `json:"path"`
	LastCall time.Time `json:"lastCall"`
	LastTool string    `json:"lastTool"`
	// Agent is the identity that made the call when it differs from the
	// file's client (HTTP transport: one process, many tokens).
	Agent string `json:"agent,omitempty"`
	// Paths the agent last proposed to change here, repository-relative.
	Paths []string `json:"paths,omitempty"`
}

// Record is the content of a presence file.
type Record struct {
	Version   int        `json:"version"`
	PID       int        `json:"pid"`
	PPID      int        `json:"ppid,omitempty"`
	Client    ClientInfo `json:"client"`
	StartedAt time.Time  `json:"startedAt"`
	// ProcStart is the process's start time in clock ticks since boot on
	// Linux, so that a reused pid is not mistaken for this sidecar.
	ProcStart uint64    `json:"procStart,omitempty"`
	UpdatedAt time.Time `json:"updatedAt"`
	Repos     []Repo    `json:"repos"`
}

// Activity is one tool call to record.
type Activity struct {
	Repo  string
	Tool  string
	Agent string
	// Paths, when set, replace the repository's recorded paths (a
	// proposal's touched files).
	Paths []string
}

// File is this process's presence file.
type File struct {
	path string
	now  func() time.Time
	// after schedules a pending write (time.AfterFunc; a seam for the
	// tests, which fire the write themselves).
	after func(time.Duration, func()) *time.Timer

	mu        sync.Mutex
	rec       Record
	lastWrite time.Time
	timer     *time.Timer
	dirty     bool
	closed    bool
	writeErr  error
}

// ErrClosed is returned by Touch after Close.
var ErrClosed = errors.New("presence: file closed")

// Open creates (or takes over) dir/<pid>.json. The directory is created
// 0700; an existing one must be a real, private directory: a symlink there
// could redirect the writes of every sidecar.
func Open(dir string, pid int, client ClientInfo) (*File, error) {
	if err := config.EnsurePrivateDir(dir); err != nil {
		return nil, fmt.Errorf("presence: %w", err)
	}
	now := time.Now().UTC()
	f := &File{
		path:  filepath.Join(dir, strconv.Itoa(pid)+".json"),
		now:   func() time.Time { return time.Now().UTC() },
		after: time.AfterFunc,
		rec: Record{
			Version: FileVersion, PID: pid, Client: client, StartedAt: now, UpdatedAt: now,
			Repos: []Repo{},
		},
	}
	if pid == os.Getpid() {
		f.rec.PPID = os.Getppid()
		f.rec.ProcStart = procStart(pid)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.writeLocked(); err != nil {
		return nil, err
	}
	return f, nil
}

// Path of the file.
func (f *File) Path() string { return f.path }

// SetClient records the client's name and version (known only after the
// MCP handshake). It is written with the next Touch.
func (f *File) SetClient(c ClientInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rec.Client != c {
		f.rec.Client = c
		f.dirty = true
	}
}

// Touch records a tool call on repo (a canonical path).
func (f *File) Touch(repo, tool string) error {
	return f.Note(Activity{Repo: repo, Tool: tool})
}

// Note records an activity. The file is rewritten at most once per
// WriteInterval; a call inside the interval schedules the write.
func (f *File) Note(a Activity) error {
	if a.Repo == "" {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	now := f.now()
	entry := Repo{Path: a.Repo, LastCall: now, LastTool: a.Tool, Agent: a.Agent}
	// A repository (or agent, or set of paths) not yet in the file is news
	// for other agents and is written at once; a newer time for a known
	// one can wait for the interval.
	news := true
	if i := slices.IndexFunc(f.rec.Repos, func(r Repo) bool { return r.Path == a.Repo }); i >= 0 {
		old := f.rec.Repos[i]
		entry.Paths = old.Paths
		news = old.Agent != a.Agent
		f.rec.Repos = slices.Delete(f.rec.Repos, i, i+1)
	}
	if a.Paths != nil {
		p := capPaths(a.Paths)
		news = news || !slices.Equal(p, entry.Paths)
		entry.Paths = p
	}
	f.rec.Repos = slices.Insert(f.rec.Repos, 0, entry)
	if len(f.rec.Repos) > MaxRepos {
		f.rec.Repos = f.rec.Repos[:MaxRepos]
	}
	f.dirty = true
	if wait := f.lastWrite.Add(WriteInterval).Sub(now); wait > 0 && !news {
		if f.timer == nil {
			f.timer = f.after(wait, f.flush)
		}
		return f.writeErr
	}
	return f.writeLocked()
}

func capPaths(p []string) []string {
	out := slices.Clone(p)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxPaths {
		out = out[:MaxPaths]
	}
	return out
}

// Flush writes pending changes now.
func (f *File) Flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || !f.dirty {
		return f.writeErr
	}
	return f.writeLocked()
}

func (f *File) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.timer = nil
	if f.closed || !f.dirty {
		return
	}
	f.writeErr = f.writeLocked()
}

// Snapshot returns a copy of the current record.
func (f *File) Snapshot() Record {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.rec
	r.Repos = slices.Clone(r.Repos)
	return r
}

func (f *File) writeLocked() error {
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
	// Re-check the directory each time: it may have been swapped for a
	// symlink since Open.
	if err := config.CheckPrivateDir(filepath.Dir(f.path)); err != nil {
		return fmt.Errorf("presence: %w", err)
	}
	f.rec.UpdatedAt = f.now()
	b, err := json.MarshalIndent(f.rec, "", "  ")
	if err != nil {
		return err
	}
	// Replaced atomically but not synced: it is written on an agent's
	// calls (a proposal's paths are news at once), and a crash that loses
	// it loses only what Scan skips anyway (an unreadable record).
	if err := config.ReplaceFile(f.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("presence: write %s: %w", f.path, err)
	}
	f.lastWrite = f.now()
	f.dirty = false
	return nil
}

// Close removes the file. It is what a clean exit does; a crash leaves the
// file behind, and Scan reports it as "recent" until it is swept.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
	err := os.Remove(f.path)
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return err
}

// ProcessAlive reports whether pid runs and, when start is known, is still
// the process that had that start time (not a later one given the same
// pid). Confined sessions use it to tell a running launcher from a dead
// one.
func ProcessAlive(pid int, start uint64) bool { return processAlive(pid, start) }

// ProcessStart is pid's start time in clock ticks after boot (Linux), 0
// when unknown.
func ProcessStart(pid int) uint64 { return procStart(pid) }
