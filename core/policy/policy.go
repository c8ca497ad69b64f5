package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/jsonc"
	"github.com/sluicehq/sluice/core/proposal"
)

// Errors callers branch on.
var (
	// ErrInvalid is wrapped by every load failure and every refused edit;
	// the message names the file and the offending key.
	ErrInvalid = errors.New("invalid policy")
	// ErrDestructive is returned for a rule that would approve destructive
	// work, or one made from a destructive proposal: those always need a
	// person.
	ErrDestructive = errors.New("destructive proposals are never auto-approved")
	// ErrChanged is returned by Save when the file on disk is no longer the
	// one that was read: the person (or another program) edited it in
	// between, and writing would lose their edit.
	ErrChanged = errors.New("the policy file changed since it was read")
	// ErrNoRule is returned for a rule that is not in the file.
	ErrNoRule = errors.New("no such rule")
)

// maxFileBytes bounds what Load reads.
const maxFileBytes = 1 << 20

// AnyAgent is the agents key whose rules apply to every agent not named
// explicitly.
const AnyAgent = "*"

// Policy is a loaded, validated policy file. A nil *Policy allows
// everything and auto-approves nothing.
type Policy struct {
	Version int                    `json:"version"`
	Agents  map[string]AgentPolicy `json:"agents,omitempty"`
	// Rules are auto-approve rules that name their agent, as "Approve and
	// trust similar" writes them. They only approve what the agent's entry
	// allows: they sit beside the agents' entries rather than in them,
	// because creating an agent's own entry would stop the "*" entry's
	// restrictions from applying to that agent.
	Rules []Rule `json:"rules,omitempty"`
}

// AgentPolicy restricts one agent. Empty lists restrict nothing.
type AgentPolicy struct {
	// Ops the agent may propose; a plan's steps must be allowed too.
	Ops []proposal.Op `json:"ops,omitempty"`
	// Refs are patterns for the branches the agent may change: "agent/*"
	// (one path segment), "agent/**" (any depth), or a full "refs/…"
	// pattern.
	Refs []string `json:"refs,omitempty"`
	// Paths are repository-relative directory or file prefixes every
	// touched file must lie under. Proposals whose files cannot be known
	// in advance are denied when Paths is set.
	Paths []string `json:"paths,omitempty"`
	// AutoApprove rules: a proposal matching one is approved without a
	// card, and the approval is audited as automatic.
	AutoApprove []Rule `json:"autoApprove,omitempty"`

	refs []*regexp.Regexp
}

// Rule is an auto-approve rule.
type Rule struct {
	// Name identifies the rule in the audit trail.
	Name string `json:"name"`
	// Agent is the agent a rule in the top-level rules list applies to
	// ("*" for every agent); rules inside an agent's entry have none.
	Agent string        `json:"agent,omitempty"`
	Ops   []proposal.Op `json:"ops"`
	// Refs, when set, must match every branch the proposal changes.
	Refs []string `json:"refs,omitempty"`
	// Paths, when set, are repository-relative prefixes every file the
	// proposal touches must lie under; proposals whose files cannot be
	// known in advance do not match.
	Paths []string `json:"paths,omitempty"`
	// Repos, when set, are the repositories (canonical absolute paths) the
	// rule approves in: every repository a proposal changes must be one of
	// them. A rule made from a card always names the card's.
	Repos []string `json:"repos,omitempty"`
	// Identity is the kind of identity the rule trusts its agent's name
	// as (proposal.IdentitySession, IdentityToken or IdentityDeclared): a
	// rule for a confined session or an HTTP token never approves a
	// proposal whose agent only declared that name. "declared" trusts any
	// program calling itself Agent. Empty, as in rules written before it
	// existed, trusts the name whatever vouches for it.
	Identity string `json:"identity,omitempty"`
	// MaxRisk is the highest risk the rule approves: "low" (default),
	// "medium" or "high". Destructive proposals are never auto-approved.
	MaxRisk string `json:"maxRisk,omitempty"`
	// ExpiresAt, when set, is when the rule stops matching.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// CreatedAt and FromProposal record when the rule was made and from
	// which card, when it was made in the app.
	CreatedAt    time.Time `json:"createdAt,omitzero"`
	FromProposal string    `json:"fromProposal,omitempty"`

	refs    []*regexp.Regexp
	maxRisk proposal.Risk
}

