package proposal

import (
	"fmt"
)

// WorktreeArgs adds a linked worktree at Path with Branch checked out,
// creating Branch from StartPoint when NewBranch is set.
type WorktreeArgs struct {
	Path       string `json:"path"`
	Branch     string `json:"branch"`
	NewBranch  bool   `json:"newBranch,omitempty"`
	StartPoint string `json:"startPoint,omitempty"`
}

func (*WorktreeArgs) Op() Op { return OpWorktree }

// OpWorktree names the operation.
const OpWorktree Op = "worktree"

var worktreeDef = opDef{op: OpWorktree, newArgs: func() Args { return &WorktreeArgs{} }, newInput: func() Input { return &WorktreeInput{} }, planStep: false, phrase: "a worktree", label: "worktree", outcome: &OutcomeFacts{}}

// WorktreeInput is what an agent gives propose_worktree besides the repository,
// the reason and an idempotency key; the jsonschema tags describe each
// field to the model.
type WorktreeInput struct {
	Path       string `json:"path" jsonschema:"absolute; must not exist yet"`
	Branch     string `json:"branch" jsonschema:"checked out there"`
	NewBranch  bool   `json:"newBranch,omitempty" jsonschema:"create branch from startPoint"`
	StartPoint string `json:"startPoint,omitempty" jsonschema:"default HEAD; with newBranch"`
}

// Args are the worktree's arguments; a new branch starts at HEAD unless
// startPoint says otherwise.
func (in *WorktreeInput) Args() Args {
	a := &WorktreeArgs{Path: in.Path, Branch: in.Branch, NewBranch: in.NewBranch, StartPoint: in.StartPoint}
	if a.NewBranch && a.StartPoint == "" {
		a.StartPoint = "HEAD"
	}
	return a
}

func (a *WorktreeArgs) Validate() error {
	if err := validAbsPath("path", a.Path); err != nil {
		return err
	}
	if !validBranchName(a.Branch) {
		return invalid("branch", "is not a valid branch name")
	}
	if a.NewBranch {
		if !validRevision(a.StartPoint) {
			return invalid("startPoint", "is required with newBranch and must be a valid revision")
		}
	} else if a.StartPoint != "" {
		return invalid("startPoint", "is only used with newBranch")
	}
	return nil
}

func (a *WorktreeArgs) Pins() []string {
	if a.NewBranch {
		return []string{a.StartPoint}
	}
	return []string{BranchRef(a.Branch)}
}

func (a *WorktreeArgs) WrittenRefs() []string {
	if a.NewBranch {
		return []string{BranchRef(a.Branch)}
	}
	return nil
}
func (a *WorktreeArgs) FilesTouched() ([]string, bool) { return nil, true }
func (a *WorktreeArgs) risk(p Pinned) Risk {
	if p.WorktreeNestedIn != "" {
		return RiskHigh
	}
	return RiskLow
}
func (a *WorktreeArgs) why(p Pinned) string {
	if p.WorktreeNestedIn != "" {
		return "adds a working tree inside another working tree, whose tools and commands will see its files"
	}
	return "adds a working tree; nothing existing changes"
}

// Describe says what the worktree proposal does, in a few words.
func (a *WorktreeArgs) Describe() string { return fmt.Sprintf("worktree %s for %s", a.Path, a.Branch) }

// places: the new worktree's directory.
func (a *WorktreeArgs) places() []Place { return []Place{{Kind: PlaceNewWorktree, Path: &a.Path}} }

// SubjectBranch: a worktree is called by its reason, not the branch it
// checks out.
func (a *WorktreeArgs) SubjectBranch() string { return "" }
