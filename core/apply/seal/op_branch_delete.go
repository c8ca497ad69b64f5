package seal

import (
	"context"
	"sort"
	"strings"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

type branchDeleteSeal struct{ a *proposal.BranchDeleteArgs }

// seal: which branches go (their commits are all reachable elsewhere, as
// the executor requires) and which stay, and why.
func (s *branchDeleteSeal) seal(ctx context.Context, sl *Work) (proposal.Sealed, error) {
	out := proposal.Sealed{}
	type set struct {
		git      *gitrun.Git
		branches []string
		pins     map[string]string
	}
	sets := []set{{git: sl.git, branches: s.a.Branches, pins: sl.p.Pinned.Refs}}
	for _, o := range s.a.OtherRepos {
		sets = append(sets, set{git: sl.in.Repo(o.Repo), branches: o.Branches, pins: sl.p.Pinned.Repos[o.Repo]})
	}
	for _, set := range sets {
		if set.git == nil {
			return out, errcode.New(errcode.InvalidArgument, "a repository named by the proposal could not be opened")
		}
		del, keep, err := SafeToDelete(ctx, set.git, set.branches, set.pins)
		if err != nil {
			return out, err
		}
		repo := ""
		if set.git != sl.git {
			repo = set.git.Repo.Root
		}
		for _, b := range del {
			ref := proposal.BranchRef(b)
			out.Moves = append(out.Moves, proposal.RefMove{Ref: ref, From: set.pins[ref], Repo: repo, Delete: true})
		}
		for _, k := range keep {
			out.Keeps = append(out.Keeps, k.Name(sl.root())+" ("+k.Why+")")
		}
	}
	if len(out.Moves) == 0 {
		return out, &errcode.Error{Code: errcode.NothingDeleted, Msg: "no branch is safe to delete: " + strings.Join(out.Keeps, ", ")}
	}
	return out, nil
}

// Kept is a branch that is not deleted, and why.
type Kept struct {
	Repo, Branch, Why string
	// Moved: the branch moved or is gone since the proposal; Now is where
	// it is, Pinned where it was.
	Moved       bool
	Now, Pinned string
}

// Name is the branch as a person reads it: with its repository when that
// is not the main one (at main).
func (k Kept) Name(main string) string {
	if k.Repo != main {
		return k.Repo + ":" + k.Branch
	}
	return k.Branch
}

// SafeToDelete decides which of the branches of the repository of git may
// be deleted (pins: where the proposal pinned them): a branch goes only
// when its tip is reachable from HEAD or from its upstream, it is checked
// out nowhere, and it has not moved since the proposal. The card shows
// this, and the executor decides it again before it deletes.
func SafeToDelete(ctx context.Context, git *gitrun.Git, branches []string, pins map[string]string) ([]string, []Kept, error) {
	root := git.Repo.Root
	refs := make([]string, 0, len(branches))
	for _, b := range branches {
		refs = append(refs, proposal.BranchRef(b))
	}
	res, err := git.Run(ctx, gitrun.Call{Dir: root, Args: []string{"for-each-ref", "--format=%(refname)%00%(objectname)%00%(upstream)%00%(worktreepath)"}, Revs: refs})
	if err != nil {
		return nil, nil, err
	}
	type info struct{ sha, upstream, worktree string }
	have := map[string]info{}
	for _, line := range strings.Split(res.Text(), "\n") {
		f := strings.Split(line, "\x00")
		if len(f) == 4 {
			have[f[0]] = info{f[1], f[2], f[3]}
		}
	}
	h, err := git.HeadOf(ctx, root)
	if err != nil {
		return nil, nil, err
	}
	res, err = git.Run(ctx, gitrun.Call{Dir: root, Args: []string{"for-each-ref", "--format=%(refname)", "--merged=" + h.SHA}, Revs: refs})
	if err != nil {
		return nil, nil, err
	}
	merged := map[string]bool{}
	for _, l := range strings.Split(res.Text(), "\n") {
		merged[l] = true
	}
	var del []string
	var keep []Kept
	for _, b := range branches {
		ref := proposal.BranchRef(b)
		in, ok := have[ref]
		k := Kept{Repo: root, Branch: b, Pinned: pins[ref]}
		switch {
		case !ok:
			k.Why, k.Moved = "it no longer exists", true
		case in.sha != pins[ref]:
			k.Why, k.Moved, k.Now = "it moved since the proposal; now at "+short(in.sha), true, in.sha
		case in.worktree != "":
			k.Why = "it is checked out in " + in.worktree
		case merged[ref]:
			del = append(del, b)
			continue
		case in.upstream != "":
			res, err := git.Run(ctx, gitrun.Call{Dir: root, Args: []string{"merge-base", "--is-ancestor"}, Revs: []string{in.sha, in.upstream}, OK: []int{1}})
			if err != nil {
				return nil, nil, err
			}
			if res.Exit == 0 {
				del = append(del, b)
				continue
			}
			k.Why = "its commits are neither in HEAD nor in its upstream"
		default:
			k.Why = "its commits are not in HEAD and it has no upstream"
		}
		keep = append(keep, k)
	}
	sort.Strings(del)
	return del, keep, nil
}
