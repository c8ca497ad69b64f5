package proposal

import (
	"slices"
)

// DiscardArgs throws away uncommitted changes to Paths ("." for all).
type DiscardArgs struct {
	Paths []string `json:"paths"`
	// Untracked also removes untracked files under Paths.
	Untracked bool `json:"untracked,omitempty"`
	// Branch, when set, is the branch the working tree must be on.
	Branch string `json:"branch,omitempty"`
}

func (*DiscardArgs) Op() Op { return OpDiscard }

// OpDiscard names the operation.
const OpDiscard Op = "discard"

var discardDef = opDef{op: OpDiscard, newArgs: func() Args { return &DiscardArgs{} }, newInput: func() Input { return &DiscardInput{} }, planStep: true, phrase: "discarding changes", label: "discard", outcome: &OutcomeFacts{}}

// DiscardInput is what an agent gives propose_discard besides the repository,
// the reason and an idempotency key; the jsonschema tags describe each
// field to the model.
type DiscardInput struct {
	Paths     []string `json:"paths" jsonschema:"repository-relative; \".\" for all"`
	Untracked bool     `json:"untracked,omitempty" jsonschema:"also delete untracked files there"`
	Branch    string   `json:"branch,omitempty" jsonschema:"the branch expected to be checked out"`
}

// Args are the discard's arguments.
func (in *DiscardInput) Args() Args {
	return &DiscardArgs{Paths: in.Paths, Untracked: in.Untracked, Branch: in.Branch}
}

func (a *DiscardArgs) Validate() error {
	if err := validPaths("paths", a.Paths, true, true); err != nil {
		return err
	}
	return validOptionalBranch(a.Branch)
}

func (a *DiscardArgs) Pins() []string        { return withBranch([]string{"HEAD"}, a.Branch) }
func (a *DiscardArgs) WrittenRefs() []string { return nil }
func (a *DiscardArgs) FilesTouched() ([]string, bool) {
	return slices.Clone(a.Paths), true
}
func (a *DiscardArgs) risk(Pinned) Risk  { return RiskDestructive }
func (a *DiscardArgs) why(Pinned) string { return "throws away uncommitted changes" }

// Describe says what the discard does, in a few words.
func (a *DiscardArgs) Describe() string {
	return "discarding changes in " + Count(len(a.Paths), "path")
}

func (a *DiscardArgs) checkedOut() string     { return a.Branch }
func (a *DiscardArgs) writesCheckedOut() bool { return false }

// SubjectBranch: a discard's branch only names the branch checked out.
func (a *DiscardArgs) SubjectBranch() string { return "" }
