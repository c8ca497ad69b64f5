package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// personHome is the HOME of the person whose repositories the tests
// change: their identity lives in its .gitconfig, as it would on a real
// machine. The executor's git reads it; fixtures use gitxtest's own.
var personHome string

func TestMain(m *testing.M) {
	// A crash helper process shares its parent's home.
	dir, own := os.Getenv("SLUICE_APPLY_TEST_HOME"), false
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "sluice-apply-home-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		own = true
	}
	personHome = dir
	cfg := "[user]\n\tname = Pat Person\n\temail = pat@example.com\n[init]\n\tdefaultBranch = main\n"
	if err := os.WriteFile(filepath.Join(dir, ".gitconfig"), []byte(cfg), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Setenv("HOME", dir)
	os.Unsetenv("XDG_CONFIG_HOME")
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "GIT_") {
			os.Unsetenv(k)
		}
	}
	os.Setenv("SLUICE_APPLY_TEST_HOME", dir)
	code := m.Run()
	if own {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// fixture is a person's machine: an allowed root holding a repository, a
// journal, and an executor.
type fixture struct {
	t    testing.TB
	root string
	repo *gitxtest.Repo
	j    *journal.Journal
	e    *Executor
	rec  *fileRecorder
}

// fileRecorder appends every journal event to a file, one JSON line each:
// a real audit trail that survives the process.
type fileRecorder struct {
	mu   sync.Mutex
	path string
}

func (r *fileRecorder) Record(ev journal.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (r *fileRecorder) types(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev journal.Event
		if json.Unmarshal([]byte(line), &ev) == nil {
			out = append(out, ev.Type)
		}
	}
	return out
}

// newFixture makes a repository with one commit on main (README.md,
// src/a.txt, src/b.txt) inside a fresh allowed root.
func newFixture(t testing.TB, initArgs ...string) *fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := gitxtest.InitAt(t, filepath.Join(root, "repo"), initArgs...)
	r.Write("README.md", "# demo\n")
	r.Write("src/a.txt", "a1\na2\na3\n")
	r.Write("src/b.txt", "b1\nb2\nb3\n")
	r.Commit("base")
	f := &fixture{t: t, root: root, repo: r}
	f.open(filepath.Join(t.TempDir(), "journal.db"), filepath.Join(t.TempDir(), "audit.jsonl"))
	return f
}

// open opens the journal and an executor over the fixture's root.
func (f *fixture) open(dbPath, auditPath string) {
	f.t.Helper()
	f.rec = &fileRecorder{path: auditPath}
	j, err := journal.Open(dbPath, journal.Options{Recorder: f.rec, PendingCap: 1000, LockTimeout: 10 * time.Second})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { j.Close() })
	f.j = j
	runner, err := gitx.NewRunner(gitx.RunnerOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	e, err := New(Options{Journal: j, Roots: gitx.Roots{f.root}, Runner: runner, Logger: quiet})
	if err != nil {
		f.t.Fatal(err)
	}
	f.e = e
}

func (f *fixture) git(args ...string) string {
	f.t.Helper()
	return f.repo.Git(args...)
}

func (f *fixture) gitIn(dir string, args ...string) string {
	f.t.Helper()
	return gitxtest.Git(f.t, dir, args...)
}

var proposalSeq atomic.Int64

// quiet keeps the executor's log out of test output unless -v asks.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// pin resolves, like the sidecar does at submit, every revision args
// names in repo dir.
func pinFor(t testing.TB, dir string, args proposal.Args) proposal.Pinned {
	t.Helper()
	pinned := proposal.Pinned{Refs: map[string]string{}}
	for _, ref := range args.Pins() {
		pinned.Refs[ref] = gitxtest.Git(t, dir, "rev-parse", "--verify", ref+"^{commit}")
	}
	switch a := args.(type) {
	case *proposal.BranchDeleteArgs:
		pinned.Repos = map[string]map[string]string{}
		for _, o := range a.OtherRepos {
			refs := map[string]string{}
			for _, b := range o.Branches {
				refs[proposal.BranchRef(b)] = gitxtest.Git(t, o.Repo, "rev-parse", "--verify", proposal.BranchRef(b))
			}
			pinned.Repos[o.Repo] = refs
		}
	case *proposal.SubmodulePointerArgs:
		sub, err := filepath.EvalSymlinks(filepath.Join(dir, a.Path))
		if err != nil {
			t.Fatal(err)
		}
		pinned.Repos = map[string]map[string]string{sub: {"HEAD": gitxtest.Git(t, sub, "rev-parse", "HEAD")}}
	}
	return pinned
}

