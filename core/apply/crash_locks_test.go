//go:build linux

package apply

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// hookGate makes one of the person's hooks stop and wait for the test: the
// hook says where it is on the fifo ready (its pid and its parent's), then
// blocks reading the fifo release. It waits only while the file armed
// exists, so that later commits run through.
type hookGate struct {
	dir      string
	released bool
}

func newHookGate(t *testing.T, repo, hook string, onlyPrepared bool) *hookGate {
	t.Helper()
	g := &hookGate{dir: t.TempDir()}
	for _, fifo := range []string{"ready", "release"} {
		if err := syscall.Mkfifo(filepath.Join(g.dir, fifo), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(g.dir, "armed"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A test that stops early still lets a waiting hook end: no hook
	// outlives the test.
	t.Cleanup(func() {
		if !g.released {
			if f, err := os.OpenFile(filepath.Join(g.dir, "release"), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.WriteString("go\n")
				f.Close()
			}
		}
	})
	cond := ""
	if onlyPrepared {
		cond = `[ "$1" = prepared ] || exit 0` + "\n"
	}
	// Only shell built-ins: the person's git runs hooks with a minimal PATH.
	script := fmt.Sprintf("#!/bin/sh\n[ -e %[1]s/armed ] || exit 0\n%[2]secho \"$$ $PPID\" > %[1]s/ready\nread x < %[1]s/release\nexit 0\n", g.dir, cond)
	if err := os.WriteFile(filepath.Join(repo, ".git", "hooks", hook), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return g
}

// waitReady returns the hook's pid and its parent's once the hook runs, or
// fails when the helper ends first (or, as a hang guard, after a minute).
func (g *hookGate) waitReady(t *testing.T, helperDone <-chan string) (int, int) {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		b, err := os.ReadFile(filepath.Join(g.dir, "ready"))
		if err != nil {
			got <- "error " + err.Error()
			return
		}
		got <- strings.TrimSpace(string(b))
	}()
	select {
	case line := <-got:
		var pid, ppid int
		if _, err := fmt.Sscanf(line, "%d %d", &pid, &ppid); err != nil {
			t.Fatalf("the hook said %q", line)
		}
		// Later commits go through.
		if err := os.Remove(filepath.Join(g.dir, "armed")); err != nil {
			t.Fatal(err)
		}
		return pid, ppid
	case line := <-helperDone:
		t.Fatalf("the executor ended before the hook ran: %s", line)
	case <-time.After(time.Minute):
		t.Fatal("the hook did not run")
	}
	return 0, 0
}

// release lets the hook end.
func (g *hookGate) release(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(g.dir, "release"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("go\n")
	f.Close()
	g.released = true
}

var subreaperOnce sync.Once

// becomeSubreaper makes this test process the reaper of its orphaned
// descendants, so that a git or hook whose executor was killed becomes a
// child of the test, which can wait for it to end and know it did.
func becomeSubreaper(t *testing.T) {
	var err error
	subreaperOnce.Do(func() {
		const prSetChildSubreaper = 36
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
			err = e
		}
	})
	if err != nil {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", err)
	}
}

// reap waits for the orphan pid (a child of this test by now) to end and
// returns how it ended. reapedHere is false when the process ended and was
// reaped before it came here: a thread of its killed parent may complete a
// wait for it on its way out (the kernel lets a blocked wait finish before
// the fatal signal is acted on), so its status is nobody's to read.
// Whether that is allowed is the caller's to say.
func reap(t *testing.T, pid int, what string) (ws syscall.WaitStatus, reapedHere bool) {
	t.Helper()
	type result struct {
		ws  syscall.WaitStatus
		err error
	}
	done := make(chan result, 1)
	go func() {
		for {
			var ws syscall.WaitStatus
			_, err := syscall.Wait4(pid, &ws, 0, nil)
			// Not (yet) this test's child: its killed parent's children
			// are handed on thread by thread as the parent's threads
			// exit. While the process still exists, wait for it to
			// arrive here.
			if errors.Is(err, syscall.ECHILD) {
				if _, serr := os.Stat("/proc/" + strconv.Itoa(pid)); serr == nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
			}
			done <- result{ws, err}
			return
		}
	}()
	select {
	case r := <-done:
		if errors.Is(r.err, syscall.ECHILD) {
			return 0, false
		}
		if r.err != nil {
			t.Fatalf("wait for %s (pid %d): %v", what, pid, r.err)
		}
		return r.ws, true
	case <-time.After(time.Minute):
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("%s (pid %d) is still running after its executor was killed", what, pid)
	}
	return 0, false
}

func procName(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

var nextIndex = regexp.MustCompile(`next-index-[0-9]+\.lock$`)

// TestCrash_SIGKILL_InPersonHook kills a real executor process with SIGKILL
// while one of the person's hooks runs inside an approved commit, and
// follows what a person does next. The executor's git dies with it (it
// does not finish the commit on its own) and no hook is left running;
// recovery marks the proposal needs_reconciliation; the locks git left are
// found and named, block restore (forced or not) and new executions with
// repo_locked instead of a bare git failure, and are removed on
// confirmation; then the restore brings back the state before and a fresh
// approval completes.
func TestCrash_SIGKILL_InPersonHook(t *testing.T) {
	becomeSubreaper(t)
	cases := map[string]opCase{}
	for _, c := range opCases() {
		cases[c.name] = c
	}
	for _, tc := range []struct {
		name, op, hook string
		onlyPrepared   bool
		// locks are the lock files the kill leaves, next-index-<pid>
		// written as next-index-N.
		locks []string
	}{
		// git commit --only (the submodule pointer's commit) locks the
		// index and writes a temporary one beside it.
		{"pre-commit", "submodule_record", "pre-commit", false, []string{"index.lock", "next-index-N.lock"}},
		{"commit-msg", "submodule_record", "commit-msg", false, []string{"index.lock", "next-index-N.lock"}},
		// The reference transaction holds HEAD's and the branch's locks
		// while the hook sees it prepared.
		{"reference-transaction", "commit_paths", "reference-transaction", true, []string{"HEAD.lock", "refs/heads/main.lock"}},
		// The approved commit is made from a temporary index outside the
		// repository: a kill in its pre-commit hook leaves no lock there,
		// and none is blamed.
		{"pre-commit-sealed", "commit_paths", "pre-commit", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crashInHook(t, cases[tc.op], tc.hook, tc.onlyPrepared, tc.locks)
		})
	}
}

func crashInHook(t *testing.T, c opCase, hook string, onlyPrepared bool, wantLocks []string) {
	f := newFixture(t)
	args := c.setup(f)
	before := repoState(t, f.repo.Dir)
	gate := newHookGate(t, f.repo.Dir, hook, onlyPrepared)
	rec := f.propose(args)
	id := rec.Proposal.ID
	db, audit := f.j.DB().Path(), f.rec.path
	f.j.Close()

	cmd, out, stderr := startHelper(t, f, db, audit, id, "none")
	helperDone := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "DONE") {
				helperDone <- line
				io.Copy(io.Discard, out)
				return
			}
		}
		helperDone <- "EOF " + stderr.String()
	}()
	hookPid, gitPid := gate.waitReady(t, helperDone)
	if name := procName(gitPid); name != "git" {
		t.Fatalf("the hook's parent is %q, not git", name)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	// The executor's git dies with it: it was killed, it did not finish.
	// (When the dying executor reaped it on its way out, its status is
	// gone with it; that it did not finish is then shown by what it left:
	// the locks below, and the restore point without an end.)
	if ws, here := reap(t, gitPid, "the executor's git"); here && (!ws.Signaled() || ws.Signal() != syscall.SIGKILL) {
		t.Errorf("the executor's git ended %v, want killed by SIGKILL", ws)
	}
	// The person's hook ends when the test lets it, and is gone: nothing
	// but this test may reap it (its parent git is gone).
	gate.release(t)
	if _, here := reap(t, hookPid, "the person's hook"); !here {
		t.Errorf("the person's hook (pid %d) was reaped by someone other than this test", hookPid)
	}

	// Restart: the app opens the journal again and recovers.
	nr := f.recoverInterrupted(t, db, audit, id)
	// What the killed execution left (the submodule's commit had staged
	// its path) is what refused actions must leave alone.
	crashed := repoState(t, f.repo.Dir)

	// The locks are found, named, and known to be the execution's own.
	locks, err := f.e.LeftLocks(testCtx(t), nr)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range locks {
		names = append(names, nextIndex.ReplaceAllString(l.Path, "next-index-N.lock"))
		if !l.Leftover || l.InUse || l.Repo != f.repo.Dir || l.What == "" || l.Shown != ".git/"+l.Path {
			t.Errorf("lock %+v: want a leftover of this execution, not in use, shown under .git", l)
		}
	}
	if !slices.Equal(names, wantLocks) {
		t.Fatalf("locks %q, want %q", names, wantLocks)
	}

	ended := false
	if len(wantLocks) > 0 {
		// While they are there, neither restore (forced or not) nor a new
		// execution runs, and each says why.
		for _, force := range []bool{false, true} {
			_, err := f.e.Restore(testCtx(t), f.repo.Dir, id, force)
			if !errors.Is(err, ErrRepoLocked) || !strings.Contains(err.Error(), locks[0].Shown) {
				t.Fatalf("restore (force %v) with locks: %v, want repo_locked naming %s", force, err, locks[0].Shown)
			}
			if ls, _ := dataOf(err).([]Lock); len(ls) != len(locks) {
				t.Errorf("repo_locked data %+v: want the %d locks", dataOf(err), len(locks))
			}
		}
		again := f.propose(args)
		failed, err := f.execute(again)
		if !errors.Is(err, ErrRepoLocked) || failed.State != proposal.Failed || failed.Outcome.Code != errcode.RepoLocked {
			t.Fatalf("a new approval with locks: state %s, err %v; want failed with repo_locked", failed.State, err)
		}
		if now := repoState(t, f.repo.Dir); now != crashed {
			t.Fatalf("a refused execution changed the repository:\n%s", diffState(crashed, now))
		}

		// Removal on the person's confirmation removes exactly those.
		res, err := f.e.RemoveLocks(testCtx(t), nr, locks)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Removed) != len(locks) || len(res.Kept) != 0 {
			t.Fatalf("removal %+v: want all %d removed", res, len(locks))
		}
		for _, l := range locks {
			if _, err := os.Lstat(filepath.Join(f.repo.Dir, l.Shown)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s is still there: %v", l.Shown, err)
			}
		}
		if left, err := f.e.LeftLocks(testCtx(t), nr); err != nil || len(left) != 0 {
			t.Fatalf("after removal: %+v, %v", left, err)
		}
	}

	// Restore now works: it asks for confirmation (the end of the operation
	// was never recorded), and confirmed it brings back the state before.
	list, err := f.e.ListRestorePoints(testCtx(t), f.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(list, func(rp RestorePoint) bool { return rp.ID == id }); i < 0 {
		t.Fatalf("no restore point %s: %+v", id, list)
	} else {
		ended = list[i].End != nil
	}
	if ended {
		t.Fatalf("restore point %s has an end, but the execution was killed", id)
	}
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, id, false); !errors.Is(err, ErrRestoreConflict) {
		t.Fatalf("restore without confirmation: %v, want restore_conflict", err)
	}
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, id, true); err != nil {
		t.Fatalf("confirmed restore: %v", err)
	}
	if now := repoState(t, f.repo.Dir); now != before {
		t.Errorf("the restore did not bring back the state before:\n%s", diffState(before, now))
	}

	// And a fresh approval runs, the person's hook included.
	done := f.mustComplete(f.propose(args))
	c.check(t, f, done)
}