// Verdict is the policy's answer for one proposal.
type Verdict struct {
	Allowed bool
	// Denial says why, when not allowed; it is safe to show the agent.
	Denial string
	// AutoApprove names the rule that approves the proposal, if any.
	AutoApprove string
}

// Load reads and validates the policy file at path. A missing, unreadable
// or malformed file is an error naming the problem: a configured policy
// never silently becomes no policy.
func Load(path string) (*Policy, error) {
	b, _, err := readCapped(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s: the configured policy file does not exist", ErrInvalid, path)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Parse validates a policy document. Comments (// and /* */) and
// trailing commas are allowed: the file is the person's, and they may
// explain their rules in it.
func Parse(b []byte) (*Policy, error) {
	plain, err := jsonc.Plain(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if plain == nil {
		return nil, fmt.Errorf("%w: the file is empty", ErrInvalid)
	}
	var p Policy
	dec := json.NewDecoder(bytes.NewReader(plain))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalid)
	}
	if p.Version != 1 {
		return nil, fmt.Errorf("%w: version: must be 1", ErrInvalid)
	}
	if len(p.Agents) == 0 && p.Rules == nil {
		return nil, fmt.Errorf("%w: agents: no agent is configured", ErrInvalid)
	}
	agentRuleNames := map[string]bool{}
	for name, ap := range p.Agents {
		key := "agents." + name
		if !validAgentKey(name) {
			return nil, fmt.Errorf("%w: %s: not a valid agent name", ErrInvalid, key)
		}
		if err := ap.compile(key); err != nil {
			return nil, err
		}
		p.Agents[name] = ap
		for _, r := range ap.AutoApprove {
			agentRuleNames[r.Name] = true
		}
	}
	names := map[string]bool{}
	for i := range p.Rules {
		r := &p.Rules[i]
		rk := fmt.Sprintf("rules[%d]", i)
		if err := r.compile(rk, names); err != nil {
			return nil, err
		}
		if !validAgentKey(r.Agent) {
			return nil, fmt.Errorf("%w: %s.agent: required, the agent's name (or \"*\" for every agent)", ErrInvalid, rk)
		}
		if agentRuleNames[r.Name] {
			return nil, fmt.Errorf("%w: %s.name: %q is also the name of a rule in an agent's entry", ErrInvalid, rk, r.Name)
		}
	}
	return &p, nil
}

func validAgentKey(name string) bool { return name == AnyAgent || proposal.ValidAgent(name) }

var ruleName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

func (ap *AgentPolicy) compile(key string) error {
	if err := checkOps(key+".ops", ap.Ops, false); err != nil {
		return err
	}
	var err error
	if ap.refs, err = compilePatterns(key+".refs", ap.Refs); err != nil {
		return err
	}
	if err := compilePaths(key+".paths", ap.Paths); err != nil {
		return err
	}
	names := map[string]bool{}
	for i := range ap.AutoApprove {
		r := &ap.AutoApprove[i]
		rk := fmt.Sprintf("%s.autoApprove[%d]", key, i)
		if r.Agent != "" {
			return fmt.Errorf("%w: %s.agent: a rule inside an agent's entry is that agent's; agent belongs only in the top-level rules", ErrInvalid, rk)
		}
		if err := r.compile(rk, names); err != nil {
			return err
		}
	}
	return nil
}

// compile checks one rule; names holds the names already used beside it.
func (r *Rule) compile(rk string, names map[string]bool) error {
	if !ruleName.MatchString(r.Name) {
		return fmt.Errorf("%w: %s.name: required, [A-Za-z0-9._-], at most 64 characters", ErrInvalid, rk)
	}
	if names[r.Name] {
		return fmt.Errorf("%w: %s.name: %q is used twice", ErrInvalid, rk, r.Name)
	}
	names[r.Name] = true
	if err := checkOps(rk+".ops", r.Ops, true); err != nil {
		return err
	}
	var err error
	if r.refs, err = compilePatterns(rk+".refs", r.Refs); err != nil {
		return err
	}
	if err := compilePaths(rk+".paths", r.Paths); err != nil {
		return err
	}
	for i, repo := range r.Repos {
		if !filepath.IsAbs(repo) || filepath.Clean(repo) != repo || strings.ContainsAny(repo, "\x00\n\r") {
			return fmt.Errorf("%w: %s.repos[%d]: %q must be a repository's absolute path", ErrInvalid, rk, i, repo)
		}
	}
	switch r.Identity {
	case "", proposal.IdentitySession, proposal.IdentityToken, proposal.IdentityDeclared:
	default:
		return fmt.Errorf("%w: %s.identity: %q is not session, token or declared", ErrInvalid, rk, r.Identity)
	}
	if r.FromProposal != "" && !proposal.ValidID(r.FromProposal) {
		return fmt.Errorf("%w: %s.fromProposal: not a proposal id", ErrInvalid, rk)
	}
	r.maxRisk = proposal.RiskLow
	if r.MaxRisk != "" {
		risk, err := proposal.ParseRisk(r.MaxRisk)
		if err != nil {
			return fmt.Errorf("%w: %s.maxRisk: %q is not low, medium or high", ErrInvalid, rk, r.MaxRisk)
		}
		if risk == proposal.RiskDestructive {
			return fmt.Errorf("%w: %s.maxRisk: %w", ErrInvalid, rk, ErrDestructive)
		}
		r.maxRisk = risk
	}
	return nil
}

// compilePaths cleans path prefixes in place.
func compilePaths(key string, paths []string) error {
	for i, p := range paths {
		clean := strings.TrimSuffix(p, "/")
		if clean == "" || clean == "." || strings.HasPrefix(clean, "/") || strings.Contains(clean, "..") || strings.Contains(clean, "//") || strings.ContainsAny(clean, "\x00\n\r") {
			return fmt.Errorf("%w: %s[%d]: %q must be a repository-relative prefix such as src/", ErrInvalid, key, i, p)
		}
		paths[i] = clean
	}
	return nil
}

func checkOps(key string, ops []proposal.Op, required bool) error {
	if required && len(ops) == 0 {
		return fmt.Errorf("%w: %s: at least one op is required", ErrInvalid, key)
	}
	for _, op := range ops {
		if !op.Valid() {
			return fmt.Errorf("%w: %s: unknown op %q", ErrInvalid, key, op)
		}
	}
	return nil
}

// compilePatterns turns ref globs into anchored regular expressions: "*"
// matches within one path segment, "**" across segments.
func compilePatterns(key string, pats []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for i, p := range pats {
		if p == "" || strings.ContainsAny(p, " \t\n?[\\") || strings.Contains(p, "***") {
			return nil, fmt.Errorf("%w: %s[%d]: %q is not a ref pattern (use * and **)", ErrInvalid, key, i, p)
		}
		var b strings.Builder
		b.WriteString("^")
		for rest := p; rest != ""; {
			switch {
			case strings.HasPrefix(rest, "**"):
				b.WriteString(".*")
				rest = rest[2:]
			case rest[0] == '*':
				b.WriteString("[^/]*")
				rest = rest[1:]
			default:
				n := strings.IndexByte(rest, '*')
				if n < 0 {
					n = len(rest)
				}
				b.WriteString(regexp.QuoteMeta(rest[:n]))
				rest = rest[n:]
			}
		}
		b.WriteString("$")
		out = append(out, regexp.MustCompile(b.String()))
	}
	return out, nil
}

// For returns the rules that apply to agent: its own entry, else the "*"
// entry, else none.
func (p *Policy) For(agent string) (AgentPolicy, bool) {
	if p == nil {
		return AgentPolicy{}, false
	}
	if ap, ok := p.Agents[agent]; ok {
		return ap, true
	}
	ap, ok := p.Agents[AnyAgent]
	return ap, ok
}

// Evaluate decides whether pr may be proposed at all, and whether a rule
// approves it without asking, as of now.
func (p *Policy) Evaluate(pr proposal.Proposal) Verdict { return p.EvaluateAt(pr, time.Now()) }

// EvaluateAt is Evaluate on the clock reading now: a rule whose expiry has
// come does not match.
func (p *Policy) EvaluateAt(pr proposal.Proposal, now time.Time) Verdict {
	if p == nil {
		return Verdict{Allowed: true}
	}
	ap, _ := p.For(pr.Agent)
	if reason := ap.deny(pr); reason != "" {
		return Verdict{Denial: reason}
	}
	v := Verdict{Allowed: true}
	if pr.Destructive() {
		return v
	}
	for _, r := range ap.AutoApprove {
		if r.matches(pr, now) {
			v.AutoApprove = r.Name
			return v
		}
	}
	for _, r := range p.Rules {
		if (r.Agent == pr.Agent || r.Agent == AnyAgent) && r.matches(pr, now) {
			v.AutoApprove = r.Name
			return v
		}
	}
	return v
}

func (ap AgentPolicy) deny(pr proposal.Proposal) string {
	if len(ap.Ops) > 0 {
		for _, op := range opsOf(pr) {
			if !slices.Contains(ap.Ops, op) {
				return fmt.Sprintf("the policy does not allow this agent to propose %s", op)
			}
		}
	}
	if len(ap.refs) > 0 {
		refs, known := writtenRefs(pr)
		if !known {
			return "the policy restricts which branches this agent may change; name the branch (branch argument) so it can be checked"
		}
		for _, ref := range refs {
			if !matchAny(ap.refs, ref) {
				return fmt.Sprintf("the policy does not allow this agent to change %s", shortRef(ref))
			}
		}
	}
	if len(ap.Paths) > 0 {
		files, complete := pr.FilesTouched()
		if !complete {
			return "the policy restricts which paths this agent may change, and the files this proposal touches cannot be known in advance"
		}
		for _, f := range files {
			if !underAny(ap.Paths, f) {
				return fmt.Sprintf("the policy does not allow this agent to change %s", f)
			}
		}
	}
	return ""
}

// Expired reports whether the rule's expiry has come at now.
func (r Rule) Expired(now time.Time) bool { return !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt) }

