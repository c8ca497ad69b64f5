package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/core/apply"
	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/intake"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/policy"
	"github.com/sluicehq/sluice/core/proposal"
)

// rulebook is the app's hold on the policy file: which file it is, and
// the gateway that applies it. Every change to the file goes through it,
// one at a time.
type rulebook struct {
	mu      sync.Mutex
	path    string // "" until a policy file is configured
	backend *intake.Intake
	now     func() time.Time
}

func (rb *rulebook) file() string {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.path
}

// autoApprovedBy is the rule named by an automatic decision ("policy:NAME").
func autoApprovedBy(d *journal.Decision) string {
	if d == nil || !d.Auto || !d.Approved {
		return ""
	}
	return strings.TrimPrefix(d.By, "policy:")
}

// RuleView is one auto-approve rule on the Rules screen.
type RuleView struct {
	Name  string `json:"name"`
	Agent string `json:"agent"`
	// Identity is the kind of identity the rule trusts the agent's name
	// as: "session", "token", "declared", or "" (a rule written by hand
	// before rules said so: any).
	Identity string `json:"identity"`
	// Repos are the repositories it approves in; empty (a rule written by
	// hand) means any.
	Repos   []string      `json:"repos"`
	Ops     []proposal.Op `json:"ops"`
	Refs    []string      `json:"refs"`
	Paths   []string      `json:"paths"`
	MaxRisk string        `json:"maxRisk"`
	// ExpiresAt, CreatedAt are RFC 3339, or empty when not set.
	ExpiresAt    string `json:"expiresAt"`
	Expired      bool   `json:"expired"`
	CreatedAt    string `json:"createdAt"`
	FromProposal string `json:"fromProposal"`
	// InAgentEntry is true for a rule written by hand inside an agent's
	// entry of the policy file.
	InAgentEntry bool `json:"inAgentEntry"`
	// Approved counts the proposals this rule approved since it was made
	// (that the journal still holds).
	Approved     int    `json:"approved"`
	LastApproved string `json:"lastApproved"`
}

// RulesView is the Rules screen.
type RulesView struct {
	// PolicyFile is the configured file, or where the first rule will
	// create one.
	PolicyFile string     `json:"policyFile"`
	Configured bool       `json:"configured"`
	Rules      []RuleView `json:"rules"`
}

// RuleDraft is the rule "Approve and trust similar" would create from a
// card, for the person to read and edit before it is saved.
type RuleDraft struct {
	RuleInput
	Agent string `json:"agent"`
	// Identity is the kind of identity the card's agent has, which the
	// rule trusts: "session" (a confined session Sluice started), "token"
	// (an HTTP token's or connector's name) or "declared" (only a name the
	// program gave itself: the rule then trusts any program calling itself
	// Agent, and is saved only when the person opts in).
	Identity string `json:"identity"`
	// Repos are the card's repository (and any other it pins): the rule
	// approves there only.
	Repos        []string      `json:"repos"`
	Ops          []proposal.Op `json:"ops"`
	FromProposal string        `json:"fromProposal"`
	PolicyFile   string        `json:"policyFile"`
	// CreatesFile is true when saving creates the policy file (and
	// configures it).
	CreatesFile bool `json:"createsFile"`
	// Notes say what the rule cannot check about proposals like this one.
	Notes []string `json:"notes"`
}

// RuleInput is what the person can change in a rule made from a card:
// its agent and operations are the card's.
type RuleInput struct {
	Name    string   `json:"name"`
	Refs    []string `json:"refs"`
	Paths   []string `json:"paths"`
	MaxRisk string   `json:"maxRisk"`
	// Expiry is "hour", "today" or "always".
	Expiry string `json:"expiry"`
	// TrustDeclaredName opts in to a rule for an agent that only declared
	// its name: it approves any program calling itself that name.
	TrustDeclaredName bool `json:"trustDeclaredName"`
}

// TrustRequest approves a card and saves a rule for proposals like it.
type TrustRequest struct {
	Decision
	Rule RuleInput `json:"rule"`
}