// propose submits a proposal for args in the fixture's repository and
// approves it as a person would, returning the approved record.
func (f *fixture) propose(args proposal.Args, mutate ...func(*proposal.Proposal)) journal.Record {
	f.t.Helper()
	return f.proposeIn(f.repo.Dir, args, mutate...)
}

// newProposal is a proposal for args in dir, pinned as the sidecar pins.
func (f *fixture) newProposal(dir string, args proposal.Args) proposal.Proposal {
	f.t.Helper()
	now := time.Now()
	return proposal.Proposal{
		ID: fmt.Sprintf("p%d-%d", time.Now().UnixNano()%1e9, proposalSeq.Add(1)), Op: args.Op(), Repo: dir,
		Pinned: pinFor(f.t, dir, args), Args: args, Reason: "the test asks for it", Agent: "test-agent",
		CreatedAt: proposal.At(now), ExpiresAt: proposal.At(now.Add(10 * time.Minute)),
	}
}

// refuseAtSeal seals a proposal for args as the app does on receipt and
// fails the test unless sealing refused it with want, naming files in its
// data, and left the repository exactly as it was, Sluice's refs included.
func (f *fixture) refuseAtSeal(args proposal.Args, want error, files ...string) error {
	f.t.Helper()
	return f.refuseProposal(f.newProposal(f.repo.Dir, args), want, files...)
}

// refuseProposal is refuseAtSeal for a proposal made already.
func (f *fixture) refuseProposal(p proposal.Proposal, want error, files ...string) error {
	f.t.Helper()
	before := repoState(f.t, f.repo.Dir)
	refs := f.git("for-each-ref", "refs/sluice/")
	sealed, err := f.e.Seal(testCtx(f.t), p)
	if !errors.Is(err, want) || sealed != nil {
		f.t.Fatalf("seal: %v (outcome %v): want it refused with %v", err, sealed, want)
	}
	if files != nil {
		data, _ := dataOf(err).(map[string]any)
		if got, _ := data["files"].([]string); !slices.Equal(got, files) {
			f.t.Errorf("data %#v: want files %q", data, files)
		}
	}
	if after := repoState(f.t, f.repo.Dir); after != before {
		f.t.Errorf("the repository changed:\n%s", diffState(before, after))
	}
	if after := f.git("for-each-ref", "refs/sluice/"); after != refs {
		f.t.Errorf("Sluice's refs changed from %q to %q", refs, after)
	}
	return err
}

func (f *fixture) proposeIn(dir string, args proposal.Args, mutate ...func(*proposal.Proposal)) journal.Record {
	f.t.Helper()
	p := f.newProposal(dir, args)
	for _, m := range mutate {
		m(&p)
	}
	// As the app does on receipt: the outcome is sealed before anything
	// else sees the proposal.
	sealed, err := f.e.Seal(testCtx(f.t), p)
	if err != nil {
		f.t.Fatalf("seal %s: %v", p.Op, err)
	}
	p.Sealed = sealed
	if err := p.Seal(); err != nil {
		f.t.Fatal(err)
	}
	if _, _, err := f.j.Submit(p); err != nil {
		f.t.Fatalf("submit: %v", err)
	}
	if err := f.e.Keep(testCtx(f.t), p); err != nil {
		f.t.Fatalf("keep: %v", err)
	}
	rec, err := f.j.Approve(p.ID, p.Digest, "pat", "")
	if err != nil {
		f.t.Fatalf("approve: %v", err)
	}
	return rec
}

func (f *fixture) execute(rec journal.Record) (journal.Record, error) {
	f.t.Helper()
	return f.e.Execute(testCtx(f.t), rec.Proposal.ID)
}

// mustComplete executes and fails the test unless the proposal completed.
func (f *fixture) mustComplete(rec journal.Record) journal.Record {
	f.t.Helper()
	out, err := f.execute(rec)
	if err != nil || out.State != proposal.Completed {
		msg := ""
		if out.Outcome != nil {
			msg = string(out.Outcome.Code) + ": " + out.Outcome.Message
		}
		f.t.Fatalf("execute %s: state %s, err %v (%s)", rec.Proposal.Op, out.State, err, msg)
	}
	return out
}

