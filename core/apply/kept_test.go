package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// sealedTrees are every tree of rec's sealed outcome.
func sealedTrees(rec journal.Record) []string {
	s := rec.Proposal.Sealed
	var out []string
	for _, x := range append([]proposal.Sealed{*s}, s.Steps...) {
		for _, t := range []string{x.Before, x.After} {
			if t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

// prune lets the person's own git collect everything no ref keeps.
func (f *fixture) prune() {
	f.t.Helper()
	f.git("-c", "gc.reflogExpire=now", "-c", "gc.reflogExpireUnreachable=now", "reflog", "expire", "--all")
	f.git("gc", "--prune=now", "--quiet")
}

// requireObjects fails unless every sealed tree of recs is in the
// repository.
func (f *fixture) requireObjects(recs ...journal.Record) {
	f.t.Helper()
	for _, rec := range recs {
		for _, t := range sealedTrees(rec) {
			if out, err := f.gitErr("cat-file", "-t", t); err != nil || out != "tree" {
				f.t.Errorf("proposal %s (%s): its sealed tree %s is gone", rec.Proposal.ID, rec.State, t)
			}
		}
	}
}

func (f *fixture) gitErr(args ...string) (string, error) {
	c := exec.Command("git", args...)
	c.Dir = f.repo.Dir
	out, err := c.Output()
	return strings.TrimSpace(string(out)), err
}

// sluiceRefs is what the person's for-each-ref lists of Sluice's refs.
func (f *fixture) sluiceRefs() []string {
	out := f.git("for-each-ref", "--format=%(refname)", "refs/sluice/")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// dropIDs is a drop callback that lets go of exactly ids.
func dropIDs(ids ...string) func([]string) (map[string]bool, error) {
	return func(all []string) (map[string]bool, error) {
		out := map[string]bool{}
		for _, id := range all {
			if slices.Contains(ids, id) {
				out[id] = true
			}
		}
		return out, nil
	}
}

// distinctCommit proposes a commit of a file no other proposal writes,
// so that its sealed tree is its own.
func (f *fixture) distinctCommit(i int) journal.Record {
	f.t.Helper()
	name := fmt.Sprintf("n%03d.txt", i)
	f.repo.Write(name, fmt.Sprintf("only in proposal %d\n", i))
	return f.submitPending(&proposal.CommitArgs{Message: name, Paths: []string{name}})
}

// TestTendSealed_FoldsRefs_KeepsPendingDropsOld: after 24 proposals and
// a tend, the person's for-each-ref lists one Sluice ref and `git log
// --all` one of Sluice's commits; after git's own gc every pending
// proposal's sealed trees are still there and those let go are not; a
// folded proposal still lands.
func TestTendSealed_FoldsRefs_KeepsPendingDropsOld(t *testing.T) {
	f := newFixture(t)
	var pending, old []journal.Record
	for i := range 24 {
		rec := f.distinctCommit(i)
		if i%3 == 0 {
			r, err := f.j.Reject(rec.Proposal.ID, "pat", "")
			if err != nil {
				t.Fatal(err)
			}
			old = append(old, r)
			continue
		}
		pending = append(pending, rec)
	}
	if n := len(f.sluiceRefs()); n != 24 {
		t.Fatalf("before the tend: %d Sluice refs, want one per proposal", n)
	}
	var ids []string
	for _, r := range old {
		ids = append(ids, r.Proposal.ID)
	}
	got, err := f.e.TendSealed(testCtx(t), f.repo.Dir, dropIDs(ids...))
	if err != nil {
		t.Fatal(err)
	}
	if got.Folded != len(pending) || got.Dropped != len(old) || got.Kept != len(pending) {
		t.Errorf("tend: %+v, want %d folded and kept, %d dropped", got, len(pending), len(old))
	}
	if refs := f.sluiceRefs(); !slices.Equal(refs, []string{keptRef}) {
		t.Errorf("Sluice refs after the tend: %q", refs)
	}
	if n := strings.Count(f.git("log", "--all", "--format=%an %s"), "Sluice "); n != 1 {
		t.Errorf("git log --all shows %d of Sluice's commits", n)
	}
	kept, err := f.e.SealedIDs(testCtx(t), f.repo.Dir)
	if err != nil || len(kept) != len(pending) {
		t.Fatalf("SealedIDs: %d ids, %v", len(kept), err)
	}
	f.prune()
	f.requireObjects(pending...)
	for _, r := range old {
		if _, err := f.gitErr("cat-file", "-e", r.Proposal.Sealed.After); err == nil {
			t.Errorf("rejected %s: its sealed tree is still kept", r.Proposal.ID)
		}
	}
	// A second tend changes nothing.
	before := f.git("rev-parse", keptRef)
	if _, err := f.e.TendSealed(testCtx(t), f.repo.Dir, dropIDs()); err != nil || f.git("rev-parse", keptRef) != before {
		t.Errorf("a tend with nothing to do moved %s: %v", keptRef, err)
	}
	approved, err := f.j.Approve(pending[0].Proposal.ID, pending[0].Proposal.Digest, "pat", "")
	if err != nil {
		t.Fatal(err)
	}
	f.mustComplete(approved)
}

// TestTendSealed_CrashBetweenSteps: a tend stopped after it read the refs,
// or after it wrote the kept ref but before it deleted the proposals'
// own, leaves every pending proposal's objects through git's gc; the next
// tend finishes the fold.
func TestTendSealed_CrashBetweenSteps(t *testing.T) {
	for _, step := range []string{"sealed-read", "sealed-folded"} {
		t.Run(step, func(t *testing.T) {
			f := newFixture(t)
			var recs []journal.Record
			for i := range 4 {
				recs = append(recs, f.distinctCommit(i))
			}
			// The first two were folded by an earlier tend.
			if _, err := f.e.TendSealed(testCtx(t), f.repo.Dir, dropIDs()); err != nil {
				t.Fatal(err)
			}
			for i := 4; i < 8; i++ {
				recs = append(recs, f.distinctCommit(i))
			}
			ctx, cancel := context.WithCancel(testCtx(t))
			f.e.beforeStep = func(s string) {
				if s == step {
					cancel() // the process stops here: no git runs after
				}
			}
			if _, err := f.e.TendSealed(ctx, f.repo.Dir, dropIDs()); err == nil {
				t.Fatal("the stopped tend finished")
			}
			f.e.beforeStep = nil
			f.prune()
			f.requireObjects(recs...)
			if _, err := f.e.TendSealed(testCtx(t), f.repo.Dir, dropIDs()); err != nil {
				t.Fatal(err)
			}
			if refs := f.sluiceRefs(); !slices.Equal(refs, []string{keptRef}) {
				t.Errorf("Sluice refs after the next tend: %q", refs)
			}
			f.prune()
			f.requireObjects(recs...)
		})
	}
}

// TestTendSealed_ResealedKeepsEveryOutcome: a proposal re-sealed after
// its objects were folded, and again before the next fold, keeps every
// outcome it was sealed with (the journal may name any until the
// re-sealing is recorded), and lands on the last.
func TestTendSealed_ResealedKeepsEveryOutcome(t *testing.T) {
	f := newFixture(t)
	f.repo.Write("CHANGELOG.md", "# Changes\n- one\n")
	f.repo.Write("LICENSE", "MIT\n")
	f.repo.Write("NOTICE", "notice\n")
	first := f.proposeIn(f.repo.Dir, &proposal.CommitArgs{Message: "Changelog", Paths: []string{"CHANGELOG.md"}})
	second := f.submitPending(&proposal.CommitArgs{Message: "License", Paths: []string{"LICENSE"}})
	if _, err := f.e.TendSealed(testCtx(t), f.repo.Dir, dropIDs()); err != nil {
		t.Fatal(err)
	}
	f.mustComplete(first)
	once := f.resealAndStore(second)
	f.git("add", "NOTICE")
	f.git("commit", "-q", "-m", "the person's own commit")
	twice := f.resealAndStore(once)
	if _, err := f.e.TendSealed(testCtx(t), f.repo.Dir, dropIDs()); err != nil {
		t.Fatal(err)
	}
	f.prune()
	f.requireObjects(second, once, twice)
	approved, err := f.j.Approve(twice.Proposal.ID, twice.Proposal.Digest, "pat", "")
	if err != nil {
		t.Fatal(err)
	}
	f.mustComplete(approved)
}

// TestUnseal_FoldedProposal: Unseal lets go of a folded proposal's
// objects and of nothing else; the last one let go removes the kept ref.
func TestUnseal_FoldedProposal(t *testing.T) {
	f := newFixture(t)
	a, b := f.distinctCommit(1), f.distinctCommit(2)
	if _, err := f.e.TendSealed(testCtx(t), f.repo.Dir, dropIDs()); err != nil {
		t.Fatal(err)
	}
	if err := f.e.Unseal(testCtx(t), f.repo.Dir, a.Proposal.ID); err != nil {
		t.Fatal(err)
	}
	if ids, err := f.e.SealedIDs(testCtx(t), f.repo.Dir); err != nil || !slices.Equal(ids, []string{b.Proposal.ID}) {
		t.Fatalf("after Unseal: %q %v", ids, err)
	}
	f.prune()
	f.requireObjects(b)
	if _, err := f.gitErr("cat-file", "-e", a.Proposal.Sealed.After); err == nil {
		t.Error("the let-go proposal's tree is still kept")
	}
	if err := f.e.Unseal(testCtx(t), f.repo.Dir, b.Proposal.ID); err != nil {
		t.Fatal(err)
	}
	if refs := f.sluiceRefs(); len(refs) != 0 {
		t.Errorf("Sluice refs with nothing kept: %q", refs)
	}
}

// TestKeep_TreeInProcess_SameAsMktree: the tree Keep writes in process is
// the one git mktree writes from the same trees (twelve of them, so that
// names past t09 are ordered as git orders them); a tree that is gone is
// left to mktree, which refuses it as before; and an existing sealed ref
// is seen in its loose file and in packed-refs.
func TestKeep_TreeInProcess_SameAsMktree(t *testing.T) {
	f := newFixture(t)
	rc, err := f.e.openRepo(context.Background(), f.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var trees []string
	var in strings.Builder
	for i := range 12 {
		blob := f.gitStdin(fmt.Sprintf("content %d\n", i), "hash-object", "-w", "--stdin")
		tree := f.gitStdin(fmt.Sprintf("100644 blob %s\tf%d\n", blob, i), "mktree")
		trees = append(trees, tree)
		fmt.Fprintf(&in, "040000 tree %s\tt%02d\n", tree, i)
	}
	got, ok := rc.writeKeptTree(trees)
	if !ok {
		t.Fatal("the tree was not written in process")
	}
	if want := f.gitStdin(in.String(), "mktree"); got != want {
		t.Fatalf("in process %s, git mktree %s", got, want)
	}
	if typ := f.git("cat-file", "-t", got); typ != "tree" {
		t.Fatalf("%s is a %s", got, typ)
	}
	gone := strings.Repeat("e", 40)
	if _, ok := rc.writeKeptTree([]string{trees[0], gone}); ok {
		t.Fatal("a tree naming a missing tree was written in process")
	}
	if _, err := rc.keptTree(context.Background(), keptTrees(&proposal.Sealed{Before: trees[0], After: gone})); !errors.Is(err, ErrStaleBase) {
		t.Fatalf("a gone tree: %v", err)
	}

	f.repo.Write("x.txt", "x\n")
	rec := f.submitPending(&proposal.CommitArgs{Message: "x", Paths: []string{"x.txt"}})
	ref := proposal.SealedRef(rec.Proposal.ID)
	// The commit that keeps the objects is dated as the folded restore
	// points are: the person's git log --all shows their own commit first.
	if first, head := f.git("log", "--all", "-1", "--format=%H"), f.git("rev-parse", "HEAD"); first != head {
		t.Fatalf("git log --all shows %s first (%s), not HEAD %s", first, f.git("log", "-1", "--format=%s", first), head)
	}
	if date := f.git("log", "-1", "--format=%ct %at", ref); date != "1 1" {
		t.Fatalf("the sealed ref's commit is dated %q", date)
	}
	for _, state := range []string{"loose", "packed"} {
		if state == "packed" {
			f.git("pack-refs", "--all")
		}
		exists, known := gitx.RefInFiles(rc.repo.CommonDir, ref)
		if !exists || !known {
			t.Fatalf("%s: %s exists %v, known %v", state, ref, exists, known)
		}
		if exists, _ := gitx.RefInFiles(rc.repo.CommonDir, ref+"x"); exists {
			t.Fatalf("%s: a ref that is not there exists", state)
		}
	}
}

func (f *fixture) gitStdin(stdin string, args ...string) string {
	f.t.Helper()
	c := exec.Command("git", args...)
	c.Dir, c.Stdin = f.repo.Dir, strings.NewReader(stdin)
	out, err := c.Output()
	if err != nil {
		f.t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// TestSeal_Commit_RefusesFilteredPath: a commit of a path a git filter
// would transform is refused, whether the path is named or staged with
// everything, and whether the attribute is committed or only in the
// working tree's .gitattributes; the file list's own read of the
// attributes is what the refusal uses.
func TestSeal_Commit_RefusesFilteredPath(t *testing.T) {
	for _, tc := range []struct {
		name        string
		commitAttrs bool
		stageAll    bool
	}{
		{"named, committed attributes", true, false},
		{"all, committed attributes", true, true},
		{"named, attributes on disk only", false, false},
		{"all, attributes on disk only", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.commitAttrs {
				f.repo.WriteCommit(".gitattributes", "*.dat filter=lfs\n", "filter")
			} else {
				f.repo.Write(".gitattributes", "*.dat filter=lfs\n")
			}
			f.repo.Write("plain.txt", "plain\n")
			f.repo.Write("big.dat", "not really large\n")
			args := &proposal.CommitArgs{Message: "m", Paths: []string{"plain.txt", "big.dat"}}
			if tc.stageAll {
				args = &proposal.CommitArgs{Message: "m", StageAll: true}
			}
			_, err := f.e.Seal(testCtx(t), f.newProposal(f.repo.Dir, args))
			if !errors.Is(err, errcode.New(errcode.Unsupported, "")) || !strings.Contains(err.Error(), `big.dat uses the git filter "lfs"`) {
				t.Fatalf("seal: %v", err)
			}
		})
	}
}

// TestKeep_RefInProcess: keeping a sealed outcome writes its ref in this
// process where the refs are files (no git update-ref runs, the ref is
// the file git writes, it names a commit that holds the sealed trees);
// where git must write it (core.logAllRefUpdates=always, which keeps a
// reflog of every ref), git does, reflog included.
func TestKeep_RefInProcess(t *testing.T) {
	f := newFixture(t)
	log := filepath.Join(t.TempDir(), "git.log")
	wrapper := filepath.Join(t.TempDir(), "git")
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\necho \"$*\" >>"+log+"\nexec "+real+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	runner, err := gitx.NewRunner(gitx.RunnerOptions{GitPath: wrapper})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Options{Journal: f.j, Roots: gitx.Roots{f.root}, Runner: runner, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	keep := func(name string) (string, string) {
		t.Helper()
		f.repo.Write(name, name+"\n")
		p := f.sealFor(&proposal.CommitArgs{Message: name, Paths: []string{name}})
		if err := os.Remove(log); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if err := e.Keep(testCtx(t), p); err != nil {
			t.Fatalf("keep: %v", err)
		}
		ran, _ := os.ReadFile(log)
		ref := proposal.SealedRef(p.ID)
		for _, tree := range []string{p.Sealed.Before, p.Sealed.After} {
			if got := f.git("ls-tree", ref); !strings.Contains(got, tree) {
				t.Fatalf("%s does not keep %s:\n%s", ref, tree, got)
			}
		}
		return ref, string(ran)
	}
	ref, ran := keep("a.txt")
	if strings.Contains(ran, "update-ref") {
		t.Fatalf("git wrote the ref:\n%s", ran)
	}
	if b, err := os.ReadFile(filepath.Join(f.repo.Dir, ".git", filepath.FromSlash(ref))); err != nil || string(b) != f.git("rev-parse", ref)+"\n" {
		t.Fatalf("ref file %q (%v)", b, err)
	}
	f.git("config", "core.logAllRefUpdates", "always")
	ref, ran = keep("b.txt")
	if !strings.Contains(ran, "update-ref") {
		t.Fatalf("git did not write the ref:\n%s", ran)
	}
	if got := f.git("reflog", "show", "--format=%gs", ref); got != "sluice: seal" {
		t.Fatalf("reflog of %s: %q", ref, got)
	}
}

// TestKeep_StaleLockOfACrash: a lock of the sealed ref left by a crash
// (older than the process) no longer refuses the ref at every start: Keep
// removes it and writes the ref; a lock made now is left to its writer.
func TestKeep_StaleLockOfACrash(t *testing.T) {
	f := newFixture(t)
	e := f.e
	f.repo.Write("a.txt", "a\n")
	p := f.sealFor(&proposal.CommitArgs{Message: "a", Paths: []string{"a.txt"}})
	ref := proposal.SealedRef(p.ID)
	lock := filepath.Join(f.repo.Dir, ".git", filepath.FromSlash(ref)) + ".lock"
	if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A lock made by this process's time: another writer's, left alone.
	if err := e.Keep(testCtx(t), p); err == nil {
		t.Fatalf("keep wrote the ref past a lock made now")
	}
	old := processStart.Add(-time.Hour)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	if err := e.Keep(testCtx(t), p); err != nil {
		t.Fatalf("keep past a stale lock: %v", err)
	}
	if got := f.git("ls-tree", ref); !strings.Contains(got, p.Sealed.After) {
		t.Fatalf("%s does not keep the outcome:\n%s", ref, got)
	}
	if _, err := os.Lstat(lock); err == nil {
		t.Fatalf("the stale lock is still there")
	}
}