// TrustResult is the approved card and the rule saved.
type TrustResult struct {
	Card Card     `json:"card"`
	Rule RuleView `json:"rule"`
}

// RevokeRequest names a rule to remove.
type RevokeRequest struct {
	Agent string `json:"agent"`
	Name  string `json:"name"`
}

// ruleError maps policy errors to the codes the UI shows.
func ruleError(err error) error {
	switch {
	case errors.Is(err, policy.ErrDestructive):
		return &errcode.Error{Code: errcode.DestructiveNotTrusted, Msg: err.Error()}
	case errors.Is(err, policy.ErrChanged):
		return &errcode.Error{Code: errcode.PolicyChanged, Msg: err.Error()}
	case errors.Is(err, policy.ErrNoRule):
		return &errcode.Error{Code: errcode.RuleNotFound, Msg: err.Error()}
	case errors.Is(err, policy.ErrInvalid):
		return &errcode.Error{Code: errcode.InvalidArgument, Msg: err.Error()}
	}
	return err
}

// readPolicy reads the policy file for a change. With none configured it
// is the default path, which must not exist yet: a file there that the
// app does not use is the person's, and is not taken over unasked.
// Called with rb.mu held.
func (a *App) readPolicy() (f *policy.File, creates bool, err error) {
	rb := a.rules
	if rb.path != "" {
		f, err := policy.ReadFile(rb.path)
		if err != nil {
			return nil, false, &errcode.Error{Code: errcode.InvalidPolicy, Msg: err.Error()}
		}
		if !f.Exists() {
			// The configured file was removed while the app ran; the policy
			// in force is still the one it held. A new file with one rule
			// would silently drop the person's restrictions.
			return nil, false, &errcode.Error{Code: errcode.InvalidPolicy, Msg: fmt.Sprintf("the configured policy file %s does not exist any more; restore it, or clear policyFile in the settings", rb.path)}
		}
		// A change made outside Sluice is audited before anything applies it.
		if err := notePolicyFile(a.cfg, a.ledger, f, "policy_file_changed"); err != nil {
			return nil, false, err
		}
		return f, false, nil
	}
	if slices.Contains(config.OverriddenByEnv(), "policyFile") {
		return nil, false, &errcode.Error{Code: errcode.InvalidArgument, Msg: "SLUICE_POLICY_FILE is set to nothing in the environment, so a rule saved now would be lost at the next start; set it to a file"}
	}
	path := a.cfg.DefaultPolicyFile()
	f, err = policy.ReadFile(path)
	if err != nil {
		return nil, false, &errcode.Error{Code: errcode.InvalidPolicy, Msg: err.Error()}
	}
	if f.Exists() {
		return nil, false, &errcode.Error{Code: errcode.InvalidPolicy, Msg: fmt.Sprintf("%s exists but is not the configured policy file; set policyFile in the settings to use it", path)}
	}
	return f, true, nil
}

// applyPolicy makes f the policy in force and, when it was just created,
// the configured one.
func (a *App) applyPolicy(f *policy.File, created bool) error {
	rb := a.rules
	rb.backend.SetPolicy(f.Policy)
	// Sluice's own change is audited already (rule_created, rule_revoked):
	// the file as saved is the one it last applied.
	if err := seenPolicySaved(a.cfg, f); err != nil {
		a.log.Warn("rules: could not record the policy file as applied; its next read audits it as changed", "err", err)
	}
	if created {
		rb.path = f.Path
		if err := a.cfg.SavePolicyFile(f.Path); err != nil {
			return fmt.Errorf("the rule is saved in %s and applies now, but config.json could not name that file, so it will not apply after a restart: %w", f.Path, err)
		}
	}
	return nil
}

