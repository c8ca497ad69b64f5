package apply

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// opCase is one operation: how to set the repository up and what to
// propose, how the person moves the base under it, and what the result
// must be.
type opCase struct {
	name  string
	setup func(f *fixture) proposal.Args
	move  func(f *fixture)
	check func(t *testing.T, f *fixture, rec journal.Record)
	// restoreIn is the repository whose restore point brings the state
	// back (default: the fixture's repository); dirs are the repositories
	// whose state must come back.
	restoreIn func(f *fixture) string
	dirs      func(f *fixture) []string
}

// diverge makes feature (two commits: feature.txt, and a change to
// src/a.txt) and one more commit on main (src/b.txt); main stays checked
// out.
func (f *fixture) diverge() {
	f.git("checkout", "-q", "-b", "feature")
	f.repo.WriteCommit("feature.txt", "feature\n", "feat: add feature.txt")
	f.repo.WriteCommit("src/a.txt", "A1\na2\na3\n", "feat: change a")
	f.git("checkout", "-q", "main")
	f.repo.WriteCommit("src/b.txt", "b1\nb2\nB3\n", "fix: change b")
}

// moveMain is the person committing on main meanwhile.
func moveMain(f *fixture) { f.git("commit", "-q", "--allow-empty", "-m", "the person moves main") }

func (f *fixture) read(rel string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.repo.Dir, filepath.FromSlash(rel)))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func (f *fixture) status() string { return f.git("status", "--porcelain") }

const addNewPatch = `diff --git a/src/a.txt b/src/a.txt
--- a/src/a.txt
+++ b/src/a.txt
@@ -1,3 +1,3 @@
 a1
-a2
+patched
 a3
diff --git a/src/new.txt b/src/new.txt
new file mode 100644
--- /dev/null
+++ b/src/new.txt
@@ -0,0 +1 @@
+new
`

// submoduleFixture adds mods/lib (a repository with two commits) and
// leaves its checkout one commit behind what the superproject records.
func (f *fixture) submodule() string {
	lib := gitxtest.InitAt(f.t, filepath.Join(f.root, "lib"))
	lib.WriteCommit("lib.txt", "v1\n", "lib v1")
	lib.WriteCommit("lib.txt", "v2\n", "lib v2")
	f.git("submodule", "add", "-q", lib.Dir, "mods/lib")
	f.repo.Commit("add lib")
	sub := filepath.Join(f.repo.Dir, "mods", "lib")
	f.gitIn(sub, "checkout", "-q", "HEAD~1")
	return sub
}

