package proposal

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Op names what a proposal asks for.
type Op string

// The operations an agent may propose.
const (
	OpMerge            Op = "merge"
	OpRebase           Op = "rebase"
	OpDiscard          Op = "discard"
	OpReset            Op = "reset"
	OpPatch            Op = "patch"
	OpPlan             Op = "plan"
	OpWorktree         Op = "worktree"
	OpCommit           Op = "commit"
	OpPush             Op = "push"
	OpBranch           Op = "branch"
	OpBranchDelete     Op = "branch_delete"
	OpSubmodulePointer Op = "submodule_pointer"
)

// opDef is everything this package knows of one operation: its arguments
// type (whose methods say how they are validated, what they pin, what
// they write, their risk and why) and whether it can be a plan step. How
// an operation is sealed and executed is its step in core/apply; its tool
// is in sidecar/tools_propose.go.
type opDef struct {
	op       Op
	newArgs  func() Args
	planStep bool
	// phrase names the operation in a sentence ("claude-code proposes a
	// merge on shop"): notifications use it.
	phrase string
}

var opDefs = []opDef{
	{OpMerge, func() Args { return &MergeArgs{} }, true, "a merge"},
	{OpRebase, func() Args { return &RebaseArgs{} }, true, "a rebase"},
	{OpDiscard, func() Args { return &DiscardArgs{} }, true, "discarding changes"},
	{OpReset, func() Args { return &ResetArgs{} }, true, "a reset"},
	{OpPatch, func() Args { return &PatchArgs{} }, true, "a patch"},
	{OpPlan, func() Args { return &PlanArgs{} }, false, "a plan"},
	{OpWorktree, func() Args { return &WorktreeArgs{} }, false, "a worktree"},
	{OpCommit, func() Args { return &CommitArgs{} }, false, "a commit"},
	{OpPush, func() Args { return &PushArgs{} }, false, "a push"},
	{OpBranch, func() Args { return &BranchArgs{} }, false, "a branch"},
	{OpBranchDelete, func() Args { return &BranchDeleteArgs{} }, false, "deleting branches"},
	{OpSubmodulePointer, func() Args { return &SubmodulePointerArgs{} }, false, "a submodule update"},
}

// Phrase names the operation in a sentence: "a merge", "discarding
// changes".
func (o Op) Phrase() string {
	if d, ok := defOf(o); ok {
		return d.phrase
	}
	return string(o)
}

func defOf(o Op) (opDef, bool) {
	for _, d := range opDefs {
		if d.op == o {
			return d, true
		}
	}
	return opDef{}, false
}

// Ops lists every operation.
func Ops() []Op {
	out := make([]Op, len(opDefs))
	for i, d := range opDefs {
		out[i] = d.op
	}
	return out
}

// Valid reports whether o is a known operation.
func (o Op) Valid() bool {
	_, ok := defOf(o)
	return ok
}

// PlanStep reports whether o may be a step of a plan.
func (o Op) PlanStep() bool {
	d, ok := defOf(o)
	return ok && d.planStep
}

// Args are the operation-specific arguments of a proposal. The concrete
// types are the *XxxArgs structs of this package.
type Args interface {
	// Op is the operation these arguments belong to.
	Op() Op
	// Validate checks the arguments on their own.
	Validate() error
	// Pins lists the revisions the proposal must pin to SHAs in its own
	// repository (Pinned.Refs keys).
	Pins() []string
	// WrittenRefs lists the full ref names the operation creates, moves or
	// deletes, as far as the arguments say; policy checks them.
	WrittenRefs() []string
	// FilesTouched lists repository-relative paths the operation changes
	// and whether that list is complete.
	FilesTouched() ([]string, bool)

	risk(Pinned) Risk
	// why says in one line why the operation has the risk it has.
	why(Pinned) string
}

// repoPinner is implemented by args that pin refs in other repositories
// (Pinned.Repos); all other args must leave Pinned.Repos empty.
type repoPinner interface {
	checkRepoPins(Pinned) error
}

// newArgs returns a zero *XxxArgs for op.
func newArgs(op Op) (Args, error) {
	if d, ok := defOf(op); ok {
		return d.newArgs(), nil
	}
	return nil, invalid("op", "unknown operation %q", op)
}

