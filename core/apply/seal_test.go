package apply

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/proposal"
)

// sealedFiles is path → change of a sealed outcome.
func sealedFiles(s *proposal.Sealed) map[string]proposal.FileChange {
	out := map[string]proposal.FileChange{}
	for _, f := range s.Files {
		out[f.Path] = f
	}
	return out
}

// treeOf is path → "mode blob" of a tree-ish, recursively.
func (f *fixture) treeOf(rev string) map[string]string {
	f.t.Helper()
	out := map[string]string{}
	for _, l := range splitLines(f.git("ls-tree", "-r", rev)) {
		meta, path, _ := strings.Cut(l, "\t")
		fs := strings.Fields(meta)
		out[path] = fs[0] + " " + fs[2]
	}
	return out
}

func (f *fixture) writeBytes(rel string, b []byte, mode os.FileMode) {
	f.t.Helper()
	p := filepath.Join(f.repo.Dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, b, mode); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		f.t.Fatal(err)
	}
}

// TestSeal_Commit_EditAddDeleteAfterProposal: the person edits a committed
// file, adds a file and deletes one after the proposal. The commit holds
// exactly the sealed tree, and each of their later changes is still in
// the working tree, uncommitted.
func TestSeal_Commit_EditAddDeleteAfterProposal(t *testing.T) {
	for _, stageAll := range []bool{false, true} {
		t.Run("stageAll="+strconv.FormatBool(stageAll), func(t *testing.T) {
			f := newFixture(t)
			f.repo.Write("src/a.txt", "a1\na2 changed\na3\n")
			f.repo.Write("n.txt", "new\n")
			args := &proposal.CommitArgs{Message: "Change a, add n", Paths: []string{"src/a.txt", "n.txt"}}
			if stageAll {
				args = &proposal.CommitArgs{Message: "Change a, add n", StageAll: true}
			}
			rec := f.propose(args)
			sealed := rec.Proposal.Sealed
			if sealed == nil || sealed.After == "" {
				t.Fatalf("no sealed outcome: %+v", sealed)
			}
			files := sealedFiles(sealed)
			if len(files) != 2 || files["src/a.txt"].Status != proposal.FileModified || files["n.txt"].Status != proposal.FileAdded {
				t.Fatalf("sealed files %+v", sealed.Files)
			}

			// After the proposal: one more line in a, a new file, a deletion.
			f.repo.Write("src/a.txt", "a1\na2 changed\na3\nlater\n")
			f.repo.Write("late.txt", "late\n")
			if err := os.Remove(filepath.Join(f.repo.Dir, "src/b.txt")); err != nil {
				t.Fatal(err)
			}
			out := f.mustComplete(rec)
			if got := f.git("rev-parse", "HEAD^{tree}"); got != sealed.After {
				t.Fatalf("HEAD's tree %s is not the sealed %s", got, sealed.After)
			}
			if got := f.git("show", "HEAD:src/a.txt"); got != "a1\na2 changed\na3" {
				t.Errorf("the commit has a = %q", got)
			}
			if got := f.read("src/a.txt"); got != "a1\na2 changed\na3\nlater\n" {
				t.Errorf("the person's later line is gone: %q", got)
			}
			if staged := f.git("diff", "--cached", "--name-only"); staged != "" {
				t.Errorf("staged after the commit: %q", staged)
			}
			if unstaged := f.git("diff", "--name-status"); unstaged != "M\tsrc/a.txt\nD\tsrc/b.txt" {
				t.Errorf("unstaged %q: want the later edit and deletion", unstaged)
			}
			if u := f.git("ls-files", "--others", "--exclude-standard"); u != "late.txt" {
				t.Errorf("untracked %q: want the later file", u)
			}
			if !strings.Contains(out.Outcome.Message, "committed the sealed 2 files") {
				t.Errorf("outcome %q", out.Outcome.Message)
			}
		})
	}
}

