package apply

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/core/proposal"
)

// Each sentence a card says about a sealed outcome, checked against the
// outcome sealed from a real repository.

// sealFor seals a proposal for args in the fixture's repository, as the
// app does on receipt, without approving it.
func (f *fixture) sealFor(args proposal.Args) proposal.Proposal {
	f.t.Helper()
	p := f.newProposal(f.repo.Dir, args)
	sealed, err := f.e.Seal(testCtx(f.t), p)
	if err != nil {
		f.t.Fatalf("seal %s: %v", p.Op, err)
	}
	p.Sealed = sealed
	return p
}

// TestSentences_HardReset_OneModifiedFile: a hard reset that throws away
// the uncommitted work in one file, and drops a commit that changed five
// others, says one modified file and one commit; the five files are the
// commit's, not work that is thrown away.
func TestSentences_HardReset_OneModifiedFile(t *testing.T) {
	f := newFixture(t)
	f.git("branch", "base")
	for i := 1; i <= 5; i++ {
		f.repo.Write(fmt.Sprintf("c%d.txt", i), fmt.Sprintf("file %d\n", i))
	}
	f.repo.Commit("five files")
	f.repo.Write("README.md", "# demo\nmy uncommitted line\n")

	p := f.sealFor(&proposal.ResetArgs{Mode: proposal.ResetHard, Target: "base"})
	if n := len(p.Sealed.Files); n != 6 {
		t.Fatalf("the reset changes %d files, want 6 (README.md and the commit's five): %+v", n, p.Sealed.Files)
	}
	if l := p.Sealed.Losses(); l != (proposal.Losses{Modified: 1, Commits: 1}) {
		t.Fatalf("losses %+v", l)
	}
	r, why := p.RiskWhy()
	if r != proposal.RiskDestructive || why != "throws away uncommitted work in 1 modified file and makes 1 commit unreachable" {
		t.Fatalf("risk %s %q", r, why)
	}
	if _, past := p.RiskWhyIn(proposal.Past); past != "threw away uncommitted work in 1 modified file and made 1 commit unreachable" {
		t.Errorf("past %q", past)
	}
}

// TestSentences_HardReset_EachKind: modified, new, deleted and untracked
// work are counted apart.
func TestSentences_HardReset_EachKind(t *testing.T) {
	f := newFixture(t)
	f.git("branch", "base")
	f.repo.Write("c1.txt", "one\n")
	if err := os.Remove(filepath.Join(f.repo.Dir, "src", "a.txt")); err != nil {
		t.Fatal(err)
	}
	f.repo.Commit("add c1, remove a")
	// Modified; new, in the index; deleted; untracked where base has a file.
	f.repo.Write("README.md", "# demo\nmine\n")
	f.repo.Write("new.txt", "brand new work\nof several lines\n")
	f.git("add", "new.txt")
	if err := os.Remove(filepath.Join(f.repo.Dir, "src", "b.txt")); err != nil {
		t.Fatal(err)
	}
	f.repo.Write("src/a.txt", "an untracked file where base has one\n")

	p := f.sealFor(&proposal.ResetArgs{Mode: proposal.ResetHard, Target: "base"})
	if l := p.Sealed.Losses(); l != (proposal.Losses{Modified: 1, Added: 1, Deleted: 1, Untracked: 1, Commits: 1}) {
		t.Fatalf("losses %+v (work %+v, untracked %v)", l, p.Sealed.Work, p.Sealed.Untracked)
	}
	want := "throws away uncommitted work in 1 modified file, 1 new file, 1 deleted file and 1 untracked file, and makes 1 commit unreachable"
	if _, why := p.RiskWhy(); why != want {
		t.Errorf("why %q\nwant %q", why, want)
	}
}

// TestSentences_HardReset_LosesNothing: a hard reset forward, on a clean
// checkout, leaves no commit behind and finds no work to throw away: it is
// not destructive (no word to type), and says that nothing is lost. The
// same reset with one uncommitted line is destructive again.
func TestSentences_HardReset_LosesNothing(t *testing.T) {
	f := newFixture(t)
	f.git("switch", "-q", "-c", "ahead")
	f.repo.Write("c1.txt", "one\n")
	f.repo.Commit("ahead by one")
	f.git("switch", "-q", "main")

	p := f.sealFor(&proposal.ResetArgs{Mode: proposal.ResetHard, Target: "ahead"})
	if l := p.Sealed.Losses(); !l.None() {
		t.Fatalf("losses %+v, want none", l)
	}
	r, why := p.RiskWhy()
	if r != proposal.RiskHigh || p.Destructive() || why != "moves the checked-out branch to ahead and makes the working tree match; there is no uncommitted work and no commit to lose" {
		t.Fatalf("risk %s destructive %v %q", r, p.Destructive(), why)
	}
	if _, past := p.RiskWhyIn(proposal.Past); past != "moved the checked-out branch to ahead and made the working tree match; there was no uncommitted work and no commit to lose" {
		t.Errorf("past %q", past)
	}

	f.repo.Write("README.md", "# demo\nmine\n")
	q := f.sealFor(&proposal.ResetArgs{Mode: proposal.ResetHard, Target: "ahead"})
	if !q.Destructive() {
		t.Fatalf("a hard reset that throws away a line is not destructive: %+v", q.Sealed.Losses())
	}
}