func opCases() []opCase {
	sub := func(f *fixture) string { return filepath.Join(f.repo.Dir, "mods", "lib") }
	return []opCase{
		{
			name: "merge",
			setup: func(f *fixture) proposal.Args {
				f.diverge()
				return &proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit}
			},
			move: moveMain,
			check: func(t *testing.T, f *fixture, rec journal.Record) {
				parents := strings.Fields(f.git("rev-list", "--parents", "-n1", "main"))
				if len(parents) != 3 || parents[2] != f.git("rev-parse", "feature") {
					t.Errorf("main is not a merge of feature: %v", parents)
				}
				msg := f.git("log", "-1", "--format=%B", "main")
				if !strings.Contains(msg, "Sluice-Proposal: "+rec.Proposal.ID) || !strings.Contains(msg, "Sluice-Approved-Digest: "+proposal.ShortDigest(rec.Proposal.Digest)) {
					t.Errorf("merge commit has no trailers: %q", msg)
				}
				if a := f.git("log", "-1", "--format=%an <%ae>", "main"); a != "Pat Person <pat@example.com>" {
					t.Errorf("merge commit author %q, want the person", a)
				}
				if f.read("feature.txt") != "feature\n" || f.read("src/b.txt") != "b1\nb2\nB3\n" || f.status() != "" {
					t.Errorf("the checkout did not follow: feature.txt %q, status %q", f.read("feature.txt"), f.status())
				}
			},
		},
		{
			name: "merge_fast_forward",
			setup: func(f *fixture) proposal.Args {
				f.git("checkout", "-q", "-b", "feature")
				f.repo.WriteCommit("feature.txt", "feature\n", "feat: add feature.txt")
				f.git("checkout", "-q", "main")
				return &proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit}
			},
			move: moveMain,
			check: func(t *testing.T, f *fixture, _ journal.Record) {
				if f.git("rev-parse", "main") != f.git("rev-parse", "feature") || f.read("feature.txt") != "feature\n" || f.status() != "" {
					t.Errorf("main was not fast-forwarded with its checkout")
				}
			},
		},
		{
			name: "merge_squash_not_checked_out",
			setup: func(f *fixture) proposal.Args {
				f.diverge()
				f.git("branch", "release", "main")
				return &proposal.MergeArgs{Source: "feature", Target: "release", Strategy: proposal.MergeSquash}
			},
			move: func(f *fixture) { f.git("branch", "-f", "feature", "main") },
			check: func(t *testing.T, f *fixture, _ journal.Record) {
				parents := strings.Fields(f.git("rev-list", "--parents", "-n1", "release"))
				if len(parents) != 2 || parents[1] != f.git("rev-parse", "main") {
					t.Errorf("release is not one squash commit on main: %v", parents)
				}
				if got := f.git("show", "release:feature.txt"); got != "feature" {
					t.Errorf("release lacks feature.txt: %q", got)
				}
				if f.read("feature.txt") != "<open "+filepath.Join(f.repo.Dir, "feature.txt")+": no such file or directory>" {
					t.Errorf("the checkout of main changed")
				}
			},
		},
		{
			name: "rebase",
			setup: func(f *fixture) proposal.Args {
				f.diverge()
				return &proposal.RebaseArgs{Branch: "feature", Onto: "main"}
			},
			move: moveMain,
			check: func(t *testing.T, f *fixture, _ journal.Record) {
				if f.git("rev-parse", "feature~2") != f.git("rev-parse", "main") {
					t.Errorf("feature was not replayed onto main")
				}
				if f.git("log", "-1", "--format=%cn", "feature") != "Pat Person" {
					t.Errorf("the replayed commits are not the person's")
				}
			},
		},
		{
			name: "rebase_checked_out",
			setup: func(f *fixture) proposal.Args {
				f.diverge()
				f.git("checkout", "-q", "feature")
				return &proposal.RebaseArgs{Branch: "feature", Onto: "main"}
			},
			move: moveMain,
			check: func(t *testing.T, f *fixture, _ journal.Record) {
				if f.git("rev-parse", "feature~2") != f.git("rev-parse", "main") || f.git("symbolic-ref", "HEAD") != "refs/heads/feature" {
					t.Errorf("feature was not replayed onto main")
				}
				if f.read("src/b.txt") != "b1\nb2\nB3\n" || f.read("src/a.txt") != "A1\na2\na3\n" || f.status() != "" {
					t.Errorf("the checkout did not follow the rebase: status %q", f.status())
				}
			},
		},
		{
			name: "discard",
			setup: func(f *fixture) proposal.Args {
				f.repo.Write("src/a.txt", "changed\n")
				f.repo.Write("src/b.txt", "staged\n")
				f.git("add", "src/b.txt")
				f.repo.Write("untracked.txt", "u\n")
				return &proposal.DiscardArgs{Paths: []string{"."}, Untracked: true, Branch: "main"}
			},
			move: moveMain,
			check: func(t *testing.T, f *fixture, _ journal.Record) {
				if f.status() != "" || f.read("src/a.txt") != "a1\na2\na3\n" {
					t.Errorf("changes were not discarded: %q", f.status())
				}
			},
		},
		{
			name:  "reset_soft",
			setup: resetSetup(proposal.ResetSoft),
			move:  moveMain,
			check: func(t *testing.T, f *fixture, _ journal.Record) {
				if f.git("rev-parse", "main") != f.git("rev-parse", "base") || f.git("diff", "--cached", "--name-only") != "src/a.txt" {
					t.Errorf("soft reset: main %s, staged %q", f.git("rev-parse", "main"), f.git("diff", "--cached", "--name-only"))
				}
			},
		},
		{
			name:  "reset_mixed",
			setup: resetSetup(proposal.ResetMixed),
			move:  moveMain,
			check: func(t *testing.T, f *fixture, _ journal.Record) {
				if f.git("rev-parse", "main") != f.git("rev-parse", "base") || f.git("diff", "--cached", "--name-only") != "" ||
					!strings.Contains(f.git("diff", "--name-only"), "src/a.txt") {
					t.Errorf("mixed reset: status %q", f.status())
				}
			},
		},
		{
			name:  "reset_hard",
			setup: resetSetup(proposal.ResetHard),
			move:  moveMain,
			check: func(t *testing.T, f *fixture, _ journal.Record) {
				if f.git("rev-parse", "main") != f.git("rev-parse", "base") || f.status() != "" || f.read("src/a.txt") != "a1\na2\na3\n" {
					t.Errorf("hard reset: status %q", f.status())
				}
			},
		},
		{
			name: "patch_worktree",
			setup: func(*fixture) proposal.Args {
				return &proposal.PatchArgs{Patch: addNewPatch, Target: proposal.PatchWorktree, Branch: "main"}
			},
			move: moveMain,
			check: func(t *testing.T, f *fixture, _ journal.Record) {
				if f.read("src/a.txt") != "a1\npatched\na3\n" || f.read("src/new.txt") != "new\n" || f.git("diff", "--cached", "--name-only") != "" {
					t.Errorf("patch not applied to the files only: status %q", f.status())
				}
			},
		},
		{
			name: "patch_index",
			setup: func(*fixture) proposal.Args {
				return &proposal.PatchArgs{Patch: addNewPatch, Target: proposal.PatchIndex}
			},
			move: moveMain,
			check: func(t *testing.T, f *fixture, _ journal.Record) {
				if f.read("src/a.txt") != "a1\na2\na3\n" || f.git("diff", "--cached", "--name-only") != "src/a.txt\nsrc/new.txt" {
					t.Errorf("patch not applied to the index only: status %q", f.status())
				}
			},
		},
		{
			name: "plan",
			setup: func(f *fixture) proposal.Args {
				f.diverge()
				return &proposal.PlanArgs{Steps: []proposal.PlanStep{
					{Op: proposal.OpMerge, Args: &proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit}},
					{Op: proposal.OpPatch, Args: &proposal.PatchArgs{Patch: readmePatch, Target: proposal.PatchWorktree}},
				}}
			},
			move: moveMain,
			check: func(t *testing.T, f *fixture, _ journal.Record) {
				if len(strings.Fields(f.git("rev-list", "--parents", "-n1", "main"))) != 3 || f.read("README.md") != "# demo, planned\n" {
					t.Errorf("plan: main %q, README %q", f.git("log", "--oneline", "-3"), f.read("README.md"))
				}
			},
		},
		{
			name: "worktree_new_branch",
			setup: func(f *fixture) proposal.Args {
				return &proposal.WorktreeArgs{Path: filepath.Join(f.root, "wt"), Branch: "topic", NewBranch: true, StartPoint: "HEAD"}
			},
			move: moveMain,
			check: func(t *testing.T, f *fixture, _ journal.Record) {
				wt := filepath.Join(f.root, "wt")
				if f.gitIn(wt, "symbolic-ref", "HEAD") != "refs/heads/topic" || f.git("rev-parse", "topic") != f.git("rev-parse", "main") {
					t.Errorf("worktree not on a new topic branch")
				}
			},
		},
		{
			name: "worktree_existing_branch",
			setup: func(f *fixture) proposal.Args {
				f.git("branch", "topic")
				return &proposal.WorktreeArgs{Path: filepath.Join(f.root, "wt"), Branch: "topic"}
			},
			move: func(f *fixture) { moveMain(f); f.git("branch", "-f", "topic", "main") },
			check: func(t *testing.T, f *fixture, _ journal.Record) {
				if f.gitIn(filepath.Join(f.root, "wt"), "symbolic-ref", "HEAD") != "refs/heads/topic" {
					t.Errorf("worktree not on topic")
				}
			},
		},
		{
			name: "commit_paths",
			setup: func(f *fixture) proposal.Args {
				f.repo.Write("src/a.txt", "committed\n")
				f.repo.Write("src/new.txt", "new\n")
				f.repo.Write("src/b.txt", "left alone\n")
				return &proposal.CommitArgs{Message: "Update a and add new", Paths: []string{"src/a.txt", "src/new.txt"}, Branch: "main"}
			},
			move: moveMain,
			check: func(t *testing.T, f *fixture, rec journal.Record) {
				if got := f.git("diff-tree", "--no-commit-id", "--name-only", "-r", "HEAD"); got != "src/a.txt\nsrc/new.txt" {
					t.Errorf("committed %q", got)
				}
				msg := f.git("log", "-1", "--format=%B")
				if !strings.HasPrefix(msg, "Update a and add new\n\nSluice-Proposal: "+rec.Proposal.ID+"\nSluice-Approved-Digest: ") {
					t.Errorf("message %q", msg)
				}
				if f.git("log", "-1", "--format=%an %ae|%cn") != "Pat Person pat@example.com|Pat Person" {
					t.Errorf("the commit is not the person's: %s", f.git("log", "-1", "--format=%an %ae|%cn"))
				}
				if f.status() != "M src/b.txt" {
					t.Errorf("status after commit %q", f.status())
				}
			},
		},
		{
			name: "commit_stage_all",
			setup: func(f *fixture) proposal.Args {
				f.repo.Write("src/a.txt", "committed\n")
				f.repo.Write("src/new.txt", "new\n")
				f.git("rm", "-q", "src/b.txt")
				return &proposal.CommitArgs{Message: "Everything", StageAll: true}
			},
			move: moveMain,
			check: func(t *testing.T, f *fixture, _ journal.Record) {
				if f.status() != "" || f.git("diff-tree", "--no-commit-id", "--name-only", "-r", "HEAD") != "src/a.txt\nsrc/b.txt\nsrc/new.txt" {
					t.Errorf("stage all: status %q", f.status())
				}
			},
		},
		{
			name: "push",
			setup: func(f *fixture) proposal.Args {
				f.remote()
				f.repo.WriteCommit("pushed.txt", "p\n", "to push")
				return &proposal.PushArgs{Remote: "origin", Branch: "main"}
			},
			move: moveMain,
			check: func(t *testing.T, f *fixture, _ journal.Record) {
				if f.gitIn(filepath.Join(f.root, "remote.git"), "rev-parse", "main") != f.git("rev-parse", "main") ||
					f.git("rev-parse", "origin/main") != f.git("rev-parse", "main") {
					t.Errorf("push did not reach the remote")
				}
			},
		},
		{
			name: "branch",
			setup: func(*fixture) proposal.Args {
				return &proposal.BranchArgs{Name: "topic", StartPoint: "main"}
			},
			move: moveMain,
			check: func(t *testing.T, f *fixture, rec journal.Record) {
				if f.git("rev-parse", "topic") != rec.Proposal.Pinned.Refs["main"] {
					t.Errorf("topic not at the pinned main")
				}
			},
		},
		{
			name: "branch_delete",
			setup: func(f *fixture) proposal.Args {
				f.git("branch", "done")
				f.git("config", "branch.done.description", "finished work")
				return &proposal.BranchDeleteArgs{Branches: []string{"done"}}
			},
			move: func(f *fixture) { moveMain(f); f.git("branch", "-f", "done", "main") },
			check: func(t *testing.T, f *fixture, _ journal.Record) {
				if _, err := gitxtest.GitErr(f.t, f.repo.Dir, "rev-parse", "--verify", "-q", "refs/heads/done"); err == nil {
					t.Errorf("done still exists")
				}
				if cfg, _ := gitxtest.GitErr(f.t, f.repo.Dir, "config", "--get", "branch.done.description"); cfg != "" {
					t.Errorf("its configuration was kept: %q", cfg)
				}
			},
		},
		{
			name: "submodule_record",
			setup: func(f *fixture) proposal.Args {
				f.submodule()
				return &proposal.SubmodulePointerArgs{Path: "mods/lib", Action: proposal.SubmoduleRecord}
			},
			move: func(f *fixture) { f.gitIn(filepath.Join(f.repo.Dir, "mods", "lib"), "checkout", "-q", "main") },
			check: func(t *testing.T, f *fixture, _ journal.Record) {
				subHead := f.gitIn(filepath.Join(f.repo.Dir, "mods", "lib"), "rev-parse", "HEAD")
				if got := f.git("rev-parse", "HEAD:mods/lib"); got != subHead {
					t.Errorf("recorded pointer %s, submodule at %s", got, subHead)
				}
				if got := f.git("diff-tree", "--no-commit-id", "--name-only", "-r", "HEAD"); got != "mods/lib" {
					t.Errorf("the commit changed %q, not only the gitlink", got)
				}
			},
		},
		{
			name: "submodule_return",
			setup: func(f *fixture) proposal.Args {
				f.submodule()
				return &proposal.SubmodulePointerArgs{Path: "mods/lib", Action: proposal.SubmoduleReturn}
			},
			move: func(f *fixture) { f.gitIn(filepath.Join(f.repo.Dir, "mods", "lib"), "checkout", "-q", "main") },
			check: func(t *testing.T, f *fixture, _ journal.Record) {
				s := filepath.Join(f.repo.Dir, "mods", "lib")
				if f.gitIn(s, "rev-parse", "HEAD") != f.git("rev-parse", "HEAD:mods/lib") {
					t.Errorf("the submodule is not at the recorded commit")
				}
				if _, err := gitxtest.GitErr(f.t, s, "symbolic-ref", "-q", "HEAD"); err == nil {
					t.Errorf("the submodule is not detached")
				}
				if b, _ := os.ReadFile(filepath.Join(s, "lib.txt")); string(b) != "v2\n" {
					t.Errorf("the submodule's files did not follow: %q", b)
				}
			},
			restoreIn: sub,
			dirs:      func(f *fixture) []string { return []string{sub(f)} },
		},
	}
}

