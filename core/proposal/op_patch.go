package proposal

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// PatchTarget is where a patch is applied.
type PatchTarget string

// Patch targets.
const (
	PatchWorktree PatchTarget = "worktree"
	PatchIndex    PatchTarget = "index"
)

// PatchTargets lists every place a patch can apply to.
func PatchTargets() []PatchTarget { return []PatchTarget{PatchWorktree, PatchIndex} }

// PatchArgs applies a unified diff to the working tree or the index.
type PatchArgs struct {
	Patch  string      `json:"patch"`
	Target PatchTarget `json:"target"`
	Branch string      `json:"branch,omitempty"`
}

func (*PatchArgs) Op() Op { return OpPatch }

// OpPatch names the operation.
const OpPatch Op = "patch"

var patchDef = opDef{op: OpPatch, newArgs: func() Args { return &PatchArgs{} }, newInput: func() Input { return &PatchInput{} }, planStep: true, phrase: "a patch", label: "patch", outcome: &OutcomeFacts{}}

// PatchInput is what an agent gives propose_patch besides the repository,
// the reason and an idempotency key; the jsonschema tags describe each
// field to the model.
type PatchInput struct {
	Patch   string `json:"patch" jsonschema:"git diff format, at most 4 MiB"`
	ApplyTo string `json:"applyTo" jsonschema:"worktree or index (stage only)"`
	Branch  string `json:"branch,omitempty" jsonschema:"the branch expected to be checked out"`
}

// Args are the patch's arguments.
func (in *PatchInput) Args() Args {
	return &PatchArgs{Patch: in.Patch, Target: PatchTarget(in.ApplyTo), Branch: in.Branch}
}

// Enums are the values the schema offers.
func (*PatchInput) Enums() map[string][]string {
	return map[string][]string{"applyTo": enumStrings(PatchTargets())}
}

func (a *PatchArgs) Validate() error {
	if !slices.Contains(PatchTargets(), a.Target) {
		return invalid("target", "must be worktree or index")
	}
	if a.Patch == "" {
		return invalid("patch", "is empty")
	}
	if len(a.Patch) > MaxPatchBytes {
		return invalid("patch", "is larger than %d bytes", MaxPatchBytes)
	}
	if !utf8.ValidString(a.Patch) || strings.ContainsRune(a.Patch, 0) {
		return invalid("patch", "is not valid UTF-8 text")
	}
	if _, err := patchFiles(a.Patch); err != nil {
		return invalid("patch", "%v", err)
	}
	return validOptionalBranch(a.Branch)
}

func (a *PatchArgs) Pins() []string        { return withBranch([]string{"HEAD"}, a.Branch) }
func (a *PatchArgs) WrittenRefs() []string { return nil }
func (a *PatchArgs) FilesTouched() ([]string, bool) {
	files, err := patchFiles(a.Patch)
	return files, err == nil
}
func (a *PatchArgs) risk(Pinned) Risk  { return RiskMedium }
func (a *PatchArgs) why(Pinned) string { return "changes files in the " + string(a.Target) }

// Describe says what the patch does, in a few words.
func (a *PatchArgs) Describe() string {
	if a.Branch != "" {
		return "patch on " + a.Branch
	}
	return "patch"
}

func (a *PatchArgs) checkedOut() string     { return a.Branch }
func (a *PatchArgs) writesCheckedOut() bool { return false }

// SubjectBranch: a patch's branch only names the branch checked out.
func (a *PatchArgs) SubjectBranch() string { return "" }
