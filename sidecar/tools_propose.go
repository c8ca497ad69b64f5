package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// progressInterval is how often proposal_wait reports progress while it
// waits; it also bounds each long-poll to the app, so that a cancelled
// request is noticed within it.
var progressInterval = 5 * time.Second

// ProposeCommon are the fields every propose_* tool takes.
type ProposeCommon struct {
	RepoPath       string `json:"repoPath" jsonschema:"the repository"`
	Reason         string `json:"reason" jsonschema:"a sentence or two, shown on the approval card"`
	IdempotencyKey string `json:"idempotencyKey,omitempty" jsonschema:"a retry with it returns the first proposal"`
}

// MergeStep merges one revision into a branch.
type MergeStep struct {
	Source   string `json:"source" jsonschema:"branch, tag or commit"`
	Target   string `json:"target" jsonschema:"the branch to merge into"`
	Strategy string `json:"strategy" jsonschema:"merge (fast-forward when possible) or squash (one new commit)"`
	Message  string `json:"message,omitempty" jsonschema:"commit message"`
}

// RebaseStep replays a branch onto another revision. It is never
// interactive.
type RebaseStep struct {
	Branch string `json:"branch" jsonschema:"the branch to rebase"`
	Onto   string `json:"onto" jsonschema:"revision"`
}

// DiscardStep throws away uncommitted changes.
type DiscardStep struct {
	Paths     []string `json:"paths" jsonschema:"repository-relative; \".\" for all"`
	Untracked bool     `json:"untracked,omitempty" jsonschema:"also delete untracked files there"`
	Branch    string   `json:"branch,omitempty" jsonschema:"the branch expected to be checked out"`
}

// ResetStep moves the checked-out branch.
type ResetStep struct {
	Mode   string `json:"mode" jsonschema:"soft, mixed or hard"`
	Target string `json:"target" jsonschema:"revision, e.g. HEAD~1"`
	Branch string `json:"branch,omitempty" jsonschema:"the branch expected to be checked out"`
}

// PatchStep applies a unified diff.
type PatchStep struct {
	Patch   string `json:"patch" jsonschema:"git diff format, at most 4 MiB"`
	ApplyTo string `json:"applyTo" jsonschema:"worktree or index (stage only)"`
	Branch  string `json:"branch,omitempty" jsonschema:"the branch expected to be checked out"`
}

// ProposeMergeIn is the input of propose_merge.
type ProposeMergeIn struct {
	ProposeCommon
	MergeStep
}

// ProposeRebaseIn is the input of propose_rebase.
type ProposeRebaseIn struct {
	ProposeCommon
	RebaseStep
}

// ProposeDiscardIn is the input of propose_discard.
type ProposeDiscardIn struct {
	ProposeCommon
	DiscardStep
}

// ProposeResetIn is the input of propose_reset.
type ProposeResetIn struct {
	ProposeCommon
	ResetStep
}

// ProposePatchIn is the input of propose_patch.
type ProposePatchIn struct {
	ProposeCommon
	PatchStep
}

// PlanStepIn is one step of a plan: op and the arguments propose_<op>
// takes for it, other than repoPath, reason and idempotencyKey. Those
// tools describe each field, and a plan is only served beside them, so the
// plan's schema names only op (see planStepSchema) and a step is decoded
// strictly here: a field no step takes, or one of another op, is refused
// with the fields its op does take.
type PlanStepIn struct {
	Op        string   `json:"op"`
	Source    string   `json:"source,omitempty"`
	Target    string   `json:"target,omitempty"`
	Strategy  string   `json:"strategy,omitempty"`
	Message   string   `json:"message,omitempty"`
	Branch    string   `json:"branch,omitempty"`
	Onto      string   `json:"onto,omitempty"`
	Paths     []string `json:"paths,omitempty"`
	Untracked bool     `json:"untracked,omitempty"`
	Mode      string   `json:"mode,omitempty"`
	Patch     string   `json:"patch,omitempty"`
	ApplyTo   string   `json:"applyTo,omitempty"`
}

// planStepSchema is the schema of one plan step as tools/list carries it.
func planStepSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Required: []string{"op"}, Properties: map[string]*jsonschema.Schema{
		"op": {Type: "string", Enum: enums["op"]},
	}}
}

// ProposePlanIn is the input of propose_plan.
type ProposePlanIn struct {
	ProposeCommon
	Steps []json.RawMessage `json:"steps" jsonschema:"1 to 10, run in order"`
}

// ProposeWorktreeIn is the input of propose_worktree.
type ProposeWorktreeIn struct {
	ProposeCommon
	Path       string `json:"path" jsonschema:"absolute; must not exist yet"`
	Branch     string `json:"branch" jsonschema:"checked out there"`
	NewBranch  bool   `json:"newBranch,omitempty" jsonschema:"create branch from startPoint"`
	StartPoint string `json:"startPoint,omitempty" jsonschema:"default HEAD; with newBranch"`
}

// ProposeCommitIn is the input of propose_commit.
type ProposeCommitIn struct {
	ProposeCommon
	Message  string   `json:"message" jsonschema:"the commit message"`
	Paths    []string `json:"paths,omitempty" jsonschema:"these or stageAll"`
	StageAll bool     `json:"stageAll,omitempty" jsonschema:"every change, new files included"`
	Branch   string   `json:"branch,omitempty" jsonschema:"the checked-out branch (a branch policy needs it)"`
	StackOn  string   `json:"stackOn,omitempty" jsonschema:"id of your own pending commit proposal to stack this one on: it lands after that one"`
}

