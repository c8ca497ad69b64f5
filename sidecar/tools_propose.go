package sidecar

import (
	"context"
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

// planStepSchema is the schema of one plan step as tools/list carries it.
func planStepSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Required: []string{"op"}, Properties: map[string]*jsonschema.Schema{
		"op": {Type: "string", Enum: enums["op"]},
	}}
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

// proposeTool is how a propose_<op> tool is offered: its row in the tool
// table names the operation, and the tool takes the fields of the input
// core/proposal declares for it (proposal.NewInput) beside ProposeCommon.
type proposeTool struct {
	op                 proposal.Op
	title, description string
	destructive        bool
}

// registerProposeRows registers the propose_<op> tools of one toolset, in
// the tool table's order.
func (s *Sidecar) registerProposeRows(toolset string) {
	for _, row := range toolTable {
		if row.toolset == toolset && row.propose != nil {
			addProposeTool(s, row.name, *row.propose)
		}
	}
}

func (s *Sidecar) registerPropose() {
	s.registerProposeRows("propose")
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
	s.registerProposeRows("propose_more")
}

// addStatusTool registers a tool whose result describes a proposal. With
// outcomeIsError, a proposal that ended without completing is reported
// with isError and the structured outcome, so that no client mistakes it
// for success; failures of the call itself become structured tool errors
// as in addTool.
func addStatusTool[In any](s *Sidecar, t *mcp.Tool, outcomeIsError bool, h handlerFunc[In, ProposalOut]) {
	if _, _, ok := tableSchemas(t.Name); !ok {
		if t.InputSchema == nil {
			t.InputSchema = memoSchema(t.Name, boundedSchema[In])
		}
		if t.OutputSchema == nil {
			t.OutputSchema = proposalOutputSchema(t.Name)
		}
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
func proposalOutputSchema(tool string) any {
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
	sctx, others := s.proposalPresence(ctx, req, repo, args)
	st, err := s.submit(sctx, p)
	if err != nil {
		return ProposalOut{}, err
	}
	out := statusOut(st)
	out.OtherAgents = others()
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
	// enums are the values of string fields named so anywhere in a
	// schema; an operation's input names its own (see proposeSchema).
	enums = map[string][]any{
		"op": enumOf(proposal.PlanStepOps()),
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
