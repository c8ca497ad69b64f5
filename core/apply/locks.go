package apply

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// ErrRepoLocked matches any repo_locked error.
var ErrRepoLocked = &errcode.Error{Code: errcode.RepoLocked}

// Lock is one of git's lock files in a repository's git directories.
// Git creates NAME.lock beside the file it is about to replace (the index,
// HEAD, a ref, packed-refs, config) with O_EXCL, and renames or removes it
// when done; a git that is killed leaves it, and every later git that
// needs the same file refuses to run.
type Lock struct {
	// Repo is the working tree whose git directories hold the lock.
	Repo string `json:"repo"`
	// Path is the lock's path relative to the repository's common git
	// directory, with slashes: "index.lock", "refs/heads/main.lock",
	// "worktrees/feature/index.lock".
	Path string `json:"path"`
	// Shown is the path as a person finds it: relative to Repo when it is
	// under it (".git/index.lock"), else absolute.
	Shown   string    `json:"shown"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"modTime"`
	// What says in one sentence what the lock guards.
	What string `json:"what"`
	// InUse: a running git process works in this repository (or Sluice
	// cannot tell on this system), so the lock may be its own.
	InUse bool `json:"inUse"`
	// Leftover: the lock appeared while the interrupted execution ran and
	// no git process works in the repository any more: Sluice's own git
	// left it when it was killed. Only such locks can be removed through
	// Sluice.
	Leftover bool `json:"leftover"`
}

// maxLocks bounds what one scan reports; a repository with more lock
// files than this has something else wrong with it.
const maxLocks = 200

// scanLocks lists the lock files in the git directories of repo: the top
// level of the common directory and of every worktree's git directory, and
// everything under refs/ (Sluice's own refs/sluice/ included).
func scanLocks(repo *gitx.Repo) ([]Lock, error) {
	common := repo.CommonDir
	var rels []string
	add := func(rel string) {
		if len(rels) < maxLocks {
			rels = append(rels, rel)
		}
	}
	top := func(dir, prefix string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		for _, e := range ents {
			if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".lock") {
				add(prefix + e.Name())
			}
		}
		return nil
	}
	if err := top(common, ""); err != nil {
		return nil, fmt.Errorf("apply: read the git directory: %w", err)
	}
	wts, err := os.ReadDir(filepath.Join(common, "worktrees"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("apply: read the worktrees' git directories: %w", err)
	}
	for _, w := range wts {
		if w.IsDir() {
			if err := top(filepath.Join(common, "worktrees", w.Name()), "worktrees/"+w.Name()+"/"); err != nil {
				return nil, fmt.Errorf("apply: read a worktree's git directory: %w", err)
			}
		}
	}
	refs := filepath.Join(common, "refs")
	err = filepath.WalkDir(refs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		// The refs that keep sealed outcomes are Sluice's own, written
		// when a card is sealed or re-sealed and never by an execution:
		// their short-lived locks (another card being re-sealed) keep no
		// proposal from landing.
		if d.IsDir() && filepath.ToSlash(p) == filepath.ToSlash(filepath.Join(common, strings.TrimSuffix(proposal.SealedRefPrefix, "/"))) {
			return fs.SkipDir
		}
		if d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".lock") {
			rel, rerr := filepath.Rel(common, p)
			if rerr != nil {
				return rerr
			}
			add(filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("apply: read the refs: %w", err)
	}
	// A linked worktree's own git directory is worktrees/<name> above, and
	// a submodule's is its common directory: these are all there are.
	sort.Strings(rels)
	out := make([]Lock, 0, len(rels))
	for _, rel := range rels {
		abs := lockAbs(repo, rel)
		st, err := os.Lstat(abs)
		if err != nil || !st.Mode().IsRegular() {
			continue // gone meanwhile: git finished
		}
		l := Lock{Repo: repo.Root, Path: rel, Shown: abs, Size: st.Size(), ModTime: st.ModTime(), What: lockWhat(rel)}
		if r, err := filepath.Rel(repo.Root, abs); err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			l.Shown = filepath.ToSlash(r)
		}
		out = append(out, l)
	}
	return out, nil
}

// lockAbs is where the lock named rel (as scanLocks names it) is.
func lockAbs(repo *gitx.Repo, rel string) string {
	return filepath.Join(repo.CommonDir, filepath.FromSlash(rel))
}