// ProposePushIn is the input of propose_push.
type ProposePushIn struct {
	ProposeCommon
	Remote         string `json:"remote,omitempty" jsonschema:"default origin"`
	Branch         string `json:"branch" jsonschema:"local branch to push"`
	RemoteBranch   string `json:"remoteBranch,omitempty" jsonschema:"default: the same name"`
	SetUpstream    bool   `json:"setUpstream,omitempty" jsonschema:"make it the upstream"`
	ForceWithLease bool   `json:"forceWithLease,omitempty" jsonschema:"overwrite only if the remote is where its tracking ref says"`
}

// ProposeBranchIn is the input of propose_branch.
type ProposeBranchIn struct {
	ProposeCommon
	Name       string `json:"name" jsonschema:"branch name"`
	StartPoint string `json:"startPoint,omitempty" jsonschema:"default HEAD"`
	Checkout   bool   `json:"checkout,omitempty" jsonschema:"also switch to it (no uncommitted changes)"`
}

// RepoBranchesIn names branches in another repository.
type RepoBranchesIn struct {
	RepoPath string   `json:"repoPath"`
	Branches []string `json:"branches"`
}

// ProposeBranchDeleteIn is the input of propose_branch_delete.
type ProposeBranchDeleteIn struct {
	ProposeCommon
	Branches   []string         `json:"branches" jsonschema:"in repoPath"`
	OtherRepos []RepoBranchesIn `json:"otherRepos,omitempty" jsonschema:"repoPath and branches to delete in more repositories"`
}

// ProposeSubmodulePointerIn is the input of propose_submodule_pointer.
type ProposeSubmodulePointerIn struct {
	ProposeCommon
	Path   string `json:"path" jsonschema:"the submodule's path"`
	Action string `json:"action" jsonschema:"record or return"`
}

// ProposalIDIn names a proposal.
type ProposalIDIn struct {
	ProposalID string `json:"proposalId" jsonschema:"from a propose_* tool"`
}

// ProposalWaitIn is the input of proposal_wait.
type ProposalWaitIn struct {
	ProposalID     string `json:"proposalId" jsonschema:"from a propose_* tool"`
	TimeoutSeconds int    `json:"timeoutSeconds,omitempty" jsonschema:"1 to 50 (default 50)"`
}

// DecisionOut is who decided a proposal.
type DecisionOut struct {
	Approved bool         `json:"approved"`
	By       string       `json:"by" jsonschema:"a person, or policy:<rule> for an automatic approval"`
	Note     string       `json:"note,omitempty"`
	At       string       `json:"at"`
	Comments []CommentOut `json:"comments,omitempty" jsonschema:"a rejection's notes on files and lines of the proposal: address each before proposing again"`
}

// CommentOut is the person's note on a file (line 0) or a line of it.
type CommentOut struct {
	Path string `json:"path"`
	Line int    `json:"line" jsonschema:"0: the whole file"`
	Side string `json:"side,omitempty" jsonschema:"new: the line in the file as proposed; old: as it was (a deleted line)"`
	Note string `json:"note"`
}

// OutcomeOut is how a proposal ended.
type OutcomeOut struct {
	Code         errcode.Code `json:"code,omitempty"`
	Message      string       `json:"message,omitempty"`
	RestorePoint string       `json:"restorePoint,omitempty"`
	At           string       `json:"at"`
}

// CollisionOut is another pending proposal that touches the same files.
type CollisionOut struct {
	ProposalID string   `json:"proposalId"`
	Agent      string   `json:"agent"`
	Files      []string `json:"files"`
}

// ProposalOut describes a proposal and where it is in its lifecycle. Only
// the fields a model must not misread carry descriptions, and on the wire
// only proposal_wait's output schema carries them (proposalOutputSchema).
type ProposalOut struct {
	ProposalID   string            `json:"proposalId,omitempty"`
	Status       string            `json:"status,omitempty" jsonschema:"sealing (a large change's outcome is still being computed), pending, approved, executing, completed, failed, rejected, cancelled, expired or needs_reconciliation"`
	Done         bool              `json:"done" jsonschema:"true only when the change was carried out (completed); approved or executing is not done"`
	Terminal     bool              `json:"terminal"`
	Op           string            `json:"op,omitempty"`
	Digest       string            `json:"digest,omitempty"`
	ShortDigest  string            `json:"shortDigest,omitempty"`
	Risk         string            `json:"risk,omitempty"`
	Destructive  bool              `json:"destructive,omitempty"`
	ExpiresAt    string            `json:"expiresAt,omitempty"`
	Pinned       map[string]string `json:"pinned,omitempty" jsonschema:"revision → commit SHA at submit; execution refuses to run if they moved"`
	Replayed     bool              `json:"replayed,omitempty"`
	AutoApproved bool              `json:"autoApproved,omitempty"`
	Decision     *DecisionOut      `json:"decision,omitempty"`
	Outcome      *OutcomeOut       `json:"outcome,omitempty"`
	Collisions   []CollisionOut    `json:"collisions,omitempty" jsonschema:"other pending proposals touching some of the same files"`
	OtherAgents  []OtherAgent      `json:"otherAgents,omitempty" jsonschema:"informational: other agents working in this repository now, with the paths of this proposal they also proposed to change; nothing here blocks the proposal"`
	NextAction   string            `json:"nextAction,omitempty" jsonschema:"the tool to call next"`
	Message      string            `json:"message,omitempty"`
	ErrorField
}

