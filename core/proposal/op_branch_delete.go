package proposal

import (
	"fmt"
	"strings"
)

// RepoBranches names branches in one more repository.
type RepoBranches struct {
	// Repo is a canonical absolute repository path.
	Repo     string   `json:"repo"`
	Branches []string `json:"branches"`
}

// BranchDeleteArgs deletes Branches in the proposal's repository and, for
// cleanups across a fleet, branches in other repositories. The app decides
// at execution which of them are safely deletable.
type BranchDeleteArgs struct {
	Branches   []string       `json:"branches"`
	OtherRepos []RepoBranches `json:"otherRepos,omitempty"`
}

func (*BranchDeleteArgs) Op() Op { return OpBranchDelete }

// OpBranchDelete names the operation.
const OpBranchDelete Op = "branch_delete"

var branchDeleteDef = opDef{op: OpBranchDelete, newArgs: func() Args { return &BranchDeleteArgs{} }, newInput: func() Input { return &BranchDeleteInput{} }, planStep: false, phrase: "deleting branches", label: "branch delete", outcome: &OutcomeFacts{DeletesBranches: true}}

// BranchDeleteInput is what an agent gives propose_branch_delete besides the repository,
// the reason and an idempotency key; the jsonschema tags describe each
// field to the model.
type BranchDeleteInput struct {
	Branches   []string            `json:"branches" jsonschema:"in repoPath"`
	OtherRepos []RepoBranchesInput `json:"otherRepos,omitempty" jsonschema:"repoPath and branches to delete in more repositories"`
}

// RepoBranchesInput names branches in another repository.
type RepoBranchesInput struct {
	RepoPath string   `json:"repoPath"`
	Branches []string `json:"branches"`
}

// Args are the deletion's arguments (the other repositories are
// canonicalised and confined before they are pinned).
func (in *BranchDeleteInput) Args() Args {
	a := &BranchDeleteArgs{Branches: in.Branches}
	for _, r := range in.OtherRepos {
		a.OtherRepos = append(a.OtherRepos, RepoBranches{Repo: r.RepoPath, Branches: r.Branches})
	}
	return a
}

func (a *BranchDeleteArgs) Validate() error {
	if err := validBranches("branches", a.Branches); err != nil {
		return err
	}
	if len(a.OtherRepos) > MaxRepos-1 {
		return invalid("otherRepos", "at most %d repositories", MaxRepos-1)
	}
	seen := map[string]bool{}
	for i, r := range a.OtherRepos {
		field := fmt.Sprintf("otherRepos[%d]", i)
		if err := validAbsPath(field+".repo", r.Repo); err != nil {
			return err
		}
		if seen[r.Repo] {
			return invalid(field+".repo", "is listed twice")
		}
		seen[r.Repo] = true
		if err := validBranches(field+".branches", r.Branches); err != nil {
			return err
		}
	}
	return nil
}

func (a *BranchDeleteArgs) Pins() []string {
	out := make([]string, 0, len(a.Branches))
	for _, b := range a.Branches {
		out = append(out, BranchRef(b))
	}
	return out
}

// WrittenRefs lists the branches in every repository named.
func (a *BranchDeleteArgs) WrittenRefs() []string {
	out := a.Pins()
	for _, r := range a.OtherRepos {
		for _, b := range r.Branches {
			out = appendUnique(out, BranchRef(b))
		}
	}
	return out
}
func (a *BranchDeleteArgs) FilesTouched() ([]string, bool) { return nil, true }
func (a *BranchDeleteArgs) risk(Pinned) Risk               { return RiskDestructive }
func (a *BranchDeleteArgs) why(Pinned) string {
	return "deletes " + Count(len(a.WrittenRefs()), "branch")
}

func (a *BranchDeleteArgs) checkRepoPins(p Pinned) error {
	if len(p.Repos) != len(a.OtherRepos) {
		return invalid("pinned.repos", "must pin exactly the other repositories named")
	}
	for _, r := range a.OtherRepos {
		for _, b := range r.Branches {
			if _, ok := p.Repos[r.Repo][BranchRef(b)]; !ok {
				return invalid("pinned.repos", "%q is not pinned in %s", b, r.Repo)
			}
		}
	}
	return nil
}

// Describe says which branches are deleted.
func (a *BranchDeleteArgs) Describe() string { return "deleting " + strings.Join(a.Branches, ", ") }

// places: the other repositories, by their top level.
func (a *BranchDeleteArgs) places() []Place {
	out := make([]Place, len(a.OtherRepos))
	for i := range a.OtherRepos {
		out[i] = Place{Kind: PlaceRepository, Path: &a.OtherRepos[i].Repo}
	}
	return out
}

// otherRepos: each other repository's branches.
func (a *BranchDeleteArgs) otherRepos(string) []OtherRepo {
	out := make([]OtherRepo, 0, len(a.OtherRepos))
	for _, r := range a.OtherRepos {
		refs := make([]string, len(r.Branches))
		for i, b := range r.Branches {
			refs[i] = BranchRef(b)
		}
		out = append(out, OtherRepo{Path: r.Repo, Refs: refs})
	}
	return out
}

// SubjectBranch is the branches deleted in the proposal's repository.
func (a *BranchDeleteArgs) SubjectBranch() string { return strings.Join(a.Branches, ", ") }
