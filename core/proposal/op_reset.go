package proposal

import (
	"fmt"
	"slices"
)

// ResetMode is git reset's mode.
type ResetMode string

// Reset modes.
const (
	ResetSoft  ResetMode = "soft"
	ResetMixed ResetMode = "mixed"
	ResetHard  ResetMode = "hard"
)

// ResetModes lists every reset mode.
func ResetModes() []ResetMode { return []ResetMode{ResetSoft, ResetMixed, ResetHard} }

// ResetArgs moves the checked-out branch to Target.
type ResetArgs struct {
	Mode   ResetMode `json:"mode"`
	Target string    `json:"target"`
	Branch string    `json:"branch,omitempty"`
}

func (*ResetArgs) Op() Op { return OpReset }

// OpReset names the operation.
const OpReset Op = "reset"

var resetDef = opDef{op: OpReset, newArgs: func() Args { return &ResetArgs{} }, newInput: func() Input { return &ResetInput{} }, planStep: true, phrase: "a reset", label: "reset", outcome: &OutcomeFacts{}}

// ResetInput is what an agent gives propose_reset besides the repository,
// the reason and an idempotency key; the jsonschema tags describe each
// field to the model.
type ResetInput struct {
	Mode   string `json:"mode" jsonschema:"soft, mixed or hard"`
	Target string `json:"target" jsonschema:"revision, e.g. HEAD~1"`
	Branch string `json:"branch,omitempty" jsonschema:"the branch expected to be checked out"`
}

// Args are the reset's arguments.
func (in *ResetInput) Args() Args {
	return &ResetArgs{Mode: ResetMode(in.Mode), Target: in.Target, Branch: in.Branch}
}

// Enums are the values the schema offers.
func (*ResetInput) Enums() map[string][]string {
	return map[string][]string{"mode": enumStrings(ResetModes())}
}

func (a *ResetArgs) Validate() error {
	if !slices.Contains(ResetModes(), a.Mode) {
		return invalid("mode", "must be soft, mixed or hard")
	}
	if !validRevision(a.Target) {
		return invalid("target", "is not a valid revision")
	}
	return validOptionalBranch(a.Branch)
}

func (a *ResetArgs) Pins() []string { return withBranch([]string{"HEAD", a.Target}, a.Branch) }
func (a *ResetArgs) WrittenRefs() []string {
	if a.Branch == "" {
		return nil
	}
	return []string{BranchRef(a.Branch)}
}
func (a *ResetArgs) FilesTouched() ([]string, bool) { return nil, false }
func (a *ResetArgs) risk(Pinned) Risk {
	if a.Mode == ResetHard {
		return RiskDestructive
	}
	return RiskHigh
}
func (a *ResetArgs) why(Pinned) string {
	if a.Mode == ResetHard {
		return "moves the checked-out branch and makes the working tree match " + a.Target
	}
	return "moves the checked-out branch to " + a.Target + "; files stay as they are"
}

// Describe says what the reset does, in a few words.
func (a *ResetArgs) Describe() string {
	s := fmt.Sprintf("%s reset", a.Mode)
	if a.Branch != "" {
		s += " of " + a.Branch
	}
	return s + " to " + a.Target
}

func (a *ResetArgs) checkedOut() string     { return a.Branch }
func (a *ResetArgs) writesCheckedOut() bool { return a.Branch == "" }

// SubjectBranch: a reset's branch only names the branch checked out.
func (a *ResetArgs) SubjectBranch() string { return "" }