// Rules lists every auto-approve rule in the policy file, with how many
// proposals each approved. Reading the file applies it as it is now, so
// that the screen shows exactly the rules in force; a file that no longer
// parses is an error, and the policy in force stays as it was.
func (api *API) Rules() (RulesView, error) {
	a := api.app
	rb := a.rules
	rb.mu.Lock()
	defer rb.mu.Unlock()
	v := RulesView{PolicyFile: rb.path, Configured: rb.path != "", Rules: []RuleView{}}
	if rb.path == "" {
		v.PolicyFile = a.cfg.DefaultPolicyFile()
		return v, nil
	}
	f, _, err := a.readPolicy()
	if err != nil {
		return v, err
	}
	rb.backend.SetPolicy(f.Policy)
	v.Rules, err = a.ruleViews(f.Policy.All())
	return v, err
}

// ruleViews counts each rule's approvals in the journal. The journal, not
// the ledger, is the source: each automatic approval is one transition
// there, recorded with the rule's name in the same transaction as its
// ledger entry, so the two agree; the journal is indexed by proposal and is
// what History shows, so a count and History's marks agree too; the ledger
// would have to be read from its first segment on every look. What the
// journal no longer holds (past its retention) is not counted. The counts
// come from the journal's index by rule, not from its records: the screen
// costs the same with 100 records or 100,000.
func (a *App) ruleViews(rules []policy.Listed) ([]RuleView, error) {
	qs := make([]journal.RuleQuery, len(rules))
	for i, r := range rules {
		qs[i] = journal.RuleQuery{Rule: r.Name, Agent: r.Agent, Since: r.CreatedAt}
		if r.Agent == policy.AnyAgent {
			qs[i].Agent = ""
		}
	}
	counts, err := a.journal.RuleApprovals(qs)
	if err != nil {
		return nil, err
	}
	now := a.rules.now()
	out := make([]RuleView, 0, len(rules))
	for i, r := range rules {
		v := ruleView(r, now)
		v.Approved = counts[i].Approved
		if !counts[i].Last.IsZero() {
			v.LastApproved = counts[i].Last.UTC().Format(time.RFC3339)
		}
		out = append(out, v)
	}
	return out, nil
}

func ruleView(r policy.Listed, now time.Time) RuleView {
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	v := RuleView{Name: r.Name, Agent: r.Agent, Identity: r.Identity, Repos: r.Repos, Ops: r.Ops, Refs: r.Refs, Paths: r.Paths, MaxRisk: r.MaxRisk,
		ExpiresAt: stamp(r.ExpiresAt), Expired: r.Expired(now), CreatedAt: stamp(r.CreatedAt),
		FromProposal: r.FromProposal, InAgentEntry: r.InAgentEntry}
	if v.MaxRisk == "" {
		v.MaxRisk = proposal.RiskLow.String()
	}
	for _, l := range []*[]string{&v.Repos, &v.Refs, &v.Paths} {
		if *l == nil {
			*l = []string{}
		}
	}
	return v
}

// SuggestRule drafts the rule that "Approve and trust similar" would save
// for a pending card. A destructive card has none.
func (api *API) SuggestRule(id string) (RuleDraft, error) {
	a := api.app
	rec, err := a.record(id)
	if err != nil {
		return RuleDraft{}, err
	}
	if rec.State != proposal.Pending {
		return RuleDraft{}, &errcode.Error{Code: errcode.ProposalTerminal, Msg: fmt.Sprintf("this proposal is %s, not pending", rec.State)}
	}
	r, err := policy.Suggest(rec.Proposal)
	if err != nil {
		return RuleDraft{}, ruleError(err)
	}
	rb := a.rules
	rb.mu.Lock()
	defer rb.mu.Unlock()
	f, creates, err := a.readPolicy()
	if err != nil {
		return RuleDraft{}, err
	}
	d := RuleDraft{
		RuleInput: RuleInput{Name: f.UniqueName(r.Name), Refs: r.Refs, Paths: r.Paths, MaxRisk: r.MaxRisk, Expiry: policy.ExpiryToday},
		Agent:     r.Agent, Identity: r.Identity, Repos: r.Repos, Ops: r.Ops, FromProposal: id, PolicyFile: f.Path, CreatesFile: creates, Notes: []string{},
	}
	if r.Identity == proposal.IdentityDeclared {
		d.Notes = append(d.Notes, declaredNote(r.Agent))
	}
	if _, known := rec.Proposal.FilesTouched(); !known {
		d.Notes = append(d.Notes, "the files this proposal touches cannot be known in advance, so the rule cannot limit them")
	}
	if len(r.Refs) == 0 && len(rec.Proposal.Args.WrittenRefs()) == 0 {
		d.Notes = append(d.Notes, "this proposal does not name its branch: with no branch pattern the rule approves on any branch, and with one it approves only proposals that name a matching branch")
	}
	return d, nil
}

