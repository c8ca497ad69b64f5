package apply

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/apply/seal"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// submitPending seals and stores a proposal for args as the app does on
// receipt, and leaves it pending.
func (f *fixture) submitPending(args proposal.Args) journal.Record {
	f.t.Helper()
	p := f.sealFor(args)
	if err := p.Seal(); err != nil {
		f.t.Fatal(err)
	}
	rec, _, err := f.j.Submit(p)
	if err != nil {
		f.t.Fatalf("submit: %v", err)
	}
	if err := f.e.Keep(testCtx(f.t), p); err != nil {
		f.t.Fatalf("keep: %v", err)
	}
	return rec
}

// resealAndStore re-seals rec as the app's watch does: the new objects
// kept beside the old, then the journal's record replaced.
func (f *fixture) resealAndStore(rec journal.Record) journal.Record {
	f.t.Helper()
	res, err := f.e.Reseal(testCtx(f.t), rec.Proposal)
	if err != nil || res == nil {
		f.t.Fatalf("reseal: %v (%v)", err, res)
	}
	if err := f.e.KeepResealed(testCtx(f.t), res.Proposal); err != nil {
		f.t.Fatalf("keep resealed: %v", err)
	}
	out, err := f.j.Reseal(rec.Proposal.ID, rec.Proposal.Digest, res.Proposal, journal.Reseal{Moves: res.Moves, Branch: "main", Base: res.Proposal.Sealed.Base})
	if err != nil {
		f.t.Fatalf("journal reseal: %v", err)
	}
	return out
}

// TestReseal_CommitCarriedOverAnotherLanding: two commits proposed on
// main, of different files. The first lands; the second is stale by its
// pin, is re-sealed on the new main with the same changes, and then lands
// on top of the first with exactly its own file changed.
func TestReseal_CommitCarriedOverAnotherLanding(t *testing.T) {
	f := newFixture(t)
	f.repo.Write("CHANGELOG.md", "# Changes\n- one\n")
	f.repo.Write("LICENSE", "MIT\n")
	first := f.proposeIn(f.repo.Dir, &proposal.CommitArgs{Message: "Changelog", Paths: []string{"CHANGELOG.md"}})
	second := f.submitPending(&proposal.CommitArgs{Message: "License", Paths: []string{"LICENSE"}})

	// Nothing moved yet: nothing to re-seal.
	if res, err := f.e.Reseal(testCtx(t), second.Proposal); err != nil || res != nil {
		t.Fatalf("reseal before anything moved: %v %v", res, err)
	}
	landed := f.mustComplete(first)
	_ = landed
	head := f.git("rev-parse", "HEAD")

	pf, err := f.e.Preflight(testCtx(t), second.Proposal)
	if err != nil || !pf.Stale {
		t.Fatalf("preflight after the first landed: %+v %v (want stale by its pin)", pf, err)
	}
	res, err := f.e.Reseal(testCtx(t), second.Proposal)
	if err != nil || res == nil {
		t.Fatalf("reseal: %v %v", res, err)
	}
	np := res.Proposal
	if np.Digest == second.Proposal.Digest || np.Sealed.Base != head || np.Pinned.Refs["HEAD"] != head {
		t.Fatalf("re-sealed: digest %s (was %s), base %s, pin %s; want a new digest on %s", np.Digest, second.Proposal.Digest, np.Sealed.Base, np.Pinned.Refs["HEAD"], head)
	}
	if len(np.Sealed.Files) != 1 || np.Sealed.Files[0] != second.Proposal.Sealed.Files[0] {
		t.Fatalf("re-sealed files %+v, want the same as %+v", np.Sealed.Files, second.Proposal.Sealed.Files)
	}
	if len(res.Moves) != 1 || res.Moves[0].Ref != "HEAD" || res.Moves[0].To != head {
		t.Fatalf("moves %+v", res.Moves)
	}
	rec := f.resealAndStore(second)
	if rec.State != proposal.Pending || rec.Proposal.Digest != np.Digest || len(rec.Reseals) != 1 {
		t.Fatalf("record after reseal: %s %s %+v", rec.State, rec.Proposal.Digest, rec.Reseals)
	}
	if n := rec.History[len(rec.History)-1].Note; !strings.Contains(n, "re-sealed on main at "+head[:7]+": same changes") {
		t.Fatalf("history note %q", n)
	}
	// The old digest no longer approves anything.
	if _, err := f.j.Approve(rec.Proposal.ID, second.Proposal.Digest, "pat", ""); !errors.Is(err, journal.ErrDigestMismatch) {
		t.Fatalf("approval of the old digest: %v", err)
	}
	approved, err := f.j.Approve(rec.Proposal.ID, np.Digest, "pat", "")
	if err != nil {
		t.Fatal(err)
	}
	f.mustComplete(approved)
	if parent := f.git("rev-parse", "HEAD^"); parent != head {
		t.Fatalf("the license commit's parent is %s, want the changelog commit %s", parent, head)
	}
	if got := f.git("diff-tree", "--no-commit-id", "--name-only", "-r", "HEAD"); got != "LICENSE" {
		t.Fatalf("the license commit changed %q", got)
	}
	if got := f.git("show", "HEAD:CHANGELOG.md"); !strings.Contains(got, "- one") {
		t.Fatalf("CHANGELOG.md at HEAD: %q", got)
	}
	// Both trees stay kept under the proposal's sealed ref while it is open
	// (the ref's commit has the first keep as its parent).
	if types := f.rec.types(t); !containsType(types, journal.EventResealed) {
		t.Fatalf("ledger types %v: no %s", types, journal.EventResealed)
	}
}

