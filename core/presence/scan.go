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
		out = append(out, processAgents(newProcScan(opts.Procfs), opts.Repo, opts.SelfPID, covered)...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].State != out[j].State {
			return stateRank(out[i].State) < stateRank(out[j].State)
		}
		return out[i].PID < out[j].PID
	})
	return out, nil
}

// processAgents are the agent processes working in repo, other than self,
// the agent that runs it (its ancestors), agents whose sidecar is covered,
// and helper processes of an agent. Only an agent process working in the
// repository can be one, so the scan reads what a process is only for
// those, and for the parents and ancestors these rules ask about.
func processAgents(ps *procScan, repo string, self int, covered map[int]bool) []Agent {
	var out []Agent
	mine := ancestors(func(pid int) int { p, _ := ps.read(pid); return p.ppid }, self)
	for _, c := range ps.inRepo(repo) {
		if mine[c.pid] || covered[c.pid] || c.pid == self {
			continue
		}
		p, ok := ps.read(c.pid)
		if !ok || p.agent == "" {
			continue
		}
		// A helper process of an agent (same agent as its parent) is the
		// same agent.
		if parent, ok := ps.read(p.ppid); ok && parent.agent == p.agent {
			continue
		}
		out = append(out, Agent{Kind: "process", PID: c.pid, Name: p.agent, State: StateOpen, Repo: c.cwd})
	}
	return out
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

// ancestors returns pid and the chain of its parent processes, parentOf
// naming each one's parent (0 when unknown).
func ancestors(parentOf func(int) int, pid int) map[int]bool {
	out := map[int]bool{}
	for i := 0; pid > 1 && i < 64 && !out[pid]; i++ {
		out[pid] = true
		pid = parentOf(pid)
	}
	return out
}
