package app

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/workspace"
)

// errWorkspacesOff answers workspace requests when no image is configured.
var errWorkspacesOff = &errcode.Error{Code: errcode.Unsupported,
	Msg: "workspaces are not configured: choose an image with `sluice workspace image use NAME[:TAG]` (or in Settings); Sluice and your agents use it from their next call"}

// openWorkspaces opens the workspace Manager on the directory the
// sidecars share, for a command that needs workspaces to be configured:
// nil without an image.
func openWorkspaces(cfg *config.Config, log interface {
	Warn(string, ...any)
}) *workspace.Manager {
	if cfg.WorkspaceRunImage() == "" {
		return nil
	}
	return openWorkspaceStore(cfg, log)
}

// openWorkspaceStore opens the app's workspace Manager, image or not: the
// person may pin an image while the app runs, and the sidecars then
// create workspaces whose seals come back through this Manager at once.
// The app runs nothing in a workspace on its own account; it runs the
// sidecars' runs (gateway.RuntimeHost) with this Manager's runtime, each
// checked against this store. When the container runtime is unreachable
// it still opens: runtime problems only disable stopping
// runs; seals (and so handoffs) work on files.
func openWorkspaceStore(cfg *config.Config, log interface {
	Warn(string, ...any)
}) *workspace.Manager {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rt, err := openWorkspaceRuntime(ctx, cfg)
	var copies workspace.SecretCopies
	if err != nil {
		log.Warn("workspaces: container runtime unavailable; runs are disabled", "err", err)
		rt = nil
		if cfg.OnKubernetes() {
			// Runs read granted secrets from the cluster: a grant that
			// cannot reach it fails rather than go uncopied.
			copies = unreachableCluster{err}
		}
	}
	m, err := workspace.Open(workspace.Options{
		StateDir:     cfg.StateDir, // the store keeps its own workspaces/ folder there
		ConfigDir:    cfg.ConfigDir,
		Runtime:      rt,
		SecretCopies: copies,
		Image:        cfg.WorkspaceRunImage(),
		RuntimeName:  cfg.WorkspaceOCIRuntime(),
		AllowedRoots: gitx.Roots(cfg.AllowedRoots),
		OwnPlaces:    cfg.OwnPlaces(),
	})
	if err != nil {
		log.Warn("workspaces: cannot open the workspace store; workspaces are disabled", "err", err)
		return nil
	}
	return m
}

// unreachableCluster stands for the Kubernetes runtime when it could not
// be opened: every change to a workspace's secret copy fails, so grants
// fail and revocations are remembered until the cluster answers again.
type unreachableCluster struct{ err error }

func (u unreachableCluster) fail() error {
	return &errcode.Error{Code: errcode.Unavailable, Err: u.err,
		Msg: "the Kubernetes cluster could not be reached when Sluice started (" + u.err.Error() + "); restart Sluice once it answers"}
}

func (u unreachableCluster) PutSecrets(context.Context, string, string, map[string]string) error {
	return u.fail()
}

func (u unreachableCluster) SecretCopies(context.Context, string) ([]workspace.SecretCopy, error) {
	return nil, u.fail()
}

// workspaceSweep is how often idle workspaces are looked for.
const workspaceSweep = time.Minute