// mustRefuseUnchanged executes rec and fails the test unless it failed
// with want, naming files in its data, and left the repository as it was.
func (f *fixture) mustRefuseUnchanged(rec journal.Record, want error, files ...string) journal.Record {
	f.t.Helper()
	before := repoState(f.t, f.repo.Dir)
	out, err := f.execute(rec)
	if !errors.Is(err, want) || out.State != proposal.Failed {
		f.t.Fatalf("state %s err %v: want failed with %v", out.State, err, want)
	}
	data, _ := dataOf(err).(map[string]any)
	if got, _ := data["files"].([]string); !slices.Equal(got, files) {
		f.t.Errorf("data %#v: want files %q", data, files)
	}
	if after := repoState(f.t, f.repo.Dir); after != before {
		f.t.Errorf("the repository changed:\n%s", diffState(before, after))
	}
	return out
}

// tamper rewrites the stored record of id, as a disk editor or a bug
// would.
func (f *fixture) tamper(id string, fn func(*journal.Record)) {
	f.t.Helper()
	err := f.j.DB().Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("proposals"))
		var rec journal.Record
		if err := json.Unmarshal(b.Get([]byte(id)), &rec); err != nil {
			return err
		}
		fn(&rec)
		v, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return b.Put([]byte(id), v)
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

// repoState is what a person would call the state of a repository: refs
// (Sluice's own excepted), HEAD, index, files (untracked included, ignored
// too), worktrees and branch configuration.
func repoState(t testing.TB, dir string) string {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(gitxtest.Git(t, dir, "for-each-ref", "--format=%(refname) %(objectname)"), "\n") {
		if !strings.HasPrefix(line, "refs/sluice/") {
			b.WriteString(line + "\n")
		}
	}
	head, err := gitxtest.GitErr(t, dir, "symbolic-ref", "-q", "HEAD")
	if err != nil {
		head = "detached"
	}
	b.WriteString("HEAD " + head + " " + gitxtest.Git(t, dir, "rev-parse", "HEAD") + "\n")
	b.WriteString("index\n" + gitxtest.Git(t, dir, "ls-files", "-s") + "\n")
	b.WriteString("worktrees\n" + gitxtest.Git(t, dir, "worktree", "list", "--porcelain") + "\n")
	cfg, _ := gitxtest.GitErr(t, dir, "config", "--local", "--get-regexp", `^branch\.`)
	b.WriteString("config\n" + cfg + "\n")
	snap := gitxtest.Snapshot(t, dir)
	keys := make([]string, 0, len(snap))
	for k := range snap {
		if k == ".git" || strings.HasPrefix(k, ".git/") || strings.HasPrefix(k, ".git"+string(filepath.Separator)) {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(k + " " + snap[k] + "\n")
	}
	return b.String()
}

// diffState shows the lines that differ between two repoStates.
func diffState(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	in := func(l []string) map[string]bool {
		m := map[string]bool{}
		for _, s := range l {
			m[s] = true
		}
		return m
	}
	am, bm := in(al), in(bl)
	var out []string
	for _, s := range al {
		if !bm[s] {
			out = append(out, "- "+s)
		}
	}
	for _, s := range bl {
		if !am[s] {
			out = append(out, "+ "+s)
		}
	}
	return strings.Join(out, "\n")
}

// requireSame fails unless two snapshots of a repository's every byte are
// identical.
func requireSame(t testing.TB, before, after map[string]string) {
	t.Helper()
	if d := gitxtest.DiffSnapshots(before, after); len(d) > 0 {
		t.Fatalf("the repository changed:\n%s", strings.Join(d, "\n"))
	}
}

func outcomeCode(rec journal.Record) errcode.Code {
	if rec.Outcome == nil {
		return ""
	}
	return rec.Outcome.Code
}

// haveSSHKeygen reports whether signing with an ssh key can be tested;
// with SLUICE_REQUIRE_E2E=1 its absence fails the test.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("SLUICE_REQUIRE_E2E") == "1" {
			t.Fatalf("missing prerequisite: %s (install openssh-client)", name)
		}
		t.Skipf("skipping: %s is not installed", name)
	}
	return p
}