// TrustSimilar approves a card and saves an auto-approve rule for
// proposals like it: the card's agent and operations, with the branches,
// paths, highest risk and expiry the person confirmed. The rule is checked
// in full, and the card is checked as Approve checks it, before anything
// is written; then the rule is audited (rule_created), saved into the
// policy file and applied, and the card is approved.
func (api *API) TrustSimilar(req TrustRequest) (TrustResult, error) {
	a := api.app
	rec, err := a.decisionTarget(req.Decision)
	if err != nil {
		return TrustResult{}, err
	}
	draft, err := policy.Suggest(rec.Proposal)
	if err != nil {
		return TrustResult{}, ruleError(err)
	}
	// A name the program only declared vouches for nothing: the rule then
	// trusts any program calling itself so, which the person must choose.
	if draft.Identity == proposal.IdentityDeclared && !req.Rule.TrustDeclaredName {
		return TrustResult{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: declaredNote(draft.Agent) + "; opt in to trust it (trustDeclaredName), or approve the card alone"}
	}
	// Nothing is saved for a card that could not be approved now.
	if err := a.approvable(rec); err != nil {
		return TrustResult{}, err
	}
	rb := a.rules
	rb.mu.Lock()
	now := rb.now()
	expires, err := policy.ExpiryAt(req.Rule.Expiry, now)
	if err != nil {
		rb.mu.Unlock()
		return TrustResult{}, ruleError(err)
	}
	rule := policy.Rule{Name: req.Rule.Name, Agent: draft.Agent, Identity: draft.Identity, Repos: draft.Repos, Ops: draft.Ops, Refs: trimmed(req.Rule.Refs),
		Paths: trimmed(req.Rule.Paths), MaxRisk: req.Rule.MaxRisk, ExpiresAt: expires,
		CreatedAt: now.Truncate(time.Second), FromProposal: rec.Proposal.ID}
	view, err := a.saveRule(rule, "owner:"+api.kind)
	rb.mu.Unlock()
	if err != nil {
		return TrustResult{}, err
	}
	card, err := api.Approve(req.Decision)
	if err != nil {
		return TrustResult{Rule: view}, fmt.Errorf("the rule %s is saved, but this card was not approved: %w", rule.Name, err)
	}
	return TrustResult{Card: card, Rule: view}, nil
}

// declaredNote says what a rule for a declared name trusts.
func declaredNote(agent string) string {
	return fmt.Sprintf("%s only declared its name, which Sluice cannot verify: the rule would approve any program calling itself %s", agent, agent)
}

