package proposal

import (
	"fmt"
	"strings"
)

// RebaseArgs replays Branch onto Onto. Never interactive: there is no way
// to ask for it.
type RebaseArgs struct {
	Branch string `json:"branch"`
	Onto   string `json:"onto"`
}

func (*RebaseArgs) Op() Op { return OpRebase }

// OpRebase names the operation.
const OpRebase Op = "rebase"

var rebaseDef = opDef{op: OpRebase, newArgs: func() Args { return &RebaseArgs{} }, newInput: func() Input { return &RebaseInput{} }, planStep: true, phrase: "a rebase", label: "rebase", outcome: &OutcomeFacts{ReplaysCommits: true}}

// RebaseInput is what an agent gives propose_rebase besides the repository,
// the reason and an idempotency key; the jsonschema tags describe each
// field to the model.
type RebaseInput struct {
	Branch string `json:"branch" jsonschema:"the branch to rebase"`
	Onto   string `json:"onto" jsonschema:"revision"`
}

// Args are the rebase's arguments.
func (in *RebaseInput) Args() Args { return &RebaseArgs{Branch: in.Branch, Onto: in.Onto} }

func (a *RebaseArgs) Validate() error {
	if !validBranchName(a.Branch) {
		return invalid("branch", "is not a valid branch name")
	}
	if !validRevision(a.Onto) {
		return invalid("onto", "is not a valid revision")
	}
	return nil
}

func (a *RebaseArgs) Pins() []string                 { return []string{BranchRef(a.Branch), a.Onto} }
func (a *RebaseArgs) WrittenRefs() []string          { return []string{BranchRef(a.Branch)} }
func (a *RebaseArgs) FilesTouched() ([]string, bool) { return nil, false }

// risk: rebasing a branch that has been pushed rewrites history others may
// have. The submitter pins the branch's upstream (a refs/remotes/ ref) when
// it has one, which is how a pushed branch is recognised.
func (a *RebaseArgs) risk(p Pinned) Risk {
	for ref := range p.Refs {
		if strings.HasPrefix(ref, "refs/remotes/") {
			return RiskDestructive
		}
	}
	return RiskHigh
}
func (a *RebaseArgs) why(p Pinned) string {
	if a.risk(p) == RiskDestructive {
		return "rewrites the history of " + a.Branch + ", which has been pushed"
	}
	return "rewrites the history of " + a.Branch
}

// Describe says what the rebase does, in a few words.
func (a *RebaseArgs) Describe() string { return fmt.Sprintf("rebase of %s onto %s", a.Branch, a.Onto) }

// upstreamOf: a rebased branch's upstream is pinned too (see risk).
func (a *RebaseArgs) upstreamOf() []string { return []string{a.Branch} }

// SubjectBranch is the branch rebased.
func (a *RebaseArgs) SubjectBranch() string { return a.Branch }
