package proposal

import (
	"fmt"
	"testing"
)

// change is a FileChange with a status and a path.
func change(status, path string) FileChange {
	return FileChange{Status: status, Path: path, Mode: ModeFile}
}

// The fixture the card of a hard reset was seen with: one file of
// uncommitted work, five files the dropped commit changed, one commit.
func hardResetOneFile() *Sealed {
	return &Sealed{
		Effect: EffectLoses,
		Files: []FileChange{change(FileModified, "README.md"), change(FileDeleted, "c1"), change(FileDeleted, "c2"),
			change(FileDeleted, "c3"), change(FileDeleted, "c4"), change(FileDeleted, "c5")},
		Uncommitted: []string{"README.md"},
		Work:        []FileChange{change(FileModified, "README.md")},
		Lost:        &CommitList{Count: 1, Commits: []CommitRef{{SHA: sha1, Subject: "five files"}}},
	}
}

func TestLosses_CountsEachKind(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sealed *Sealed
		want   Losses
		future string
		past   string
	}{
		{"hard reset, one file and a commit", hardResetOneFile(), Losses{Modified: 1, Commits: 1},
			"throws away uncommitted work in 1 modified file and makes 1 commit unreachable",
			"threw away uncommitted work in 1 modified file and made 1 commit unreachable"},
		{"every kind", &Sealed{
			Effect:      EffectLoses,
			Untracked:   []string{"u1", "u2"},
			Uncommitted: []string{"m", "n", "d"},
			Work: []FileChange{change(FileModified, "m"), change(FileAdded, "n"), change(FileDeleted, "d"),
				change(FileAdded, "u1"), change(FileAdded, "u2")},
			Lost: &CommitList{Count: 3},
		}, Losses{Modified: 1, Added: 1, Deleted: 1, Untracked: 2, Commits: 3},
			"throws away uncommitted work in 1 modified file, 1 new file, 1 deleted file and 2 untracked files, and makes 3 commits unreachable",
			"threw away uncommitted work in 1 modified file, 1 new file, 1 deleted file and 2 untracked files, and made 3 commits unreachable"},
		{"a clean hard reset loses only commits", &Sealed{Effect: EffectLoses, Files: []FileChange{change(FileAdded, "x")},
			Lost: &CommitList{Count: 2}}, Losses{Commits: 2},
			"makes 2 commits unreachable", "made 2 commits unreachable"},
		{"an outcome sealed before kinds were recorded", &Sealed{Effect: EffectLoses, Uncommitted: []string{"a", "b"},
			Untracked: []string{"c"}, Files: []FileChange{change(FileModified, "a"), change(FileModified, "b"), change(FileDeleted, "c")}},
			Losses{Changed: 2, Untracked: 1},
			"throws away uncommitted work in 1 untracked file and 2 changed files",
			"threw away uncommitted work in 1 untracked file and 2 changed files"},
		{"a commit loses nothing", &Sealed{Effect: EffectLands, Files: []FileChange{change(FileDeleted, "x")}}, Losses{}, "", ""},
		{"plan steps add up", &Sealed{Steps: []Sealed{*hardResetOneFile(), {Effect: EffectLoses, Untracked: []string{"u"},
			Work: []FileChange{change(FileAdded, "u")}}}}, Losses{Modified: 1, Untracked: 1, Commits: 1},
			"throws away uncommitted work in 1 modified file and 1 untracked file, and makes 1 commit unreachable",
			"threw away uncommitted work in 1 modified file and 1 untracked file, and made 1 commit unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.sealed.Losses()
			if got != tc.want {
				t.Fatalf("losses %+v, want %+v", got, tc.want)
			}
			if s := got.Sentence(Future); s != tc.future {
				t.Errorf("future %q, want %q", s, tc.future)
			}
			if s := got.Sentence(Past); s != tc.past {
				t.Errorf("past %q, want %q", s, tc.past)
			}
		})
	}
	if s := (Losses{Modified: 2, Commits: 1}).Sentence(Unrealized); s != "would have thrown away uncommitted work in 2 modified files and made 1 commit unreachable" {
		t.Errorf("unrealized %q", s)
	}
}

// TestRiskWhy_HardReset_OneFile_SaysOneFile: the card of a hard reset that
// throws away the work in one file says one file, and the commit it drops,
// in one sentence ("6 file(s) and 1 more" was the old line).
func TestRiskWhy_HardReset_OneFile_SaysOneFile(t *testing.T) {
	p := sample(t, &ResetArgs{Mode: ResetHard, Target: "base"})
	p.Sealed = hardResetOneFile()
	r, why := p.RiskWhy()
	if r != RiskDestructive || why != "throws away uncommitted work in 1 modified file and makes 1 commit unreachable" {
		t.Fatalf("%s %q", r, why)
	}
	if _, past := p.RiskWhyIn(TenseOf(Completed)); past != "threw away uncommitted work in 1 modified file and made 1 commit unreachable" {
		t.Errorf("past: %q", past)
	}
	if _, would := p.RiskWhyIn(TenseOf(Rejected)); would != "would have thrown away uncommitted work in 1 modified file and made 1 commit unreachable" {
		t.Errorf("unrealized: %q", would)
	}
}