const readmePatch = `--- a/README.md
+++ b/README.md
@@ -1 +1 @@
-# demo
+# demo, planned
`

// resetSetup adds a second commit on main (tagged base marks the first)
// and, for a hard reset, an uncommitted change it will throw away.
func resetSetup(mode proposal.ResetMode) func(f *fixture) proposal.Args {
	return func(f *fixture) proposal.Args {
		f.git("tag", "base")
		f.repo.WriteCommit("src/a.txt", "second\n", "second commit")
		if mode == proposal.ResetHard {
			f.repo.Write("src/b.txt", "uncommitted\n")
		}
		return &proposal.ResetArgs{Mode: mode, Target: "HEAD~1", Branch: "main"}
	}
}

// remote creates a bare repository at root/remote.git as origin (a
// file:// URL), with main pushed.
func (f *fixture) remote() string {
	bare := filepath.Join(f.root, "remote.git")
	f.gitIn(f.root, "init", "-q", "--bare", bare)
	f.git("remote", "add", "origin", "file://"+bare)
	f.git("push", "-q", "origin", "main")
	return bare
}

func (c opCase) states(t *testing.T, f *fixture) string {
	s := repoState(t, f.repo.Dir)
	if c.dirs != nil {
		for _, d := range c.dirs(f) {
			s += "\n== " + d + "\n" + repoState(t, d)
		}
	}
	return s
}