// lockWhat says what a lock guards.
func lockWhat(rel string) string {
	name := path.Base(rel)
	switch {
	case strings.HasPrefix(rel, "refs/"):
		return fmt.Sprintf("git locks the ref %s while it moves it; while the lock is there, nothing can move that ref", strings.TrimSuffix(rel, ".lock"))
	case name == "index.lock":
		return "git locks the index (the staging area) while it writes it; while the lock is there, no commit, checkout, reset or status refresh can run"
	case name == "HEAD.lock":
		return "git locks HEAD while it moves it; while the lock is there, no commit, checkout or reset can run"
	case name == "ORIG_HEAD.lock":
		return "git locks ORIG_HEAD while a merge, rebase or reset records where it started"
	case name == "packed-refs.lock":
		return "git locks packed-refs while it rewrites it; while the lock is there, no branch or tag can be deleted"
	case name == "config.lock":
		return "git locks the repository's configuration while it writes it"
	case name == "shallow.lock":
		return "git locks the shallow list while a fetch changes it"
	case strings.HasPrefix(name, "next-index-"):
		return "git's temporary index for a commit of named paths; it is removed with the commit"
	}
	return "a lock file git creates while it replaces " + strings.TrimSuffix(name, ".lock")
}

// locks lists the locks of the repository with InUse set: a live git
// works in the repository that may hold it.
func (rc *repoCtx) locks() ([]Lock, error) {
	ls, err := scanLocks(rc.repo)
	if err != nil || len(ls) == 0 {
		return ls, err
	}
	rc.e.step("locks-scanned")
	procs, known := gitsIn(rc.dirs())
	// Each lock is looked at again once the processes are read. One that
	// is gone was held by a git that ended meanwhile, and is not listed;
	// one that is another file now was taken by a git since. Only a lock
	// that is the same file before and after was there all through the
	// read, and so was any git that holds it: without that second look,
	// a git ending between the two was taken for one that was stopped.
	out := ls[:0]
	for _, l := range ls {
		st, err := os.Lstat(lockAbs(rc.repo, l.Path))
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		changed := st.Size() != l.Size || !st.ModTime().Equal(l.ModTime)
		l.Size, l.ModTime = st.Size(), st.ModTime()
		l.InUse = changed || !known || slices.ContainsFunc(procs, func(p gitProc) bool { return p.mayHold(l) })
		out = append(out, l)
	}
	return out, nil
}

// gitProc is a running git process, and whether this Sluice started it
// and when.
type gitProc struct {
	own       bool
	startedAt time.Time
}

// ownSlack is how much older than a git this Sluice started a lock must be
// for that git not to hold it: file systems stamp files with a coarser
// clock (a few milliseconds behind) than the one gitx reads before a start.
const ownSlack = time.Second

// mayHold reports whether p may hold l. Any git may, except one this
// Sluice started after l was last written: git creates its lock files and
// never takes over one that is there. So the start-up's own look at the
// sealed objects, or a preview being computed, beside a lock an
// interrupted execution left does not make that lock look held.
func (p gitProc) mayHold(l Lock) bool {
	return !p.own || !p.startedAt.After(l.ModTime.Add(ownSlack))
}

// dirs are the directories a git working on this repository runs in or
// names: the working tree, the git directory and the common directory.
func (rc *repoCtx) dirs() []string {
	return []string{rc.path, rc.repo.GitDir, rc.repo.CommonDir}
}

// lockWait is how long a lock held by a running git (an editor's
// background status, the person's own command) is waited for before the
// answer is repo_locked: such locks last milliseconds.
const lockWait = 2 * time.Second

// requireUnlocked fails with repo_locked, naming every lock, while the git
// directories of rcs hold one: git would refuse to run, and a bare
// git_failed halfway through tells the person nothing. Locks a running git
// holds are waited for, briefly; leftovers are not.
func requireUnlocked(ctx context.Context, rcs ...*repoCtx) error {
	deadline := time.Now().Add(lockWait)
	for {
		var all []Lock
		busy := false
		for _, rc := range rcs {
			ls, err := rc.locks()
			if err != nil {
				return err
			}
			for _, l := range ls {
				busy = busy || l.InUse
			}
			all = append(all, ls...)
		}
		if len(all) == 0 {
			return nil
		}
		if !busy || !time.Now().Before(deadline) {
			return lockedError(all)
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return lockedError(all)
		case <-t.C:
		}
	}
}

func lockedError(ls []Lock) *errcode.Error {
	names := make([]string, 0, len(ls))
	busy := false
	for _, l := range ls {
		names = append(names, l.Shown)
		busy = busy || l.InUse
	}
	why := "no git process is running there, so a git that was stopped left them: if that execution is on a card needing reconciliation, remove them there; otherwise remove them once you are sure no git runs"
	if busy {
		why = "a git process is working in the repository now: wait for it to finish and try again"
	}
	return &errcode.Error{Code: errcode.RepoLocked, Data: ls,
		Msg: fmt.Sprintf("git's lock files are in the repository (%s), so nothing was run: %s", strings.Join(limitList(names, 10), ", "), why)}
}