// proposeTool describes one propose_* tool.
type proposeTool struct {
	name, title, description string
	destructive              bool
}

func (s *Sidecar) registerPropose() {
	addProposeTool(s, proposeTool{"propose_merge", "Propose a merge",
		"Propose merging source into target, as a merge commit or one squashed commit. Use it to integrate a " +
			"branch; a conflicting merge is refused at once with the files.", false},
		func(in ProposeMergeIn) (ProposeCommon, proposal.Args, error) {
			return in.ProposeCommon, mergeArgs(in.MergeStep), nil
		})
	addProposeTool(s, proposeTool{"propose_rebase", "Propose a rebase",
		"Propose replaying branch onto another revision (never interactive; rewriting a pushed branch is " +
			"destructive). Use it to bring a branch up to date.", false},
		func(in ProposeRebaseIn) (ProposeCommon, proposal.Args, error) {
			return in.ProposeCommon, &proposal.RebaseArgs{Branch: in.Branch, Onto: in.Onto}, nil
		})
	addProposeTool(s, proposeTool{"propose_discard", "Propose discarding changes",
		"Propose throwing away uncommitted changes to paths, untracked files too with untracked " +
			"(destructive). Use it to drop edits that are not wanted.", true},
		func(in ProposeDiscardIn) (ProposeCommon, proposal.Args, error) {
			return in.ProposeCommon, discardArgs(in.DiscardStep), nil
		})
	addProposeTool(s, proposeTool{"propose_reset", "Propose a reset",
		"Propose moving the checked-out branch to target: soft, mixed, or hard, which discards uncommitted " +
			"changes (destructive). Use it to undo commits.", true},
		func(in ProposeResetIn) (ProposeCommon, proposal.Args, error) {
			return in.ProposeCommon, resetArgs(in.ResetStep), nil
		})
	addProposeTool(s, proposeTool{"propose_patch", "Propose a patch",
		"Propose applying a unified diff to the working tree or only to the index. Use it to change files; a " +
			"patch that does not apply is refused at once with git's reason.", false},
		func(in ProposePatchIn) (ProposeCommon, proposal.Args, error) {
			return in.ProposeCommon, patchArgs(in.PatchStep), nil
		})
	addProposeTool(s, proposeTool{"propose_commit", "Propose a commit",
		"Propose committing paths, or every change with stageAll, on the checked-out branch as the files are " +
			"now, with the person's identity, hooks and signing; it never amends. Use it when your edits are " +
			"ready; stackOn puts it on top of your own pending commit proposal.", false},
		func(in ProposeCommitIn) (ProposeCommon, proposal.Args, error) {
			return in.ProposeCommon, &proposal.CommitArgs{Message: in.Message, Paths: in.Paths, StageAll: in.StageAll, Branch: in.Branch, Below: in.StackOn}, nil
		})
	addProposeTool(s, proposeTool{"propose_push", "Propose a push",
		"Propose pushing a branch to a remote, optionally setting its upstream; forcing is only " +
			"--force-with-lease (destructive). Use it to publish commits.", false},
		func(in ProposePushIn) (ProposeCommon, proposal.Args, error) {
			remote := in.Remote
			if remote == "" {
				remote = "origin"
			}
			return in.ProposeCommon, &proposal.PushArgs{Remote: remote, Branch: in.Branch, RemoteBranch: in.RemoteBranch,
				SetUpstream: in.SetUpstream, ForceWithLease: in.ForceWithLease}, nil
		})
	addProposeTool(s, proposeTool{"propose_branch", "Propose a branch",
		"Propose creating a branch at startPoint (default HEAD), optionally checking it out. Use it before " +
			"work that should not land on the current branch.", false},
		func(in ProposeBranchIn) (ProposeCommon, proposal.Args, error) {
			start := in.StartPoint
			if start == "" {
				start = "HEAD"
			}
			return in.ProposeCommon, &proposal.BranchArgs{Name: in.Name, StartPoint: start, Checkout: in.Checkout}, nil
		})
	addProposeTool(s, proposeTool{"propose_branch_delete", "Propose deleting branches",
		"Propose deleting branches here and in other repositories; only merged branches that are not checked " +
			"out go. Use it to clean up.", false},
		func(in ProposeBranchDeleteIn) (ProposeCommon, proposal.Args, error) {
			a := &proposal.BranchDeleteArgs{Branches: in.Branches}
			for _, r := range in.OtherRepos {
				// Canonicalised (and confined) before pinning.
				a.OtherRepos = append(a.OtherRepos, proposal.RepoBranches{Repo: r.RepoPath, Branches: r.Branches})
			}
			return in.ProposeCommon, a, nil
		})

	addStatusTool(s, &mcp.Tool{
		Name:  "proposal_status",
		Title: "Proposal status",
		Description: "A proposal's status now, without waiting; one that ended other than completed is an isError result " +
			"with the outcome. Use it to check without blocking.",
		Annotations: readOnly("Proposal status"),
	}, true, func(ctx context.Context, req *mcp.CallToolRequest, in ProposalIDIn) (ProposalOut, error) {
		c, err := s.gateway()
		if err != nil {
			return ProposalOut{}, err
		}
		st, err := c.GetProposal(ctx, s.agentName(req), in.ProposalID)
		if err != nil {
			return ProposalOut{}, gatewayToolError(err)
		}
		return statusOut(st), nil
	})
	addStatusTool(s, &mcp.Tool{
		Name:  "proposal_wait",
		Title: "Wait for a decision",
		Description: "Wait up to timeoutSeconds (at most 50) for a proposal's outcome; call it again when time runs out. " +
			"done is true only when it completed; any other end is an isError result; a rejection may carry the " +
			"person's notes on files and lines (decision.comments). Use it after every propose_* call.",
		Annotations: readOnly("Wait for a decision"),
	}, true, s.proposalWait)
	addStatusTool(s, &mcp.Tool{
		Name:  "proposal_cancel",
		Title: "Cancel a proposal",
		Description: "Withdraw your own proposal while it is pending. Use it when the change is no longer wanted; a " +
			"decided proposal cannot be cancelled.",
		Annotations: &mcp.ToolAnnotations{Title: "Cancel a proposal", DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(false)},
	}, false, func(ctx context.Context, req *mcp.CallToolRequest, in ProposalIDIn) (ProposalOut, error) {
		c, err := s.gateway()
		if err != nil {
			return ProposalOut{}, err
		}
		st, err := c.CancelProposal(ctx, s.agentName(req), in.ProposalID)
		if err != nil {
			return ProposalOut{}, gatewayToolError(err)
		}
		out := statusOut(st)
		out.Message = "the proposal was cancelled"
		return out, nil
	})
}