// DecodeArgs decodes raw strictly (unknown fields refused) into the
// arguments type of op. It does not validate them.
func DecodeArgs(op Op, raw json.RawMessage) (Args, error) {
	a, err := newArgs(op)
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, invalid("args", "missing")
	}
	if err := decodeStrict(raw, a); err != nil {
		return nil, invalid("args", "%v", err)
	}
	return a, nil
}

// MergeStrategy is how a merge lands on its target.
type MergeStrategy string

// Merge strategies.
const (
	MergeCommit MergeStrategy = "merge"
	MergeSquash MergeStrategy = "squash"
)

// MergeArgs merges Source into the branch Target.
type MergeArgs struct {
	Source   string        `json:"source"`
	Target   string        `json:"target"`
	Strategy MergeStrategy `json:"strategy"`
	Message  string        `json:"message,omitempty"`
}

func (*MergeArgs) Op() Op { return OpMerge }

func (a *MergeArgs) Validate() error {
	if !validRevision(a.Source) {
		return invalid("source", "is not a valid revision")
	}
	if !validBranchName(a.Target) {
		return invalid("target", "is not a valid branch name (give the short name, e.g. main)")
	}
	if a.Strategy != MergeCommit && a.Strategy != MergeSquash {
		return invalid("strategy", "must be merge or squash")
	}
	return validMessage("message", a.Message, false)
}

func (a *MergeArgs) Pins() []string                 { return []string{a.Source, BranchRef(a.Target)} }
func (a *MergeArgs) WrittenRefs() []string          { return []string{BranchRef(a.Target)} }
func (a *MergeArgs) FilesTouched() ([]string, bool) { return nil, false }
func (a *MergeArgs) risk(Pinned) Risk               { return RiskMedium }
func (a *MergeArgs) why(Pinned) string              { return fmt.Sprintf("merges %s into %s", a.Source, a.Target) }

// RebaseArgs replays Branch onto Onto. Never interactive: there is no way
// to ask for it.
type RebaseArgs struct {
	Branch string `json:"branch"`
	Onto   string `json:"onto"`
}

func (*RebaseArgs) Op() Op { return OpRebase }

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

// DiscardArgs throws away uncommitted changes to Paths ("." for all).
type DiscardArgs struct {
	Paths []string `json:"paths"`
	// Untracked also removes untracked files under Paths.
	Untracked bool `json:"untracked,omitempty"`
	// Branch, when set, is the branch the working tree must be on.
	Branch string `json:"branch,omitempty"`
}

func (*DiscardArgs) Op() Op { return OpDiscard }

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

// ResetMode is git reset's mode.
type ResetMode string

// Reset modes.
const (
	ResetSoft  ResetMode = "soft"
	ResetMixed ResetMode = "mixed"
	ResetHard  ResetMode = "hard"
)

// ResetArgs moves the checked-out branch to Target.
type ResetArgs struct {
	Mode   ResetMode `json:"mode"`
	Target string    `json:"target"`
	Branch string    `json:"branch,omitempty"`
}

func (*ResetArgs) Op() Op { return OpReset }

