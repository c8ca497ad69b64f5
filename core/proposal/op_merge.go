package proposal

import (
	"fmt"
	"slices"
)

// MergeStrategy is how a merge lands on its target.
type MergeStrategy string

// Merge strategies.
const (
	MergeCommit MergeStrategy = "merge"
	MergeSquash MergeStrategy = "squash"
)

// MergeStrategies lists every merge strategy, as the tool's schema offers them.
func MergeStrategies() []MergeStrategy { return []MergeStrategy{MergeCommit, MergeSquash} }

// MergeArgs merges Source into the branch Target.
type MergeArgs struct {
	Source   string        `json:"source"`
	Target   string        `json:"target"`
	Strategy MergeStrategy `json:"strategy"`
	Message  string        `json:"message,omitempty"`
}

func (*MergeArgs) Op() Op { return OpMerge }

// OpMerge names the operation.
const OpMerge Op = "merge"

var mergeDef = opDef{op: OpMerge, newArgs: func() Args { return &MergeArgs{} }, newInput: func() Input { return &MergeInput{} }, planStep: true, phrase: "a merge", label: "merge", outcome: &OutcomeFacts{}}

// MergeInput is what an agent gives propose_merge besides the repository,
// the reason and an idempotency key; the jsonschema tags describe each
// field to the model.
type MergeInput struct {
	Source   string `json:"source" jsonschema:"branch, tag or commit"`
	Target   string `json:"target" jsonschema:"the branch to merge into"`
	Strategy string `json:"strategy" jsonschema:"merge (fast-forward when possible) or squash (one new commit)"`
	Message  string `json:"message,omitempty" jsonschema:"commit message"`
}

// Args are the merge's arguments.
func (in *MergeInput) Args() Args {
	return &MergeArgs{Source: in.Source, Target: in.Target, Strategy: MergeStrategy(in.Strategy), Message: in.Message}
}

// Enums are the values the schema offers.
func (*MergeInput) Enums() map[string][]string {
	return map[string][]string{"strategy": enumStrings(MergeStrategies())}
}

func (a *MergeArgs) Validate() error {
	if !validRevision(a.Source) {
		return invalid("source", "is not a valid revision")
	}
	if !validBranchName(a.Target) {
		return invalid("target", "is not a valid branch name (give the short name, e.g. main)")
	}
	if !slices.Contains(MergeStrategies(), a.Strategy) {
		return invalid("strategy", "must be merge or squash")
	}
	return validMessage("message", a.Message, false)
}

func (a *MergeArgs) Pins() []string                 { return []string{a.Source, BranchRef(a.Target)} }
func (a *MergeArgs) WrittenRefs() []string          { return []string{BranchRef(a.Target)} }
func (a *MergeArgs) FilesTouched() ([]string, bool) { return nil, false }
func (a *MergeArgs) risk(Pinned) Risk               { return RiskMedium }
func (a *MergeArgs) why(Pinned) string              { return fmt.Sprintf("merges %s into %s", a.Source, a.Target) }

// Describe says what the merge does, in a few words.
func (a *MergeArgs) Describe() string { return fmt.Sprintf("merge of %s into %s", a.Source, a.Target) }

// SubjectBranch is the merge's source and target.
func (a *MergeArgs) SubjectBranch() string {
	if a.Target == "" {
		return a.Source
	}
	return a.Source + " → " + a.Target
}
