//go:build unix

package apply

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// A post-commit hook of the person's that itself commits: the branch holds
// Sluice's sealed commit with the hook's commit on top, the outcome is
// completed and names the hook's commit, and nothing lands twice.
func TestCommit_PostCommitHookCommits_CompletedWithNote(t *testing.T) {
	f := newFixture(t)
	f.hook("post-commit", `[ -f hook.log ] && exit 0
echo "logged" > hook.log
git add hook.log && git commit -q -m "hook: log the commit"`)
	base := f.git("rev-parse", "HEAD")
	f.repo.Write("src/a.txt", "changed\n")
	rec := f.propose(&proposal.CommitArgs{Message: "Change a", Paths: []string{"src/a.txt"}})
	out := f.mustComplete(rec)

	hookCommit, own := f.git("rev-parse", "main"), f.git("rev-parse", "main^")
	if f.git("log", "-1", "--format=%s", hookCommit) != "hook: log the commit" {
		t.Fatalf("main is at %s, not the hook's commit", f.git("log", "-1", "--format=%h %s", hookCommit))
	}
	if got := f.git("rev-parse", own+"^"); got != base {
		t.Errorf("Sluice's commit sits on %s, want the base %s", got, base)
	}
	if got := f.git("rev-parse", own+"^{tree}"); got != rec.Proposal.Sealed.After {
		t.Errorf("Sluice's commit has tree %s, want the sealed %s", got, rec.Proposal.Sealed.After)
	}
	if !strings.Contains(f.git("log", "-1", "--format=%B", own), "Sluice-Proposal: "+rec.Proposal.ID) {
		t.Errorf("main^ is not Sluice's commit")
	}
	for _, want := range []string{"committed the sealed 1 file on main: " + short(own), "added 1 commit on top", short(hookCommit), "hook: log the commit", "they change hook.log"} {
		if !strings.Contains(out.Outcome.Message, want) {
			t.Errorf("outcome %q does not say %q", out.Outcome.Message, want)
		}
	}
	if strings.Contains(out.Outcome.Message, "nothing was changed") {
		t.Errorf("outcome %q says nothing was changed", out.Outcome.Message)
	}

	// The person's index holds the hook's file as committed.
	if st := f.git("status", "--porcelain"); st != "" {
		t.Errorf("status after the commit and the hook's: %q, want clean", st)
	}
	// Running it again does nothing, and the same commit proposed again
	// has nothing to commit.
	if _, err := f.execute(rec); !errors.Is(err, ErrNotApproved) {
		t.Errorf("executing again: %v, want not_approved", err)
	}
	if f.git("rev-parse", "main") != hookCommit {
		t.Errorf("main moved after executing again")
	}
	f.refuseAtSeal(&proposal.CommitArgs{Message: "Change a", Paths: []string{"src/a.txt"}}, &errcode.Error{Code: errcode.NothingToCommit})
	if n := f.git("rev-list", "--count", base+"..main"); n != "2" {
		t.Errorf("%s commits on main since the base, want 2 (Sluice's and the hook's)", n)
	}
}

// A post-commit hook that takes Sluice's commit off again: the outcome says
// what is on the branch and that it needs reconciliation, never that
// nothing was changed.
func TestCommit_PostCommitHookResets_NeedsReconciliation(t *testing.T) {
	f := newFixture(t)
	f.hook("post-commit", `unset GIT_INDEX_FILE; git reset -q --soft HEAD^`)
	base := f.git("rev-parse", "HEAD")
	f.repo.Write("src/a.txt", "changed\n")
	rec := f.propose(&proposal.CommitArgs{Message: "Change a", Paths: []string{"src/a.txt"}})
	out, err := f.execute(rec)
	if err == nil || out.State != proposal.NeedsReconciliation {
		t.Fatalf("state %s, err %v: want needs_reconciliation", out.State, err)
	}
	msg := out.Outcome.Message
	for _, want := range []string{"needs reconciliation", "branch main is at " + short(base), "took nothing back"} {
		if !strings.Contains(msg, want) {
			t.Errorf("outcome %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "nothing was changed") {
		t.Errorf("outcome %q says nothing was changed", msg)
	}
	if out.Outcome.RestorePoint == "" {
		t.Errorf("no restore point was kept")
	}
}
