package policy

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/proposal"
)

// inForce is the policy that holds rules as the policy file would: written
// out and parsed again.
func inForce(t *testing.T, rules ...Rule) *Policy {
	t.Helper()
	b, err := json.Marshal(Policy{Version: 1, Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	return mustParse(t, string(b))
}

// readmeCommit is a low-risk commit of README.md to agent/docs by agent in
// repo, as the agent's identity is known (origin for a confined session,
// token for an HTTP token's name, neither for a declared name).
func readmeCommit(agent, repo string, origin *proposal.Origin, token bool) proposal.Proposal {
	pr := prop(agent, &proposal.CommitArgs{Message: "m", Paths: []string{"README.md"}, Branch: "agent/docs"})
	pr.Repo, pr.Origin, pr.AgentToken = repo, origin, token
	return pr
}

var session = &proposal.Origin{Session: "s1", Runtime: "bubblewrap"}

// TestSuggest_NamesTheRepositoryAndIdentity: a rule drafted from a card
// names the card's repository (and every other it pins) and the kind of
// identity its agent had.
func TestSuggest_NamesTheRepositoryAndIdentity(t *testing.T) {
	cases := []struct {
		name string
		pr   proposal.Proposal
		want string
	}{
		{"declared", readmeCommit("gemini-cli", "/src/webshop", nil, false), proposal.IdentityDeclared},
		{"token", readmeCommit("gemini-cli", "/src/webshop", nil, true), proposal.IdentityToken},
		{"session", readmeCommit("gemini-cli", "/src/webshop", session, false), proposal.IdentitySession},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Suggest(c.pr)
			if err != nil {
				t.Fatal(err)
			}
			if r.Identity != c.want || len(r.Repos) != 1 || r.Repos[0] != "/src/webshop" {
				t.Fatalf("Suggest = identity %q, repos %v; want %q, [/src/webshop]", r.Identity, r.Repos, c.want)
			}
			if err := r.Check(); err != nil {
				t.Fatalf("the drafted rule does not check: %v", err)
			}
		})
	}
	across := readmeCommit("codex", "/src/b", nil, false)
	across.Pinned.Repos = map[string]map[string]string{"/src/c": {}, "/src/a": {}}
	r, err := Suggest(across)
	if err != nil || len(r.Repos) != 3 || r.Repos[0] != "/src/b" || r.Repos[1] != "/src/a" || r.Repos[2] != "/src/c" {
		t.Fatalf("a proposal across repositories: repos %v, %v", r.Repos, err)
	}
}

// TestRule_FromACard_OnlyItsRepository: the rule drafted from a README
// commit in one repository does not approve the same commit in another.
func TestRule_FromACard_OnlyItsRepository(t *testing.T) {
	r, err := Suggest(readmeCommit("gemini-cli", "/src/webshop", nil, true))
	if err != nil {
		t.Fatal(err)
	}
	p := inForce(t, r)
	if v := p.Evaluate(readmeCommit("gemini-cli", "/src/webshop", nil, true)); v.AutoApprove != r.Name {
		t.Fatalf("the card's repository: %+v", v)
	}
	if v := p.Evaluate(readmeCommit("gemini-cli", "/src/docs-site", nil, true)); v.AutoApprove != "" {
		t.Fatalf("another repository was approved by %q", v.AutoApprove)
	}
	// Nor a proposal that also changes another repository.
	both := readmeCommit("gemini-cli", "/src/webshop", nil, true)
	both.Pinned.Repos = map[string]map[string]string{"/src/docs-site": {}}
	if v := p.Evaluate(both); v.AutoApprove != "" {
		t.Fatalf("a proposal reaching into another repository was approved by %q", v.AutoApprove)
	}
}

// TestRule_Identity: a rule for a verified identity does not approve a
// program that merely calls itself by the same name; a rule that opted in
// to the declared name does; a rule written by hand before rules named an
// identity keeps its meaning.
func TestRule_Identity(t *testing.T) {
	const repo = "/src/webshop"
	declared := readmeCommit("gemini-cli", repo, nil, false)
	token := readmeCommit("gemini-cli", repo, nil, true)
	confined := readmeCommit("gemini-cli", repo, session, false)
	cases := []struct {
		rule    string // the identity the rule trusts
		pr      proposal.Proposal
		approve bool
	}{
		{proposal.IdentityToken, token, true},
		{proposal.IdentityToken, declared, false},
		{proposal.IdentityToken, confined, false},
		{proposal.IdentitySession, confined, true},
		{proposal.IdentitySession, declared, false},
		{proposal.IdentitySession, token, false},
		{proposal.IdentityDeclared, declared, true},
		{proposal.IdentityDeclared, token, true},
		{"", declared, true},
		{"", token, true},
	}
	for _, c := range cases {
		t.Run(c.rule+"/"+c.pr.Identity(), func(t *testing.T) {
			r := Rule{Name: "r", Agent: "gemini-cli", Identity: c.rule, Repos: []string{repo}, Ops: []proposal.Op{proposal.OpCommit}}
			if v := inForce(t, r).Evaluate(c.pr); (v.AutoApprove == "r") != c.approve {
				t.Fatalf("Evaluate = %+v; want approved %v", v, c.approve)
			}
		})
	}
}

// TestParse_OldRulesKeepTheirMeaning: a version 1 file written before
// rules named repositories and identities loads, and its rule approves in
// any repository, as it did.
func TestParse_OldRulesKeepTheirMeaning(t *testing.T) {
	p := mustParse(t, `{"version": 1, "rules": [{"name": "readme", "agent": "gemini-cli", "ops": ["commit"], "paths": ["README.md"],
		"createdAt": "2026-12-01T15:04:05Z", "fromProposal": "p-1"}]}`)
	for _, repo := range []string{"/src/webshop", "/src/docs-site"} {
		if v := p.EvaluateAt(readmeCommit("gemini-cli", repo, nil, false), time.Now()); v.AutoApprove != "readme" {
			t.Fatalf("%s: %+v", repo, v)
		}
	}
}
