package apply

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/proposal"
)

// A card pins the branch its HEAD names, not only the commit: after the
// person switches to another branch at the same commit, the card is stale
// before anyone approves (preflight says which branch it was for and which
// is checked out), approving fails with stale_base, and neither branch
// moves.
func TestHead_OtherBranchAtSameCommit_StaleAndUnchanged(t *testing.T) {
	for _, c := range []struct {
		name string
		// setup prepares the repository and returns the proposal's args.
		setup func(f *fixture) proposal.Args
		// from and to are what the person has checked out when the card is
		// made and when it is approved.
		from, to string
		msg      string
	}{
		{"commit", func(f *fixture) proposal.Args {
			f.repo.Write("src/a.txt", "changed\n")
			return &proposal.CommitArgs{Message: "Change a", Paths: []string{"src/a.txt"}}
		}, "main", "other", "the card is for branch main, but branch other is checked out now"},
		{"patch to the index", func(f *fixture) proposal.Args {
			return &proposal.PatchArgs{Patch: addNewPatch, Target: proposal.PatchIndex}
		}, "main", "other", "the card is for branch main, but branch other is checked out now"},
		{"merge", func(f *fixture) proposal.Args {
			f.git("branch", "feature")
			f.git("switch", "-q", "feature")
			f.repo.Write("src/new.txt", "new\n")
			f.repo.Commit("feature work")
			f.git("switch", "-q", "main")
			return &proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit}
		}, "main", "other", "the card is for branch main, but branch other is checked out now"},
		{"commit on a detached HEAD", func(f *fixture) proposal.Args {
			f.git("switch", "-q", "--detach", "main")
			f.repo.Write("src/a.txt", "changed\n")
			return &proposal.CommitArgs{Message: "Change a", Paths: []string{"src/a.txt"}}
		}, "", "main", "the card is for a detached HEAD, but branch main is checked out now"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			args := c.setup(f)
			rec := f.propose(args)
			if c.to == "main" {
				f.git("switch", "-q", "main")
			} else {
				f.git("switch", "-q", "-c", c.to)
			}
			refs := f.git("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/")
			pf, err := f.e.Preflight(testCtx(t), rec.Proposal)
			if err != nil {
				t.Fatal(err)
			}
			if !pf.Stale || !strings.Contains(pf.Describe(), c.msg) {
				t.Errorf("preflight stale %v, %q: want stale saying %q", pf.Stale, pf.Describe(), c.msg)
			}
			out := f.mustRefuseUnchanged(rec, ErrStaleBase)
			if !strings.Contains(out.Outcome.Message, c.msg) {
				t.Errorf("outcome %q: want it to say %q", out.Outcome.Message, c.msg)
			}
			if after := f.git("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/"); after != refs {
				t.Errorf("branches moved:\n%s\nwant\n%s", after, refs)
			}
			// Back on the branch the card was for, it lands there.
			if c.from != "" {
				f.git("switch", "-q", c.from)
				if pf, err := f.e.Preflight(testCtx(t), rec.Proposal); err != nil || pf.Stale {
					t.Errorf("preflight back on %s: %v %+v", c.from, err, pf)
				}
			}
		})
	}
}
