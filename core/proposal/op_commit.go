package proposal

import (
	"slices"
	"strings"
)

// CommitArgs commits Paths (or everything, with StageAll) on the checked-out
// branch. There is no amend.
type CommitArgs struct {
	Message  string   `json:"message"`
	Paths    []string `json:"paths,omitempty"`
	StageAll bool     `json:"stageAll,omitempty"`
	Branch   string   `json:"branch,omitempty"`
	// Below stacks the commit on a pending commit proposal of the same
	// agent (as stacked pull requests are): it is sealed on that one's
	// outcome and lands after it, re-sealed on it once it has landed.
	Below string `json:"below,omitempty"`
}

func (*CommitArgs) Op() Op { return OpCommit }

// OpCommit names the operation.
const OpCommit Op = "commit"

var commitDef = opDef{op: OpCommit, newArgs: func() Args { return &CommitArgs{} }, newInput: func() Input { return &CommitInput{} }, planStep: false, phrase: "a commit", label: "commit", outcome: &OutcomeFacts{WritesCheckoutWhenConfined: true}}

// CommitInput is what an agent gives propose_commit besides the repository,
// the reason and an idempotency key; the jsonschema tags describe each
// field to the model.
type CommitInput struct {
	Message  string   `json:"message" jsonschema:"the commit message"`
	Paths    []string `json:"paths,omitempty" jsonschema:"these or stageAll"`
	StageAll bool     `json:"stageAll,omitempty" jsonschema:"every change, new files included"`
	Branch   string   `json:"branch,omitempty" jsonschema:"the checked-out branch (a branch policy needs it)"`
	StackOn  string   `json:"stackOn,omitempty" jsonschema:"id of your own pending commit proposal to stack this one on: it lands after that one"`
}

// Args are the commit's arguments.
func (in *CommitInput) Args() Args {
	return &CommitArgs{Message: in.Message, Paths: in.Paths, StageAll: in.StageAll, Branch: in.Branch, Below: in.StackOn}
}

func (a *CommitArgs) Validate() error {
	if err := validMessage("message", a.Message, true); err != nil {
		return err
	}
	if a.StageAll == (len(a.Paths) > 0) {
		return invalid("paths", "give either paths or stageAll, not both and not neither")
	}
	if !a.StageAll {
		if err := validPaths("paths", a.Paths, false, true); err != nil {
			return err
		}
	}
	if a.Below != "" && !ValidID(a.Below) {
		return invalid("below", "must be a proposal id")
	}
	return validOptionalBranch(a.Branch)
}

func (a *CommitArgs) Pins() []string { return withBranch([]string{"HEAD"}, a.Branch) }
func (a *CommitArgs) WrittenRefs() []string {
	if a.Branch == "" {
		return nil
	}
	return []string{BranchRef(a.Branch)}
}
func (a *CommitArgs) FilesTouched() ([]string, bool) {
	if a.StageAll {
		return nil, false
	}
	return slices.Clone(a.Paths), true
}
func (a *CommitArgs) risk(Pinned) Risk { return RiskLow }
func (a *CommitArgs) why(Pinned) string {
	return "adds one commit on top of the checked-out branch; nothing is rewritten"
}

// Describe says what the commit does: its subject, quoted.
func (a *CommitArgs) Describe() string {
	subject, _, _ := strings.Cut(strings.TrimSpace(a.Message), "\n")
	s := "commit " + quoteSubject(subject)
	if a.Branch != "" {
		s += " on " + a.Branch
	}
	return s
}

func (a *CommitArgs) checkedOut() string     { return a.Branch }
func (a *CommitArgs) writesCheckedOut() bool { return a.Branch == "" }

// SubjectBranch: a commit's branch only names the branch checked out.
func (a *CommitArgs) SubjectBranch() string { return "" }
