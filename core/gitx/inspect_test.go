package gitx

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

func TestBrief_Basic(t *testing.T) {
	r := gitxtest.Basic(t, 30)
	repo := openIn(t, newRunner(t), r.Dir)
	b, err := repo.Brief(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if b.Branch != "main" || b.Head == "" || b.Detached || b.Unborn {
		t.Fatalf("brief head: %+v", b)
	}
	if len(b.Recent) != briefRecent || b.Conventions.Sampled != 30 || b.Conventions.ConventionalCommits != 0.5 {
		t.Fatalf("brief commits: %s", mustJSON(t, b))
	}
	if b.Conventions.DefaultBranch != "main" || b.Conventions.LocalBranches != 1 {
		t.Fatalf("conventions: %+v", b.Conventions)
	}
	if len(b.Hints) == 0 || len(b.Hints) > 3 {
		t.Fatalf("hints: %v", b.Hints)
	}
}

func TestBrief_States(t *testing.T) {
	r := newRunner(t)
	t.Run("merge", func(t *testing.T) {
		b, err := openIn(t, r, gitxtest.MergeInProgress(t).Dir).Brief(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if b.Operation == nil || b.Operation.Kind != "merge" || b.Worktree.Conflicted != 1 || !strings.Contains(b.Hints[0], "conflict_read") {
			t.Fatalf("%s", mustJSON(t, b))
		}
	})
	t.Run("rebase", func(t *testing.T) {
		b, err := openIn(t, r, gitxtest.RebaseInProgress(t).Dir).Brief(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if b.Operation == nil || b.Operation.Kind != "rebase" || b.Operation.Branch != "feature" || b.Operation.Total != 2 || !b.Detached {
			t.Fatalf("%s", mustJSON(t, b))
		}
	})
	t.Run("detached", func(t *testing.T) {
		b, err := openIn(t, r, gitxtest.Detached(t).Dir).Brief(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if !b.Detached || b.Branch != "" || !strings.Contains(strings.Join(b.Hints, " "), "repo_reflog") {
			t.Fatalf("%s", mustJSON(t, b))
		}
	})
	t.Run("stashes", func(t *testing.T) {
		b, err := openIn(t, r, gitxtest.Stashes(t).Dir).Brief(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if b.Stashes != 2 {
			t.Fatalf("%s", mustJSON(t, b))
		}
	})
	t.Run("no commits", func(t *testing.T) {
		b, err := openIn(t, r, gitxtest.NoCommits(t).Dir).Brief(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if !b.Unborn || b.Worktree.Staged != 1 || len(b.Recent) != 0 || len(b.Partial) != 0 {
			t.Fatalf("%s", mustJSON(t, b))
		}
	})
	t.Run("empty", func(t *testing.T) {
		b, err := openIn(t, r, gitxtest.Init(t).Dir).Brief(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if !b.Unborn || b.Worktree != (Counts{}) {
			t.Fatalf("%s", mustJSON(t, b))
		}
	})
	t.Run("submodules", func(t *testing.T) {
		b, err := openIn(t, r, gitxtest.Submodules(t).Dir).Brief(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if b.Submodules == nil || *b.Submodules != (SubmoduleSummary{Total: 3, Drifted: 1, Uninitialized: 1}) {
			t.Fatalf("%s", mustJSON(t, b))
		}
	})
}

func TestStatus_UnicodeAndBinary(t *testing.T) {
	r := newRunner(t)
	u := gitxtest.Unicode(t)
	st, err := openIn(t, r, u.Dir).Status(ctx(t), StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]FileStatus{}
	for _, f := range st.Files {
		got[f.Path] = f
	}
	if got["docs/read me.md"].Unstaged != "modified" || !got["new file ✓.txt"].Untracked || got["日本/ファイル.go"].Unstaged != "modified" {
		t.Fatalf("%s", mustJSON(t, st))
	}
	b := gitxtest.Binary(t)
	st, err = openIn(t, r, b.Dir).Status(ctx(t), StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Files) != 1 || st.Files[0].Path != "img.bin" || st.Counts.Unstaged != 1 {
		t.Fatalf("%s", mustJSON(t, st))
	}
}

func TestHistory_Paging(t *testing.T) {
	r := gitxtest.Basic(t, 25)
	repo := openIn(t, newRunner(t), r.Dir)
	var all []Commit
	cursor := ""
	for page := 0; page < 10; page++ {
		h, err := repo.History(ctx(t), HistoryOptions{Limit: 10, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, h.Commits...)
		if h.NextCursor == "" {
			break
		}
		cursor = h.NextCursor
		if page == 0 {
			// The branch moves: the cursor stays pinned.
			r.WriteCommit("late.txt", "late\n", "late commit")
		}
	}
	if len(all) != 25 {
		t.Fatalf("paged %d commits, want 25", len(all))
	}
	seen := map[string]bool{}
	for _, c := range all {
		if seen[c.SHA] || c.Subject == "late commit" {
			t.Fatalf("duplicate or unpinned commit %v", c)
		}
		seen[c.SHA] = true
	}
	// Filters, stats, paths.
	h, err := repo.History(ctx(t), HistoryOptions{Paths: []string{"src/file1.txt"}, Grep: "STEP", WithStats: true})
	if err != nil {
		t.Fatal(err)
	}
	// src/file1.txt changes in commits 1, 6, 11, 16 and 21; of those only
	// the even ones are "add step" commits.
	var subjects []string
	for _, c := range h.Commits {
		subjects = append(subjects, c.Subject)
		if c.Files == nil || *c.Files != 1 {
			t.Fatalf("stats: %s", mustJSON(t, h))
		}
	}
	if want := []string{"feat(core): add step 16", "feat(core): add step 6"}; !slices.Equal(subjects, want) {
		t.Fatalf("history of src/file1.txt matching STEP: %q, want %q", subjects, want)
	}
	if _, err := repo.History(ctx(t), HistoryOptions{Cursor: cursor, Grep: "x"}); !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Fatalf("cursor with other filters: %v", err)
	}
	if _, err := repo.History(ctx(t), HistoryOptions{Cursor: "garbage!"}); !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Fatalf("bad cursor: %v", err)
	}
}

func TestHistory_Unborn(t *testing.T) {
	h, err := openIn(t, newRunner(t), gitxtest.Init(t).Dir).History(ctx(t), HistoryOptions{})
	if err != nil || !h.Unborn || len(h.Commits) != 0 {
		t.Fatalf("%v %+v", err, h)
	}
}

func TestCommitDetails(t *testing.T) {
	r := gitxtest.Diverged(t)
	repo := openIn(t, newRunner(t), r.Dir)
	d, err := repo.CommitDetails(ctx(t), "main~1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.Subject != "fix: change two on main" || len(d.Files) != 1 || d.Files[0].Insertions != 1 || d.Files[0].Deletions != 1 || len(d.Parents) != 1 {
		t.Fatalf("%s", mustJSON(t, d))
	}
	root, err := repo.CommitDetails(ctx(t), d.Parents[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(root.Parents) != 0 || root.FilesTotal != 2 || root.Files[0].Status != "added" {
		t.Fatalf("%s", mustJSON(t, root))
	}
	if _, err := repo.CommitDetails(ctx(t), "no-such-branch", 0); !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Fatalf("unknown rev: %v", err)
	}
}

func TestDiffText_Truncation(t *testing.T) {
	r := gitxtest.Init(t)
	var big strings.Builder
	for i := 0; i < 2000; i++ {
		big.WriteString("line of text number ")
		big.WriteString(strings.Repeat("x", i%40))
		big.WriteString("\n")
	}
	r.WriteCommit("a.txt", "a\n", "a")
	r.Write("a.txt", big.String())
	r.Write("b.txt", "b\n")
	r.Git("add", "b.txt")
	r.Git("commit", "-qm", "b")
	r.Write("b.txt", "b2\n")
	repo := openIn(t, newRunner(t), r.Dir)
	d, err := repo.DiffText(ctx(t), DiffSpec{}, 3, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Truncated || d.ReturnedBytes > 4096 || !strings.HasSuffix(d.Diff, "\n") || d.Files != 2 || d.TotalLines <= int64(d.ReturnedLines) {
		t.Fatalf("truncated diff: %+v", *d)
	}
	if len(d.OmittedFiles) != 1 || d.OmittedFiles[0] != "b.txt" {
		t.Fatalf("omitted: %v", d.OmittedFiles)
	}
	full, err := repo.DiffText(ctx(t), DiffSpec{}, 3, MaxDiffBytes)
	if err != nil {
		t.Fatal(err)
	}
	if full.Truncated || int64(full.ReturnedBytes) != full.TotalBytes || full.TotalBytes != d.TotalBytes || full.TotalLines != d.TotalLines {
		t.Fatalf("full: %d/%d lines %d", full.ReturnedBytes, full.TotalBytes, full.TotalLines)
	}
	staged, err := repo.DiffText(ctx(t), DiffSpec{Base: "HEAD~1", Target: "HEAD"}, 0, 0)
	if err != nil || !strings.Contains(staged.Diff, "+++ b/b.txt") || staged.Compared != "HEAD~1 → HEAD" {
		t.Fatalf("%v %+v", err, staged)
	}
}

func TestDiffSemantic_Go(t *testing.T) {
	r := gitxtest.Init(t)
	r.Write("pkg/a.go", `package pkg

// A does a.
func A() int { return 1 }

func B(x int) int { return x }

type T struct{ X int }

func (t *T) M() {}

const K = 1
`)
	r.Write("notes.txt", "one\n")
	r.Write("broken.go", "package broken\n")
	r.Commit("base")
	r.Write("pkg/a.go", `package pkg

// A does a, documented better.
func A() int { return 1 }

func B(x, y int) int { return x + y }

type T struct {
	X int
	Y string
}

func (t *T) N() {}

const K = 1
`)
	r.Write("notes.txt", "two\n")
	r.Write("broken.go", "package broken\nfunc {\n")
	repo := openIn(t, newRunner(t), r.Dir)
	d, err := repo.DiffSemantic(ctx(t), DiffSpec{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]SemanticFile{}
	for _, f := range d.Files {
		files[f.Path] = f
	}
	a := files["pkg/a.go"]
	if a.FallbackToText || a.Language != "go" {
		t.Fatalf("a.go: %s", mustJSON(t, a))
	}
	got := map[string]string{}
	for _, c := range a.Changes {
		got[c.Kind+" "+c.Name] = c.Change
		if c.Name == "B" && !c.SignatureChanged {
			t.Fatalf("B signature change not seen")
		}
	}
	want := map[string]string{"func A": "formatting", "func B": "modified", "type T": "modified", "method T.M": "removed", "method T.N": "added"}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: got %q want %q (all: %v)", k, got[k], v, got)
		}
	}
	if _, ok := got["const K"]; ok {
		t.Fatalf("unchanged const reported")
	}
	for _, p := range []string{"notes.txt", "broken.go"} {
		f := files[p]
		if !f.FallbackToText || f.TextDiff == nil || f.TextDiff.Paths[0] != p || f.TextDiff.RepoPath != r.Dir || f.Reason == "" {
			t.Fatalf("%s: %s", p, mustJSON(t, f))
		}
	}
	if d.Parsed != 1 || d.Fallback != 2 {
		t.Fatalf("counts %d/%d", d.Parsed, d.Fallback)
	}
}

func TestConflictRead_Merge(t *testing.T) {
	r := gitxtest.MergeInProgress(t)
	st, err := openIn(t, newRunner(t), r.Dir).ConflictRead(ctx(t), nil, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !st.InProgress || st.Operation.Kind != "merge" || st.Ours == nil || st.Theirs == nil || len(st.Files) != 1 {
		t.Fatalf("%s", mustJSON(t, st))
	}
	f := st.Files[0]
	if f.Path != "conflict.txt" || f.Kind != "both_modified" || f.Base.Content != "one\ntwo\nthree\n" ||
		!strings.Contains(f.Ours.Content, "MAIN") || !strings.Contains(f.Theirs.Content, "FEATURE") || len(f.Markers) != 1 || f.Worktree != "text" {
		t.Fatalf("%s", mustJSON(t, f))
	}
	m := f.Markers[0]
	if m.Start != 2 || m.Separator != 4 || m.End != 6 {
		t.Fatalf("markers %+v", m)
	}
}

func TestConflictRead_RebaseAndNone(t *testing.T) {
	r := newRunner(t)
	st, err := openIn(t, r, gitxtest.RebaseInProgress(t).Dir).ConflictRead(ctx(t), nil, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Operation.Kind != "rebase" || !strings.Contains(st.Note, "theirs is your own commit") || !strings.Contains(st.Theirs.Subject, "feature") {
		t.Fatalf("%s", mustJSON(t, st))
	}
	st, err = openIn(t, r, gitxtest.Basic(t, 2).Dir).ConflictRead(ctx(t), nil, 0, 0)
	if err != nil || st.InProgress || len(st.Files) != 0 {
		t.Fatalf("%v %+v", err, st)
	}
}

func TestConflictPreflight(t *testing.T) {
	r := gitxtest.Diverged(t)
	repo := openIn(t, newRunner(t), r.Dir)
	before := gitxtest.Snapshot(t, r.Dir)
	p, err := repo.ConflictPreflight(ctx(t), "", "feature", "merge")
	if err != nil {
		t.Fatal(err)
	}
	if p.Clean || p.Outcome != "conflicts" || len(p.Conflicts) != 1 || p.Conflicts[0].Path != "conflict.txt" || p.Conflicts[0].Kinds[0] != "contents" {
		t.Fatalf("%s", mustJSON(t, p))
	}
	if p.FilesChanged != 2 {
		t.Fatalf("filesChanged %d", p.FilesChanged)
	}
	p, err = repo.ConflictPreflight(ctx(t), "feature", "main", "rebase")
	if err != nil {
		t.Fatal(err)
	}
	if p.Rebase == nil || p.Rebase.Commits != 2 || len(p.Conflicts[0].Commits) != 1 {
		t.Fatalf("%s", mustJSON(t, p))
	}
	p, err = repo.ConflictPreflight(ctx(t), "main~2", "main", "merge")
	if err != nil || p.Outcome != "fast_forward" || !p.Clean {
		t.Fatalf("%v %+v", err, p)
	}
	p, err = repo.ConflictPreflight(ctx(t), "main", "main~1", "")
	if err != nil || p.Outcome != "up_to_date" {
		t.Fatalf("%v %+v", err, p)
	}
	if d := gitxtest.DiffSnapshots(before, gitxtest.Snapshot(t, r.Dir)); len(d) > 0 {
		t.Fatalf("preflight changed the repository: %v", d)
	}
}

func TestRefsAndStack(t *testing.T) {
	r := gitxtest.Basic(t, 3)
	r.Git("checkout", "-q", "-b", "one")
	r.WriteCommit("one.txt", "1\n", "one")
	r.Git("checkout", "-q", "-b", "two")
	r.WriteCommit("two.txt", "2\n", "two a")
	r.WriteCommit("two.txt", "22\n", "two b")
	r.Git("checkout", "-q", "-b", "three")
	r.WriteCommit("three.txt", "3\n", "three")
	r.Git("checkout", "-q", "two")
	r.Git("tag", "-a", "v1.2.3", "-m", "release", "main")
	repo := openIn(t, newRunner(t), r.Dir)
	refs, err := repo.Refs(ctx(t), RefsOptions{Sort: "name"})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, x := range refs.Refs {
		names = append(names, x.Kind+":"+x.Name)
		if x.Name == "two" && !x.Current {
			t.Fatalf("two not current")
		}
	}
	if strings.Join(names, ",") != "branch:main,branch:one,branch:three,branch:two,tag:v1.2.3" {
		t.Fatalf("refs: %v", names)
	}
	st, err := repo.BranchStack(ctx(t), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if st.Base != "main" || len(st.Stack) != 2 || st.Stack[0].Name != "one" || st.Stack[0].Commits != 1 || st.Stack[1].Name != "two" || st.Stack[1].Commits != 2 ||
		len(st.Above) != 1 || st.Above[0].Name != "three" || st.Above[0].Commits != 1 {
		t.Fatalf("%s", mustJSON(t, st))
	}
}

func TestReflog_Recovery(t *testing.T) {
	r, lostDetached, lostReset := gitxtest.Orphaned(t)
	rl, err := openIn(t, newRunner(t), r.Dir).Reflog(ctx(t), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, x := range rl.Recoverable {
		found[x.SHA] = true
	}
	if !found[lostDetached] || !found[lostReset] || len(rl.Hints) == 0 || rl.Entries[0].Action != "reset" {
		t.Fatalf("%s", mustJSON(t, rl))
	}
	rl, err = openIn(t, newRunner(t), r.Dir).Reflog(ctx(t), "main", 3)
	if err != nil || rl.Ref != "refs/heads/main" || len(rl.Entries) != 3 || !rl.Truncated || rl.Entries[0].Selector != "main@{0}" {
		t.Fatalf("%v %s", err, mustJSON(t, rl))
	}
}

func TestWorktreesAndSubmodules(t *testing.T) {
	r := newRunner(t)
	main, linked := gitxtest.Worktrees(t)
	wl, err := openIn(t, r, linked).Worktrees(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]Worktree{}
	for _, w := range wl.Worktrees {
		byPath[filepath.Base(w.Path)] = w
	}
	if len(wl.Worktrees) != 3 || !wl.Worktrees[0].Main || wl.Worktrees[0].Path != main.Dir || !byPath["linked wt"].Current || byPath["linked wt"].Branch != "wt" ||
		!byPath["detached"].Locked || byPath["detached"].LockReason != "on a USB disk" || !byPath["detached"].Detached {
		t.Fatalf("%s", mustJSON(t, wl))
	}
	repo := openIn(t, r, linked)
	if !repo.Linked {
		t.Fatal("linked worktree not recognised")
	}
	super := gitxtest.Submodules(t)
	// A tracked file of one submodule changes: it is dirty, the others not.
	if err := os.WriteFile(filepath.Join(super.Dir, "mods", "clean", "lib.txt"), []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sm, err := openIn(t, r, super.Dir).Submodules(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	states, dirty := map[string]string{}, map[string]bool{}
	for _, s := range sm.Submodules {
		states[s.Name], dirty[s.Name] = s.State, s.Dirty
		if s.State != "uninitialized" && s.CheckedOut == "" {
			t.Errorf("%s: no checked-out commit", s.Name)
		}
	}
	if states["mods/clean"] != "clean" || states["mods/drifted"] != "drifted" || states["mods/uninit"] != "uninitialized" {
		t.Fatalf("%s", mustJSON(t, sm))
	}
	if !dirty["mods/clean"] || dirty["mods/drifted"] || dirty["mods/uninit"] {
		t.Fatalf("dirty: %v", dirty)
	}
	for _, s := range sm.Submodules {
		if s.Name == "mods/drifted" && (s.Behind == nil || *s.Behind != 1) {
			t.Fatalf("drift counts: %s", mustJSON(t, s))
		}
	}
}

func TestScopeAndChanges(t *testing.T) {
	r := gitxtest.Unicode(t)
	r.Git("remote", "add", "origin", "https://user:hunter2@example.com/x.git")
	r.Git("add", "docs/read me.md")
	repo := openIn(t, newRunner(t), r.Dir)
	s, err := repo.Scope(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.TrackedFiles != 3 || s.Remotes[0].URL != "https://user:***@example.com/x.git" || s.AllowedRoot != filepath.Dir(r.Dir) {
		t.Fatalf("%s", mustJSON(t, s))
	}
	c, err := repo.WorktreeChanges(ctx(t), nil, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Staged.Files != 1 || c.Unstaged.Files != 1 || c.Untracked != 1 {
		t.Fatalf("%s", mustJSON(t, c))
	}
}

func TestFleet(t *testing.T) {
	parent, _ := filepath.EvalSymlinks(t.TempDir())
	clean := gitxtest.InitAt(t, filepath.Join(parent, "a", "clean"))
	clean.WriteCommit("x", "x\n", "x")
	dirty := gitxtest.InitAt(t, filepath.Join(parent, "b", "dirty"))
	dirty.WriteCommit("x", "x\n", "x")
	dirty.Write("x", "changed\n")
	m := gitxtest.MergeInProgress(t)
	if err := os.Rename(m.Dir, filepath.Join(parent, "merging")); err != nil {
		t.Fatal(err)
	}
	_ = os.MkdirAll(filepath.Join(parent, "node_modules", "skipme", ".git"), 0o755)
	r := newRunner(t)
	rad, err := r.Radar(ctx(t), Roots{parent}, FleetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rad.Scanned != 3 || len(rad.NeedsAttention) != 2 || rad.NeedsAttention[0].Path != filepath.Join(parent, "merging") || len(rad.Clean) != 1 {
		t.Fatalf("%s", mustJSON(t, rad))
	}
	dg, err := r.Digest(ctx(t), Roots{parent}, FleetOptions{}, mustSince(t, "1000w"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dg.Active) != 3 || len(dg.Errors) != 0 {
		t.Fatalf("%s", mustJSON(t, dg))
	}
}

func TestConflictRead_Binary(t *testing.T) {
	r := gitxtest.Init(t)
	r.WriteCommit("blob.bin", "\x00base\x00", "base")
	r.Git("checkout", "-q", "-b", "other")
	r.WriteCommit("blob.bin", "\x00theirs\x00", "theirs")
	r.Git("checkout", "-q", "main")
	r.WriteCommit("blob.bin", "\x00ours\x00", "ours")
	if _, err := gitxtest.GitErr(t, r.Dir, "merge", "--no-edit", "other"); err == nil {
		t.Fatal("no conflict")
	}
	st, err := openIn(t, newRunner(t), r.Dir).ConflictRead(ctx(t), nil, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := st.Files[0]
	if !f.Base.Binary || !f.Ours.Binary || !f.Theirs.Binary || f.Ours.Content != "" || f.Worktree != "binary" || len(f.Markers) != 0 {
		t.Fatalf("%s", mustJSON(t, f))
	}
}

func TestBareRepository(t *testing.T) {
	src := gitxtest.Basic(t, 3)
	bare := filepath.Join(filepath.Dir(src.Dir), "bare.git")
	gitxtest.Git(t, filepath.Dir(src.Dir), "clone", "-q", "--bare", src.Dir, bare)
	repo := openIn(t, newRunner(t), bare)
	if !repo.Bare || repo.Root != bare {
		t.Fatalf("bare: %+v", repo)
	}
	b, err := repo.Brief(ctx(t))
	if err != nil || !b.Bare || b.Branch != "main" || len(b.Recent) != 3 {
		t.Fatalf("%v %s", err, mustJSON(t, b))
	}
	if _, err := repo.Status(ctx(t), StatusOptions{}); !errcode.IsCode(err, errcode.Unsupported) {
		t.Fatalf("status on bare: %v", err)
	}
	if _, err := repo.DiffText(ctx(t), DiffSpec{}, 3, 0); !errcode.IsCode(err, errcode.Unsupported) {
		t.Fatalf("worktree diff on bare: %v", err)
	}
	if d, err := repo.DiffText(ctx(t), DiffSpec{Base: "HEAD~1", Target: "HEAD"}, 3, 0); err != nil || d.Files != 1 {
		t.Fatalf("%v %+v", err, d)
	}
	if h, err := repo.History(ctx(t), HistoryOptions{}); err != nil || len(h.Commits) != 3 {
		t.Fatalf("%v %+v", err, h)
	}
}

func TestGitmodules_SymlinkIgnored(t *testing.T) {
	r := gitxtest.Basic(t, 1)
	outside := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(outside, []byte("[submodule \"leak\"]\n\tpath = leak\n\turl = https://secret@example.com/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(r.Dir, ".gitmodules")); err != nil {
		t.Fatal(err)
	}
	repo := openIn(t, newRunner(t), r.Dir)
	if mods := repo.gitmodules(); len(mods) != 0 {
		t.Fatalf("a symlinked .gitmodules was read: %+v", mods)
	}
}