// TestSeal_Commit_FileKinds: a new file, a deletion, a rename, a binary,
// an executable bit and a symlink are sealed with their modes and sizes,
// and land byte for byte.
func TestSeal_Commit_FileKinds(t *testing.T) {
	f := newFixture(t)
	f.repo.Write("old.txt", "rename me\nwith enough lines\nto be a rename\n")
	f.repo.Write("gone.txt", "delete me\n")
	f.repo.Commit("files to rename and delete")
	bin := bytes.Repeat([]byte{0, 1, 2, 0xff}, 900_000) // 3.4 MB
	f.writeBytes("catalog.bin", bin, 0o644)
	f.writeBytes("run.sh", []byte("#!/bin/sh\necho hi\n"), 0o755)
	if err := os.Symlink("src/a.txt", filepath.Join(f.repo.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	f.writeBytes("CHANGELOG.md", []byte("# Changes\n"), 0o644)
	if err := os.Rename(filepath.Join(f.repo.Dir, "old.txt"), filepath.Join(f.repo.Dir, "new.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(f.repo.Dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	rec := f.propose(&proposal.CommitArgs{Message: "Kinds", StageAll: true})
	p := rec.Proposal
	files := sealedFiles(p.Sealed)
	want := map[string]struct {
		status, mode string
		binary       bool
		size         int64
	}{
		"catalog.bin":  {proposal.FileAdded, proposal.ModeFile, true, int64(len(bin))},
		"run.sh":       {proposal.FileAdded, proposal.ModeExecutable, false, 18},
		"link":         {proposal.FileAdded, proposal.ModeSymlink, false, int64(len("src/a.txt"))},
		"CHANGELOG.md": {proposal.FileAdded, proposal.ModeFile, false, 10},
		"new.txt":      {proposal.FileRenamed, proposal.ModeFile, false, 43},
		"gone.txt":     {proposal.FileDeleted, "", false, 10},
	}
	if len(files) != len(want) {
		t.Errorf("sealed files %+v", p.Sealed.Files)
	}
	for path, w := range want {
		c := files[path]
		if c.Status != w.status || c.Mode != w.mode || c.Binary != w.binary || c.Size != w.size {
			t.Errorf("%s sealed as %+v, want %+v", path, c, w)
		}
	}
	if files["new.txt"].OldPath != "old.txt" {
		t.Errorf("rename from %q", files["new.txt"].OldPath)
	}
	// The risk says why: an executable file is the most severe fact here.
	risk, why := p.RiskWhy()
	if risk != proposal.RiskHigh || !strings.Contains(why, "adds an executable file (run.sh)") {
		t.Errorf("risk %s: %q", risk, why)
	}
	f.mustComplete(rec)
	if got := f.git("rev-parse", "HEAD^{tree}"); got != p.Sealed.After {
		t.Fatalf("HEAD's tree %s is not the sealed %s", got, p.Sealed.After)
	}
	landed := f.treeOf("HEAD")
	if landed["run.sh"][:6] != proposal.ModeExecutable || landed["link"][:6] != proposal.ModeSymlink {
		t.Errorf("modes landed %q %q", landed["run.sh"], landed["link"])
	}
	cmd := exec.Command("git", "-C", f.repo.Dir, "cat-file", "blob", "HEAD:catalog.bin")
	cmd.Env = gitxtest.Env(os.Getenv("HOME"))
	got, err := cmd.Output()
	if err != nil || !bytes.Equal(got, bin) {
		t.Errorf("the binary did not land byte for byte (%d bytes, %v)", len(got), err)
	}
	if _, ok := landed["gone.txt"]; ok {
		t.Error("the deleted file is still in the commit")
	}
}

// TestSeal_Commit_HookChangesContent_TakenBack: a pre-commit hook that
// stages something else would make the commit differ from the card; the
// commit is taken back and nothing is committed.
func TestSeal_Commit_HookChangesContent_TakenBack(t *testing.T) {
	f := newFixture(t)
	f.hook("pre-commit", "#!/bin/sh\necho sneaked >> src/b.txt\ngit add src/b.txt\n")
	f.repo.Write("src/a.txt", "changed\n")
	head := f.git("rev-parse", "HEAD")
	rec := f.propose(&proposal.CommitArgs{Message: "a", Paths: []string{"src/a.txt"}})
	out, err := f.execute(rec)
	if errcode.Of(err) != errcode.HookFailed || out.State != proposal.Failed {
		t.Fatalf("state %s err %v: want hook_failed", out.State, err)
	}
	if got := f.git("rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD moved to %s", got)
	}
	// The hook changed a file on disk: the restore point that holds the
	// person's working tree as it was stays.
	if out.Outcome.RestorePoint == "" || f.read("src/b.txt") == "b1\nb2\nb3\n" {
		t.Errorf("restore point %q, b = %q", out.Outcome.RestorePoint, f.read("src/b.txt"))
	}
}

// filesOf is path → content of every file under dir but .git.
func filesOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if info.IsDir() {
			if rel == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// gitAnswer runs a destructive git command on a copy of the repository
// and returns the paths whose content it changed, sorted.
func gitAnswer(t *testing.T, dir string, cmds ...[]string) []string {
	t.Helper()
	cp := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", dir, cp).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v %s", err, out)
	}
	before := filesOf(t, cp)
	for _, c := range cmds {
		gitxtest.Git(t, cp, c...)
	}
	after := filesOf(t, cp)
	var changed []string
	for p, b := range before {
		if a, ok := after[p]; !ok || a != b {
			changed = append(changed, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			changed = append(changed, p)
		}
	}
	sort.Strings(changed)
	return changed
}

func paths(files []proposal.FileChange) []string {
	var out []string
	for _, f := range files {
		out = appendNew(out, f.Path)
		if f.OldPath != "" {
			out = appendNew(out, f.OldPath)
		}
	}
	sort.Strings(out)
	return out
}

// TestSeal_ResetHard_LossesAreGitsOwn: the card of a hard reset lists
// exactly what git reset --hard changes in the working tree, the commits
// that become unreachable, and the uncommitted work lost, never as
// additions.
func TestSeal_ResetHard_LossesAreGitsOwn(t *testing.T) {
	f := newFixture(t)
	f.repo.WriteCommit("draft.txt", "a draft\n", "Add the draft")
	f.repo.WriteCommit("src/a.txt", "a1\na2\na3\nmore\n", "Extend a")
	f.repo.Write("src/b.txt", "b1\nan uncommitted paragraph\n")
	f.repo.Write("untracked.txt", "stays: reset --hard keeps untracked files\n")
	target := f.git("rev-parse", "HEAD~2")
	wantLost := splitLines(f.git("rev-list", "HEAD", "^"+target))
	wantChanged := gitAnswer(t, f.repo.Dir, []string{"reset", "-q", "--hard", target})

	rec := f.propose(&proposal.ResetArgs{Mode: proposal.ResetHard, Target: "HEAD~2", Branch: "main"})
	s := rec.Proposal.Sealed
	if s.Effect != proposal.EffectLoses {
		t.Errorf("effect %q: a hard reset loses", s.Effect)
	}
	if got := paths(s.Files); !slices.Equal(got, wantChanged) {
		t.Errorf("sealed paths %q, git changes %q", got, wantChanged)
	}
	if s.Lost == nil || s.Lost.Count != len(wantLost) || s.Lost.Commits[0].Subject != "Extend a" {
		t.Errorf("lost commits %+v, git says %d", s.Lost, len(wantLost))
	}
	if !slices.Equal(s.Uncommitted, []string{"src/b.txt"}) {
		t.Errorf("uncommitted losses %q", s.Uncommitted)
	}
	if r, _ := rec.Proposal.RiskWhy(); r != proposal.RiskDestructive {
		t.Errorf("risk %s", r)
	}
	f.mustComplete(rec)
	if f.git("rev-parse", "HEAD") != target || f.read("untracked.txt") == "" {
		t.Errorf("after the reset: HEAD %s", f.git("rev-parse", "HEAD"))
	}
}

// TestSeal_Discard_LossesAreGitsOwn: the same for a discard with
// untracked files: exactly the files git restore and git clean change.
func TestSeal_Discard_LossesAreGitsOwn(t *testing.T) {
	f := newFixture(t)
	f.repo.Write("src/a.txt", "edited\n")
	f.repo.Write("src/new.txt", "untracked in src\n")
	f.repo.Write("src/staged.txt", "staged new file\n")
	f.git("add", "src/staged.txt")
	f.repo.Write("README.md", "outside the paths: kept\n")
	f.repo.Write("top.txt", "untracked outside the paths: kept\n")
	wantChanged := gitAnswer(t, f.repo.Dir,
		[]string{"restore", "--source=HEAD", "--staged", "--worktree", "--", "src"},
		[]string{"clean", "-f", "-d", "-q", "--", "src"})

	rec := f.propose(&proposal.DiscardArgs{Paths: []string{"src"}, Untracked: true})
	s := rec.Proposal.Sealed
	if got := paths(s.Files); !slices.Equal(got, wantChanged) {
		t.Errorf("sealed paths %q, git changes %q", got, wantChanged)
	}
	if !slices.Equal(s.Untracked, []string{"src/new.txt"}) || !slices.Contains(s.Uncommitted, "src/a.txt") {
		t.Errorf("untracked %q uncommitted %q", s.Untracked, s.Uncommitted)
	}
	for _, c := range s.Files {
		if c.Path == "src/new.txt" && (c.Status != proposal.FileDeleted || c.OldBlob == "") {
			t.Errorf("the untracked file is not shown as lost with its content: %+v", c)
		}
	}
	f.mustComplete(rec)
	if f.read("README.md") != "outside the paths: kept\n" || f.read("top.txt") == "" {
		t.Error("a discard of src changed files outside it")
	}
}

// TestSeal_WorktreeInputChanged_Refused: a discard, a hard reset and a
// patch run only on the content they sealed. An edit, a new file or a
// deletion after the proposal refuses them, names the path, and leaves
// the person's change and everything else as it was.
func TestSeal_WorktreeInputChanged_Refused(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(f *fixture)
		args   func() proposal.Args
		change func(f *fixture)
		path   string
	}{
		{"discard/edit", func(f *fixture) { f.repo.Write("src/a.txt", "mine\n") },
			func() proposal.Args { return &proposal.DiscardArgs{Paths: []string{"src"}} },
			func(f *fixture) { f.repo.Write("src/a.txt", "mine, and more work since\n") }, "src/a.txt"},
		{"discard/new untracked", func(f *fixture) { f.repo.Write("src/a.txt", "mine\n") },
			func() proposal.Args { return &proposal.DiscardArgs{Paths: []string{"src"}, Untracked: true} },
			func(f *fixture) { f.repo.Write("src/fresh.txt", "written after\n") }, "src/fresh.txt"},
		{"reset hard/delete", func(f *fixture) { f.repo.WriteCommit("c.txt", "c\n", "c") },
			func() proposal.Args { return &proposal.ResetArgs{Mode: proposal.ResetHard, Target: "HEAD~1"} },
			func(f *fixture) { os.Remove(filepath.Join(f.repo.Dir, "src/b.txt")) }, "src/b.txt"},
		{"reset hard/edit", func(f *fixture) { f.repo.WriteCommit("c.txt", "c\n", "c") },
			func() proposal.Args { return &proposal.ResetArgs{Mode: proposal.ResetHard, Target: "HEAD~1"} },
			func(f *fixture) { f.repo.Write("README.md", "edited after\n") }, "README.md"},
		{"patch/edit", func(f *fixture) {},
			func() proposal.Args { return &proposal.PatchArgs{Patch: addNewPatch, Target: proposal.PatchWorktree} },
			func(f *fixture) { f.repo.Write("src/a.txt", "a1\na2\na3\nmine\n") }, "src/a.txt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			c.setup(f)
			rec := f.propose(c.args())
			c.change(f)
			before := repoState(t, f.repo.Dir)
			out, err := f.execute(rec)
			if !errors.Is(err, ErrStaleBase) || out.State != proposal.Failed {
				t.Fatalf("state %s err %v: want stale_base", out.State, err)
			}
			data, _ := dataOf(err).(map[string]any)
			if changed, _ := data["changed"].([]string); !slices.Contains(changed, c.path) {
				t.Errorf("changed %v: want %s named", data, c.path)
			}
			if after := repoState(t, f.repo.Dir); after != before {
				t.Errorf("the repository changed:\n%s", diffState(before, after))
			}
			if out.Outcome.RestorePoint != "" {
				t.Errorf("nothing ran, yet restore point %q was kept", out.Outcome.RestorePoint)
			}
			// Preflight says so before anyone decides.
			pf, err := f.e.Preflight(testCtx(t), rec.Proposal)
			if err != nil || !pf.Stale || !slices.Contains(pf.Changed, c.path) {
				t.Errorf("preflight %+v %v", pf, err)
			}
		})
	}
}

// TestSeal_Patch_DoesNotApply_RefusedWithHunk: a patch that does not apply
// to the files as they are is refused to the agent at once, with git's
// reason, and nothing is left behind.
func TestSeal_Patch_DoesNotApply_RefusedWithHunk(t *testing.T) {
	f := newFixture(t)
	f.repo.Write("src/a.txt", "something else entirely\n")
	err := f.refuseAtSeal(&proposal.PatchArgs{Patch: addNewPatch, Target: proposal.PatchWorktree}, &errcode.Error{Code: errcode.PatchDoesNotApply})
	if !strings.Contains(err.Error(), "src/a.txt") {
		t.Errorf("the refusal does not name the failing file: %v", err)
	}
}

// TestSeal_Push_ListsCommitsToSend: a push card lists the commits the
// remote receives (git's own count), and a forced one the commits it loses.
func TestSeal_Push_ListsCommitsToSend(t *testing.T) {
	f := newFixture(t)
	f.remote()
	f.git("fetch", "-q", "origin")
	for i := 0; i < 3; i++ {
		f.repo.WriteCommit("p.txt", strconv.Itoa(i)+"\n", "local "+strconv.Itoa(i))
	}
	rec := f.propose(&proposal.PushArgs{Remote: "origin", Branch: "main"})
	s := rec.Proposal.Sealed
	want := splitLines(f.git("rev-list", "origin/main..main"))
	if s.Commits == nil || s.Commits.Count != len(want) || s.Commits.Commits[0].SHA != want[0] || s.Lost != nil {
		t.Fatalf("commits to send %+v, git says %q", s.Commits, want)
	}
	f.mustComplete(rec)

	f.rewrite()
	f.git("fetch", "-q", "origin")
	forced := f.propose(&proposal.PushArgs{Remote: "origin", Branch: "main", ForceWithLease: true})
	lost := splitLines(f.git("rev-list", "main..origin/main"))
	if s := forced.Proposal.Sealed; s.Lost == nil || s.Lost.Count != len(lost) || s.Lost.Commits[0].SHA != lost[0] {
		t.Fatalf("forced push losses %+v, git says %q", s.Lost, lost)
	}
}

// TestSeal_Merge_CommitsBroughtIn_AndTreeLands: a merge's card lists the
// commits it brings in, and the merge commit has the sealed tree.
func TestSeal_Merge_CommitsBroughtIn_AndTreeLands(t *testing.T) {
	f := newFixture(t)
	f.diverge()
	rec := f.propose(&proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit})
	s := rec.Proposal.Sealed
	if s.Commits == nil || s.Commits.Count != 2 || s.FastForward {
		t.Fatalf("incoming %+v ff %v", s.Commits, s.FastForward)
	}
	f.mustComplete(rec)
	if got := f.git("rev-parse", "main^{tree}"); got != s.After {
		t.Errorf("main's tree %s, sealed %s", got, s.After)
	}
}