// TestOps_HappyPath_AndRestore runs every operation on a real repository,
// checks its result and its audit trail, then restores its restore point
// and checks the repository is as it was before.
func TestOps_HappyPath_AndRestore(t *testing.T) {
	for _, c := range opCases() {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			args := c.setup(f)
			before := c.states(t, f)
			rec := f.propose(args)
			done := f.mustComplete(rec)
			c.check(t, f, done)
			if done.Outcome == nil || done.Outcome.RestorePoint != rec.Proposal.ID || done.Outcome.Message == "" {
				t.Fatalf("outcome %+v: want the restore point and a summary", done.Outcome)
			}
			types := f.rec.types(t)
			if n := len(types); n < 2 || types[n-2] != journal.EventExecuting || types[n-1] != journal.EventCompleted {
				t.Errorf("audit trail ends %v, want executing then completed", types)
			}
			dir := f.repo.Dir
			if c.restoreIn != nil {
				dir = c.restoreIn(f)
			}
			res, err := f.e.Restore(testCtx(t), dir, done.Outcome.RestorePoint, false)
			if err != nil {
				t.Fatalf("restore: %v (%+v)", err, dataOf(err))
			}
			if res.UndoPoint == "" || res.RestorePoint != rec.Proposal.ID {
				t.Errorf("restore result %+v", res)
			}
			if after := c.states(t, f); after != before {
				t.Errorf("after the restore the repository differs from before the operation:\n%s", diffState(before, after))
			}
		})
	}
}