func containsType(types []string, want string) bool {
	for _, t := range types {
		if t == want {
			return true
		}
	}
	return false
}

// TestReseal_ConflictStaysStale: the person commits a change to the file
// the pending commit changes. The card cannot be carried over: Reseal says
// which file, and nothing in the repository or Sluice's refs changes.
func TestReseal_ConflictStaysStale(t *testing.T) {
	f := newFixture(t)
	f.repo.Write("src/a.txt", "a1\nagent\na3\n")
	pending := f.submitPending(&proposal.CommitArgs{Message: "Agent's a", Paths: []string{"src/a.txt"}})
	f.repo.Write("src/a.txt", "a1\nperson\na3\n")
	f.git("commit", "-qam", "person's a")
	f.repo.Write("src/a.txt", "a1\nagent\na3\n")
	before := repoState(t, f.repo.Dir)
	refs := f.git("for-each-ref", "refs/sluice/")
	res, err := f.e.Reseal(testCtx(t), pending.Proposal)
	if !errcode.IsCode(err, errcode.StaleBase) || res != nil {
		t.Fatalf("reseal: %v %v; want stale_base", res, err)
	}
	if !strings.Contains(err.Error(), "src/a.txt") || !strings.Contains(err.Error(), "HEAD moved") {
		t.Fatalf("the reason does not name the file and what moved: %v", err)
	}
	if after := repoState(t, f.repo.Dir); after != before {
		t.Errorf("the repository changed:\n%s", diffState(before, after))
	}
	if after := f.git("for-each-ref", "refs/sluice/"); after != refs {
		t.Errorf("Sluice's refs changed from %q to %q", refs, after)
	}
}

// TestReseal_PatchCarriedOver: a pending patch of one file; the person
// commits another file. The patch is re-sealed on the new HEAD with the
// same change, and applies.
func TestReseal_PatchCarriedOver(t *testing.T) {
	f := newFixture(t)
	patch := "--- a/src/b.txt\n+++ b/src/b.txt\n@@ -1,3 +1,3 @@\n b1\n-b2\n+b2 patched\n b3\n"
	pending := f.submitPending(&proposal.PatchArgs{Patch: patch, Target: proposal.PatchWorktree})
	f.repo.Write("README.md", "# demo, edited\n")
	f.git("commit", "-qam", "person's readme")
	rec := f.resealAndStore(pending)
	approved, err := f.j.Approve(rec.Proposal.ID, rec.Proposal.Digest, "pat", "")
	if err != nil {
		t.Fatal(err)
	}
	f.mustComplete(approved)
	if got := f.repo.Read("src/b.txt"); got != "b1\nb2 patched\nb3\n" {
		t.Fatalf("src/b.txt %q", got)
	}
}

// TestReseal_BranchStaysPinned: a branch proposed at main's commit is not
// carried to where main is now (it would point elsewhere than the card
// says).
func TestReseal_BranchStaysPinned(t *testing.T) {
	f := newFixture(t)
	pending := f.submitPending(&proposal.BranchArgs{Name: "feature", StartPoint: "main"})
	f.repo.Write("README.md", "# moved\n")
	f.git("commit", "-qam", "move main")
	res, err := f.e.Reseal(testCtx(t), pending.Proposal)
	if !errcode.IsCode(err, errcode.StaleBase) || res != nil {
		t.Fatalf("reseal of a branch: %v %v; want stale_base", res, err)
	}
}

