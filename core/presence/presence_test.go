package presence

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/config"
)

func presenceDir(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "state", "presence")
}

func readRec(t *testing.T, path string) Record {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestFile_OpenTouchClose(t *testing.T) {
	dir := presenceDir(t)
	f, err := Open(dir, os.Getpid(), ClientInfo{Name: "claude-code", Version: "2.0"})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v", st.Mode().Perm())
	}
	if st, _ := os.Stat(f.Path()); st.Mode().Perm() != 0o600 || filepath.Base(f.Path()) != strconv.Itoa(os.Getpid())+".json" {
		t.Errorf("file %s mode %v", f.Path(), st.Mode().Perm())
	}
	for i := 0; i < MaxRepos+3; i++ {
		if err := f.Touch("/repos/r"+strconv.Itoa(i), "repo_status"); err != nil {
			t.Fatal(err)
		}
	}
	f.Touch("/repos/r5", "repo_brief")
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	r := readRec(t, f.Path())
	if len(r.Repos) != MaxRepos || r.Repos[0].Path != "/repos/r5" || r.Repos[0].LastTool != "repo_brief" || r.Repos[1].Path != "/repos/r18" {
		t.Fatalf("repos not most-recent-first and capped: %+v", r.Repos[:3])
	}
	if r.Client.Name != "claude-code" || r.PID != os.Getpid() || r.PPID != os.Getppid() {
		t.Errorf("record: %+v", r)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("file left after Close")
	}
	if err := f.Touch("/repos/x", "t"); !errors.Is(err, ErrClosed) {
		t.Errorf("Touch after Close: %v", err)
	}
}

// Touch rewrites at most once per WriteInterval; a burst is written once
// the interval has passed. The clock stands still and the test fires the
// scheduled write itself, so no stall of the machine moves either.
func TestFile_Touch_Debounced(t *testing.T) {
	f, err := Open(presenceDir(t), os.Getpid(), ClientInfo{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	now := time.Now().UTC()
	f.now = func() time.Time { return now }
	var waits []time.Duration
	var fire func()
	f.after = func(d time.Duration, fn func()) *time.Timer {
		waits = append(waits, d)
		fire = fn
		return time.AfterFunc(time.Hour, func() {})
	}
	// A new repository is news: written at once.
	f.Touch("/r/one", "x")
	first := readRec(t, f.Path())
	if len(first.Repos) != 1 || first.Repos[0].LastTool != "x" {
		t.Fatalf("a new repository was not written at once: %+v", first.Repos)
	}
	// Later calls on it inside the interval wait for the interval: one
	// write is scheduled, for when the interval has passed.
	f.Touch("/r/one", "y")
	f.Touch("/r/one", "z")
	if got := readRec(t, f.Path()); got.Repos[0].LastTool != "x" {
		t.Fatalf("written inside the interval: %+v", got.Repos)
	}
	if len(waits) != 1 || waits[0] != WriteInterval {
		t.Fatalf("scheduled writes after %v, want one after %v", waits, WriteInterval)
	}
	fire()
	if got := readRec(t, f.Path()); got.Repos[0].LastTool != "z" {
		t.Fatalf("the pending write did not write the last call: %+v", got.Repos)
	}
}

func TestOpen_SymlinkedDir_Refused(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "elsewhere")
	os.Mkdir(target, 0o700)
	link := filepath.Join(base, "presence")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link, os.Getpid(), ClientInfo{}); !errors.Is(err, config.ErrUnsafeDir) {
		t.Fatalf("want ErrUnsafeDir, got %v", err)
	}
	if _, err := Scan(link, time.Now()); !errors.Is(err, config.ErrUnsafeDir) {
		t.Fatalf("Scan of a symlink: %v", err)
	}
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Fatal("wrote through the symlink")
	}
}