func TestRiskWhy_FastForwardRebase_IsNoRewrite(t *testing.T) {
	p := sample(t, &RebaseArgs{Branch: "feature", Onto: "main"})
	// Pushed: its upstream is pinned, which would make a rewrite destructive.
	p.Pinned.Refs["refs/remotes/origin/feature"] = sha1
	p.Sealed = &Sealed{Effect: EffectLands, FastForward: true, Moves: []RefMove{{Ref: "refs/heads/feature", From: sha1, To: sha1}}}
	r, why := p.RiskWhy()
	if r != RiskMedium || p.Destructive() ||
		why != "only moves feature forward to main: feature has no commits of its own to replay, so no history is rewritten" {
		t.Fatalf("%s %q", r, why)
	}
	// A rebase that replays commits still rewrites them.
	p.Sealed = &Sealed{Effect: EffectLands, Commits: &CommitList{Count: 2}}
	if r, why := p.RiskWhy(); r != RiskDestructive || why != "rewrites the history of feature, which has been pushed" {
		t.Fatalf("replaying rebase: %s %q", r, why)
	}
}

func TestRiskWhy_MergedBranchDelete_NotDestructive(t *testing.T) {
	p := sample(t, &BranchDeleteArgs{Branches: []string{"a", "b", "c"}})
	p.Sealed = &Sealed{Moves: []RefMove{{Ref: "refs/heads/a", From: sha1, Delete: true}, {Ref: "refs/heads/b", From: sha1, Delete: true},
		{Ref: "refs/heads/c", From: sha1, Delete: true}}}
	r, why := p.RiskWhy()
	if r != RiskMedium || p.Destructive() ||
		why != "deletes 3 branches (a, b and c); every commit on them is in the checked-out branch or in an upstream, so nothing is lost" {
		t.Fatalf("%s %q", r, why)
	}
	if _, past := p.RiskWhyIn(Past); past != "deleted 3 branches (a, b and c); every commit on them was in the checked-out branch or in an upstream, so nothing was lost" {
		t.Errorf("past %q", past)
	}
	p.Sealed = &Sealed{Moves: []RefMove{{Ref: "refs/heads/a", From: sha1, Delete: true}}, Keeps: []string{"b (its commits are not in HEAD and it has no upstream)"}}
	if _, why := p.RiskWhy(); why != "deletes the branch a; every commit on it is in the checked-out branch or in an upstream, so nothing is lost; keeps 1 other branch that is not safe to delete" {
		t.Errorf("with a kept branch: %q", why)
	}
	// Without a sealed outcome nothing is known: it stays destructive.
	p.Sealed = nil
	if !p.Destructive() {
		t.Error("an unsealed deletion is not destructive")
	}
}

// TestRiskWhy_ChangeSize: a commit's size alone raises its risk, and the
// line says how many files it touches.
func TestRiskWhy_ChangeSize(t *testing.T) {
	files := func(n int) []FileChange {
		out := make([]FileChange, n)
		for i := range out {
			out[i] = change(FileModified, fmt.Sprintf("src/f%04d.go", i))
		}
		return out
	}
	for _, tc := range []struct {
		n    int
		risk Risk
		why  string
	}{
		{99, RiskLow, "adds one commit on top of the checked-out branch; nothing is rewritten"},
		{100, RiskMedium, "touches 100 files"},
		{999, RiskMedium, "touches 999 files"},
		{1000, RiskHigh, "touches 1,000 files"},
		{20000, RiskHigh, "touches 20,000 files"},
	} {
		p := sample(t, &CommitArgs{Message: "codemod", StageAll: true})
		p.Sealed = &Sealed{Effect: EffectLands, Files: files(tc.n)}
		if r, why := p.RiskWhy(); r != tc.risk || why != tc.why {
			t.Errorf("%d files: %s %q, want %s %q", tc.n, r, why, tc.risk, tc.why)
		}
	}
	// A higher reason wins and the size is counted among the rest.
	p := sample(t, &CommitArgs{Message: "codemod", StageAll: true})
	p.Sealed = &Sealed{Effect: EffectLands, Files: append(files(999), FileChange{Status: FileAdded, Path: "run.sh", Mode: ModeExecutable})}
	if r, why := p.RiskWhy(); r != RiskHigh || why != "adds an executable file (run.sh); and 1 more reason" {
		t.Errorf("executable and size: %s %q", r, why)
	}
	if _, why := p.RiskWhyIn(Past); why != "adds an executable file (run.sh); and 1 more reason" {
		t.Errorf("past: %q", why)
	}
}

func TestCount_Thousands(t *testing.T) {
	for n, want := range map[int]string{1: "1 file", 0: "0 files", 56: "56 files", 1000: "1,000 files", 1234567: "1,234,567 files"} {
		if got := Count(n, "file"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
	if got := Count(3, "branch"); got != "3 branches" {
		t.Errorf("%q", got)
	}
}