// TestSeal_Keep_RefHoldsTheTrees: the sealed ref keeps every sealed tree
// reachable, and a proposal whose objects are gone does not run.
func TestSeal_Keep_RefHoldsTheTrees(t *testing.T) {
	f := newFixture(t)
	f.repo.Write("src/a.txt", "changed\n")
	rec := f.propose(&proposal.CommitArgs{Message: "a", Paths: []string{"src/a.txt"}})
	s := rec.Proposal.Sealed
	ref := proposal.SealedRef(rec.Proposal.ID)
	trees := f.git("ls-tree", ref)
	if !strings.Contains(trees, s.Before) || !strings.Contains(trees, s.After) {
		t.Errorf("%s holds %q", ref, trees)
	}
	// Keep again (as at start-up): nothing changes.
	c := f.git("rev-parse", ref)
	if err := f.e.Keep(testCtx(t), rec.Proposal); err != nil || f.git("rev-parse", ref) != c {
		t.Errorf("keeping again: %v", err)
	}
}

// TestSeal_Plan_StepsOnEarlierSteps: a plan's later step is sealed on
// the files the earlier one leaves: two patches to the same file, then a
// discard of another; the card's outcome of each step is exactly what
// each does, and the plan lands.
func TestSeal_Plan_StepsOnEarlierSteps(t *testing.T) {
	f := newFixture(t)
	f.repo.Write("src/b.txt", "b1\nmine, to be discarded\n")
	first := "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,3 +1,3 @@\n a1\n-a2\n+a2 once\n a3\n"
	second := "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,3 +1,3 @@\n a1\n-a2 once\n+a2 twice\n a3\n"
	rec := f.propose(&proposal.PlanArgs{Steps: []proposal.PlanStep{
		{Op: proposal.OpPatch, Args: &proposal.PatchArgs{Patch: first, Target: proposal.PatchWorktree}},
		{Op: proposal.OpPatch, Args: &proposal.PatchArgs{Patch: second, Target: proposal.PatchWorktree}},
		{Op: proposal.OpDiscard, Args: &proposal.DiscardArgs{Paths: []string{"src/b.txt"}}},
	}})
	steps := rec.Proposal.Sealed.Steps
	if len(steps) != 3 || steps[1].Before != steps[0].After {
		t.Fatalf("the second patch is not sealed on the first's result: %+v", steps)
	}
	if got := paths(steps[2].Files); !slices.Equal(got, []string{"src/b.txt"}) || steps[2].Effect != proposal.EffectLoses {
		t.Errorf("the discard loses %q", got)
	}
	f.mustComplete(rec)
	if got := f.read("src/a.txt"); got != "a1\na2 twice\na3\n" {
		t.Errorf("a = %q", got)
	}
	if got := f.read("src/b.txt"); got != "b1\nb2\nb3\n" {
		t.Errorf("b = %q", got)
	}
}