// A file of a dead process is "recent" until it is a day old, then swept;
// malformed and leftover temporary files are swept when old.
func TestScan_DeadAndStale(t *testing.T) {
	dir := presenceDir(t)
	if err := config.EnsurePrivateDir(dir); err != nil {
		t.Fatal(err)
	}
	dead := 999999
	now := time.Now()
	write := func(name string, rec any, age time.Duration) string {
		p := filepath.Join(dir, name)
		b, _ := json.Marshal(rec)
		os.WriteFile(p, b, 0o600)
		os.Chtimes(p, now.Add(-age), now.Add(-age))
		return p
	}
	recent := write(strconv.Itoa(dead)+".json", Record{Version: 1, PID: dead, Client: ClientInfo{Name: "old"}, Repos: []Repo{{Path: "/r", LastCall: now.Add(-time.Hour), LastTool: "repo_status"}}}, time.Hour)
	stale := write(strconv.Itoa(dead-1)+".json", Record{Version: 1, PID: dead - 1}, 25*time.Hour)
	junk := write("123.json", "not a record", 25*time.Hour)
	tmp := write(".5.json.tmp-1", "x", 25*time.Hour)
	youngJunk := write("124.json", "not a record", time.Minute)
	entries, err := Scan(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].PID != dead || entries[0].Alive {
		t.Fatalf("entries: %+v", entries)
	}
	for _, p := range []string{stale, junk, tmp} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not swept", filepath.Base(p))
		}
	}
	for _, p := range []string{recent, youngJunk} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s swept too early", filepath.Base(p))
		}
	}
	agents, err := Detect(DetectOptions{Dir: dir, Repo: "/r", SelfPID: os.Getpid(), Now: now, NoProcesses: true})
	if err != nil || len(agents) != 1 || agents[0].State != StateRecent || agents[0].Name != "old" {
		t.Fatalf("Detect: %+v %v", agents, err)
	}
}

func TestDetect_SidecarStates(t *testing.T) {
	dir := presenceDir(t)
	self, err := Open(dir, os.Getpid(), ClientInfo{Name: "me"})
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	self.Touch("/work/repo", "repo_brief")
	// Another live process: our parent (the go tool) stands in for it.
	other := Record{Version: 1, PID: os.Getppid(), Client: ClientInfo{Name: "codex", Version: "0.9"}, Repos: []Repo{
		{Path: "/work/repo/sub", LastCall: time.Now(), LastTool: "repo_status", Paths: []string{"a.go"}},
		{Path: "/work/other", LastCall: time.Now(), LastTool: "repo_status"},
	}}
	b, _ := json.Marshal(other)
	os.WriteFile(filepath.Join(dir, strconv.Itoa(os.Getppid())+".json"), b, 0o600)
	agents, err := Detect(DetectOptions{Dir: dir, Repo: "/work/repo", SelfPID: os.Getpid(), NoProcesses: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != 1 || agents[0].Name != "codex" || agents[0].State != StateWorking || agents[0].Repo != "/work/repo/sub" || agents[0].Paths[0] != "a.go" {
		t.Fatalf("agents: %+v", agents)
	}
	agents, _ = Detect(DetectOptions{Dir: dir, Repo: "/work/repo", SelfPID: os.Getpid(), NoProcesses: true, Now: time.Now().Add(10 * time.Minute)})
	if len(agents) != 1 || agents[0].State != StateOpen {
		t.Fatalf("idle agent: %+v", agents)
	}
}

func TestAgentOf_Table(t *testing.T) {
	for _, c := range []struct {
		comm string
		argv []string
		want string
	}{
		{"claude", []string{"claude"}, "claude"},
		{"node", []string{"node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"}, "claude"},
		{"node", []string{"/usr/bin/node", "/home/u/.npm/bin/codex"}, "codex"},
		{"node", []string{"node", "/x/node_modules/@google/gemini-cli/dist/index.js", "-p", "hi"}, "gemini"},
		{"python3", []string{"/usr/bin/python3", "/home/u/.local/bin/aider", "--model", "x"}, "aider"},
		{"cursor-agent", []string{"cursor-agent"}, "cursor-agent"},
		{"vim", []string{"vim", "claude"}, ""},
		{"less", []string{"less", "codex.md"}, ""},
		{"node", []string{"node", "server.js"}, ""},
		{"bash", nil, ""},
	} {
		if got := agentOf(c.comm, c.argv); got != c.want {
			t.Errorf("agentOf(%q, %q) = %q, want %q", c.comm, c.argv, got, c.want)
		}
	}
}

func TestOverlap(t *testing.T) {
	got := Overlap([]string{"b.go", "a.go", "c.go", "a.go"}, []string{"a.go", "b.go", "z"})
	if strings.Join(got, ",") != "a.go,b.go" {
		t.Fatalf("Overlap: %v", got)
	}
}
