//go:build linux

package apply

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/proposal"
)

// heldDrop is Sluice's own drop of a sealed ref (what the start-up does
// for a proposal whose record is gone), stopped while git holds its
// locks: packed-refs is a fifo, which git opens to read once it holds
// packed-refs.lock, and it waits there until the test opens the other end.
type heldDrop struct {
	fifo     string
	done     chan error
	released bool
}

func holdDrop(t *testing.T, f *fixture, id string) *heldDrop {
	t.Helper()
	f.git("update-ref", proposal.SealedRef(id), "HEAD")
	d := &heldDrop{fifo: filepath.Join(f.repo.Dir, ".git", "packed-refs"), done: make(chan error, 1)}
	if err := syscall.Mkfifo(d.fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A test that stops early still lets the git end.
	t.Cleanup(func() {
		if !d.released {
			if w, err := os.OpenFile(d.fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				os.Remove(d.fifo)
				w.Close()
			}
			<-d.done
		}
	})
	go func() { d.done <- f.e.Unseal(context.Background(), f.repo.Dir, id) }()
	lock := d.fifo + ".lock"
	for {
		if _, err := os.Lstat(lock); err == nil {
			return d
		}
		select {
		case err := <-d.done:
			d.released = true
			t.Fatalf("the drop ended before it held packed-refs.lock: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// release lets the git go on: it reads an empty packed-refs, and finds
// none once it looks again.
func (d *heldDrop) release(t *testing.T) {
	t.Helper()
	w, err := os.OpenFile(d.fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(d.fifo); err != nil {
		t.Fatal(err)
	}
	w.Close()
	d.released = true
	if err := <-d.done; err != nil {
		t.Fatalf("the drop: %v", err)
	}
}

// besideDrop runs look (the approval's lock check, a preflight) while
// drop holds its locks, and lets the drop go on once look reaches step:
// for the check, its wait for the repository's lock, which the drop
// holds; for a preflight, the end of its look at the locks. look must not
// have ended before that: it would have looked while Sluice's own git
// held packed-refs.lock, and could not but answer.
func besideDrop(t *testing.T, f *fixture, drop *heldDrop, step string, look func() error) error {
	t.Helper()
	reached := make(chan struct{}, 1)
	f.e.beforeStep = func(s string) {
		if s == step {
			select {
			case reached <- struct{}{}:
			default:
			}
		}
	}
	defer func() { f.e.beforeStep = nil }()
	done := make(chan error, 1)
	go func() { done <- look() }()
	select {
	case <-reached:
	case err := <-done:
		drop.release(t)
		t.Fatalf("answered while Sluice's own drop of a sealed ref held packed-refs.lock, before %s: %v", step, err)
	}
	drop.release(t)
	return <-done
}

func (f *fixture) checkBesideDrop(t *testing.T, p proposal.Proposal, drop *heldDrop) error {
	t.Helper()
	return besideDrop(t, f, drop, "lock-wait", func() error { return f.e.CheckUnlocked(testCtx(t), p) })
}

func (f *fixture) preflightBesideDrop(t *testing.T, p proposal.Proposal, drop *heldDrop) *Preflight {
	t.Helper()
	var pf *Preflight
	err := besideDrop(t, f, drop, "locks-read", func() (err error) {
		pf, err = f.e.Preflight(testCtx(t), p)
		return err
	})
	if err != nil {
		t.Fatalf("preflight: %v", err)
	}
	return pf
}

// TestLocks_SluiceDropBeside_NotThePersons: the start-up drops the
// sealed refs of proposals that ended long ago with git update-ref -d,
// which locks packed-refs, a lock the check reads. A check made while
// such a drop holds it is not refused for it; one made while the
// person's git holds the index is, naming that lock alone.
func TestLocks_SluiceDropBeside_NotThePersons(t *testing.T) {
	f := newFixture(t)
	rec := f.propose(&proposal.BranchArgs{Name: "topic", StartPoint: "main"})

	// The card's preflight and the approval's check, each while a drop
	// holds its locks.
	if pf := f.preflightBesideDrop(t, rec.Proposal, holdDrop(t, f, "p-gone-1")); len(pf.Blockers) > 0 {
		t.Fatalf("the preflight beside Sluice's own drop of a sealed ref: blockers %q", pf.Blockers)
	}
	if err := f.checkBesideDrop(t, rec.Proposal, holdDrop(t, f, "p-gone-2")); err != nil {
		t.Fatalf("the check beside Sluice's own drop: %v", err)
	}
	for _, id := range []string{"p-gone-1", "p-gone-2"} {
		if out := f.git("for-each-ref", proposal.SealedRef(id)); out != "" {
			t.Fatalf("the sealed ref was not dropped: %s", out)
		}
	}

	// The person's commit holds the index, stopped in its pre-commit hook.
	gate, person := f.personCommitHeld(t)

	err := f.checkBesideDrop(t, rec.Proposal, holdDrop(t, f, "p-gone-3"))
	if !errors.Is(err, ErrRepoLocked) {
		t.Fatalf("the check while the person's git holds the index: %v; want repo_locked", err)
	}
	// The person's commit of named paths holds the index and a temporary
	// index of its own; Sluice's drop held packed-refs.lock.
	locks, _ := dataOf(err).([]Lock)
	var names []string
	for _, l := range locks {
		names = append(names, l.Path)
		if !l.InUse {
			t.Errorf("%s: want in use", l.Path)
		}
	}
	if !slices.Contains(names, "index.lock") || slices.Contains(names, "packed-refs.lock") {
		t.Fatalf("the check named %q: want the person's index.lock, not Sluice's packed-refs.lock", names)
	}

	if pf := f.preflight(rec); blockerWith(pf, ".git/index.lock", "a git process is working") == "" {
		t.Fatalf("the preflight while the person's git holds the index: blockers %q", pf.Blockers)
	}

	gate.release(t)
	if err := person.Wait(); err != nil {
		t.Fatalf("the person's commit: %v", err)
	}
	if err := f.e.CheckUnlocked(testCtx(t), rec.Proposal); err != nil {
		t.Fatalf("after the person's git finished: %v", err)
	}
}

// TestLocks_GitEndsBetweenLooks_NotALeftover: the person's git that ends
// after the check found its lock and before it read the running processes
// left nothing: the check is not refused as if a stopped git had left
// the lock.
func TestLocks_GitEndsBetweenLooks_NotALeftover(t *testing.T) {
	f := newFixture(t)
	rec := f.propose(&proposal.BranchArgs{Name: "topic", StartPoint: "main"})
	gate, person := f.personCommitHeld(t)

	// The check stops once it has found the locks, the first time.
	scanned, resume := make(chan struct{}), make(chan struct{})
	first := true
	f.e.beforeStep = func(step string) {
		if step == "locks-scanned" && first {
			first = false
			close(scanned)
			<-resume
		}
	}
	done := make(chan error, 1)
	go func() { done <- f.e.CheckUnlocked(testCtx(t), rec.Proposal) }()
	select {
	case <-scanned:
	case err := <-done:
		t.Fatalf("the check ended without finding the person's lock: %v", err)
	}
	// Meanwhile the person's commit finishes and its git ends.
	gate.release(t)
	if err := person.Wait(); err != nil {
		t.Fatalf("the person's commit: %v", err)
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatalf("the check after the person's git ended between its looks: %v", err)
	}
}

// personCommitHeld starts the person's own `git commit --only` of a
// changed file and holds it in its pre-commit hook, with the index locked
// (and a temporary index of its own); the hook is released at cleanup if
// the test did not.
func (f *fixture) personCommitHeld(t *testing.T) (*hookGate, *exec.Cmd) {
	t.Helper()
	gate := newHookGate(t, f.repo.Dir, "pre-commit", false)
	f.repo.Write("src/a.txt", "the person's\n")
	f.git("add", "src/a.txt")
	person := exec.Command("git", "commit", "-q", "--only", "-m", "mine", "--", "src/a.txt")
	person.Dir = f.repo.Dir
	person.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Pat", "GIT_AUTHOR_EMAIL=p@example.com", "GIT_COMMITTER_NAME=Pat", "GIT_COMMITTER_EMAIL=p@example.com")
	if err := person.Start(); err != nil {
		t.Fatal(err)
	}
	gate.waitReady(t, make(chan string))
	t.Cleanup(func() {
		if !gate.released {
			gate.release(t)
			person.Wait()
		}
	})
	return gate, person
}

// TestLocks_InRepo_CheckWaits: Sluice's own writes in the person's
// repository outside an execution (a workspace's commits handed off
// under refs/sluice/proposals/, and taken back) run under the
// repository's lock (InRepo). An approval's check made while one holds a
// ref lock waits for it, and is not refused for Sluice's own lock.
func TestLocks_InRepo_CheckWaits(t *testing.T) {
	f := newFixture(t)
	rec := f.propose(&proposal.BranchArgs{Name: "topic", StartPoint: "main"})
	dir := filepath.Join(f.repo.Dir, ".git", "refs", "sluice", "proposals")
	lock := filepath.Join(dir, "ws-handoff-1.lock")
	held, hold := make(chan struct{}), make(chan struct{})
	work := make(chan error, 1)
	go func() {
		work <- f.e.InRepo(context.Background(), f.repo.Dir, func() error {
			// What git update-ref leaves while it writes the ref.
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(lock, []byte("0123\n"), 0o644); err != nil {
				return err
			}
			close(held)
			<-hold
			return os.Remove(lock)
		})
	}()
	select {
	case <-held:
	case err := <-work:
		t.Fatalf("the work ended before it held its lock: %v", err)
	}
	reached := make(chan struct{}, 1)
	f.e.beforeStep = func(s string) {
		if s == "lock-wait" {
			select {
			case reached <- struct{}{}:
			default:
			}
		}
	}
	defer func() { f.e.beforeStep = nil }()
	check := make(chan error, 1)
	go func() { check <- f.e.CheckUnlocked(testCtx(t), rec.Proposal) }()
	select {
	case <-reached:
	case err := <-check:
		close(hold)
		<-work
		t.Fatalf("the check answered while Sluice's own work held a ref lock: %v", err)
	}
	close(hold)
	if err := <-work; err != nil {
		t.Fatal(err)
	}
	if err := <-check; err != nil {
		t.Fatalf("the check after Sluice's own work: %v", err)
	}
}