// TestSeal_Commit_ManyFilesInOnePack: a commit of many files (stageAll, or
// a long path list) stores its blobs in one pack, not a loose object
// each, and seals exactly the tree git's own add writes for the same
// working tree, a file that git converts on the way in (line endings)
// and a file that stays loose (empty) among them.
func TestSeal_Commit_ManyFilesInOnePack(t *testing.T) {
	for _, stageAll := range []bool{true, false} {
		t.Run("stageAll="+strconv.FormatBool(stageAll), func(t *testing.T) {
			f := newFixture(t)
			f.repo.Write(".gitattributes", "*.crlf text eol=lf\n")
			f.repo.Commit("attributes")
			var paths []string
			for i := range 150 {
				p := fmt.Sprintf("gen/d%02d/f%03d.txt", i%10, i)
				f.repo.Write(p, fmt.Sprintf("file %d\n", i))
				paths = append(paths, p)
			}
			f.repo.Write("gen/dos.crlf", "one\r\ntwo\r\n")
			f.repo.Write("gen/empty.txt", "")
			paths = append(paths, "gen/dos.crlf", "gen/empty.txt")
			loose := func() int {
				for _, l := range splitLines(f.git("count-objects", "-v")) {
					if n, ok := strings.CutPrefix(l, "count: "); ok {
						c, _ := strconv.Atoi(n)
						return c
					}
				}
				t.Fatal("no count in count-objects")
				return 0
			}
			before := loose()
			args := &proposal.CommitArgs{Message: "Generate", Paths: paths}
			if stageAll {
				args = &proposal.CommitArgs{Message: "Generate", StageAll: true}
			}
			rec := f.propose(args)
			if grew := loose() - before; grew > 20 {
				t.Errorf("%d loose objects written for 152 files: the blobs are not in a pack", grew)
			}
			// The same working tree staged by git's own add, loose objects and all.
			idx := filepath.Join(t.TempDir(), "index")
			git := func(args ...string) string {
				cmd := exec.Command("git", args...)
				cmd.Dir = f.repo.Dir
				cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+idx)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
				return strings.TrimSpace(string(out))
			}
			git("read-tree", "HEAD")
			git("add", "--all")
			if want := git("write-tree"); rec.Proposal.Sealed.After != want {
				t.Fatalf("sealed tree %s, git's add writes %s", rec.Proposal.Sealed.After, want)
			}
			if got := f.git("show", rec.Proposal.Sealed.After+":gen/dos.crlf"); got != "one\ntwo" {
				t.Errorf("the converted file is stored as %q", got)
			}
			f.mustComplete(rec)
			if got := f.git("rev-parse", "HEAD^{tree}"); got != rec.Proposal.Sealed.After {
				t.Fatalf("landed tree %s, sealed %s", got, rec.Proposal.Sealed.After)
			}
		})
	}
}

