package apply

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// fastForward makes branch fix one commit ahead of main, changing
// src/a.txt, with main checked out: merging fix into main is a
// fast-forward that moves the checkout.
func (f *fixture) fastForward() *proposal.MergeArgs {
	f.t.Helper()
	f.git("switch", "-q", "-c", "fix")
	f.repo.WriteCommit("src/a.txt", "a1\nfixed\na3\n", "fix a")
	f.git("switch", "-q", "main")
	return &proposal.MergeArgs{Source: "fix", Target: "main", Strategy: proposal.MergeCommit}
}

// preflight runs the card's check and fails the test on an error.
func (f *fixture) preflight(rec journal.Record) *Preflight {
	f.t.Helper()
	pf, err := f.e.Preflight(testCtx(f.t), rec.Proposal)
	if err != nil {
		f.t.Fatalf("preflight: %v", err)
	}
	return pf
}

// blockerWith returns the blocker that says every one of words, or "".
func blockerWith(pf *Preflight, words ...string) string {
	for _, b := range pf.Blockers {
		all := true
		for _, w := range words {
			all = all && strings.Contains(b, w)
		}
		if all {
			return b
		}
	}
	return ""
}

// A fast-forward merge into the checked-out branch whose checkout has an
// uncommitted change: the card says so, naming the file, before anyone
// decides, and the executor refuses it for the same reason.
func TestPreflight_DirtyTargetFastForward_Blocked(t *testing.T) {
	f := newFixture(t)
	rec := f.propose(f.fastForward())
	if !rec.Proposal.Sealed.FastForward {
		t.Fatal("the fixture is not a fast-forward")
	}
	if pf := f.preflight(rec); len(pf.Blockers) > 0 || pf.Blocked() {
		t.Fatalf("a clean checkout is blocked: %q", pf.Blockers)
	}
	f.repo.Write("src/a.txt", "a1\nmy edit\na3\n")
	pf := f.preflight(rec)
	if pf.Stale {
		t.Fatalf("an uncommitted change made the card stale: %s", pf.Describe())
	}
	if blockerWith(pf, "main", f.repo.Dir, "uncommitted changes", "src/a.txt") == "" || !pf.Blocked() {
		t.Fatalf("blockers %q: want one naming the target, its checkout and src/a.txt", pf.Blockers)
	}
	f.mustRefuseUnchanged(rec, ErrDirtyWorktree, "src/a.txt")
}

// A commit in the person's name without an identity for them: blocked,
// saying how to set it.
func TestPreflight_MissingIdentity_Blocked(t *testing.T) {
	f := newFixture(t)
	f.repo.Write("src/a.txt", "changed\n")
	rec := f.propose(&proposal.CommitArgs{Message: "Change a", Paths: []string{"src/a.txt"}})
	if pf := f.preflight(rec); len(pf.Blockers) > 0 {
		t.Fatalf("with an identity: blockers %q", pf.Blockers)
	}
	// The repository's own empty user.name wins over the person's global
	// one: git refuses to commit with it.
	f.git("config", "user.name", "")
	pf := f.preflight(rec)
	if blockerWith(pf, "commit", "identity", "user.name") == "" {
		t.Fatalf("blockers %q: want one saying the commit has no identity", pf.Blockers)
	}
	out, err := f.execute(rec)
	if err == nil || out.State != proposal.Failed {
		t.Fatalf("execute without an identity: %s, %v; want it to fail as the card said", out.State, err)
	}
}

