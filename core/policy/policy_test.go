package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/proposal"
)

const sample = `{
  "version": 1,
  "agents": {
    "claude-code": {
      "ops": ["commit", "branch", "patch", "plan", "push", "reset", "merge"],
      "refs": ["agent/**", "feature/*"],
      "paths": ["src/", "docs"],
      "autoApprove": [
        {"name": "agent-commits", "ops": ["commit"], "refs": ["agent/**"]},
        {"name": "new-branches", "ops": ["branch"]},
        {"name": "patches", "ops": ["patch"], "maxRisk": "medium"}
      ]
    },
    "*": {"ops": ["branch"]}
  }
}`

func mustParse(t *testing.T, s string) *Policy {
	t.Helper()
	p, err := Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

func prop(agent string, a proposal.Args) proposal.Proposal {
	return proposal.Proposal{Agent: agent, Op: a.Op(), Args: a}
}

const patch = "--- a/src/x.go\n+++ b/src/x.go\n@@ -1 +1 @@\n-a\n+b\n"

func TestPolicy_Evaluate(t *testing.T) {
	p := mustParse(t, sample)
	cases := []struct {
		name  string
		pr    proposal.Proposal
		allow bool
		auto  string
		deny  string
	}{
		{"commit to agent branch auto-approves", prop("claude-code", &proposal.CommitArgs{Message: "m", Paths: []string{"src/a.go"}, Branch: "agent/x/y"}), true, "agent-commits", ""},
		{"commit to feature branch needs a person", prop("claude-code", &proposal.CommitArgs{Message: "m", Paths: []string{"src/a.go"}, Branch: "feature/f"}), true, "", ""},
		{"commit to main denied", prop("claude-code", &proposal.CommitArgs{Message: "m", Paths: []string{"src/a.go"}, Branch: "main"}), false, "", "change main"},
		{"commit without branch denied", prop("claude-code", &proposal.CommitArgs{Message: "m", Paths: []string{"src/a.go"}}), false, "", "name the branch"},
		{"commit outside paths denied", prop("claude-code", &proposal.CommitArgs{Message: "m", Paths: []string{"secrets/key"}, Branch: "agent/x"}), false, "", "secrets/key"},
		{"directory prefix without slash", prop("claude-code", &proposal.CommitArgs{Message: "m", Paths: []string{"docs/a.md"}, Branch: "agent/x"}), true, "agent-commits", ""},
		{"prefix is not a string prefix", prop("claude-code", &proposal.CommitArgs{Message: "m", Paths: []string{"docsextra/a.md"}, Branch: "agent/x"}), false, "", "docsextra"},
		{"stageAll cannot be checked against paths", prop("claude-code", &proposal.CommitArgs{Message: "m", StageAll: true, Branch: "agent/x"}), false, "", "cannot be known"},
		{"branch creation auto-approves", prop("claude-code", &proposal.BranchArgs{Name: "agent/new", StartPoint: "main"}), true, "new-branches", ""},
		{"op not allowed", prop("claude-code", &proposal.DiscardArgs{Paths: []string{"src"}}), false, "", "propose discard"},
		{"plan step not allowed", prop("claude-code", &proposal.PlanArgs{Steps: []proposal.PlanStep{{Op: proposal.OpDiscard, Args: &proposal.DiscardArgs{Paths: []string{"src"}}}}}), false, "", "propose discard"},
		{"patch up to medium risk", prop("claude-code", &proposal.PatchArgs{Patch: patch, Target: proposal.PatchWorktree}), true, "patches", ""},
		{"destructive never auto-approves", prop("claude-code", &proposal.PushArgs{Remote: "origin", Branch: "agent/x", ForceWithLease: true}), true, "", ""},
		{"reset without branch denied", prop("claude-code", &proposal.ResetArgs{Mode: proposal.ResetSoft, Target: "HEAD~1"}), false, "", "name the branch"},
		{"merge files unknown", prop("claude-code", &proposal.MergeArgs{Source: "x", Target: "agent/x", Strategy: proposal.MergeCommit}), false, "", "cannot be known"},
		{"other agent falls back to *", prop("cursor", &proposal.BranchArgs{Name: "anything", StartPoint: "main"}), true, "", ""},
		{"other agent limited by *", prop("cursor", &proposal.CommitArgs{Message: "m", StageAll: true}), false, "", "propose commit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := p.Evaluate(c.pr)
			if v.Allowed != c.allow || v.AutoApprove != c.auto || !strings.Contains(v.Denial, c.deny) {
				t.Fatalf("Evaluate = %+v; want allowed %v, auto %q, denial containing %q", v, c.allow, c.auto, c.deny)
			}
		})
	}
}

