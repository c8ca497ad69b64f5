package proposal

import (
	"fmt"
	"path/filepath"
	"slices"
)

// SubmoduleAction is what to do with a submodule pointer.
type SubmoduleAction string

// Submodule actions.
const (
	// SubmoduleRecord stages the submodule's current commit as the
	// superproject's pointer.
	SubmoduleRecord SubmoduleAction = "record"
	// SubmoduleReturn checks the submodule out at the commit the
	// superproject records.
	SubmoduleReturn SubmoduleAction = "return"
)

// SubmoduleActions lists every submodule action.
func SubmoduleActions() []SubmoduleAction { return []SubmoduleAction{SubmoduleRecord, SubmoduleReturn} }

// SubmodulePointerArgs records or returns the pointer of the submodule at
// Path.
type SubmodulePointerArgs struct {
	Path   string          `json:"path"`
	Action SubmoduleAction `json:"action"`
}

func (*SubmodulePointerArgs) Op() Op { return OpSubmodulePointer }

// OpSubmodulePointer names the operation.
const OpSubmodulePointer Op = "submodule_pointer"

var submodulePointerDef = opDef{op: OpSubmodulePointer, newArgs: func() Args { return &SubmodulePointerArgs{} }, newInput: func() Input { return &SubmodulePointerInput{} }, planStep: false, phrase: "a submodule update", label: "submodule pointer", outcome: &OutcomeFacts{}}

// SubmodulePointerInput is what an agent gives propose_submodule_pointer besides the repository,
// the reason and an idempotency key; the jsonschema tags describe each
// field to the model.
type SubmodulePointerInput struct {
	Path   string `json:"path" jsonschema:"the submodule's path"`
	Action string `json:"action" jsonschema:"record or return"`
}

// Args are the submodule pointer change's arguments.
func (in *SubmodulePointerInput) Args() Args {
	return &SubmodulePointerArgs{Path: in.Path, Action: SubmoduleAction(in.Action)}
}

// Enums are the values the schema offers.
func (*SubmodulePointerInput) Enums() map[string][]string {
	return map[string][]string{"action": enumStrings(SubmoduleActions())}
}

func (a *SubmodulePointerArgs) Validate() error {
	if !validRelPath(a.Path, false) {
		return invalid("path", "is not a clean repository-relative path")
	}
	if !slices.Contains(SubmoduleActions(), a.Action) {
		return invalid("action", "must be record or return")
	}
	return nil
}

func (a *SubmodulePointerArgs) Pins() []string                 { return []string{"HEAD"} }
func (a *SubmodulePointerArgs) WrittenRefs() []string          { return nil }
func (a *SubmodulePointerArgs) FilesTouched() ([]string, bool) { return []string{a.Path}, true }
func (a *SubmodulePointerArgs) risk(Pinned) Risk {
	if a.Action == SubmoduleReturn {
		return RiskHigh
	}
	return RiskMedium
}
func (a *SubmodulePointerArgs) why(Pinned) string {
	if a.Action == SubmoduleReturn {
		return "checks the submodule " + a.Path + " out at the recorded commit"
	}
	return "records the submodule " + a.Path + " at its checked-out commit"
}

// checkRepoPins: the submodule's own HEAD is pinned under its canonical
// path, which only the submitter (who resolves symlinks) knows.
func (a *SubmodulePointerArgs) checkRepoPins(p Pinned) error {
	if len(p.Repos) != 1 {
		return invalid("pinned.repos", "must pin the submodule's HEAD")
	}
	for _, refs := range p.Repos {
		if _, ok := refs["HEAD"]; !ok {
			return invalid("pinned.repos", "must pin the submodule's HEAD")
		}
	}
	return nil
}

// Describe says what is done with which submodule.
func (a *SubmodulePointerArgs) Describe() string {
	return fmt.Sprintf("submodule %s %s", a.Action, a.Path)
}

// otherRepos: the submodule's own HEAD.
func (a *SubmodulePointerArgs) otherRepos(repo string) []OtherRepo {
	return []OtherRepo{{Path: filepath.Join(repo, a.Path), Refs: []string{"HEAD"}, Within: true}}
}

// SubjectBranch: a submodule update names no branch.
func (a *SubmodulePointerArgs) SubjectBranch() string { return "" }