// A lock of git's in the repository: blocked, naming the lock.
func TestPreflight_IndexLock_Blocked(t *testing.T) {
	f := newFixture(t)
	rec := f.propose(f.fastForward())
	lock := filepath.Join(f.repo.Dir, ".git", "index.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pf := f.preflight(rec)
	if blockerWith(pf, ".git/index.lock", "no git process is running") == "" {
		t.Fatalf("blockers %q: want one naming .git/index.lock", pf.Blockers)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if pf := f.preflight(rec); len(pf.Blockers) > 0 {
		t.Fatalf("the lock is gone, blockers %q remain", pf.Blockers)
	}
}

// TestPreflight_SealedRefLock_NotABlocker: another card being re-sealed
// holds a lock on its own refs/sluice/sealed ref for a moment; it keeps no
// card from landing. A lock on a branch still does.
func TestPreflight_SealedRefLock_NotABlocker(t *testing.T) {
	f := newFixture(t)
	rec := f.propose(f.fastForward())
	other := filepath.Join(f.repo.Dir, ".git", "refs", "sluice", "sealed", "another-card.lock")
	if err := os.MkdirAll(filepath.Dir(other), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if pf := f.preflight(rec); len(pf.Blockers) > 0 {
		t.Fatalf("a sealed ref's lock blocks: %q", pf.Blockers)
	}
	branch := filepath.Join(f.repo.Dir, ".git", "refs", "heads", "main.lock")
	if err := os.WriteFile(branch, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if pf := f.preflight(rec); blockerWith(pf, "refs/heads/main.lock", "") == "" {
		t.Fatalf("blockers %q: want one naming refs/heads/main.lock", pf.Blockers)
	}
}

// The person's pre-commit hook will run on a commit they approve: a
// notice, not a blocker.
func TestPreflight_PreCommitHook_Notice(t *testing.T) {
	f := newFixture(t)
	f.repo.Write("src/a.txt", "changed\n")
	rec := f.propose(&proposal.CommitArgs{Message: "Change a", Paths: []string{"src/a.txt"}})
	if pf := f.preflight(rec); len(pf.Notices) > 0 {
		t.Fatalf("no hook is installed, notices %q", pf.Notices)
	}
	hook := filepath.Join(f.repo.Dir, ".git", "hooks", "pre-commit")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hook, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pf := f.preflight(rec)
	if len(pf.Blockers) > 0 || pf.Blocked() {
		t.Fatalf("a hook blocks the card: %q", pf.Blockers)
	}
	if len(pf.Notices) != 1 || !strings.HasPrefix(pf.Notices[0], "your pre-commit hook will run") {
		t.Fatalf("notices %q: want that the pre-commit hook will run", pf.Notices)
	}
}

// A fast-forward that failed on a dirty target changed nothing: once the
// person puts their change away, it is retried (the journal's failed →
// approved) and lands, exactly as sealed.
func TestRetry_AfterDirtyTargetFixed_Lands(t *testing.T) {
	f := newFixture(t)
	args := f.fastForward()
	fix := f.git("rev-parse", "fix")
	rec := f.propose(args)
	f.repo.Write("src/a.txt", "a1\nmy edit\na3\n")
	failed := f.mustRefuseUnchanged(rec, ErrDirtyWorktree, "src/a.txt")
	if failed.Outcome.RestorePoint != "" || !journal.Retryable(failed) {
		t.Fatalf("outcome %+v: a refusal before any write must be retryable", failed.Outcome)
	}
	// The failure says what the card offers.
	if !strings.Contains(failed.Outcome.Message, "commit or stash them, then retry it from its card") {
		t.Errorf("outcome %q: want it to say to retry it from its card", failed.Outcome.Message)
	}
	// Not yet: the cause is still there.
	if pf := f.preflight(failed); blockerWith(pf, "src/a.txt") == "" {
		t.Fatalf("blockers %q: want the dirty file", pf.Blockers)
	}
	f.git("restore", "src/a.txt")
	if pf := f.preflight(failed); pf.Blocked() {
		t.Fatalf("fixed, still blocked: %q %s", pf.Blockers, pf.Describe())
	}
	again, err := f.j.Retry(rec.Proposal.ID, rec.Proposal.Digest, "owner:test", "")
	if err != nil {
		t.Fatal(err)
	}
	done := f.mustComplete(again)
	if got := f.git("rev-parse", "main"); got != fix {
		t.Fatalf("main is at %s, want the fast-forward to %s", got, fix)
	}
	if done.Outcome == nil || done.Outcome.Code != "" {
		t.Fatalf("outcome %+v", done.Outcome)
	}
	if st := f.git("status", "--porcelain"); st != "" {
		t.Fatalf("the checkout did not follow: %q", st)
	}
}

// A file the checkout update writes that a filter of the person's would
// smudge: a notice that it lands as git stores it, not a blocker.
func TestPreflight_FilteredFileInCheckout_Notice(t *testing.T) {
	f := newFixture(t)
	f.repo.WriteCommit(".gitattributes", "*.bin filter=lfs\n", "track binaries with a filter")
	f.git("switch", "-q", "-c", "fix")
	f.repo.WriteCommit("data/big.bin", "stored content\n", "add a binary")
	f.git("switch", "-q", "main")
	rec := f.propose(&proposal.MergeArgs{Source: "fix", Target: "main", Strategy: proposal.MergeCommit})
	pf := f.preflight(rec)
	if len(pf.Blockers) > 0 {
		t.Fatalf("a filter blocks the card: %q", pf.Blockers)
	}
	if len(pf.Notices) != 1 || !strings.Contains(pf.Notices[0], "data/big.bin (filter lfs)") || !strings.Contains(pf.Notices[0], "without git's filters") {
		t.Fatalf("notices %q: want one naming data/big.bin and its filter", pf.Notices)
	}
}