// CheckUnlocked fails with repo_locked when any repository p touches holds
// a lock file of git's (after a brief wait for one a running git holds).
// It changes nothing.
//
// It looks while holding the repositories' locks, as an execution does:
// the git this Sluice runs in the person's repository and that creates a
// lock file the scan reads (an execution, a restore, the start-up's drop
// of old sealed refs, whose delete locks packed-refs) holds them too, so
// the check runs between two such gits and never sees their locks. Seen,
// such a lock was refused as the person's: held for the whole wait while
// one drop followed another, or taken for a leftover when its git ended
// between the scan and the look at the running processes. The writes of
// sealed refs need no lock here: a ref's own lock under
// refs/sluice/sealed/ is not read (scanLocks), and creating or moving a
// ref locks nothing else. A check made while another card runs in the
// repository waits for it, rather than refusing for its locks.
func (e *Executor) CheckUnlocked(ctx context.Context, p proposal.Proposal) error {
	unlock, err := e.lock(ctx, reposOf(p))
	if err != nil {
		return err
	}
	defer unlock()
	r := &run{e: e, p: p}
	if err := r.open(ctx); err != nil {
		return err
	}
	return requireUnlocked(ctx, r.repos()...)
}

// InRepo runs f while it holds the repository's lock, as an execution
// does: Sluice's own writes in the person's repository outside an
// execution (a workspace's commits handed off under refs/sluice/proposals/,
// and the handoff taken back) lock refs, or packed-refs, that the lock
// check reads, and must not be seen there as the person's.
func (e *Executor) InRepo(ctx context.Context, repo string, f func() error) error {
	unlock, err := e.lock(ctx, []string{repo})
	if err != nil {
		return err
	}
	defer unlock()
	return f()
}

// lockSlack absorbs the difference between the clock the journal reads and
// the coarser one file systems stamp files with.
const lockSlack = 2 * time.Second

// executionWindow is when the interrupted execution of rec ran: from its
// move to executing until recovery found it.
func executionWindow(rec journal.Record) (time.Time, time.Time, error) {
	if rec.State != proposal.NeedsReconciliation {
		return time.Time{}, time.Time{}, errcode.New(errcode.InvalidArgument, "proposal %s is %s; only an interrupted execution can have left git's locks", rec.Proposal.ID, rec.State)
	}
	var from, until time.Time
	for _, s := range rec.History {
		switch s.To {
		case proposal.Executing:
			from = s.At.Time
		case proposal.NeedsReconciliation:
			until = s.At.Time
		}
	}
	if from.IsZero() || until.IsZero() {
		return time.Time{}, time.Time{}, errcode.New(errcode.InvalidArgument, "the record of proposal %s does not say when its execution ran", rec.Proposal.ID)
	}
	return from.Add(-lockSlack), until.Add(lockSlack), nil
}

// LeftLocks lists the lock files in the repositories of rec, a proposal
// whose execution was interrupted, and marks Leftover those that its own
// git left: they appeared while it ran, and no git process works in the
// repository now.
func (e *Executor) LeftLocks(ctx context.Context, rec journal.Record) ([]Lock, error) {
	from, until, err := executionWindow(rec)
	if err != nil {
		return nil, err
	}
	r := &run{e: e, p: rec.Proposal}
	if err := r.open(ctx); err != nil {
		return nil, err
	}
	return r.leftLocks(from, until)
}

func (r *run) leftLocks(from, until time.Time) ([]Lock, error) {
	var all []Lock
	for _, rc := range r.repos() {
		ls, err := rc.locks()
		if err != nil {
			return nil, err
		}
		for i := range ls {
			l := &ls[i]
			l.Leftover = !l.InUse && !l.ModTime.Before(from) && !l.ModTime.After(until)
		}
		all = append(all, ls...)
	}
	return all, nil
}

// LockRemoval is what RemoveLocks did.
type LockRemoval struct {
	Removed []Lock        `json:"removed"`
	Kept    []LockRefusal `json:"kept"`
}

// LockRefusal is a lock that was named but not removed, and why.
type LockRefusal struct {
	Lock   Lock   `json:"lock"`
	Reason string `json:"reason"`
}

