package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/proposal"
)

// personal is a policy file as a person writes it: comments, tabs, a
// trailing comma, their own rule in the top-level list.
const personal = `// My Sluice policy. Ask before anything touches main.
{
	"version": 1,
	"agents": {
		/* Cursor only branches. */
		"cursor": {"ops": ["branch"]},
	},
	"rules": [
		{"name": "mine", "agent": "cursor", "ops": ["branch"]} // keep this one
	]
}
`

func writeFile(t *testing.T, dir, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// saveEdited reads the policy file at path, applies edit and saves it,
// failing the test on any error, and returns the file.
func saveEdited(t *testing.T, path string, edit func(*File) error) *File {
	t.Helper()
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := edit(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	return f
}

func addRule(r Rule) func(*File) error {
	return func(f *File) error { return f.AddRule(r) }
}

func removeRule(agent, name string) func(*File) error {
	return func(f *File) error { return f.RemoveRule(agent, name) }
}

var madeAt = time.Date(2026, 12, 1, 15, 4, 5, 0, time.UTC)

func learned(name string) Rule {
	return Rule{Name: name, Agent: "claude-code", Identity: proposal.IdentityToken, Repos: []string{"/home/me/src/webshop"}, Ops: []proposal.Op{proposal.OpCommit}, Refs: []string{"agent/*"},
		Paths: []string{"src"}, MaxRisk: "low", ExpiresAt: madeAt.Add(time.Hour), CreatedAt: madeAt, FromProposal: "p-123"}
}

// TestFile_AddRemove_KeepsThePersonsBytes: adding a rule changes nothing
// but the rules list; removing it again gives back the file byte for byte.
func TestFile_AddRemove_KeepsThePersonsBytes(t *testing.T) {
	path := writeFile(t, t.TempDir(), personal, 0o640)
	saveEdited(t, path, addRule(learned("claude-commits")))
	got := read(t, path)
	want := strings.Replace(personal, `["branch"]} // keep this one`, `["branch"]}, // keep this one
		{
			"name": "claude-commits",
			"agent": "claude-code",
			"identity": "token",
			"repos": [
				"/home/me/src/webshop"
			],
			"ops": [
				"commit"
			],
			"refs": [
				"agent/*"
			],
			"paths": [
				"src"
			],
			"maxRisk": "low",
			"expiresAt": "2026-12-01T16:04:05Z",
			"createdAt": "2026-12-01T15:04:05Z",
			"fromProposal": "p-123"
		}`, 1)
	if got != want {
		t.Fatalf("after AddRule+Save:\n%s\nwant:\n%s", got, want)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatalf("the written file does not load: %v", err)
	}
	all := p.All()
	if len(all) != 2 || all[1].Name != "claude-commits" || !all[1].CreatedAt.Equal(madeAt) || all[1].FromProposal != "p-123" || all[1].Paths[0] != "src" {
		t.Fatalf("rules after reload: %+v", all)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want the file's own 0640 kept", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("the directory holds %d entries, want only the policy file (no temporary left)", len(entries))
	}

	saveEdited(t, path, removeRule("claude-code", "claude-commits"))
	if got := read(t, path); got != personal {
		t.Fatalf("after RemoveRule the file is not the person's again:\n%s", got)
	}
}

// TestFile_RemoveRule_InAgentEntry revokes a hand-written rule inside an
// agent's entry, and only that one.
func TestFile_RemoveRule_InAgentEntry(t *testing.T) {
	path := writeFile(t, t.TempDir(), sample, 0o600)
	f := saveEdited(t, path, removeRule("claude-code", "new-branches"))
	want := strings.Replace(sample, "        {\"name\": \"new-branches\", \"ops\": [\"branch\"]},\n", "", 1)
	if got := read(t, path); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if err := f.RemoveRule("cursor", "agent-commits"); !errors.Is(err, ErrNoRule) {
		t.Fatalf("another agent's rule: %v, want ErrNoRule", err)
	}
}

// TestFile_Save_RefusesAChangedFile: an edit made between reading and
// saving is never overwritten.
func TestFile_Save_RefusesAChangedFile(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, personal, 0o600)
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AddRule(learned("claude-commits")); err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(personal, "Ask before", "Always ask before", 1)
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(); !errors.Is(err, ErrChanged) {
		t.Fatalf("Save over an edited file = %v, want ErrChanged", err)
	}
	if got := read(t, path); got != edited {
		t.Fatalf("the person's edit was overwritten:\n%s", got)
	}

	// A file that appears where there was none is not overwritten either.
	fresh := filepath.Join(dir, "new", "policy.json")
	os.Mkdir(filepath.Dir(fresh), 0o700)
	g, err := ReadFile(fresh)
	if err != nil || g.Exists() {
		t.Fatalf("ReadFile(missing) = %v, exists %v", err, g.Exists())
	}
	if err := g.AddRule(learned("r")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(fresh, []byte(personal), 0o600)
	if err := g.Save(); !errors.Is(err, ErrChanged) || read(t, fresh) != personal {
		t.Fatalf("Save over a file created meanwhile = %v", err)
	}
}

// TestFile_Create: the first rule creates the file, private, valid.
func TestFile_Create(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.json")
	saveEdited(t, path, addRule(learned("r")))
	p, err := Load(path)
	if err != nil || len(p.Rules) != 1 || len(p.Agents) != 0 {
		t.Fatalf("Load = %+v, %v", p, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", st.Mode().Perm())
	}
	// Revoking the last rule leaves a valid, empty policy.
	saveEdited(t, path, removeRule("claude-code", "r"))
	if p, err := Load(path); err != nil || len(p.All()) != 0 {
		t.Fatalf("after the last revoke: %+v, %v\n%s", p, err, read(t, path))
	}
}

// TestFile_Save_ThroughSymlink writes the link's target and keeps the link.
func TestFile_Save_ThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := writeFile(t, dir, personal, 0o600)
	link := filepath.Join(t.TempDir(), "policy.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	saveEdited(t, link, addRule(learned("r")))
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
	if !strings.Contains(read(t, target), `"name": "r"`) {
		t.Fatal("the target did not get the rule")
	}
}

// TestFile_AddRule_RefusesBadRules: every refusal is ErrInvalid (with
// ErrDestructive where that is why) and changes nothing, in memory or on
// disk.
func TestFile_AddRule_RefusesBadRules(t *testing.T) {
	path := writeFile(t, t.TempDir(), personal, 0o600)
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mod := func(m func(*Rule)) Rule { r := learned("ok"); m(&r); return r }
	cases := map[string]struct {
		r    Rule
		want string
	}{
		"destructive":                      {mod(func(r *Rule) { r.MaxRisk = "destructive" }), "never auto-approved"},
		"bad name":                         {mod(func(r *Rule) { r.Name = "a b" }), "name"},
		"used name":                        {mod(func(r *Rule) { r.Name = "mine" }), "already used"},
		"no agent":                         {mod(func(r *Rule) { r.Agent = "" }), "agent"},
		"unknown op":                       {mod(func(r *Rule) { r.Ops = []proposal.Op{"amend"} }), "unknown op"},
		"no ops":                           {mod(func(r *Rule) { r.Ops = nil }), "at least one op"},
		"escaping path":                    {mod(func(r *Rule) { r.Paths = []string{"../etc"} }), "paths[0]"},
		"bad pattern":                      {mod(func(r *Rule) { r.Refs = []string{"agent/[x]"} }), "refs[0]"},
		"bad risk":                         {mod(func(r *Rule) { r.MaxRisk = "tiny" }), "maxRisk"},
		"bad card id":                      {mod(func(r *Rule) { r.FromProposal = "../x" }), "fromProposal"},
		"from a card without a repository": {mod(func(r *Rule) { r.Repos = nil }), "names the card's repository"},
		"from a card without an identity":  {mod(func(r *Rule) { r.Identity = "" }), "kind of identity"},
		"relative repository":              {mod(func(r *Rule) { r.Repos = []string{"webshop"} }), "repos[0]"},
		"unknown identity":                 {mod(func(r *Rule) { r.Identity = "trusted" }), "identity"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := f.AddRule(c.r)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("AddRule = %v; want ErrInvalid naming %q", err, c.want)
			}
			if name == "destructive" && !errors.Is(err, ErrDestructive) {
				t.Fatalf("AddRule = %v; want ErrDestructive", err)
			}
			if string(f.Bytes()) != personal {
				t.Fatal("a refused rule changed the file in memory")
			}
		})
	}
	if err := f.Save(); err != nil || read(t, path) != personal {
		t.Fatalf("Save after refusals wrote something: %v", err)
	}
	if err := f.RemoveRule("cursor", "nope"); !errors.Is(err, ErrNoRule) {
		t.Fatalf("RemoveRule(unknown) = %v, want ErrNoRule", err)
	}
	bad := writeFile(t, t.TempDir(), "{\"version\": 1,\n \"rules\": [ oops ]}", 0o600)
	if _, err := ReadFile(bad); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("ReadFile(malformed) = %v, want ErrInvalid with the line", err)
	}
}

