package apply

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/proposal"
)

// errCode is the stable code of err, from either apply or gitx.
func errCode(err error) errcode.Code {
	if e, ok := errcode.As(err); ok {
		return e.Code
	}
	return ""
}

// TestWorktree_InGitDir_RefusedAtSeal is finding 1's attack: a repository
// made without a template has no hooks directory, and a worktree there
// would check a branch's executable pre-commit out as the repository's
// hook. The executor refuses it when it seals the outcome, and nothing is
// created.
func TestWorktree_InGitDir_RefusedAtSeal(t *testing.T) {
	f := newFixture(t, "--template=")
	for _, p := range []string{
		filepath.Join(f.repo.Dir, ".git", "hooks"),
		filepath.Join(f.repo.Dir, ".git", "refs", "wt"),
	} {
		f.refuseAtSeal(&proposal.WorktreeArgs{Path: p, Branch: "topic", NewBranch: true, StartPoint: "HEAD"}, &errcode.Error{Code: errcode.InvalidArgument})
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s was created", p)
		}
	}
	// A bare repository inside the roots is a git directory too.
	bare := filepath.Join(f.root, "store.git")
	gitxtest.Git(t, f.root, "init", "-q", "--bare", bare)
	f.refuseAtSeal(&proposal.WorktreeArgs{Path: filepath.Join(bare, "hooks2"), Branch: "topic", NewBranch: true, StartPoint: "HEAD"}, &errcode.Error{Code: errcode.InvalidArgument})
}

// TestWorktree_BecameNested_RefusedAtExecute: a worktree approved as
// nested in no working tree is refused when a repository appeared around
// its place after the card was shown; one approved as nested runs.
func TestWorktree_BecameNested_RefusedAtExecute(t *testing.T) {
	f := newFixture(t)
	around := filepath.Join(f.root, "around")
	if err := os.MkdirAll(around, 0o755); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(around, "wt")
	rec := f.propose(&proposal.WorktreeArgs{Path: wt, Branch: "topic", NewBranch: true, StartPoint: "HEAD"})
	gitxtest.InitAt(t, around)
	f.mustRefuseUnchanged(rec, &errcode.Error{Code: errcode.InvalidArgument})
	if _, err := os.Lstat(wt); err == nil {
		t.Fatalf("the worktree was added")
	}

	nested := filepath.Join(f.repo.Dir, "src", "wt")
	rec = f.propose(&proposal.WorktreeArgs{Path: nested, Branch: "topic2", NewBranch: true, StartPoint: "HEAD"}, func(p *proposal.Proposal) {
		p.Pinned.WorktreeNestedIn = f.repo.Dir
	})
	if rec.Proposal.Risk() != proposal.RiskHigh {
		t.Fatalf("nested worktree risk = %s", rec.Proposal.Risk())
	}
	f.mustComplete(rec)
	if f.gitIn(nested, "symbolic-ref", "HEAD") != "refs/heads/topic2" {
		t.Fatalf("nested worktree not on topic2")
	}
}

// TestSeal_GitFileOutsideRoots: a directory inside the roots whose .git
// file names a repository outside them is refused with path_outside_roots
// when sealed, and the outside repository gains nothing.
func TestSeal_GitFileOutsideRoots(t *testing.T) {
	f := newFixture(t)
	outside := gitxtest.InitAt(t, filepath.Join(t.TempDir(), "outside"))
	outside.WriteCommit("x", "x\n", "outside")
	local := filepath.Join(f.root, "looks-local")
	if err := os.MkdirAll(local, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(local, ".git"), []byte("gitdir: "+filepath.Join(outside.Dir, ".git")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := outside.Git("for-each-ref")
	p := f.newProposal(local, &proposal.BranchArgs{Name: "agent/b", StartPoint: "HEAD"})
	if _, err := f.e.Seal(testCtx(t), p); errCode(err) != "path_outside_roots" {
		t.Fatalf("seal = %v, want path_outside_roots", err)
	}
	if after := outside.Git("for-each-ref"); after != before {
		t.Fatalf("the outside repository's refs changed: %s", after)
	}
}

// TestExecute_GitDirMovedOutside: an approved proposal whose repository's
// git directory was moved out of the roots (a .git file left behind)
// before it ran is refused with path_outside_roots and moves nothing in
// the outside repository.
func TestExecute_GitDirMovedOutside(t *testing.T) {
	f := newFixture(t)
	rec := f.propose(&proposal.BranchArgs{Name: "agent/b", StartPoint: "HEAD"})
	moved := filepath.Join(t.TempDir(), "moved.git")
	if err := os.Rename(filepath.Join(f.repo.Dir, ".git"), moved); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.repo.Dir, ".git"), []byte("gitdir: "+moved+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := f.execute(rec)
	if errCode(err) != "path_outside_roots" || out.State == proposal.Completed {
		t.Fatalf("execute = %s, %v; want path_outside_roots", out.State, err)
	}
	if refs := gitxtest.Git(t, moved, "for-each-ref", "refs/heads/agent/", "refs/sluice/restore/"); refs != "" {
		t.Fatalf("the outside repository gained refs: %s", refs)
	}
}