// registerProposeMore adds the proposals a session needs now and then: a
// plan of several steps approved as one, a linked worktree, a submodule
// pointer. They are a toolset of their own so that a model does not read
// their definitions on every turn of every session; toolset_enable adds
// them, and the tools they follow (worktree_list, submodule_status) name it.
func (s *Sidecar) registerProposeMore() {
	addProposeTool(s, proposeTool{"propose_plan", "Propose a plan",
		"Propose 1 to 10 steps approved as one unit and run in order until one fails; each step is op (merge, " +
			"rebase, discard, reset or patch) with the arguments propose_<op> takes but repoPath, reason and " +
			"idempotencyKey. Use it when steps only make sense together.", false},
		func(in ProposePlanIn) (ProposeCommon, proposal.Args, error) {
			a, err := planArgs(in.Steps)
			return in.ProposeCommon, a, err
		})
	addProposeTool(s, proposeTool{"propose_worktree", "Propose a worktree",
		"Propose a linked worktree at path with branch checked out (newBranch creates it from startPoint). " +
			"Use it to work on a second branch side by side.", false},
		func(in ProposeWorktreeIn) (ProposeCommon, proposal.Args, error) {
			a := &proposal.WorktreeArgs{Path: in.Path, Branch: in.Branch, NewBranch: in.NewBranch, StartPoint: in.StartPoint}
			if a.NewBranch && a.StartPoint == "" {
				a.StartPoint = "HEAD"
			}
			return in.ProposeCommon, a, nil
		})
	addProposeTool(s, proposeTool{"propose_submodule_pointer", "Propose a submodule pointer change",
		"Propose recording a submodule's checked-out commit as the superproject's pointer (record), or " +
			"checking out the recorded one (return). Use it when submodule_status shows drift.", false},
		func(in ProposeSubmodulePointerIn) (ProposeCommon, proposal.Args, error) {
			return in.ProposeCommon, &proposal.SubmodulePointerArgs{Path: in.Path, Action: proposal.SubmoduleAction(in.Action)}, nil
		})
}

func mergeArgs(m MergeStep) proposal.Args {
	return &proposal.MergeArgs{Source: m.Source, Target: m.Target, Strategy: proposal.MergeStrategy(m.Strategy), Message: m.Message}
}

func discardArgs(d DiscardStep) proposal.Args {
	return &proposal.DiscardArgs{Paths: d.Paths, Untracked: d.Untracked, Branch: d.Branch}
}

func resetArgs(r ResetStep) proposal.Args {
	return &proposal.ResetArgs{Mode: proposal.ResetMode(r.Mode), Target: r.Target, Branch: r.Branch}
}

func patchArgs(p PatchStep) proposal.Args {
	return &proposal.PatchArgs{Patch: p.Patch, Target: proposal.PatchTarget(p.ApplyTo), Branch: p.Branch}
}

// planStepFields are the fields each kind of plan step takes, as
// propose_<op> names them.
var planStepFields = map[string][]string{
	"merge":   {"source", "target", "strategy", "message"},
	"rebase":  {"branch", "onto"},
	"discard": {"paths", "untracked", "branch"},
	"reset":   {"mode", "target", "branch"},
	"patch":   {"patch", "applyTo", "branch"},
}