// reconcileWorkspaces removes what a crash left behind (half-created or
// half-destroyed workspaces, containers with no workspace), then expires
// idle workspaces and removes revoked secrets' copies every minute until
// the app stops. It runs in the
// background: start-up does not wait on Docker.
func (a *App) reconcileWorkspaces(ctx context.Context) {
	rep, err := a.workspaces.Reconcile(ctx)
	if err != nil {
		a.log.Warn("workspaces: reconcile failed", "err", err)
	} else {
		a.log.Info("workspaces: reconciled", "report", rep)
	}
	tick := time.NewTicker(workspaceSweep)
	defer tick.Stop()
	for {
		// Revoked secrets a cluster still holds (a revocation that could
		// not reach it, a sidecar's seal) go at the latest here.
		if err := a.workspaces.SyncSecretCopies(ctx); err != nil {
			a.log.Warn("workspaces: removing revoked secrets from the cluster failed; tried again in a minute", "err", err)
		}
		if ids, err := a.workspaces.Expire(ctx); err != nil {
			a.log.Warn("workspaces: expiring idle workspaces failed", "err", err)
		} else if len(ids) > 0 {
			a.log.Info("workspaces: expired idle workspaces", "ids", ids)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// GrantRequest is a person's grant to one workspace: a secret (injected
// into its runs' environment, redacted from their output) and/or the
// hosts its runs may reach through Sluice's allowlisting proxy. Agents
// have no way to ask for this; it happens in the app or in a terminal.
type GrantRequest struct {
	ID           string `json:"id"`
	SecretName   string `json:"secretName,omitempty"`
	SecretValue  string `json:"secretValue,omitempty"`
	RevokeSecret string `json:"revokeSecret,omitempty"`
	// Egress replaces the workspace's allowed hosts when not nil; an
	// empty list takes network access away again.
	Egress []string `json:"egress,omitempty"`
}

// GrantResult is what a grant did.
type GrantResult struct {
	Done bool `json:"done"`
	// Notice is something the person should know although the grant was
	// made: a revoked secret the cluster still holds for a while.
	Notice string `json:"notice,omitempty"`
}

// GrantWorkspace applies a grant, audited before it happens (names and
// hosts only, never the secret's value): if the entry cannot be written,
// nothing is granted.
func (api *API) GrantWorkspace(g GrantRequest) (GrantResult, error) {
	notice, err := grantWorkspace(api.app.workspaces, api.app.ledger, "owner:"+api.kind, g)
	if err != nil {
		return GrantResult{}, err
	}
	return GrantResult{Done: true, Notice: notice}, nil
}

// grantWorkspace makes the grant and returns a notice for the person, or
// "".
func grantWorkspace(m *workspace.Manager, ledger *audit.Ledger, by string, g GrantRequest) (string, error) {
	if m == nil {
		return "", errWorkspacesOff
	}
	if !proposal.ValidID(g.ID) {
		return "", &errcode.Error{Code: errcode.InvalidArgument, Msg: "invalid workspace id"}
	}
	if g.SecretName == "" && g.RevokeSecret == "" && g.Egress == nil {
		return "", &errcode.Error{Code: errcode.InvalidArgument, Msg: "nothing to grant: give a secret, a secret to revoke, or egress hosts"}
	}
	data := map[string]any{"workspace": g.ID}
	if g.SecretName != "" {
		data["secret"] = g.SecretName
	}
	if g.RevokeSecret != "" {
		data["revoke_secret"] = g.RevokeSecret
	}
	if g.Egress != nil {
		hosts, err := workspace.NormalizeEgress(g.Egress)
		if err != nil {
			return "", err
		}
		data["egress_hosts"] = int64(len(hosts))
	}
	if _, err := ledger.Append(audit.Entry{EventType: "workspace_grant", Approval: by, Result: "ok", Data: data}); err != nil {
		return "", &errcode.Error{Code: errcode.AuditFailed, Msg: "nothing was granted because the audit ledger could not be written"}
	}
	notice := ""
	if g.RevokeSecret != "" {
		// Before a grant of the same request, so a failed grant leaves the
		// revocation done.
		rev, err := m.RevokeSecret(g.ID, g.RevokeSecret)
		if err != nil {
			return "", err
		}
		if rev.CopyLeft {
			notice = "The secret " + g.RevokeSecret + " is revoked and no run will be given it, but the cluster's copy could not be deleted yet (" + rev.Reason + "); Sluice deletes it before the next workspace run and when it starts."
		}
	}
	if g.SecretName != "" {
		if err := m.Grant(g.ID, g.SecretName, g.SecretValue); err != nil {
			return notice, err
		}
	}
	if g.Egress != nil {
		if err := m.GrantEgress(g.ID, g.Egress); err != nil {
			return notice, err
		}
	}
	return notice, nil
}

// WorkspaceRunView is one run's evidence as the workspaces screen shows it.
type WorkspaceRunView struct {
	ID         string             `json:"id"`
	Argv       []string           `json:"argv"`
	ExitCode   int                `json:"exitCode"`
	OOMKilled  bool               `json:"oomKilled"`
	DurationMS int64              `json:"durationMs"`
	Truncated  bool               `json:"truncated"`
	Tests      *WorkspaceTestView `json:"tests"`
	// Running: the run goes on (in a sidecar, say); duration and output
	// are those so far, and the screen refreshes until it ends.
	Running       bool `json:"running"`
	Interrupted   bool `json:"interrupted"`
	TimedOut      bool `json:"timedOut"`
	OutputStopped bool `json:"outputStopped"`
	// Verdict is how the run ended, naming the limit it hit.
	Verdict    string `json:"verdict"`
	OCIRuntime string `json:"ociRuntime"`
	// Stdout and Stderr are the end of the run's captured output (secrets
	// already redacted), at most runOutputShown bytes each.
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
}

// runOutputShown bounds the output the screen shows per stream.
const runOutputShown = 16 << 10

// tail keeps the last n bytes of s, starting on a line when it can.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	return "…\n" + strings.ToValidUTF8(s, "")
}

// WorkspaceTestView summarises a run's tests.
type WorkspaceTestView struct {
	Passed  int    `json:"passed"`
	Failed  int    `json:"failed"`
	Skipped int    `json:"skipped"`
	Format  string `json:"format"`
}

// WorkspaceView is one workspace on the workspaces screen.
type WorkspaceView struct {
	ID    string `json:"id"`
	State string `json:"state"`
	// Owner is the agent that created the workspace: the only one whose
	// workspace_* calls it answers.
	Owner          string             `json:"owner"`
	Source         string             `json:"source"`
	Base           string             `json:"base"`
	LeaseExpiresAt string             `json:"leaseExpiresAt"`
	Runs           []WorkspaceRunView `json:"runs"`
	// ProposalID is the proposal a sealed workspace's changes came back
	// as ("" until one is stored).
	ProposalID string `json:"proposalId,omitempty"`
}

// maxRunsShown bounds the runs listed per workspace (the latest ones).
const maxRunsShown = 20

// Workspaces lists the workspaces with their run evidence, newest first.
func (api *API) Workspaces() ([]WorkspaceView, error) {
	m := api.app.workspaces
	if m == nil {
		return nil, errWorkspacesOff
	}
	list, err := m.List()
	if err != nil {
		return nil, err
	}
	if len(list) == 0 && api.app.current().WorkspaceRunImage() == "" {
		// Nothing to show, and nothing will come until an image is pinned.
		return nil, errWorkspacesOff
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].CreatedAt.After(list[j].CreatedAt) })
	out := make([]WorkspaceView, 0, len(list))
	sealedAs := map[string]string{}
	for _, w := range list {
		if w.State == workspace.StateSealed {
			sealedAs = api.app.workspaceProposals()
			break
		}
	}
	for _, w := range list {
		v := WorkspaceView{ID: w.ID, State: string(w.State), Owner: w.Agent, Source: sourceLabel(w.Source), Base: w.Base,
			LeaseExpiresAt: w.ExpiresAt().UTC().Format(time.RFC3339), Runs: []WorkspaceRunView{}, ProposalID: sealedAs[w.ID]}
		runs, err := m.Runs(w.ID)
		if err != nil && !errors.Is(err, workspace.ErrNotFound) {
			api.app.log.Warn("workspaces: cannot read runs", "workspace", w.ID, "err", err)
		}
		if len(runs) > maxRunsShown {
			runs = runs[len(runs)-maxRunsShown:]
		}
		for _, r := range runs {
			v.Runs = append(v.Runs, runView(r))
		}
		out = append(out, v)
	}
	return out, nil
}