// RemoveLocks removes exactly the named locks that rec's interrupted
// execution left, each only if it is still the file that was shown: same
// path, size and modification time (a lock that changed belongs to a git
// that ran since, and is kept, with the reason). A request naming a path
// that is not a lock in the repository's git directories is refused as a
// whole and removes nothing. Removing is a human action: the caller
// audits it.
func (e *Executor) RemoveLocks(ctx context.Context, rec journal.Record, want []Lock) (*LockRemoval, error) {
	from, until, err := executionWindow(rec)
	if err != nil {
		return nil, err
	}
	if len(want) == 0 || len(want) > maxLocks {
		return nil, errcode.New(errcode.InvalidArgument, "name between 1 and %d lock files to remove", maxLocks)
	}
	r := &run{e: e, p: rec.Proposal}
	if err := r.open(ctx); err != nil {
		return nil, err
	}
	repos := map[string]*repoCtx{}
	for _, rc := range r.repos() {
		repos[rc.path] = rc
	}
	for _, w := range want {
		if repos[w.Repo] == nil {
			return nil, errcode.New(errcode.InvalidArgument, "a lock names a repository this proposal does not touch")
		}
		if err := checkLockPath(w.Path); err != nil {
			return nil, err
		}
	}
	paths := make([]string, 0, len(repos))
	for p := range repos {
		paths = append(paths, p)
	}
	// No execution or restore of these repositories runs meanwhile.
	unlock, err := e.lock(ctx, paths)
	if err != nil {
		return nil, err
	}
	defer unlock()
	now, err := r.leftLocks(from, until)
	if err != nil {
		return nil, err
	}
	out := &LockRemoval{Removed: []Lock{}, Kept: []LockRefusal{}}
	for _, w := range want {
		i := -1
		for j, l := range now {
			if l.Repo == w.Repo && l.Path == w.Path {
				i = j
				break
			}
		}
		switch {
		case i < 0:
			out.Kept = append(out.Kept, LockRefusal{Lock: w, Reason: "it is not there any more"})
			continue
		case now[i].InUse:
			out.Kept = append(out.Kept, LockRefusal{Lock: now[i], Reason: "a git process is working in the repository now; it may be its lock"})
			continue
		case now[i].Size != w.Size || !now[i].ModTime.Equal(w.ModTime):
			out.Kept = append(out.Kept, LockRefusal{Lock: now[i], Reason: "it changed since it was shown: another git wrote it"})
			continue
		case !now[i].Leftover:
			out.Kept = append(out.Kept, LockRefusal{Lock: now[i], Reason: "it did not appear while this execution ran, so it is not Sluice's to remove"})
			continue
		}
		l := now[i]
		abs := lockAbs(repos[l.Repo].repo, l.Path)
		// The last look before the removal: the same file, or nothing.
		st, err := os.Lstat(abs)
		if err != nil || !st.Mode().IsRegular() || st.Size() != l.Size || !st.ModTime().Equal(l.ModTime) {
			out.Kept = append(out.Kept, LockRefusal{Lock: l, Reason: "it changed since it was shown: another git wrote it"})
			continue
		}
		if err := os.Remove(abs); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				out.Kept = append(out.Kept, LockRefusal{Lock: l, Reason: "it is not there any more"})
				continue
			}
			return out, fmt.Errorf("apply: remove %s: %w", l.Shown, err)
		}
		out.Removed = append(out.Removed, l)
	}
	for _, rc := range r.repos() {
		syncDir(rc.repo.CommonDir)
	}
	return out, nil
}

// checkLockPath refuses anything but a lock file's path inside a git
// directory, as scanLocks names them.
func checkLockPath(p string) error {
	switch {
	case p == "" || strings.ContainsRune(p, 0) || strings.Contains(p, `\`):
		return errcode.New(errcode.InvalidArgument, "a lock path is empty or malformed")
	case path.IsAbs(p) || filepath.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../"):
		return errcode.New(errcode.InvalidArgument, "a lock path must be relative to the repository's git directory, without ..")
	case !strings.HasSuffix(path.Base(p), ".lock") || path.Base(p) == ".lock":
		return errcode.New(errcode.InvalidArgument, "only git's lock files (*.lock) can be removed")
	}
	dir := path.Dir(p)
	parts := strings.Split(dir, "/")
	switch {
	case dir == ".":
	case parts[0] == "refs":
	case parts[0] == "worktrees" && len(parts) == 2:
	default:
		return errcode.New(errcode.InvalidArgument, "%s is not where git keeps its locks", p)
	}
	return nil
}

// syncDir makes a removal durable; a failure only means it may come back
// after a power cut, where it is found again.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