// planArgs converts the steps. A step that sets a field its op does not
// take is refused with the fields it does take; what is missing or
// malformed is left to validation, as for the single-op tools.
func planArgs(steps []json.RawMessage) (proposal.Args, error) {
	a := &proposal.PlanArgs{}
	for i, raw := range steps {
		var st PlanStepIn
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&st); err != nil {
			return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: fmt.Sprintf(
				"steps[%d]: %v; a step is op and the arguments propose_<op> takes, other than repoPath, reason and idempotencyKey", i, err)}
		}
		fields, ok := planStepFields[st.Op]
		if !ok {
			// Validation names the ops a step may have.
			a.Steps = append(a.Steps, proposal.PlanStep{Op: proposal.Op(st.Op)})
			continue
		}
		set := []struct {
			name string
			on   bool
		}{
			{"source", st.Source != ""}, {"target", st.Target != ""}, {"strategy", st.Strategy != ""},
			{"message", st.Message != ""}, {"branch", st.Branch != ""}, {"onto", st.Onto != ""},
			{"paths", st.Paths != nil}, {"untracked", st.Untracked}, {"mode", st.Mode != ""},
			{"patch", st.Patch != ""}, {"applyTo", st.ApplyTo != ""},
		}
		for _, f := range set {
			if f.on && !slices.Contains(fields, f.name) {
				return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: fmt.Sprintf(
					"steps[%d]: a %s step takes %s (as propose_%s does), not %s; move %s to a step of its own",
					i, st.Op, strings.Join(fields, ", "), st.Op, f.name, f.name)}
			}
		}
		var args proposal.Args
		switch st.Op {
		case "merge":
			args = mergeArgs(MergeStep{Source: st.Source, Target: st.Target, Strategy: st.Strategy, Message: st.Message})
		case "rebase":
			args = &proposal.RebaseArgs{Branch: st.Branch, Onto: st.Onto}
		case "discard":
			args = discardArgs(DiscardStep{Paths: st.Paths, Untracked: st.Untracked, Branch: st.Branch})
		case "reset":
			args = resetArgs(ResetStep{Mode: st.Mode, Target: st.Target, Branch: st.Branch})
		case "patch":
			args = patchArgs(PatchStep{Patch: st.Patch, ApplyTo: st.ApplyTo, Branch: st.Branch})
		}
		a.Steps = append(a.Steps, proposal.PlanStep{Op: proposal.Op(st.Op), Args: args})
	}
	return a, nil
}

// addProposeTool registers a propose_* tool: convert the input to args,
// then submit.
func addProposeTool[In any](s *Sidecar, t proposeTool, convert func(In) (ProposeCommon, proposal.Args, error)) {
	tool := &mcp.Tool{
		Name:        t.name,
		Title:       t.title,
		Description: t.description,
		InputSchema: boundedSchema[In](),
		Annotations: &mcp.ToolAnnotations{
			Title:           t.title,
			ReadOnlyHint:    false,
			DestructiveHint: boolPtr(t.destructive),
			IdempotentHint:  false,
			OpenWorldHint:   boolPtr(false),
		},
	}
	addStatusTool(s, tool, true, func(ctx context.Context, req *mcp.CallToolRequest, in In) (ProposalOut, error) {
		common, args, err := convert(in)
		if err != nil {
			return ProposalOut{}, err
		}
		return s.submitProposal(ctx, req, common, args)
	})
}

// addStatusTool registers a tool whose result describes a proposal. With
// outcomeIsError, a proposal that ended without completing is reported
// with isError and the structured outcome, so that no client mistakes it
// for success; failures of the call itself become structured tool errors
// as in addTool.
func addStatusTool[In any](s *Sidecar, t *mcp.Tool, outcomeIsError bool, h handlerFunc[In, ProposalOut]) {
	if t.InputSchema == nil {
		t.InputSchema = boundedSchema[In]()
	}
	if t.OutputSchema == nil {
		t.OutputSchema = proposalOutputSchema(t.Name)
	}
	outcome := &outcomeStep[ProposalOut]{}
	if outcomeIsError {
		outcome.failure = outcomeError
	}
	registerTool(s.server, t, h, outcome)
}

// proposalOutputSchema is the wire output schema of a tool that returns
// a proposal result. Sixteen tools return it; its fields are described on
// proposal_wait, where the outcome arrives, rather than sixteen times in
// every tools/list.
func proposalOutputSchema(tool string) *jsonschema.Schema {
	return sharedOutputSchema[ProposalOut](tool, "proposal_wait")
}

// outcomeError is the error for a proposal that ended without being
// carried out, or nil.
func outcomeError(out ProposalOut) *ToolError {
	var code errcode.Code
	msg := ""
	switch proposal.State(out.Status) {
	case proposal.Rejected:
		code, msg = errcode.ProposalRefused, "the person rejected the proposal"
		if o := out.Outcome; o != nil && o.Code == errcode.StaleBase {
			// Sent back because the card went stale: propose again against
			// the current state.
			code, msg = errcode.StaleBase, o.Message+"; read the repository again and propose against its current state"
		}
		if out.Decision != nil && out.Decision.Note != "" {
			msg += ": " + out.Decision.Note
		}
		if out.Decision != nil && len(out.Decision.Comments) > 0 {
			msg += fmt.Sprintf(" (with %d note(s) on files and lines in decision.comments)", len(out.Decision.Comments))
		}
	case proposal.Cancelled:
		code, msg = errcode.ProposalTerminal, "the proposal was cancelled"
	case proposal.Expired:
		code, msg = errcode.ProposalTerminal, "no decision was made before the proposal expired; propose again if it is still needed"
	case proposal.NeedsReconciliation:
		code, msg = errcode.ProposalTerminal, "execution was interrupted; the person has to check the repository and settle it"
	case proposal.Failed:
		code, msg = errcode.ProposalTerminal, "the proposal failed"
		if o := out.Outcome; o != nil {
			if slices.Contains(modelCodes, o.Code) {
				code = o.Code
			}
			if o.Message != "" {
				msg += ": " + o.Message
			}
		}
	default:
		return nil
	}
	return &ToolError{Code: code, Message: msg}
}

// modelCodes are the stable codes a failed outcome may pass through.
var modelCodes = []errcode.Code{errcode.StaleBase, errcode.GitFailed, errcode.PolicyDenied, errcode.Timeout, errcode.Unsupported}