// TestRule_Expiry: a rule stops matching when its expiry comes, on the
// clock given.
func TestRule_Expiry(t *testing.T) {
	f, _ := ReadFile(filepath.Join(t.TempDir(), "policy.json"))
	if err := f.AddRule(learned("soon")); err != nil {
		t.Fatal(err)
	}
	pr := prop("claude-code", &proposal.CommitArgs{Message: "m", Paths: []string{"src/a.go"}, Branch: "agent/x"})
	pr.Repo, pr.AgentToken = "/home/me/src/webshop", true // the rule's repository and identity
	if v := f.Policy.EvaluateAt(pr, madeAt.Add(59*time.Minute)); v.AutoApprove != "soon" {
		t.Fatalf("before expiry: %+v", v)
	}
	if v := f.Policy.EvaluateAt(pr, madeAt.Add(time.Hour)); v.AutoApprove != "" || !v.Allowed {
		t.Fatalf("at expiry: %+v", v)
	}
	loc := time.FixedZone("X", 3*3600)
	now := time.Date(2026, 12, 1, 22, 30, 0, 0, loc)
	for choice, want := range map[string]time.Time{
		ExpiryHour: now.Add(time.Hour), ExpiryToday: time.Date(2026, 12, 2, 0, 0, 0, 0, loc), ExpiryAlways: {},
	} {
		if got, err := ExpiryAt(choice, now); err != nil || !got.Equal(want) {
			t.Errorf("ExpiryAt(%s) = %v, %v; want %v", choice, got, err, want)
		}
	}
	if _, err := ExpiryAt("week", now); !errors.Is(err, ErrInvalid) {
		t.Errorf("ExpiryAt(week) = %v, want ErrInvalid", err)
	}
}