// runView is a run's evidence as the UI shows it.
func runView(r workspace.RunResult) WorkspaceRunView {
	rv := WorkspaceRunView{ID: r.ID, Argv: r.Argv, ExitCode: r.ExitCode, OOMKilled: r.OOMKilled, DurationMS: r.DurationMS, Truncated: r.Truncated,
		Running: r.Running, Interrupted: r.Interrupted, TimedOut: r.TimedOut, OutputStopped: r.OutputStopped,
		Verdict: r.Verdict(), OCIRuntime: r.OCIRuntime,
		Stdout: tail(r.Stdout, runOutputShown), Stderr: tail(r.Stderr, runOutputShown)}
	if t := r.Tests; t != nil {
		rv.Tests = &WorkspaceTestView{Passed: t.Passed, Failed: t.Failed + t.Errors, Skipped: t.Skipped, Format: t.Format}
	}
	return rv
}

func sourceLabel(s workspace.Source) string {
	switch s.Kind {
	case workspace.SourceFresh:
		return "fresh"
	case workspace.SourceRepo:
		if s.Commit != "" {
			return "repo " + s.Path + " @ " + s.Commit
		}
		return "repo " + s.Path
	}
	return string(s.Kind) + " " + s.Path
}

// workspaceHandoff is the app's side of the gateway's handoff route: it
// fetches a sealed workspace's commits into the repository the workspace
// came from, under refs/sluice/proposals/<id>. It decides nothing; the
// proposal that names the ref is decided on its card.
type workspaceHandoff struct {
	m *workspace.Manager
	// inRepo runs Sluice's own writes in the person's repository (the
	// handoff ref, made and taken back) under the executor's lock for it
	// (apply.Executor.InRepo), so that an approval's lock check never sees
	// their locks as the person's; nil runs them as they come.
	inRepo func(ctx context.Context, repo string, f func() error) error
}