func statusOut(st gateway.ProposalStatus) ProposalOut {
	out := ProposalOut{
		ProposalID: st.ProposalID, Status: string(st.Status), Done: st.Done, Terminal: st.Terminal, Op: string(st.Op),
		Digest: st.Digest, ShortDigest: st.ShortDigest, Risk: st.Risk, Destructive: st.Destructive,
		ExpiresAt: st.ExpiresAt, Pinned: st.Pinned.Refs, Replayed: st.Replayed, AutoApproved: st.AutoApproved,
	}
	if d := st.Decision; d != nil {
		out.Decision = &DecisionOut{Approved: d.Approved, By: d.By, Note: d.Note, At: d.At}
		for _, c := range d.Comments {
			out.Decision.Comments = append(out.Decision.Comments, CommentOut{Path: c.Path, Line: c.Line, Side: c.Side, Note: c.Note})
		}
	}
	if o := st.Outcome; o != nil {
		out.Outcome = &OutcomeOut{Code: o.Code, Message: o.Message, RestorePoint: o.RestorePoint, At: o.At}
	}
	for _, c := range st.Collisions {
		out.Collisions = append(out.Collisions, CollisionOut{ProposalID: c.ProposalID, Agent: c.Agent, Files: c.Files})
	}
	switch st.Status {
	case gateway.StatusSealing:
		out.NextAction = "proposal_wait"
		out.Message = "the Sluice app is still computing what this change does (a large change takes a while); there is no card yet. proposal_wait follows it until it is pending for the person, or says why it was refused"
	case proposal.Pending:
		out.NextAction = "proposal_wait"
		out.Message = "waiting for the person to decide in the Sluice app"
		// A proposal may wait a day or a week: proposal_wait answers in
		// slices of at most 50 seconds, and the agent need not spend its
		// session calling it.
		if st.ExpiresAt != "" {
			out.Message += " (it waits until " + st.ExpiresAt + "); call proposal_wait again, or go on with other work and come back to it with proposal_wait or proposal_status"
		}
	case proposal.Approved, proposal.Executing:
		out.NextAction = "proposal_wait"
		out.Message = "approved; not carried out yet"
	case proposal.Completed:
		out.Message = "the change was carried out"
	case proposal.Failed:
		// A failure that kept no restore point changed nothing: it is the
		// same sealed change, still unmade, and the person can run it
		// again from its card once its cause is fixed.
		if o := st.Outcome; o != nil && o.RestorePoint == "" {
			out.Message = "it failed before changing anything (the outcome says why): once that is fixed, the person can retry it from its card, and proposal_wait then follows it; if the repository moved instead, propose the change again under a new idempotencyKey"
		}
	}
	if n := len(out.Collisions); n > 0 {
		out.Message += fmt.Sprintf("; %d other pending proposal(s) touch some of the same files", n)
	}
	return out
}

// submitProposal confines the repository, validates the arguments, pins
// every revision to a SHA, seals the proposal and sends it to the app,
// which checks all of it again.
func (s *Sidecar) submitProposal(ctx context.Context, req *mcp.CallToolRequest, common ProposeCommon, args proposal.Args) (ProposalOut, error) {
	if err := s.checkRoots(); err != nil {
		return ProposalOut{}, err
	}
	roots := s.conf().roots
	dir, err := roots.Confine(common.RepoPath)
	if err != nil {
		return ProposalOut{}, err
	}
	g, err := newGitResolver(roots)
	if err != nil {
		return ProposalOut{}, err
	}
	repo, err := g.toplevel(ctx, dir)
	if err != nil {
		return ProposalOut{}, err
	}
	// The repository's top level must be inside the roots too.
	if repo, err = roots.Confine(repo); err != nil {
		return ProposalOut{}, err
	}
	if err := canonicalizeArgs(roots, args); err != nil {
		return ProposalOut{}, err
	}
	if err := args.Validate(); err != nil {
		return ProposalOut{}, invalidArgument(err)
	}
	pinned, err := s.pinFor(ctx, g, roots, repo, args)
	if err != nil {
		return ProposalOut{}, err
	}
	now := time.Now()
	p := proposal.Proposal{
		ID: uuid.NewString(), Op: args.Op(), Repo: repo, Pinned: pinned, Args: args,
		Reason: common.Reason, Agent: s.agentName(req), IdempotencyKey: common.IdempotencyKey,
		CreatedAt: proposal.At(now), ExpiresAt: proposal.At(now.Add(s.conf().cfg.PendingExpiry)),
	}
	if p.IdempotencyKey == "" {
		p.IdempotencyKey = callKey()
	}
	if err := p.Seal(); err != nil {
		return ProposalOut{}, invalidArgument(err)
	}
	if err := p.Validate(); err != nil {
		return ProposalOut{}, invalidArgument(err)
	}
	st, err := s.submit(ctx, p)
	if err != nil {
		return ProposalOut{}, err
	}
	out := statusOut(st)
	out.OtherAgents = s.proposalPresence(req, repo, args)
	return out, nil
}

func invalidArgument(err error) *errcode.Error {
	return &errcode.Error{Code: errcode.InvalidArgument, Msg: strings.TrimPrefix(err.Error(), proposal.ErrInvalid.Error()+": ")}
}

