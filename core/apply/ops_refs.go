package apply

import (
	"context"
	"strings"

	"github.com/sluicehq/sluice/core/apply/seal"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// pushStatus reads git push --porcelain: "<flag>\t<from>:<to>\t<summary>".
func pushStatus(out, dst string) (flag, summary string) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) == 3 && strings.HasSuffix(f[1], ":"+dst) {
			return strings.TrimSpace(f[0]), strings.TrimSpace(f[2])
		}
	}
	return "", ""
}

type branchSet struct {
	rc       *repoCtx
	branches []string
	pins     map[string]string
}

// kept is a branch that was not deleted.
type kept struct {
	repo, branch, why string
	moved             bool
	now, pinned       string
}

func (k kept) name(r *run) string {
	if k.repo != r.main.path {
		return k.repo + ":" + k.branch
	}
	return k.branch
}

// evaluate decides which of the set's branches may be deleted, as their
// seal did (see seal.SafeToDelete).
func (set branchSet) evaluate(ctx context.Context) ([]string, []kept, error) {
	del, keep, err := seal.SafeToDelete(ctx, set.rc.g.git, set.branches, set.pins)
	if err != nil {
		return nil, nil, err
	}
	var out []kept
	for _, k := range keep {
		out = append(out, kept{repo: k.Repo, branch: k.Branch, why: k.Why, moved: k.Moved, now: k.Now, pinned: k.Pinned})
	}
	return del, out, nil
}

// revalidateBranchDelete: a deletion may still run while at least one of
// its branches is where it was pinned; the others will be kept and
// reported.
func (r *run) revalidateBranchDelete(ctx context.Context) error {
	s := &branchDeleteStep{a: r.p.Args.(*proposal.BranchDeleteArgs)}
	moved, expected := map[string]string{}, map[string]string{}
	for _, set := range s.branchSets(r) {
		if set.rc == nil {
			return errcode.New(errcode.InvalidArgument, "a repository named by the proposal could not be opened")
		}
		refs := make([]string, 0, len(set.branches))
		for _, b := range set.branches {
			refs = append(refs, proposal.BranchRef(b))
		}
		states, err := set.rc.refStates(ctx, refs)
		if err != nil {
			return err
		}
		for _, st := range states {
			if st.SHA == set.pins[st.Ref] {
				return nil
			}
			moved[set.rc.path+":"+st.Ref], expected[set.rc.path+":"+st.Ref] = st.SHA, set.pins[st.Ref]
		}
	}
	return staleBase(moved, expected)
}