// in runs f under the repository's lock when there is an executor.
func (h workspaceHandoff) in(ctx context.Context, repo string, f func() error) error {
	if h.inRepo == nil {
		return f()
	}
	return h.inRepo(ctx, repo, f)
}

// handoffRefPrefix is where a sealed workspace's commits are handed off.
const handoffRefPrefix = "refs/sluice/proposals/"

func (h workspaceHandoff) Handoff(ctx context.Context, agent, id, repo string) (gateway.HandoffResult, error) {
	ws, err := h.m.Get(id)
	if err != nil {
		return gateway.HandoffResult{}, handoffError(err)
	}
	switch {
	case ws.Agent == "" || ws.Agent != agent:
		// The rule every workspace_* tool follows: only the agent that
		// created a workspace may use it.
		return gateway.HandoffResult{}, errcode.New(errcode.Forbidden, "the workspace belongs to another agent")
	case ws.State != workspace.StateSealed:
		return gateway.HandoffResult{}, errcode.New(errcode.InvalidArgument, "only a sealed workspace can be handed off; call workspace_seal")
	case ws.Source.Kind != workspace.SourceRepo || ws.Source.Path != repo:
		return gateway.HandoffResult{}, errcode.New(errcode.InvalidArgument, "a workspace is handed off only into the repository it was created from")
	}
	ref := handoffRefPrefix + id
	// The app checks again what the seal checked (with the app's own idea
	// of Sluice's places): a seal made elsewhere proves nothing.
	findings, err := h.m.HandoffChecks(ctx, id, "", "")
	if err != nil {
		return gateway.HandoffResult{}, h.release(ctx, ws, repo, ref, handoffError(err))
	}
	if workspace.Refused(findings) {
		return gateway.HandoffResult{}, h.release(ctx, ws, repo, ref, &errcode.Error{Code: errcode.ProposalRefused,
			Msg: "the handoff checks refused this change", Data: map[string]any{"findings": findings}})
	}
	var sha string
	err = h.in(ctx, repo, func() (err error) {
		sha, err = h.m.FetchInto(ctx, id, repo, ref)
		return err
	})
	if err != nil {
		return gateway.HandoffResult{}, h.release(ctx, ws, repo, ref, handoffError(err))
	}
	return gateway.HandoffResult{Ref: ref, SHA: sha}, nil
}