// TestSentences_Discard_EachKind: a discard counts its files by kind.
func TestSentences_Discard_EachKind(t *testing.T) {
	f := newFixture(t)
	f.repo.Write("README.md", "# demo\nmine\n")
	f.repo.Write("new.txt", "brand new work\n")
	f.git("add", "new.txt")
	if err := os.Remove(filepath.Join(f.repo.Dir, "src", "b.txt")); err != nil {
		t.Fatal(err)
	}
	f.repo.Write("scratch/u1.txt", "untracked one\n")
	f.repo.Write("scratch/u2.txt", "untracked two, other words\n")

	p := f.sealFor(&proposal.DiscardArgs{Paths: []string{"."}, Untracked: true})
	if l := p.Sealed.Losses(); l != (proposal.Losses{Modified: 1, Added: 1, Deleted: 1, Untracked: 2}) {
		t.Fatalf("losses %+v (work %+v, untracked %v)", l, p.Sealed.Work, p.Sealed.Untracked)
	}
	if _, why := p.RiskWhy(); why != "throws away uncommitted work in 1 modified file, 1 new file, 1 deleted file and 2 untracked files" {
		t.Errorf("why %q", why)
	}
}

// TestSentences_FastForwardRebase_IsNoRewrite: rebasing a branch that has
// no commits of its own only moves it forward; the card does not say it
// rewrites history, and it is not destructive. A rebase that replays
// commits still says so.
func TestSentences_FastForwardRebase_IsNoRewrite(t *testing.T) {
	f := newFixture(t)
	f.git("branch", "feature")
	f.repo.WriteCommit("main.txt", "on main\n", "main moves on")

	p := f.sealFor(&proposal.RebaseArgs{Branch: "feature", Onto: "main"})
	if !p.Sealed.FastForward {
		t.Fatalf("not sealed as a fast-forward: %+v", p.Sealed)
	}
	r, why := p.RiskWhy()
	if r != proposal.RiskMedium || p.Destructive() ||
		why != "only moves feature forward to main: feature has no commits of its own to replay, so no history is rewritten" {
		t.Fatalf("risk %s %q", r, why)
	}

	f.git("checkout", "-q", "feature")
	f.repo.WriteCommit("feature.txt", "on feature\n", "feature work")
	f.git("checkout", "-q", "main")
	p = f.sealFor(&proposal.RebaseArgs{Branch: "feature", Onto: "main"})
	if r, why := p.RiskWhy(); p.Sealed.FastForward || r != proposal.RiskHigh || why != "rewrites the history of feature" {
		t.Fatalf("a replaying rebase: ff %v, risk %s %q", p.Sealed.FastForward, r, why)
	}
}

// TestSentences_MergedBranchDelete_NothingLost: deleting branches whose
// commits are all in the checked-out branch is not destructive and says
// that nothing is lost; an unmerged branch among them is kept and said.
func TestSentences_MergedBranchDelete_NothingLost(t *testing.T) {
	f := newFixture(t)
	for _, b := range []string{"done-1", "done-2", "done-3"} {
		f.git("branch", b)
	}
	f.repo.WriteCommit("more.txt", "more\n", "main moves on")

	p := f.sealFor(&proposal.BranchDeleteArgs{Branches: []string{"done-1", "done-2", "done-3"}})
	r, why := p.RiskWhy()
	if r != proposal.RiskMedium || p.Destructive() ||
		why != "deletes 3 branches (done-1, done-2 and done-3); every commit on them is in the checked-out branch or in an upstream, so nothing is lost" {
		t.Fatalf("risk %s %q", r, why)
	}
	if !p.Sealed.Losses().None() {
		t.Errorf("losses %+v", p.Sealed.Losses())
	}

	f.git("checkout", "-q", "-b", "wip")
	f.repo.WriteCommit("wip.txt", "unmerged\n", "wip")
	f.git("checkout", "-q", "main")
	p = f.sealFor(&proposal.BranchDeleteArgs{Branches: []string{"done-1", "wip"}})
	if r, why := p.RiskWhy(); r != proposal.RiskMedium ||
		why != "deletes the branch done-1; every commit on it is in the checked-out branch or in an upstream, so nothing is lost; keeps 1 other branch that is not safe to delete" {
		t.Fatalf("with an unmerged branch: %s %q", r, why)
	}
}

// TestSentences_ChangeSize: a commit of 1,000 files is high risk and says
// how many files it touches; 100 are medium; 99 stay low.
func TestSentences_ChangeSize(t *testing.T) {
	for _, tc := range []struct {
		n    int
		risk proposal.Risk
		why  string
	}{
		{99, proposal.RiskLow, "adds one commit on top of the checked-out branch; nothing is rewritten"},
		{100, proposal.RiskMedium, "touches 100 files"},
		{1000, proposal.RiskHigh, "touches 1,000 files"},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			f := newFixture(t)
			for i := range tc.n {
				f.repo.Write(fmt.Sprintf("gen/f%04d.txt", i), fmt.Sprintf("generated %d\n", i))
			}
			p := f.sealFor(&proposal.CommitArgs{Message: "codemod", StageAll: true})
			if len(p.Sealed.Files) != tc.n {
				t.Fatalf("sealed %d files", len(p.Sealed.Files))
			}
			if r, why := p.RiskWhy(); r != tc.risk || why != tc.why {
				t.Errorf("%s %q, want %s %q", r, why, tc.risk, tc.why)
			}
		})
	}
}