// canonicalizeArgs replaces paths that name other places on disk (other
// repositories, a new worktree) by their canonical, confined form.
func canonicalizeArgs(roots gitx.Roots, args proposal.Args) error {
	for _, pl := range proposal.Places(args) {
		switch pl.Kind {
		case proposal.PlaceRepository:
			canon, err := roots.Confine(*pl.Path)
			if err != nil {
				return err
			}
			*pl.Path = canon
		case proposal.PlaceNewWorktree:
			if !filepath.IsAbs(*pl.Path) {
				return &errcode.Error{Code: errcode.InvalidArgument, Msg: "path must be an absolute path"}
			}
			// Not in any git directory (.git in any case, a bare
			// repository, a common directory), not under a tree whose git
			// directory is outside the roots; the nesting is pinned by pin.
			canon, _, err := roots.WorktreePlace(*pl.Path)
			if err != nil {
				return err
			}
			*pl.Path = canon
			if _, err := os.Lstat(canon); err == nil {
				return &errcode.Error{Code: errcode.InvalidArgument, Msg: "path already exists; a worktree needs a new directory"}
			}
		}
	}
	return nil
}

// pin resolves every revision the args name to a commit SHA, and checks
// what the args claim about the checkout (which branch HEAD is on).
func pin(ctx context.Context, g *gitResolver, roots gitx.Roots, repo string, args proposal.Args) (proposal.Pinned, error) {
	pinned := proposal.Pinned{Refs: map[string]string{}}
	for _, ref := range args.Pins() {
		sha, err := g.resolve(ctx, repo, ref)
		if err != nil {
			if hint := proposal.PinHint(args, ref); hint != "" {
				return pinned, &errcode.Error{Code: errcode.InvalidArgument, Msg: hint}
			}
			return pinned, err
		}
		pinned.Refs[ref] = sha
	}
	var head string
	for i, b := range proposal.CheckedOutBranches(args) {
		if i == 0 {
			var err error
			if head, err = g.symbolicHead(ctx, repo); err != nil {
				return pinned, err
			}
		}
		if head != proposal.BranchRef(b) {
			return pinned, &errcode.Error{Code: errcode.StaleBase,
				Msg: fmt.Sprintf("the working tree is not on branch %s (HEAD is %s)", b, strings.TrimPrefix(orDefault(head, "detached"), "refs/heads/"))}
		}
	}
	// A branch with an upstream has been pushed: pinning the upstream
	// marks its rebase as a history rewrite.
	for _, b := range proposal.UpstreamsToPin(args) {
		if up, _ := g.upstream(ctx, repo, b); up != "" {
			if sha, err := g.resolve(ctx, repo, up); err == nil {
				pinned.Refs[up] = sha
			}
		}
	}
	for _, pl := range proposal.Places(args) {
		if pl.Kind == proposal.PlaceNewWorktree {
			// A worktree inside another working tree is pinned as such:
			// its card is high risk, and the app checks the claim.
			_, nested, err := roots.WorktreePlace(*pl.Path)
			if err != nil {
				return pinned, err
			}
			pinned.WorktreeNestedIn = nested
		}
	}
	for _, o := range proposal.OtherRepos(args, repo) {
		path, refs, err := pinOtherRepo(ctx, g, roots, repo, o)
		if err != nil {
			return pinned, err
		}
		if pinned.Repos == nil {
			pinned.Repos = map[string]map[string]string{}
		}
		pinned.Repos[path] = refs
	}
	return pinned, nil
}

func orDefault(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// pinOtherRepo pins the refs of a repository other than repo that the
// arguments name: a submodule inside it (its checked-out HEAD) or another
// repository beside it, named by its top level.
func pinOtherRepo(ctx context.Context, g *gitResolver, roots gitx.Roots, repo string, o proposal.OtherRepo) (string, map[string]string, error) {
	path := o.Path
	if o.Within {
		sub, err := roots.Confine(o.Path)
		if err != nil {
			return "", nil, err
		}
		top, err := g.toplevel(ctx, sub)
		if err != nil || top != sub || sub == repo {
			return "", nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: "path is not a checked-out submodule"}
		}
		path = sub
	} else {
		if o.Path == repo {
			return "", nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: "otherRepos repeats repoPath; list its branches under branches"}
		}
		top, err := g.toplevel(ctx, o.Path)
		if err != nil {
			return "", nil, err
		}
		if top != o.Path {
			return "", nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: "each otherRepos entry must be the top level of a repository"}
		}
	}
	refs := map[string]string{}
	for _, ref := range o.Refs {
		sha, err := g.resolve(ctx, path, ref)
		if err != nil {
			return "", nil, err
		}
		refs[ref] = sha
	}
	return path, refs, nil
}

func (s *Sidecar) proposalWait(ctx context.Context, req *mcp.CallToolRequest, in ProposalWaitIn) (ProposalOut, error) {
	timeout := gateway.MaxWait
	if in.TimeoutSeconds > 0 {
		timeout = min(time.Duration(in.TimeoutSeconds)*time.Second, gateway.MaxWait)
	}
	c, err := s.gateway()
	if err != nil {
		return ProposalOut{}, err
	}
	agent := s.agentName(req)
	var token any
	if req != nil && req.Params != nil {
		token = req.Params.GetProgressToken()
	}
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		slice := min(time.Until(deadline), progressInterval)
		st, err := c.WaitProposal(ctx, agent, in.ProposalID, max(slice, 0))
		if err != nil {
			return ProposalOut{}, gatewayToolError(err)
		}
		if st.Status.Settled() || !time.Now().Before(deadline) || ctx.Err() != nil {
			return statusOut(st), nil
		}
		if token != nil && req.Session != nil {
			elapsed := time.Since(start)
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      float64(elapsed.Milliseconds()) / 1000,
				Total:         timeout.Seconds(),
				Message:       fmt.Sprintf("proposal %s is %s; still waiting", st.ProposalID, st.Status),
			})
		}
	}
}