func dataOf(err error) any {
	var e *errcode.Error
	if errors.As(err, &e) {
		return e.Data
	}
	return nil
}

// TestOps_StaleBase_NothingChanges moves the base of every operation
// after approval: the execution fails with stale_base naming the current
// SHAs, and not one byte of the repository changes.
func TestOps_StaleBase_NothingChanges(t *testing.T) {
	for _, c := range opCases() {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			args := c.setup(f)
			rec := f.propose(args)
			c.move(f)
			dirs := []string{f.root}
			snaps := map[string]map[string]string{}
			for _, d := range dirs {
				snaps[d] = gitxtest.Snapshot(t, d)
			}
			out, err := f.execute(rec)
			if !errors.Is(err, ErrStaleBase) || out.State != proposal.Failed || outcomeCode(out) != errcode.StaleBase {
				t.Fatalf("state %s, code %s, err %v: want failed with stale_base", out.State, outcomeCode(out), err)
			}
			data, _ := dataOf(err).(map[string]string)
			if len(data) == 0 {
				t.Errorf("stale_base carries no current SHAs: %#v", dataOf(err))
			}
			if out.Outcome.RestorePoint != "" {
				t.Errorf("a restore point was kept: %q", out.Outcome.RestorePoint)
			}
			for _, d := range dirs {
				requireSame(t, snaps[d], gitxtest.Snapshot(t, d))
			}
		})
	}
}

