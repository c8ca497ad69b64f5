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

var discardDef = opDef{op: OpDiscard, newArgs: func() Args { return &DiscardArgs{} }, planStep: true, phrase: "discarding changes"}

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