func trimmed(list []string) []string {
	out := []string{}
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// approvable refuses a card that is not what would land, or that could not
// run now: Approve checks it, and TrustSimilar before it saves a rule.
//   - A card whose pins moved or whose sealed inputs changed (stale_base)
//     cannot be approved as if it were fresh.
//   - A lock of git's would fail the execution halfway (repo_locked): the
//     card stays pending and says which lock, so it can be approved once
//     it is gone.
//   - Anything else the preflight finds in the way (a checkout that must
//     follow but has uncommitted changes, no git identity for a commit in
//     the person's name) is refused with its sentences (blockedError).
func (a *App) approvable(rec journal.Record) error {
	if a.executor == nil {
		return nil
	}
	pf, err := a.preflight(rec.Proposal)
	if err == nil && pf.Stale {
		// The watch may not have looked since the branch moved: a card
		// whose changes carry over is re-sealed now, and the person looks
		// at the new one (the approval binds to what they saw).
		if why, rerr := a.reseal(a.runCtx, rec); rerr == nil && why == "" {
			return &errcode.Error{Code: errcode.DigestMismatch, Msg: "the branch moved under this card, and it was re-sealed on the new base with the same changes: look at it again, then approve"}
		} else if rerr == nil {
			return &errcode.Error{Code: errcode.StaleBase, Msg: "the repository moved since this was proposed: " + why + "; send it back so the agent can propose again"}
		}
		return &errcode.Error{Code: errcode.StaleBase, Msg: "the repository moved since this was proposed: " + pf.Describe() + "; send it back so the agent can propose again"}
	}
	ctx, cancel := context.WithTimeout(a.runCtx, 30*time.Second)
	lerr := a.executor.CheckUnlocked(ctx, rec.Proposal)
	cancel()
	if errors.Is(lerr, apply.ErrRepoLocked) {
		return lerr
	}
	if err == nil && len(pf.Blockers) > 0 {
		return blockedError(pf)
	}
	return nil
}

func (a *App) preflight(p proposal.Proposal) (*apply.Preflight, error) {
	ctx, cancel := context.WithTimeout(a.runCtx, 30*time.Second)
	defer cancel()
	return a.executor.Preflight(ctx, p)
}

// saveRule adds rule to the policy file, audited. Called with rb.mu held.
func (a *App) saveRule(rule policy.Rule, by string) (RuleView, error) {
	f, creates, err := a.readPolicy()
	if err != nil {
		return RuleView{}, err
	}
	if err := f.AddRule(rule); err != nil {
		return RuleView{}, ruleError(err)
	}
	data := map[string]any{"rule": rule.Name, "source": ruleSource(by), "ops": joinOps(rule.Ops), "maxRisk": rule.MaxRisk,
		"refPatterns": int64(len(rule.Refs)), "pathPrefixes": int64(len(rule.Paths)), "identity": rule.Identity, "repos": int64(len(rule.Repos))}
	if !rule.ExpiresAt.IsZero() {
		data["expiresAt"] = rule.ExpiresAt.UTC().Format(time.RFC3339)
	}
	// The ledger first: a rule that approves without a person is never in
	// force off the record.
	if err := a.auditRule(by, "rule_created", rule.Agent, rule.FromProposal, "ok", "rule "+rule.Name+" created from a card", data); err != nil {
		return RuleView{}, err
	}
	if err := f.Save(); err != nil {
		a.auditRule(by, "rule_not_saved", rule.Agent, rule.FromProposal, "error:"+string(errcode.Of(ruleError(err))), "rule "+rule.Name+" was not saved", map[string]any{"rule": rule.Name})
		return RuleView{}, ruleError(err)
	}
	if err := a.applyPolicy(f, creates); err != nil {
		return RuleView{}, err
	}
	return ruleView(policy.Listed{Rule: rule, Agent: rule.Agent}, rule.CreatedAt), nil
}

// ruleSource is where the person created a rule: "ui" for the window and
// the browser, "cli" for the command line. An agent has no way to create
// one: no tool writes rules, and no proposal may change the policy file.
func ruleSource(by string) string {
	switch strings.TrimPrefix(by, "owner:") {
	case "web", "desktop":
		return "ui"
	case "cli":
		return "cli"
	}
	return by
}

func joinOps(ops []proposal.Op) string {
	s := make([]string, len(ops))
	for i, op := range ops {
		s[i] = string(op)
	}
	return strings.Join(s, ",")
}

// auditRule appends a rule event to the ledger. Rule names and counts
// are written; branch patterns and path prefixes are not (the ledger never
// holds raw paths).
func (a *App) auditRule(by, event, agent, proposalID, result, summary string, data map[string]any) error {
	e := audit.Entry{EventType: event, SessionID: agent, ProposalID: proposalID, Result: result,
		Approval: by, Summary: summary, Data: data}
	if _, err := a.ledger.Append(e); err != nil {
		return &errcode.Error{Code: errcode.AuditFailed, Msg: "the rule was not changed because the audit ledger could not be written: " + err.Error()}
	}
	return nil
}

// RevokeRule removes a rule from the policy file (audited as
// rule_revoked); proposals after it wait for a person again.
func (api *API) RevokeRule(r RevokeRequest) (RulesView, error) {
	a := api.app
	rb := a.rules
	if r.Name == "" || (r.Agent != policy.AnyAgent && !proposal.ValidAgent(r.Agent)) {
		return RulesView{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: "name the rule and its agent"}
	}
	rb.mu.Lock()
	err := func() error {
		if rb.path == "" {
			return ruleError(fmt.Errorf("%w: %q (no policy file is configured)", policy.ErrNoRule, r.Name))
		}
		f, _, err := a.readPolicy()
		if err != nil {
			return err
		}
		if err := f.RemoveRule(r.Agent, r.Name); err != nil {
			return ruleError(err)
		}
		if err := a.auditRule("owner:"+api.kind, "rule_revoked", r.Agent, "", "ok", "rule "+r.Name+" revoked", map[string]any{"rule": r.Name}); err != nil {
			return err
		}
		if err := f.Save(); err != nil {
			a.auditRule("owner:"+api.kind, "rule_not_saved", r.Agent, "", "error:"+string(errcode.Of(ruleError(err))), "revoking rule "+r.Name+" was not saved", map[string]any{"rule": r.Name})
			return ruleError(err)
		}
		return a.applyPolicy(f, false)
	}()
	rb.mu.Unlock()
	if err != nil {
		return RulesView{}, err
	}
	return api.Rules()
}

// AutoApproval is one proposal a rule approved without a person: what the
// Pending screen's notice and the Rules screen's feed show, with the
// restore point that undoes it once it ran.
type AutoApproval struct {
	ID    string      `json:"id"`
	Rule  string      `json:"rule"`
	Agent string      `json:"agent"`
	Op    proposal.Op `json:"op"`
	// Label names the operation as the UI shows it ("merge").
	Label    string         `json:"label"`
	Repo     string         `json:"repo"`
	RepoName string         `json:"repoName"`
	Reason   string         `json:"reason"`
	State    proposal.State `json:"state"`
	// At is when the rule approved it (RFC 3339).
	At string `json:"at"`
	// RestorePoint puts the repository back as it was before (through
	// Restore); empty until the change ran, and when it never did.
	RestorePoint string `json:"restorePoint"`
}

// maxAutoApprovals bounds the feed.
const maxAutoApprovals = 50

// AutoApprovals lists the newest proposals rules approved, newest first,
// from the journal (where each is recorded as approved by "policy:RULE").
func (api *API) AutoApprovals() ([]AutoApproval, error) {
	// The journal keeps these records in an index of their own, newest
	// decision first: the feed beside the pending list reads them alone.
	recs, err := api.app.journal.ApprovedByRules(maxAutoApprovals)
	if err != nil {
		return nil, err
	}
	out := []AutoApproval{}
	for _, rec := range recs {
		rule := autoApprovedBy(rec.Decision)
		if rule == "" {
			continue
		}
		p := rec.Proposal
		v := AutoApproval{ID: p.ID, Rule: rule, Agent: p.Agent, Op: p.Op, Label: p.Op.Label(), Repo: p.Repo, RepoName: filepath.Base(p.Repo),
			Reason: p.Reason, State: rec.State, At: rec.Decision.At.Time.UTC().Format(time.RFC3339)}
		if rec.Outcome != nil {
			v.RestorePoint = rec.Outcome.RestorePoint
		}
		out = append(out, v)
	}
	slices.SortStableFunc(out, func(a, b AutoApproval) int { return strings.Compare(b.At, a.At) })
	if len(out) > maxAutoApprovals {
		out = out[:maxAutoApprovals]
	}
	return out, nil
}