// TestSeal_Commit_FewFilesLoose: a stageAll commit in a repository of a
// few files stages loose objects, as git's own add does, instead of
// writing (and syncing) a pack for them; its tree is written in the
// app's process. The sealed tree is the one git's own add -A and
// write-tree make of the same working tree (a new directory, an
// executable, a symlink and a removed file among the changes), and it
// lands.
func TestSeal_Commit_FewFilesLoose(t *testing.T) {
	f := newFixture(t)
	packs := func() int {
		m, _ := filepath.Glob(filepath.Join(f.repo.Dir, ".git", "objects", "pack", "*.pack"))
		return len(m)
	}
	before := packs()
	f.repo.Write("src/a.txt", "a1\nchanged\na3\n")
	f.repo.Write("new/dir/c.txt", "c\n")
	f.repo.Write("run.sh", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(f.repo.Dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src/b.txt", filepath.Join(f.repo.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(f.repo.Dir, "README.md")); err != nil {
		t.Fatal(err)
	}
	rec := f.propose(&proposal.CommitArgs{Message: "Few files", StageAll: true})
	if n := packs(); n != before {
		t.Errorf("%d packs after sealing 5 files, %d before: a few files are staged loose", n, before)
	}
	idx := filepath.Join(t.TempDir(), "index")
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = f.repo.Dir
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+idx)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("read-tree", "HEAD")
	git("add", "-A")
	if want := git("write-tree"); rec.Proposal.Sealed.After != want {
		t.Fatalf("sealed tree %s, git's add writes %s", rec.Proposal.Sealed.After, want)
	}
	if len(rec.Proposal.Sealed.Files) != 5 {
		t.Errorf("files %+v", rec.Proposal.Sealed.Files)
	}
	f.mustComplete(rec)
	if got := f.git("rev-parse", "HEAD^{tree}"); got != rec.Proposal.Sealed.After {
		t.Fatalf("landed tree %s, sealed %s", got, rec.Proposal.Sealed.After)
	}
}

