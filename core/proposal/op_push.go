package proposal

import (
	"fmt"
	"strings"
)

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

// OpPush names the operation.
const OpPush Op = "push"

var pushDef = opDef{op: OpPush, newArgs: func() Args { return &PushArgs{} }, newInput: func() Input { return &PushInput{} }, planStep: false, phrase: "a push", label: "push", outcome: &OutcomeFacts{SendsCommits: true}}

// PushInput is what an agent gives propose_push besides the repository,
// the reason and an idempotency key; the jsonschema tags describe each
// field to the model.
type PushInput struct {
	Remote         string `json:"remote,omitempty" jsonschema:"default origin"`
	Branch         string `json:"branch" jsonschema:"local branch to push"`
	RemoteBranch   string `json:"remoteBranch,omitempty" jsonschema:"default: the same name"`
	SetUpstream    bool   `json:"setUpstream,omitempty" jsonschema:"make it the upstream"`
	ForceWithLease bool   `json:"forceWithLease,omitempty" jsonschema:"overwrite only if the remote is where its tracking ref says"`
}

// Args are the push's arguments; the remote is origin unless named.
func (in *PushInput) Args() Args {
	remote := in.Remote
	if remote == "" {
		remote = "origin"
	}
	return &PushArgs{Remote: remote, Branch: in.Branch, RemoteBranch: in.RemoteBranch,
		SetUpstream: in.SetUpstream, ForceWithLease: in.ForceWithLease}
}

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

// Describe says what the push does, in a few words.
func (a *PushArgs) Describe() string { return fmt.Sprintf("push of %s to %s", a.Branch, a.Remote) }

// pinHint: a lease needs the remote-tracking ref to lease against.
func (a *PushArgs) pinHint(ref string) string {
	if ref != a.LeaseRef() {
		return ""
	}
	return "forceWithLease needs the remote-tracking ref " + strings.TrimPrefix(ref, "refs/remotes/") + " to lease against; fetch first"
}

// SubjectBranch is the branch pushed.
func (a *PushArgs) SubjectBranch() string { return a.Branch }