func (a *ResetArgs) Validate() error {
	if a.Mode != ResetSoft && a.Mode != ResetMixed && a.Mode != ResetHard {
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

// PatchTarget is where a patch is applied.
type PatchTarget string

// Patch targets.
const (
	PatchWorktree PatchTarget = "worktree"
	PatchIndex    PatchTarget = "index"
)

// PatchArgs applies a unified diff to the working tree or the index.
type PatchArgs struct {
	Patch  string      `json:"patch"`
	Target PatchTarget `json:"target"`
	Branch string      `json:"branch,omitempty"`
}

func (*PatchArgs) Op() Op { return OpPatch }

func (a *PatchArgs) Validate() error {
	if a.Target != PatchWorktree && a.Target != PatchIndex {
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

// PlanStep is one operation of a plan.
type PlanStep struct {
	Op   Op   `json:"op"`
	Args Args `json:"args"`
}

// UnmarshalJSON decodes the step's args into the type its op names.
func (s *PlanStep) UnmarshalJSON(b []byte) error {
	var w struct {
		Op   Op              `json:"op"`
		Args json.RawMessage `json:"args"`
	}
	if err := decodeStrict(b, &w); err != nil {
		return err
	}
	if !w.Op.PlanStep() {
		return invalid("steps", "op %q cannot be a plan step", w.Op)
	}
	a, err := DecodeArgs(w.Op, w.Args)
	if err != nil {
		return err
	}
	*s = PlanStep{Op: w.Op, Args: a}
	return nil
}

// PlanArgs are 1–10 steps approved as one unit; execution stops at the
// first step that fails.
type PlanArgs struct {
	Steps []PlanStep `json:"steps"`
}

func (*PlanArgs) Op() Op { return OpPlan }

func (a *PlanArgs) Validate() error {
	if len(a.Steps) == 0 || len(a.Steps) > MaxPlanSteps {
		return invalid("steps", "a plan has 1 to %d steps", MaxPlanSteps)
	}
	patchBytes := 0
	for i, s := range a.Steps {
		if s.Args == nil || !s.Op.PlanStep() || s.Args.Op() != s.Op {
			return invalid(fmt.Sprintf("steps[%d]", i), "op must be one of merge, rebase, discard, reset, patch, with its args")
		}
		if err := s.Args.Validate(); err != nil {
			return fmt.Errorf("steps[%d]: %w", i, err)
		}
		if p, ok := s.Args.(*PatchArgs); ok {
			patchBytes += len(p.Patch)
		}
	}
	if patchBytes > MaxPatchBytes {
		return invalid("steps", "the patches together are larger than %d bytes", MaxPatchBytes)
	}
	return nil
}

func (a *PlanArgs) Pins() []string {
	var out []string
	for _, s := range a.Steps {
		if s.Args != nil {
			out = appendUnique(out, s.Args.Pins()...)
		}
	}
	return out
}

func (a *PlanArgs) WrittenRefs() []string {
	var out []string
	for _, s := range a.Steps {
		if s.Args != nil {
			out = appendUnique(out, s.Args.WrittenRefs()...)
		}
	}
	return out
}

func (a *PlanArgs) FilesTouched() ([]string, bool) {
	var out []string
	complete := true
	for _, s := range a.Steps {
		if s.Args == nil {
			return nil, false
		}
		f, ok := s.Args.FilesTouched()
		complete = complete && ok
		out = appendUnique(out, f...)
	}
	slices.Sort(out)
	return out, complete
}

func (a *PlanArgs) risk(p Pinned) Risk {
	r := RiskLow
	for _, s := range a.Steps {
		if s.Args != nil {
			r = max(r, s.Args.risk(p))
		}
	}
	return r
}
func (a *PlanArgs) why(p Pinned) string {
	r, why := RiskLow, ""
	for _, s := range a.Steps {
		if s.Args != nil && s.Args.risk(p) >= r {
			r, why = s.Args.risk(p), s.Args.why(p)
		}
	}
	return fmt.Sprintf("runs %d steps as one unit; the riskiest %s", len(a.Steps), why)
}

// WorktreeArgs adds a linked worktree at Path with Branch checked out,
// creating Branch from StartPoint when NewBranch is set.
type WorktreeArgs struct {
	Path       string `json:"path"`
	Branch     string `json:"branch"`
	NewBranch  bool   `json:"newBranch,omitempty"`
	StartPoint string `json:"startPoint,omitempty"`
}

func (*WorktreeArgs) Op() Op { return OpWorktree }

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

// PushArgs pushes Branch to Remote (as RemoteBranch, default the same
// name). A forced push is only ever --force-with-lease against the pinned
// remote-tracking ref.
type PushArgs struct {
	Remote         string `json:"remote"`
	Branch         string `json:"branch"`
	RemoteBranch   string `json:"remoteBranch,omitempty"`
	SetUpstream    bool   `json:"setUpstream,omitempty"`
	ForceWithLease bool   `json:"forceWithLease,omitempty"`
}

func (*PushArgs) Op() Op { return OpPush }

func (a *PushArgs) Validate() error {
	if !validRemoteName(a.Remote) {
		return invalid("remote", "is not a valid remote name")
	}
	if !validBranchName(a.Branch) {
		return invalid("branch", "is not a valid branch name")
	}
	if a.RemoteBranch != "" && !validBranchName(a.RemoteBranch) {
		return invalid("remoteBranch", "is not a valid branch name")
	}
	return nil
}

// RemoteName is the branch name on the remote.
func (a *PushArgs) RemoteName() string {
	if a.RemoteBranch != "" {
		return a.RemoteBranch
	}
	return a.Branch
}

// LeaseRef is the remote-tracking ref a forced push leases against.
func (a *PushArgs) LeaseRef() string { return "refs/remotes/" + a.Remote + "/" + a.RemoteName() }

func (a *PushArgs) Pins() []string {
	if a.ForceWithLease {
		return []string{BranchRef(a.Branch), a.LeaseRef()}
	}
	return []string{BranchRef(a.Branch)}
}

// WrittenRefs names the branch on the remote, which is what a push changes.
func (a *PushArgs) WrittenRefs() []string          { return []string{BranchRef(a.RemoteName())} }
func (a *PushArgs) FilesTouched() ([]string, bool) { return nil, true }
func (a *PushArgs) risk(Pinned) Risk {
	if a.ForceWithLease {
		return RiskDestructive
	}
	return RiskMedium
}
func (a *PushArgs) why(Pinned) string {
	if a.ForceWithLease {
		return "overwrites " + a.Remote + "/" + a.RemoteName() + " on the remote"
	}
	return "publishes commits to " + a.Remote + "/" + a.RemoteName()
}

// BranchArgs creates the branch Name at StartPoint.
type BranchArgs struct {
	Name       string `json:"name"`
	StartPoint string `json:"startPoint"`
	// Checkout switches the main working tree to the new branch, which
	// needs a clean working tree.
	Checkout bool `json:"checkout,omitempty"`
}

func (*BranchArgs) Op() Op { return OpBranch }

func (a *BranchArgs) Validate() error {
	if !validBranchName(a.Name) {
		return invalid("name", "is not a valid branch name")
	}
	if !validRevision(a.StartPoint) {
		return invalid("startPoint", "is not a valid revision")
	}
	return nil
}

func (a *BranchArgs) Pins() []string                 { return []string{a.StartPoint} }
func (a *BranchArgs) WrittenRefs() []string          { return []string{BranchRef(a.Name)} }
func (a *BranchArgs) FilesTouched() ([]string, bool) { return nil, true }
func (a *BranchArgs) risk(Pinned) Risk {
	if a.Checkout {
		return RiskMedium
	}
	return RiskLow
}
func (a *BranchArgs) why(Pinned) string {
	if a.Checkout {
		return "creates " + a.Name + " and switches the working tree to it"
	}
	return "creates the branch " + a.Name
}

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

// SubmodulePointerArgs records or returns the pointer of the submodule at
// Path.
type SubmodulePointerArgs struct {
	Path   string          `json:"path"`
	Action SubmoduleAction `json:"action"`
}

func (*SubmodulePointerArgs) Op() Op { return OpSubmodulePointer }

func (a *SubmodulePointerArgs) Validate() error {
	if !validRelPath(a.Path, false) {
		return invalid("path", "is not a clean repository-relative path")
	}
	if a.Action != SubmoduleRecord && a.Action != SubmoduleReturn {
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

func validMessage(field, m string, required bool) error {
	if required && strings.TrimSpace(m) == "" {
		return invalid(field, "is required")
	}
	if len(m) > MaxMessageBytes {
		return invalid(field, "longer than %d bytes", MaxMessageBytes)
	}
	if !utf8.ValidString(m) || strings.ContainsRune(m, 0) {
		return invalid(field, "is not valid text")
	}
	return nil
}

func validPaths(field string, paths []string, allowDot, required bool) error {
	if required && len(paths) == 0 {
		return invalid(field, "at least one path is required")
	}
	if len(paths) > MaxPaths {
		return invalid(field, "at most %d paths", MaxPaths)
	}
	seen := map[string]bool{}
	for _, p := range paths {
		if !validRelPath(p, allowDot) {
			return invalid(field, "%q is not a clean repository-relative path outside .git", p)
		}
		if seen[p] {
			return invalid(field, "%q is listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

func validBranches(field string, bs []string) error {
	if len(bs) == 0 || len(bs) > MaxBranchesPerOp {
		return invalid(field, "1 to %d branches", MaxBranchesPerOp)
	}
	seen := map[string]bool{}
	for _, b := range bs {
		if !validBranchName(b) {
			return invalid(field, "%q is not a valid branch name", b)
		}
		if seen[b] {
			return invalid(field, "%q is listed twice", b)
		}
		seen[b] = true
	}
	return nil
}

func validOptionalBranch(b string) error {
	if b != "" && !validBranchName(b) {
		return invalid("branch", "is not a valid branch name")
	}
	return nil
}

func withBranch(pins []string, branch string) []string {
	if branch != "" {
		pins = append(pins, BranchRef(branch))
	}
	return pins
}

func appendUnique(dst []string, src ...string) []string {
	for _, s := range src {
		if !slices.Contains(dst, s) {
			dst = append(dst, s)
		}
	}
	return dst
}