// TestRemoveLocks_Refusals: a lock that changed since it was shown, or that
// a running git holds, or that appeared outside the execution's time, is
// kept and the answer says why; a request naming anything but a lock file
// in the repository's git directories removes nothing at all.
func TestRemoveLocks_Refusals(t *testing.T) {
	f := newFixture(t)
	rec := f.interrupted()
	gitDir := filepath.Join(f.repo.Dir, ".git")
	// Locks the interrupted execution left: stamped with the moment it
	// began, as a git it started would have made them.
	began := executionBegan(rec)
	for _, name := range []string{"index.lock", "HEAD.lock", "refs/heads/main.lock", "refs/sluice/restore/x.lock"} {
		p := filepath.Join(gitDir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("0000\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, began, began); err != nil {
			t.Fatal(err)
		}
	}
	// One from long before the execution: the person's own old crash.
	old := filepath.Join(gitDir, "packed-refs.lock")
	if err := os.WriteFile(old, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-24 * time.Hour)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	locks, byPath := f.leftLocks(t, rec)
	if len(locks) != 5 || byPath["packed-refs.lock"].Leftover || !byPath["index.lock"].Leftover || !byPath["refs/sluice/restore/x.lock"].Leftover {
		t.Fatalf("locks %+v", locks)
	}

	// Bad requests remove nothing.
	for _, bad := range []Lock{
		{Repo: f.repo.Dir, Path: "../../outside.lock"},
		{Repo: f.repo.Dir, Path: "/etc/passwd.lock"},
		{Repo: f.repo.Dir, Path: "index"},
		{Repo: f.repo.Dir, Path: "objects/info/alternates.lock"},
		{Repo: f.repo.Dir, Path: "refs/../index.lock"},
		{Repo: f.root, Path: "index.lock"},
	} {
		_, err := f.e.RemoveLocks(testCtx(t), rec, append([]Lock{byPath["HEAD.lock"]}, bad))
		if errcode.Of(err) != errcode.InvalidArgument {
			t.Errorf("removing %q in %s: %v, want invalid_argument", bad.Path, bad.Repo, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(gitDir, "HEAD.lock")); err != nil {
		t.Fatalf("a refused request removed HEAD.lock: %v", err)
	}

	// index.lock changes after it was shown: another git wrote it.
	if err := os.WriteFile(filepath.Join(gitDir, "index.lock"), []byte("a newer git's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := f.e.RemoveLocks(testCtx(t), rec, locks)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]string{}
	for _, k := range res.Kept {
		kept[k.Lock.Path] = k.Reason
	}
	var removed []string
	for _, l := range res.Removed {
		removed = append(removed, l.Path)
	}
	if !slices.Equal(removed, []string{"HEAD.lock", "refs/heads/main.lock", "refs/sluice/restore/x.lock"}) ||
		!strings.Contains(kept["index.lock"], "changed") || !strings.Contains(kept["packed-refs.lock"], "not Sluice's") {
		t.Fatalf("removed %q, kept %q", removed, kept)
	}
	for _, p := range []string{"index.lock", "packed-refs.lock"} {
		if _, err := os.Lstat(filepath.Join(gitDir, p)); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

// TestLocks_LiveGit_InUse: a lock held by a git that is running now (the
// person's own commit, waiting in its hook) is in use: it blocks
// executions with repo_locked saying git is working, and is not removed.
func TestLocks_LiveGit_InUse(t *testing.T) {
	f := newFixture(t)
	rec := f.interrupted()
	gate := newHookGate(t, f.repo.Dir, "pre-commit", false)
	f.repo.Write("src/a.txt", "the person's\n")
	f.git("add", "src/a.txt")
	// The person's own git, hooks and all (the test helpers turn hooks off).
	person := exec.Command("git", "commit", "-q", "--only", "-m", "mine", "--", "src/a.txt")
	person.Dir = f.repo.Dir
	person.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Pat", "GIT_AUTHOR_EMAIL=p@example.com", "GIT_COMMITTER_NAME=Pat", "GIT_COMMITTER_EMAIL=p@example.com")
	if err := person.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan string, 1)
	gate.waitReady(t, exited)
	t.Cleanup(func() {
		if !gate.released {
			gate.release(t)
			person.Wait()
		}
	})

	locks, err := f.e.LeftLocks(testCtx(t), rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(locks) == 0 {
		t.Fatal("the running commit's locks were not found")
	}
	for _, l := range locks {
		if !l.InUse || l.Leftover {
			t.Errorf("lock %+v: want in use, not a leftover", l)
		}
	}
	res, err := f.e.RemoveLocks(testCtx(t), rec, locks)
	if err != nil || len(res.Removed) != 0 || len(res.Kept) != len(locks) || !strings.Contains(res.Kept[0].Reason, "git process is working") {
		t.Fatalf("removal of locks in use: %+v, %v", res, err)
	}
	err = f.e.CheckUnlocked(testCtx(t), rec.Proposal)
	if !errors.Is(err, ErrRepoLocked) || !strings.Contains(err.Error(), "git process is working") || !strings.Contains(err.Error(), ".git/index.lock") {
		t.Fatalf("check with a running git: %v", err)
	}

	// The person's commit finishes, taking its locks with it.
	gate.release(t)
	if err := person.Wait(); err != nil {
		t.Fatalf("the person's commit: %v", err)
	}
	if err := f.e.CheckUnlocked(testCtx(t), rec.Proposal); err != nil {
		t.Fatalf("after the person's git finished: %v", err)
	}
	for _, l := range locks {
		if _, err := os.Lstat(filepath.Join(f.repo.Dir, l.Shown)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", l.Shown, err)
		}
	}
}

// interrupted makes a proposal whose execution was interrupted, as the
// journal records one: executing, then needs_reconciliation at recovery.
func (f *fixture) interrupted() journal.Record {
	f.t.Helper()
	rec := f.propose(&proposal.BranchArgs{Name: "topic", StartPoint: "main"})
	if _, err := f.j.MarkExecuting(rec.Proposal.ID, rec.Proposal.Digest); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.j.Recover(nil); err != nil {
		f.t.Fatal(err)
	}
	out, err := f.j.Get(rec.Proposal.ID)
	if err != nil || out.State != proposal.NeedsReconciliation {
		f.t.Fatalf("state %s, %v", out.State, err)
	}
	return out
}

// executionBegan is when rec's execution began: its last move to executing.
func executionBegan(rec journal.Record) time.Time {
	var began time.Time
	for _, s := range rec.History {
		if s.To == proposal.Executing {
			began = s.At.Time
		}
	}
	return began
}

// leftLocks is what LeftLocks finds for rec, as listed and by path.
func (f *fixture) leftLocks(t *testing.T, rec journal.Record) ([]Lock, map[string]Lock) {
	t.Helper()
	locks, err := f.e.LeftLocks(testCtx(t), rec)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]Lock{}
	for _, l := range locks {
		byPath[l.Path] = l
	}
	return locks, byPath
}

// TestLocks_SluiceReadBeside_StillALeftover: a read of Sluice's own (the
// sidecar's, a preview's) running in the repository takes no lock, so a
// leftover lock beside it is still the interrupted execution's and can be
// removed; only a git that may hold a lock makes it "in use".
func TestLocks_SluiceReadBeside_StillALeftover(t *testing.T) {
	f := newFixture(t)
	rec := f.interrupted()
	began := executionBegan(rec)
	lock := filepath.Join(f.repo.Dir, ".git", "index.lock")
	if err := os.WriteFile(lock, []byte("DIRC"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(lock, began, began); err != nil {
		t.Fatal(err)
	}

	// A read that stays running until the test ends.
	ownCatFile(t, f.repo.Dir, gitx.ProfileRead, readRunningIn)

	locks, err := f.e.LeftLocks(testCtx(t), rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(locks) != 1 || locks[0].InUse || !locks[0].Leftover {
		t.Fatalf("locks beside a read of Sluice's: %+v", locks)
	}
	res, err := f.e.RemoveLocks(testCtx(t), rec, locks)
	if err != nil || len(res.Removed) != 1 {
		t.Fatalf("removal beside a read of Sluice's: %+v, %v", res, err)
	}
	if _, err := os.Lstat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("index.lock is still there: %v", err)
	}
}

// readRunningIn reports whether a read-profile git runs with dir as its
// working directory.
func readRunningIn(dir string) bool { return procRunningIn(dir, "environ", gitx.ReadMarker) }

// catFileRunningIn reports whether a git cat-file runs with dir as its
// working directory.
func catFileRunningIn(dir string) bool { return procRunningIn(dir, "cmdline", "cat-file") }

// procRunningIn reports whether a process runs with dir as its working
// directory and has field among the NUL-separated fields of its
// /proc/<pid>/<file>.
func procRunningIn(dir, file, field string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p := "/proc/" + e.Name()
		b, err := os.ReadFile(p + "/" + file)
		if err != nil || !slices.Contains(strings.Split(string(b), "\x00"), field) {
			continue
		}
		if cwd, err := os.Readlink(p + "/cwd"); err == nil && cwd == dir {
			return true
		}
	}
	return false
}

// ownCatFile starts a cat-file of this process's own under profile in dir
// that runs until the test ends, and waits until running says it is.
func ownCatFile(t *testing.T, dir string, profile gitx.Profile, running func(dir string) bool) {
	t.Helper()
	runner, err := gitx.Default()
	if err != nil {
		t.Fatal(err)
	}
	in, feed := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := runner.Run(context.Background(), gitx.Call{Profile: profile, Dir: dir, Args: []string{"cat-file", "--batch"}, Stdin: in})
		done <- err
	}()
	t.Cleanup(func() { feed.Close(); <-done })
	deadline := time.Now().Add(time.Minute) // a hang guard
	for !running(dir) {
		if time.Now().After(deadline) {
			t.Fatal("the cat-file never started")
		}
		time.Sleep(10 * time.Millisecond) // the poll's pace, not an expectation
	}
}

// TestLocks_OwnGitStartedAfter_StillALeftover: a git this Sluice started
// after a lock was written (at start-up the app looks at the sealed
// objects of every repository under the write profile) cannot hold that
// lock, so a lock the interrupted execution left is still its leftover
// beside it and can be removed. A lock written after that git started may
// be its own: it is in use, and kept.
func TestLocks_OwnGitStartedAfter_StillALeftover(t *testing.T) {
	f := newFixture(t)
	rec := f.interrupted()
	began := executionBegan(rec)
	// Within the execution's window (which allows for the file system's
	// coarser clock) and more than ownSlack before anything below starts.
	old := began.Add(-lockSlack + 100*time.Millisecond)
	left := filepath.Join(f.repo.Dir, ".git", "index.lock")
	if err := os.WriteFile(left, []byte("DIRC"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(left, old, old); err != nil {
		t.Fatal(err)
	}
	ownCatFile(t, f.repo.Dir, gitx.ProfileWrite, catFileRunningIn)

	// A lock that appears after the git started: the git may hold it.
	fresh := filepath.Join(f.repo.Dir, ".git", "HEAD.lock")
	if err := os.WriteFile(fresh, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	locks, byPath := f.leftLocks(t, rec)
	if l := byPath["index.lock"]; l.InUse || !l.Leftover {
		t.Errorf("the lock from before the own git: %+v, want a leftover not in use", l)
	}
	if l := byPath["HEAD.lock"]; !l.InUse || l.Leftover {
		t.Errorf("the lock from after the own git started: %+v, want in use, not a leftover", l)
	}
	res, err := f.e.RemoveLocks(testCtx(t), rec, locks)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Removed) != 1 || res.Removed[0].Path != "index.lock" || len(res.Kept) != 1 || res.Kept[0].Lock.Path != "HEAD.lock" {
		t.Fatalf("removal beside an own git: %+v", res)
	}
	if _, err := os.Lstat(fresh); err != nil {
		t.Fatalf("the lock the own git may hold was removed: %v", err)
	}
}

// TestLocks_GitPointedInByEnvironment_InUse: a git started elsewhere and
// pointed at the repository by GIT_DIR (an editor's, a script's) works
// in it: a lock beside it may be its, so it is in use and is kept.
func TestLocks_GitPointedInByEnvironment_InUse(t *testing.T) {
	f := newFixture(t)
	rec := f.interrupted()
	lock := filepath.Join(f.repo.Dir, ".git", "index.lock")
	if err := os.WriteFile(lock, []byte("DIRC"), 0o644); err != nil {
		t.Fatal(err)
	}
	began := executionBegan(rec)
	if err := os.Chtimes(lock, began, began); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	gitDir := filepath.Join(f.repo.Dir, ".git")
	other := exec.Command("git", "cat-file", "--batch")
	other.Dir = elsewhere
	other.Env = append(os.Environ(), "GIT_DIR="+gitDir)
	feed, err := other.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { feed.Close(); other.Wait() })
	deadline := time.Now().Add(time.Minute) // a hang guard
	for !procRunningIn(elsewhere, "environ", "GIT_DIR="+gitDir) {
		if time.Now().After(deadline) {
			t.Fatal("the git never started")
		}
		time.Sleep(10 * time.Millisecond) // the poll's pace, not an expectation
	}

	locks, byPath := f.leftLocks(t, rec)
	if l := byPath["index.lock"]; !l.InUse || l.Leftover {
		t.Fatalf("a lock beside a git pointed in by GIT_DIR: %+v, want in use, not a leftover", l)
	}
	res, err := f.e.RemoveLocks(testCtx(t), rec, locks)
	if err != nil || len(res.Removed) != 0 {
		t.Fatalf("removal beside a git pointed in by GIT_DIR: %+v, %v", res, err)
	}
	if _, err := os.Lstat(lock); err != nil {
		t.Fatalf("the lock was removed: %v", err)
	}
}