func TestPolicy_Evaluate_NilAndUnlisted(t *testing.T) {
	var none *Policy
	pr := prop("x", &proposal.DiscardArgs{Paths: []string{"."}})
	if v := none.Evaluate(pr); !v.Allowed || v.AutoApprove != "" {
		t.Fatalf("nil policy: %+v", v)
	}
	p := mustParse(t, `{"version":1,"agents":{"only-me":{"ops":["branch"]}}}`)
	if v := p.Evaluate(pr); !v.Allowed {
		t.Fatalf("an agent the policy does not name is unrestricted: %+v", v)
	}
}

func TestParse_Refuses(t *testing.T) {
	cases := map[string]struct{ doc, key string }{
		"unknown field":        {`{"version":1,"agents":{"a":{"opz":["commit"]}}}`, "opz"},
		"unknown op":           {`{"version":1,"agents":{"a":{"ops":["amend"]}}}`, "agents.a.ops"},
		"version":              {`{"version":2,"agents":{"a":{}}}`, "version"},
		"no agents":            {`{"version":1,"agents":{}}`, "agents"},
		"bad agent name":       {`{"version":1,"agents":{"a b":{}}}`, "agents.a b"},
		"destructive auto":     {`{"version":1,"agents":{"a":{"autoApprove":[{"name":"r","ops":["reset"],"maxRisk":"destructive"}]}}}`, "autoApprove[0].maxRisk"},
		"bad risk":             {`{"version":1,"agents":{"a":{"autoApprove":[{"name":"r","ops":["reset"],"maxRisk":"tiny"}]}}}`, "maxRisk"},
		"rule without ops":     {`{"version":1,"agents":{"a":{"autoApprove":[{"name":"r"}]}}}`, "autoApprove[0].ops"},
		"rule without name":    {`{"version":1,"agents":{"a":{"autoApprove":[{"ops":["branch"]}]}}}`, "autoApprove[0].name"},
		"duplicate rule names": {`{"version":1,"agents":{"a":{"autoApprove":[{"name":"r","ops":["branch"]},{"name":"r","ops":["commit"]}]}}}`, "used twice"},
		"bad pattern":          {`{"version":1,"agents":{"a":{"refs":["agent/[a-z]"]}}}`, "agents.a.refs[0]"},
		"absolute path":        {`{"version":1,"agents":{"a":{"paths":["/etc"]}}}`, "agents.a.paths[0]"},
		"escaping path":        {`{"version":1,"agents":{"a":{"paths":["../x"]}}}`, "agents.a.paths[0]"},
		"trailing data":        {`{"version":1,"agents":{"a":{}}} {}`, "after the end of the document"},
		"not json":             {`version: 1`, "invalid"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.key) {
				t.Fatalf("Parse = %v; want ErrInvalid naming %q", err, c.key)
			}
		})
	}
}

func TestLoad_FailsClosed(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "policy.json")
	if _, err := Load(missing); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Load(missing) = %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{\"version\":1,\n\"agents\":{\"a\":{\"ops\":[\"commit\"] \"refs\": []}}}"), 0o600)
	if _, err := Load(bad); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("Load(malformed) = %v", err)
	}
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(sample), 0o600)
	p, err := Load(good)
	if err != nil || len(p.Agents) != 2 {
		t.Fatalf("Load(good) = %v, %v", p, err)
	}
}

func TestCompilePatterns(t *testing.T) {
	cases := []struct {
		pat, ref string
		want     bool
	}{
		{"agent/*", "agent/x", true},
		{"agent/*", "agent/x/y", false},
		{"agent/**", "agent/x/y", true},
		{"agent/*", "agentx", false},
		{"feat-*.x", "feat-1.x", true},
		{"feat-*.x", "feat-1-x", false},
		{"refs/heads/main", "refs/heads/main", true},
		{"main", "refs/heads/main", true},
		{"main", "refs/heads/mainline", false},
	}
	for _, c := range cases {
		res, err := compilePatterns("k", []string{c.pat})
		if err != nil {
			t.Fatal(err)
		}
		if got := matchAny(res, c.ref); got != c.want {
			t.Errorf("%q ~ %q = %v", c.pat, c.ref, got)
		}
	}
}