// release takes back a handoff that will not become a card: the handoff
// ref goes (when it still points at the workspace's head) and the
// workspace opens for edits again, so that the agent can fix what was
// refused and seal again. cause is returned, saying so.
func (h workspaceHandoff) release(ctx context.Context, ws *workspace.Workspace, repo, ref string, cause error) error {
	ctx = context.WithoutCancel(ctx)
	rmErr := h.in(ctx, repo, func() error { return h.m.RemoveHandoff(ctx, ws.ID, repo, ref) })
	unErr := h.m.Unseal(ws.ID)
	if err := errors.Join(rmErr, unErr); err != nil {
		return errors.Join(cause, err)
	}
	e, ok := errcode.As(cause)
	if !ok {
		return cause
	}
	return &errcode.Error{Code: e.Code, Data: e.Data, Err: e.Err,
		Msg: e.Msg + "; workspace " + ws.ID + " is open again: fix this in the workspace and call workspace_seal again"}
}

// handoffBackend is the gateway's backend with one addition: when the
// proposal of a sealed workspace (a merge of its handoff ref) is refused,
// the handoff is taken back, so that no workspace is left sealed without
// a card.
type handoffBackend struct {
	gateway.Backend
	h workspaceHandoff
	j *journal.Journal
}

func (b handoffBackend) Submit(ctx context.Context, agent string, p proposal.Proposal) (gateway.ProposalStatus, error) {
	st, err := b.Backend.Submit(ctx, agent, p)
	if err == nil {
		return st, nil
	}
	source, ok := p.MergeSource()
	if !ok || !strings.HasPrefix(source, handoffRefPrefix) {
		return st, err
	}
	ws, gerr := b.h.m.Get(strings.TrimPrefix(source, handoffRefPrefix))
	if gerr != nil || ws.Agent != agent || ws.State != workspace.StateSealed || ws.Source.Kind != workspace.SourceRepo || ws.Source.Path != p.Repo {
		return st, err
	}
	// A card that already names the ref keeps it (and the seal).
	open, lerr := b.j.List(journal.Filter{States: []proposal.State{proposal.Pending, proposal.Approved, proposal.Executing, proposal.NeedsReconciliation}, Repo: p.Repo})
	if lerr != nil {
		return st, err
	}
	for _, rec := range open {
		if s, ok := rec.Proposal.MergeSource(); ok && s == source {
			return st, err
		}
	}
	return st, b.h.release(ctx, ws, p.Repo, source, err)
}

// handoffError keeps the workspace's stable codes on the wire (the
// gateway gives each its status), without the cause: that stays in the
// app's log.
func handoffError(err error) error {
	we, ok := errcode.As(err)
	if !ok || we.Code == errcode.Internal {
		return err
	}
	return &errcode.Error{Code: we.Code, Msg: we.Msg, Data: we.Data}
}

// workspaceWatch is how often the store is looked at for changes while a
// screen listens; a run's record is rewritten at most four times a second.
const workspaceWatch = 250 * time.Millisecond

// watchWorkspaces publishes "workspace:changed" whenever the workspace
// store changes on disk: a run a sidecar makes grows its record there, and
// this is how the Workspaces screen (SSE in the browser, Wails events in
// the window) sees it without asking. It rests while nobody listens.
func (a *App) watchWorkspaces(ctx context.Context) {
	tick := time.NewTicker(workspaceWatch)
	defer tick.Stop()
	last := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if a.events.Subscribers() == 0 {
			last = ""
			continue
		}
		stamp, err := a.workspaces.Stamp()
		if err != nil {
			continue
		}
		if last != "" && stamp != last {
			a.events.Publish(Event{Name: "workspace:changed"})
		}
		last = stamp
	}
}

// workspaceProposals maps a workspace to the newest proposal that merges
// its handed-off commits (refs/sluice/proposals/<workspace>): what a sealed
// workspace came back as.
func (a *App) workspaceProposals() map[string]string {
	out := map[string]string{}
	recs, err := a.journal.List(journal.Filter{Limit: 1000})
	if err != nil {
		a.log.Warn("workspaces: cannot read proposals", "err", err)
		return out
	}
	for _, rec := range recs {
		if id, ok := mergedWorkspace(rec.Proposal); ok {
			if _, seen := out[id]; !seen {
				out[id] = rec.Proposal.ID
			}
		}
	}
	return out
}