func (r Rule) matches(pr proposal.Proposal, now time.Time) bool {
	if r.Expired(now) {
		return false
	}
	if !r.trusts(pr) || !r.inRepos(pr) {
		return false
	}
	for _, op := range opsOf(pr) {
		if !slices.Contains(r.Ops, op) {
			return false
		}
	}
	if pr.Risk() > r.maxRisk {
		return false
	}
	if len(r.refs) > 0 {
		refs, known := writtenRefs(pr)
		if !known {
			return false
		}
		for _, ref := range refs {
			if !matchAny(r.refs, ref) {
				return false
			}
		}
	}
	if len(r.Paths) > 0 {
		files, complete := pr.FilesTouched()
		if !complete || len(files) == 0 {
			return false
		}
		for _, f := range files {
			if !underAny(r.Paths, f) {
				return false
			}
		}
	}
	return true
}

// trusts reports whether the rule trusts the kind of identity pr's agent
// has: a rule for a verified identity (a confined session, an HTTP token)
// does not approve a program that only declares the same name.
func (r Rule) trusts(pr proposal.Proposal) bool {
	switch r.Identity {
	case "", proposal.IdentityDeclared:
		return true
	}
	return pr.Identity() == r.Identity
}

// inRepos reports whether every repository pr changes is one of the
// rule's (when it names any).
func (r Rule) inRepos(pr proposal.Proposal) bool {
	if len(r.Repos) == 0 {
		return true
	}
	for _, repo := range reposOf(pr) {
		if !slices.Contains(r.Repos, repo) {
			return false
		}
	}
	return true
}