// boundedSchema is the inferred input schema of In with the bounds that
// struct tags cannot express: the length of free text, enums and the
// proposal id pattern. Only free text (a reason, a message, a
// patch) carries a length in the schema, since that is where a client
// could send too much; names, refs, paths, lists and the idempotency key are
// held to theirs by proposal validation before anything is submitted, with an
// error that states the limit, rather than by a bound every model reads on
// every turn. The app enforces every bound again.
func boundedSchema[In any]() *jsonschema.Schema {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		panic(err)
	}
	boundSchema(s, "")
	return s
}

var (
	enums = map[string][]any{
		"strategy": enumOf(proposal.MergeStrategies()),
		"mode":     enumOf(proposal.ResetModes()),
		"applyTo":  enumOf(proposal.PatchTargets()),
		"action":   enumOf(proposal.SubmoduleActions()),
		"op":       enumOf(proposal.PlanStepOps()),
	}
	maxLengths = map[string]int{
		"reason": proposal.MaxReasonBytes, "patch": proposal.MaxPatchBytes, "message": proposal.MaxMessageBytes,
	}
	patterns = map[string]string{
		"proposalId": proposal.IDPattern,
	}
)

// enumOf is a schema enum of core/proposal's list of values.
func enumOf[T ~string](values []T) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

func boundSchema(s *jsonschema.Schema, name string) {
	if s == nil {
		return
	}
	switch {
	case s.Type == "string":
		if n, ok := maxLengths[name]; ok {
			s.MaxLength = jsonschema.Ptr(n)
		}
		if e, ok := enums[name]; ok {
			s.Enum = e
		}
		if p, ok := patterns[name]; ok {
			s.Pattern = p
		}
	case s.Items != nil && name == "steps":
		s.Items = planStepSchema()
	case s.Items != nil:
		// A list's size, like a name's length, is checked by validation.
		boundSchema(s.Items, name)
	case s.Type == "integer" && name == "timeoutSeconds":
		s.Minimum, s.Maximum = jsonschema.Ptr(0.0), jsonschema.Ptr(50.0)
	}
	for prop, ps := range s.Properties {
		boundSchema(ps, prop)
	}
}

// gitResolver answers the few questions a submit asks of git (where the
// repository's top is, which commit a revision names, which branch is
// checked out, a branch's upstream) through core/gitx, hardened like every
// read in Sluice.
type gitResolver struct {
	r     *gitx.Runner
	roots gitx.Roots
}

func newGitResolver(roots gitx.Roots) (*gitResolver, error) {
	r, err := gitx.Default()
	if err != nil {
		return nil, err
	}
	return &gitResolver{r: r, roots: roots}, nil
}

func (g *gitResolver) open(ctx context.Context, dir string) (*gitx.Repo, error) {
	repo, err := g.r.Open(ctx, g.roots, dir)
	if err != nil {
		return nil, err
	}
	if repo.Bare {
		return nil, &errcode.Error{Code: errcode.NotARepository, Msg: "repoPath is a bare repository; proposals need a working tree"}
	}
	return repo, nil
}

// resolve returns the commit SHA rev names in the repository at dir.
func (g *gitResolver) resolve(ctx context.Context, dir, rev string) (string, error) {
	repo, err := g.open(ctx, dir)
	if err != nil {
		return "", err
	}
	return repo.ResolveCommit(ctx, strconv.Quote(rev), rev)
}

// toplevel is the canonical top-level directory of the working tree that
// contains dir.
func (g *gitResolver) toplevel(ctx context.Context, dir string) (string, error) {
	repo, err := g.open(ctx, dir)
	if err != nil {
		return "", err
	}
	return repo.Root, nil
}

// symbolicHead is the full ref HEAD points to, or "" when detached or
// unborn.
func (g *gitResolver) symbolicHead(ctx context.Context, dir string) (string, error) {
	repo, err := g.open(ctx, dir)
	if err != nil {
		return "", err
	}
	out, err := repo.ReadGit(ctx, "rev-parse", []string{"--symbolic-full-name"}, []string{"HEAD"}, []int{128}, 4096)
	if err != nil {
		return "", err
	}
	// git 2.39's rev-parse echoes --end-of-options before its answer: the
	// answer is the last line.
	lines := strings.Split(strings.TrimSpace(string(out.Stdout)), "\n")
	head := lines[len(lines)-1]
	if out.ExitCode != 0 || !strings.HasPrefix(head, "refs/") {
		return "", nil
	}
	return head, nil
}

// upstream is the full name of branch's upstream ref, or "".
func (g *gitResolver) upstream(ctx context.Context, dir, branch string) (string, error) {
	repo, err := g.open(ctx, dir)
	if err != nil {
		return "", err
	}
	out, err := repo.ReadGit(ctx, "for-each-ref", []string{"--format=%(upstream)"}, []string{proposal.BranchRef(branch)}, nil, 4096)
	if err != nil {
		return "", err
	}
	up := strings.TrimSpace(string(out.Stdout))
	if !strings.HasPrefix(up, "refs/") || strings.ContainsAny(up, "\n ") {
		return "", nil
	}
	return up, nil
}
