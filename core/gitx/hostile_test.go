package gitx

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// TestHostile_NothingRunsNothingChanges calls every inspection on a
// repository whose configuration points every program git can run at a
// marker-writing script, and checks that no marker appeared and that not
// a byte of the repository (refs, index, config, objects, working tree)
// changed.
func TestHostile_NothingRunsNothingChanges(t *testing.T) {
	h := gitxtest.NewHostile(t)
	before := gitxtest.Snapshot(t, h.Dir)
	run := newRunner(t)
	repo := openIn(t, run, h.Dir)
	if len(repo.filterDrivers) != 1 || len(repo.mergeDrivers) != 1 {
		t.Fatalf("drivers not found: %v %v", repo.filterDrivers, repo.mergeDrivers)
	}
	c := ctx(t)
	calls := map[string]func() (any, error){
		"Brief":           func() (any, error) { return repo.Brief(c) },
		"Scope":           func() (any, error) { return repo.Scope(c) },
		"Status":          func() (any, error) { return repo.Status(c, StatusOptions{Untracked: "all"}) },
		"Refs":            func() (any, error) { return repo.Refs(c, RefsOptions{}) },
		"BranchStack":     func() (any, error) { return repo.BranchStack(c, "feature", "main") },
		"History":         func() (any, error) { return repo.History(c, HistoryOptions{WithStats: true}) },
		"Reflog":          func() (any, error) { return repo.Reflog(c, "", 0) },
		"CommitDetails":   func() (any, error) { return repo.CommitDetails(c, "feature", 0) },
		"WorktreeChanges": func() (any, error) { return repo.WorktreeChanges(c, nil, true, 0) },
		"Worktrees":       func() (any, error) { return repo.Worktrees(c) },
		"Submodules":      func() (any, error) { return repo.Submodules(c) },
		"ConflictRead":    func() (any, error) { return repo.ConflictRead(c, nil, 0, 0) },
		"DiffText.worktree": func() (any, error) {
			return repo.DiffText(c, DiffSpec{Paths: []string{"filtered.dat", "conv.tc"}}, 3, 0)
		},
		"DiffText.head":    func() (any, error) { return repo.DiffText(c, DiffSpec{Base: "HEAD"}, 3, 0) },
		"DiffText.commits": func() (any, error) { return repo.DiffText(c, DiffSpec{Base: "main", Target: "feature"}, 3, 0) },
		"DiffText.staged":  func() (any, error) { return repo.DiffText(c, DiffSpec{Staged: true}, 3, 0) },
		"DiffSemantic":     func() (any, error) { return repo.DiffSemantic(c, DiffSpec{}, 0) },
		"DiffSemantic.revs": func() (any, error) {
			return repo.DiffSemantic(c, DiffSpec{Base: "main", Target: "feature", MergeBase: true}, 0)
		},
		"Radar": func() (any, error) { return run.Radar(c, repo.roots, FleetOptions{RepoPaths: []string{h.Dir}}) },
		"Digest": func() (any, error) {
			return run.Digest(c, repo.roots, FleetOptions{RepoPaths: []string{h.Dir}}, mustSince(t, "1000w"))
		},
	}
	for name, call := range calls {
		if _, err := call(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The merge driver is selected by .gitattributes: predicting the merge
	// would run it, so the prediction is refused.
	if _, err := repo.ConflictPreflight(c, "main", "feature", "merge"); !errcode.IsCode(err, errcode.Unsupported) || !strings.Contains(err.Error(), "evil") {
		t.Errorf("preflight with a custom merge driver: %v", err)
	}
	// The diffs are raw: no textconv output, no external diff.
	d, err := repo.DiffText(c, DiffSpec{Paths: []string{"conv.tc", "filtered.dat"}}, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Diff, "+worktree one") || !strings.Contains(d.Diff, "diff --git a/conv.tc b/conv.tc") || d.Files != 2 {
		t.Errorf("diff is not the raw diff: %s", d.Diff)
	}
	if m := h.MarkerFiles(t); len(m) > 0 {
		t.Fatalf("the repository made git run programs: %v", m)
	}
	if diff := gitxtest.DiffSnapshots(before, gitxtest.Snapshot(t, h.Dir)); len(diff) > 0 {
		t.Fatalf("reading changed the repository: %v", diff)
	}
}