// reposOf is pr's repository and every other one it pins, sorted after
// the first.
func reposOf(pr proposal.Proposal) []string {
	out := []string{pr.Repo}
	var more []string
	for repo := range pr.Pinned.Repos {
		if repo != pr.Repo {
			more = append(more, repo)
		}
	}
	slices.Sort(more)
	return append(out, more...)
}

// opsOf is the op and, for a plan, every step's op.
func opsOf(pr proposal.Proposal) []proposal.Op {
	return pr.Ops()
}

// writtenRefs lists the refs pr changes and whether that list is known:
// a reset or commit that does not name its branch changes whatever is
// checked out, which policy cannot check in advance.
func writtenRefs(pr proposal.Proposal) ([]string, bool) {
	if pr.Args == nil {
		return nil, false
	}
	if !proposal.WrittenRefsKnown(pr.Args) {
		return nil, false
	}
	return pr.Args.WrittenRefs(), true
}

func matchAny(res []*regexp.Regexp, ref string) bool {
	short := shortRef(ref)
	for _, re := range res {
		if re.MatchString(short) || re.MatchString(ref) {
			return true
		}
	}
	return false
}

func shortRef(ref string) string { return strings.TrimPrefix(ref, "refs/heads/") }

func underAny(prefixes []string, file string) bool {
	for _, p := range prefixes {
		if file == p || strings.HasPrefix(file, p+"/") {
			return true
		}
	}
	return false
}