// TestReseal_JournalRefusesAnotherRequest: the journal takes a re-sealed
// proposal only when it is the same request with other pins and outcome.
func TestReseal_JournalRefusesAnotherRequest(t *testing.T) {
	f := newFixture(t)
	f.repo.Write("LICENSE", "MIT\n")
	pending := f.submitPending(&proposal.CommitArgs{Message: "License", Paths: []string{"LICENSE"}})
	f.repo.Write("README.md", "# moved\n")
	f.git("commit", "-qam", "move main")
	res, err := f.e.Reseal(testCtx(t), pending.Proposal)
	if err != nil || res == nil {
		t.Fatalf("reseal: %v %v", res, err)
	}
	other := res.Proposal
	other.Reason = "another reason"
	if err := other.Seal(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.j.Reseal(pending.Proposal.ID, pending.Proposal.Digest, other, journal.Reseal{}); !errors.Is(err, journal.ErrNotSameRequest) {
		t.Fatalf("reseal with another reason: %v", err)
	}
	if _, err := f.j.Reseal(pending.Proposal.ID, "sha256:"+strings.Repeat("0", 64), res.Proposal, journal.Reseal{}); !errors.Is(err, journal.ErrDigestMismatch) {
		t.Fatalf("reseal of another digest: %v", err)
	}
	got, err := f.j.Get(pending.Proposal.ID)
	if err != nil || got.Proposal.Digest != pending.Proposal.Digest || got.Version != pending.Version {
		t.Fatalf("the record changed: %v %+v", err, got)
	}
}

// TestStack_CommitOnPendingCommit: an agent commits src/a.txt, edits it
// again, and stacks a second commit of it on the first, still pending.
// The second is sealed on the first's outcome (its diff is only the
// second edit); it cannot run first; once the first lands it is
// re-sealed on that commit with the same changes and lands on top.
func TestStack_CommitOnPendingCommit(t *testing.T) {
	f := newFixture(t)
	f.repo.Write("src/a.txt", "a1\nfirst\na3\n")
	first := f.submitPending(&proposal.CommitArgs{Message: "First", Paths: []string{"src/a.txt"}})
	f.repo.Write("src/a.txt", "a1\nfirst\na3\nsecond\n")

	p := f.newProposal(f.repo.Dir, &proposal.CommitArgs{Message: "Second", Paths: []string{"src/a.txt"}, Below: first.Proposal.ID})
	// Sealed as the gateway seals it: with the proposal below in hand.
	ctx := seal.WithBelow(testCtx(t), first.Proposal)
	sealed, err := f.e.Seal(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if sealed.Below != first.Proposal.ID || sealed.Before != first.Proposal.Sealed.After || len(sealed.Files) != 1 || sealed.Files[0].OldBlob != first.Proposal.Sealed.Files[0].Blob {
		t.Fatalf("stacked outcome %+v: want it sealed on %s's outcome", sealed, first.Proposal.ID)
	}
	p.Sealed = sealed
	if err := p.Seal(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.j.Submit(p); err != nil {
		t.Fatal(err)
	}
	if err := f.e.Keep(testCtx(t), p); err != nil {
		t.Fatal(err)
	}
	pf, err := f.e.Preflight(testCtx(t), p)
	if err != nil || pf.Stale || len(pf.Blockers) != 1 || !strings.Contains(pf.Blockers[0], "stacked on proposal "+first.Proposal.ID) {
		t.Fatalf("preflight of the stacked commit: %+v %v", pf, err)
	}
	// Approved first (as a rule would), it refuses and changes nothing.
	second, err := f.j.Approve(p.ID, p.Digest, "pat", "")
	if err != nil {
		t.Fatal(err)
	}
	before := repoState(t, f.repo.Dir)
	out, err := f.execute(second)
	if !errcode.IsCode(err, errcode.ProposalRefused) || out.State != proposal.Failed {
		t.Fatalf("the stacked commit ran before the one below: %s %v", out.State, err)
	}
	if after := repoState(t, f.repo.Dir); after != before {
		t.Fatalf("the repository changed:\n%s", diffState(before, after))
	}

	// A new stacked proposal, the same change, and the one below lands.
	q := f.newProposal(f.repo.Dir, &proposal.CommitArgs{Message: "Second", Paths: []string{"src/a.txt"}, Below: first.Proposal.ID})
	if q.Sealed, err = f.e.Seal(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := q.Seal(); err != nil {
		t.Fatal(err)
	}
	stacked, _, err := f.j.Submit(q)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.e.Keep(testCtx(t), q); err != nil {
		t.Fatal(err)
	}
	approvedFirst, err := f.j.Approve(first.Proposal.ID, first.Proposal.Digest, "pat", "")
	if err != nil {
		t.Fatal(err)
	}
	f.mustComplete(approvedFirst)
	firstCommit := f.git("rev-parse", "HEAD")
	rec := f.resealAndStore(stacked)
	if rec.Proposal.Sealed.Below != "" || rec.Proposal.Sealed.Base != firstCommit {
		t.Fatalf("re-sealed stacked commit: below %q base %s, want on %s", rec.Proposal.Sealed.Below, rec.Proposal.Sealed.Base, firstCommit)
	}
	approved, err := f.j.Approve(rec.Proposal.ID, rec.Proposal.Digest, "pat", "")
	if err != nil {
		t.Fatal(err)
	}
	f.mustComplete(approved)
	if parent := f.git("rev-parse", "HEAD^"); parent != firstCommit {
		t.Fatalf("the second commit's parent is %s, want the first %s", parent, firstCommit)
	}
	if got := f.git("show", "HEAD:src/a.txt"); got != "a1\nfirst\na3\nsecond" {
		t.Fatalf("src/a.txt at HEAD %q", got)
	}
	if got := f.git("show", "HEAD^:src/a.txt"); got != "a1\nfirst\na3" {
		t.Fatalf("src/a.txt in the first commit %q", got)
	}
}