// TestOps_DigestMismatch_Refused alters every kind of proposal after its
// approval: it is refused, failed, and nothing runs.
func TestOps_DigestMismatch_Refused(t *testing.T) {
	for _, c := range opCases() {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			args := c.setup(f)
			rec := f.propose(args)
			f.tamper(rec.Proposal.ID, func(r *journal.Record) { r.Proposal.Reason = "something else entirely" })
			before := gitxtest.Snapshot(t, f.root)
			out, err := f.execute(rec)
			if !errors.Is(err, ErrDigestMismatch) || out.State != proposal.Failed || outcomeCode(out) != errcode.DigestMismatch {
				t.Fatalf("state %s, code %s, err %v: want failed with digest_mismatch", out.State, outcomeCode(out), err)
			}
			requireSame(t, before, gitxtest.Snapshot(t, f.root))
			types := f.rec.types(t)
			for _, ty := range types {
				if ty == journal.EventExecuting {
					t.Errorf("a tampered proposal reached executing: %v", types)
				}
			}
		})
	}
}

// A hard reset to a commit that tracks a file the person now keeps
// ignored (a .env) would overwrite it, and no restore point holds ignored
// files: refused, nothing changed. An untracked file in the same place is
// fine: the restore point holds it.
func TestReset_Hard_IgnoredInTheWay_Refused(t *testing.T) {
	f := newFixture(t)
	f.repo.WriteCommit(".env", "TOKEN=committed\n", "track .env")
	f.git("rm", "-q", "--cached", ".env")
	f.repo.WriteCommit(".gitignore", ".env\n", "ignore .env")
	f.repo.Write(".env", "TOKEN=the-person's-own\n")
	f.refuseAtSeal(&proposal.ResetArgs{Mode: proposal.ResetHard, Target: "HEAD~1", Branch: "main"}, ErrDirtyWorktree, ".env")

	// Not ignored any more: the reset runs, and restoring brings the
	// person's file back from the restore point.
	f.git("rm", "-q", ".gitignore")
	f.git("commit", "-q", "-m", "stop ignoring .env")
	done := f.mustComplete(f.propose(&proposal.ResetArgs{Mode: proposal.ResetHard, Target: "HEAD~2", Branch: "main"}))
	if got := f.read(".env"); got != "TOKEN=committed\n" {
		t.Fatalf(".env after the reset: %q", got)
	}
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if got := f.read(".env"); got != "TOKEN=the-person's-own\n" {
		t.Errorf(".env after the restore: %q", got)
	}
}

// A patch whose lines all agree still applies: a rename, a creation and a
// deletion in one patch (the refusal of patches whose lines disagree is
// core/proposal's patchFiles).
func TestPatch_RenameCreateDelete(t *testing.T) {
	f := newFixture(t)
	patch := "diff --git a/src/b.txt b/src/moved.txt\nsimilarity index 100%\nrename from src/b.txt\nrename to src/moved.txt\n" +
		"diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+fresh\n" +
		"diff --git a/src/a.txt b/src/a.txt\ndeleted file mode 100644\n--- a/src/a.txt\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-a1\n-a2\n-a3\n"
	f.mustComplete(f.propose(&proposal.PatchArgs{Patch: patch, Target: proposal.PatchWorktree}))
	for name, want := range map[string]string{"src/moved.txt": "b1\nb2\nb3\n", "new.txt": "fresh\n", "src/a.txt": "", "src/b.txt": ""} {
		b, err := os.ReadFile(filepath.Join(f.repo.Dir, name))
		if want == "" {
			if !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: want it gone, got %q, %v", name, b, err)
			}
			continue
		}
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
}