// TestSeal_Unsealed_RefusedWhateverTheOperation: a proposal stored
// without a sealed outcome (none is: the app seals on arrival) has a
// blocker on its card and is refused by the executor, changing nothing,
// even for an operation that reads nothing of the working tree.
func TestSeal_Unsealed_RefusedWhateverTheOperation(t *testing.T) {
	f := newFixture(t)
	p := f.newProposal(f.repo.Dir, &proposal.BranchArgs{Name: "topic", StartPoint: "main"})
	if err := p.Seal(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.j.Submit(p); err != nil {
		t.Fatal(err)
	}
	pf, err := f.e.Preflight(testCtx(t), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(pf.Blockers) != 1 || !strings.Contains(pf.Blockers[0], "no sealed outcome") {
		t.Errorf("blockers %q: want the missing outcome named", pf.Blockers)
	}
	rec, err := f.j.Approve(p.ID, p.Digest, "pat", "")
	if err != nil {
		t.Fatal(err)
	}
	before := repoState(t, f.repo.Dir)
	out, _ := f.execute(rec)
	if out.State == proposal.Completed || out.Outcome == nil || out.Outcome.Code != errcode.Unsupported {
		t.Fatalf("executed an unsealed proposal: %s %+v", out.State, out.Outcome)
	}
	if after := repoState(t, f.repo.Dir); after != before {
		t.Errorf("the repository changed:\n%s", diffState(before, after))
	}
}
