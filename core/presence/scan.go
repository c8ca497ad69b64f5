package presence

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/config"
)

// States of another agent in a repository.
const (
	// StateWorking: a Sluice tool call on the repository in the last
	// WorkingWindow.
	StateWorking = "working"
	// StateOpen: the agent is running with the repository in scope (a live
	// sidecar that has used it, or an agent process whose working directory
	// is inside it) but has not called a tool there lately.
	StateOpen = "open"
	// StateRecent: the agent's sidecar is gone but worked here within
	// StaleAfter.
	StateRecent = "recent"
)

// WorkingWindow is how recent a call must be for StateWorking.
const WorkingWindow = 2 * time.Minute

// Entry is one presence file as Scan found it.
type Entry struct {
	Record
	Alive bool
}

var fileName = regexp.MustCompile(`^[0-9]{1,10}\.json$`)

// Scan reads every presence file in dir and sweeps the stale ones: files of
// dead processes older than StaleAfter, and unreadable leftovers as old. A
// missing dir is no error; a symlinked or shared one is.
func Scan(dir string, now time.Time) ([]Entry, error) {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err := config.CheckPrivateDir(dir); err != nil {
		return nil, err
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, de := range des {
		name := de.Name()
		path := filepath.Join(dir, name)
		fi, err := os.Lstat(path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		old := now.Sub(fi.ModTime()) > StaleAfter
		if !fileName.MatchString(name) {
			// Temporary files of an interrupted atomic write.
			if strings.Contains(name, ".json.tmp-") && old {
				os.Remove(path)
			}
			continue
		}
		rec, err := readRecord(path, fi.Size())
		pid, _ := strconv.Atoi(strings.TrimSuffix(name, ".json"))
		if err != nil || rec.PID != pid {
			if old {
				os.Remove(path)
			}
			continue
		}
		alive := processAlive(rec.PID, rec.ProcStart)
		if !alive && old {
			os.Remove(path)
			continue
		}
		out = append(out, Entry{Record: rec, Alive: alive})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, nil
}

func readRecord(path string, size int64) (Record, error) {
	var r Record
	if size > maxFileBytes {
		return r, errors.New("presence file too large")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, err
	}
	if r.Version != FileVersion || r.PID <= 0 {
		return r, errors.New("unsupported presence file")
	}
	return r, nil
}

// Agent is another agent found working in a repository.
type Agent struct {
	// Kind is "sidecar" (a Sluice presence file) or "process" (an agent
	// process found running in the repository).
	Kind    string `json:"kind"`
	PID     int    `json:"pid"`
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	State   string `json:"state"`
	// LastCall and LastTool: the agent's last Sluice call there (sidecars).
	LastCall *time.Time `json:"lastCall,omitempty"`
	LastTool string     `json:"lastTool,omitempty"`
	// Repo is the path the agent is working in: the repository or a
	// directory inside it.
	Repo string `json:"repo"`
	// Paths the agent last proposed to change there.
	Paths []string `json:"paths,omitempty"`
}

// DetectOptions say where to look.
type DetectOptions struct {
	// Dir is the presence directory.
	Dir string
	// Repo is the canonical repository path.
	Repo string
	// SelfPID is this sidecar's process: neither it nor the agent that runs
	// it (its ancestors) is "another agent".
	SelfPID int
	Now     time.Time
	// Procfs is where /proc is; empty means /proc. Processes are only
	// scanned on Linux.
	Procfs string
	// NoProcesses turns the /proc scan off.
	NoProcesses bool
}

// Detect reports the other agents working in opts.Repo.
func Detect(opts DetectOptions) ([]Agent, error) {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	if opts.Procfs == "" {
		opts.Procfs = "/proc"
	}
	entries, err := Scan(opts.Dir, opts.Now)
	if err != nil {
		return nil, err
	}
	var out []Agent
	// Agents represented by a sidecar: their sidecar's parent process is
	// not listed a second time.
	covered := map[int]bool{}
	for _, e := range entries {
		if e.Alive && e.PPID > 0 {
			covered[e.PPID] = true
		}
		if e.PID == opts.SelfPID {
			continue
		}
		for _, r := range e.Repos {
			if !Related(r.Path, opts.Repo) {
				continue
			}
			last := r.LastCall
			a := Agent{
				Kind: "sidecar", PID: e.PID, Name: e.Client.Name, Version: e.Client.Version,
				LastCall: &last, LastTool: r.LastTool, Repo: r.Path, Paths: r.Paths,
			}
			if r.Agent != "" {
				a.Name = r.Agent
			}
			switch {
			case !e.Alive:
				a.State = StateRecent
			case opts.Now.Sub(r.LastCall) <= WorkingWindow:
				a.State = StateWorking
			default:
				a.State = StateOpen
			}
			out = append(out, a)
		}
	}
	if !opts.NoProcesses {
		procs := agentProcesses(opts.Procfs)
		mine := ancestors(procs, opts.SelfPID)
		byPID := map[int]proc{}
		for _, p := range procs {
			byPID[p.pid] = p
		}
		for _, p := range procs {
			if p.agent == "" || mine[p.pid] || covered[p.pid] || p.pid == opts.SelfPID {
				continue
			}
			// A helper process of an agent (same agent as its parent) is the
			// same agent.
			if parent, ok := byPID[p.ppid]; ok && parent.agent == p.agent {
				continue
			}
			if p.cwd == "" || !within(p.cwd, opts.Repo) {
				continue
			}
			out = append(out, Agent{Kind: "process", PID: p.pid, Name: p.agent, State: StateOpen, Repo: p.cwd})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].State != out[j].State {
			return stateRank(out[i].State) < stateRank(out[j].State)
		}
		return out[i].PID < out[j].PID
	})
	return out, nil
}

func stateRank(s string) int {
	switch s {
	case StateWorking:
		return 0
	case StateOpen:
		return 1
	}
	return 2
}

// Related reports whether two canonical paths are the same or one contains
// the other (a repository and a directory inside it).
func Related(a, b string) bool { return within(a, b) || within(b, a) }

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	if p == dir {
		return true
	}
	if !strings.HasSuffix(dir, string(filepath.Separator)) {
		dir += string(filepath.Separator)
	}
	return strings.HasPrefix(p, dir)
}

// Overlap returns the paths in a that are also in b, sorted.
func Overlap(a, b []string) []string {
	set := map[string]bool{}
	for _, p := range b {
		set[p] = true
	}
	var out []string
	for _, p := range a {
		if set[p] && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// ancestors returns pid and the chain of its parent processes.
func ancestors(procs []proc, pid int) map[int]bool {
	parent := map[int]int{}
	for _, p := range procs {
		parent[p.pid] = p.ppid
	}
	out := map[int]bool{}
	for i := 0; pid > 1 && i < 64 && !out[pid]; i++ {
		out[pid] = true
		pid = parent[pid]
	}
	return out
}
