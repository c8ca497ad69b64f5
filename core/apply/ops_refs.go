package apply

import (
	"context"
	"sort"
	"strings"

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

// evaluate decides which of the set's branches may be deleted.
func (set branchSet) evaluate(ctx context.Context) ([]string, []kept, error) {
	rc := set.rc
	refs := make([]string, 0, len(set.branches))
	for _, b := range set.branches {
		refs = append(refs, proposal.BranchRef(b))
	}
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"for-each-ref", "--format=%(refname)%00%(objectname)%00%(upstream)%00%(worktreepath)"}, revs: refs})
	if err != nil {
		return nil, nil, err
	}
	type info struct{ sha, upstream, worktree string }
	have := map[string]info{}
	for _, line := range strings.Split(res.text(), "\n") {
		f := strings.Split(line, "\x00")
		if len(f) == 4 {
			have[f[0]] = info{f[1], f[2], f[3]}
		}
	}
	h, err := rc.g.headOf(ctx, rc.path)
	if err != nil {
		return nil, nil, err
	}
	res, err = rc.g.run(ctx, call{dir: rc.path, args: []string{"for-each-ref", "--format=%(refname)", "--merged=" + h.sha}, revs: refs})
	if err != nil {
		return nil, nil, err
	}
	merged := map[string]bool{}
	for _, l := range strings.Split(res.text(), "\n") {
		merged[l] = true
	}
	var del []string
	var keep []kept
	for _, b := range set.branches {
		ref := proposal.BranchRef(b)
		in, ok := have[ref]
		k := kept{repo: rc.path, branch: b, pinned: set.pins[ref]}
		switch {
		case !ok:
			k.why, k.moved = "it no longer exists", true
		case in.sha != set.pins[ref]:
			k.why, k.moved, k.now = "it moved since the proposal; now at "+short(in.sha), true, in.sha
		case in.worktree != "":
			k.why = "it is checked out in " + in.worktree
		case merged[ref]:
			del = append(del, b)
			continue
		case in.upstream != "":
			res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"merge-base", "--is-ancestor"}, revs: []string{in.sha, in.upstream}, ok: []int{1}})
			if err != nil {
				return nil, nil, err
			}
			if res.exit == 0 {
				del = append(del, b)
				continue
			}
			k.why = "its commits are neither in HEAD nor in its upstream"
		default:
			k.why = "its commits are not in HEAD and it has no upstream"
		}
		keep = append(keep, k)
	}
	sort.Strings(del)
	return del, keep, nil
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