// TestRule_Matching: a top-level rule approves only within its paths and
// branches, and never more than the agent's entry allows.
func TestRule_Matching(t *testing.T) {
	p := mustParse(t, `{"version": 1,
	  "agents": {"*": {"ops": ["commit", "branch"]}},
	  "rules": [{"name": "r", "agent": "claude-code", "ops": ["commit", "patch"], "refs": ["agent/*"], "paths": ["src"]}]}`)
	commit := func(branch string, paths ...string) proposal.Proposal {
		return prop("claude-code", &proposal.CommitArgs{Message: "m", Paths: paths, Branch: branch})
	}
	cases := []struct {
		name string
		pr   proposal.Proposal
		auto string
		deny bool
	}{
		{"inside", commit("agent/x", "src/a.go", "src/b/c.go"), "r", false},
		{"a file outside the prefix", commit("agent/x", "src/a.go", "README.md"), "", false},
		{"another branch", commit("main", "src/a.go"), "", false},
		{"branch unknown", commit("", "src/a.go"), "", false},
		{"another agent", prop("cursor", &proposal.CommitArgs{Message: "m", Paths: []string{"src/a"}, Branch: "agent/x"}), "", false},
		{"the * entry still denies", prop("claude-code", &proposal.PatchArgs{Patch: patch, Target: proposal.PatchWorktree}), "", true},
		{"files unknown", prop("claude-code", &proposal.CommitArgs{Message: "m", StageAll: true, Branch: "agent/x"}), "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := p.EvaluateAt(c.pr, madeAt)
			if v.AutoApprove != c.auto || v.Allowed == c.deny {
				t.Fatalf("EvaluateAt = %+v; want auto %q, denied %v", v, c.auto, c.deny)
			}
		})
	}
}

// TestSuggest drafts a rule from a card, and none from a destructive one.
func TestSuggest(t *testing.T) {
	pr := prop("claude-code", &proposal.CommitArgs{Message: "m", Paths: []string{"src/a/x.go", "src/b.go", "src/a/y.go", "README.md"}, Branch: "agent/feature"})
	pr.Repo = "/src/widgets"
	r, err := Suggest(pr)
	if err != nil {
		t.Fatal(err)
	}
	if r.Agent != "claude-code" || strings.Join(r.Refs, ",") != "agent/*" || r.MaxRisk != "low" || len(r.Ops) != 1 || r.Ops[0] != proposal.OpCommit {
		t.Fatalf("Suggest = %+v", r)
	}
	if strings.Join(r.Paths, ",") != "README.md,src" {
		t.Fatalf("paths %v: src covers src/a", r.Paths)
	}
	if err := r.Check(); err != nil {
		t.Fatalf("a suggested rule does not check: %v", err)
	}
	if _, err := Suggest(prop("claude-code", &proposal.DiscardArgs{Paths: []string{"src"}})); !errors.Is(err, ErrDestructive) {
		t.Fatalf("Suggest(discard) = %v, want ErrDestructive", err)
	}
}
