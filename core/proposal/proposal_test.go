package proposal

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

const (
	sha1 = "1111111111111111111111111111111111111111"
	sha2 = "2222222222222222222222222222222222222222"
)

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 890_000_000, time.UTC)

const samplePatch = "diff --git a/src/main.go b/src/main.go\n--- a/src/main.go\n+++ b/src/main.go\n@@ -1,2 +1,2 @@\n package main\n-// old\n+// new\n"

// sampleArgs returns valid args for every op, and what they must pin.
func sampleArgs() map[Op]Args {
	return map[Op]Args{
		OpMerge:    &MergeArgs{Source: "feature", Target: "main", Strategy: MergeSquash},
		OpRebase:   &RebaseArgs{Branch: "feature", Onto: "main"},
		OpDiscard:  &DiscardArgs{Paths: []string{"src/a.go"}},
		OpReset:    &ResetArgs{Mode: ResetMixed, Target: "HEAD~1"},
		OpPatch:    &PatchArgs{Patch: samplePatch, Target: PatchWorktree},
		OpPlan:     &PlanArgs{Steps: []PlanStep{{Op: OpReset, Args: &ResetArgs{Mode: ResetSoft, Target: "main"}}, {Op: OpPatch, Args: &PatchArgs{Patch: samplePatch, Target: PatchIndex}}}},
		OpWorktree: &WorktreeArgs{Path: "/r/wt", Branch: "agent/x", NewBranch: true, StartPoint: "main"},
		OpCommit:   &CommitArgs{Message: "fix", Paths: []string{"src/a.go"}, Branch: "agent/x"},
		OpPush:     &PushArgs{Remote: "origin", Branch: "agent/x", SetUpstream: true},
		OpBranch:   &BranchArgs{Name: "agent/y", StartPoint: "main"},
		OpBranchDelete: &BranchDeleteArgs{Branches: []string{"old"},
			OtherRepos: []RepoBranches{{Repo: "/r/other", Branches: []string{"old", "older"}}}},
		OpSubmodulePointer: &SubmodulePointerArgs{Path: "vendor/lib", Action: SubmoduleRecord},
	}
}

func sample(t *testing.T, a Args) Proposal {
	t.Helper()
	p := Proposal{
		ID: "p-1", Op: a.Op(), Repo: "/r/repo", Args: a, Reason: "because", Agent: "claude-code",
		CreatedAt: At(t0), ExpiresAt: At(t0.Add(15 * time.Minute)),
		Pinned: Pinned{Refs: map[string]string{}},
	}
	for _, ref := range a.Pins() {
		p.Pinned.Refs[ref] = sha1
	}
	switch x := a.(type) {
	case *BranchDeleteArgs:
		p.Pinned.Repos = map[string]map[string]string{}
		for _, r := range x.OtherRepos {
			p.Pinned.Repos[r.Repo] = map[string]string{}
			for _, b := range r.Branches {
				p.Pinned.Repos[r.Repo][BranchRef(b)] = sha2
			}
		}
	case *SubmodulePointerArgs:
		p.Pinned.Repos = map[string]map[string]string{"/r/repo/vendor/lib": {"HEAD": sha2}}
	}
	if err := p.Seal(); err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return p
}

func TestProposal_Validate_EveryOp(t *testing.T) {
	for op, a := range sampleArgs() {
		t.Run(string(op), func(t *testing.T) {
			p := sample(t, a)
			if err := p.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
		})
	}
	if len(sampleArgs()) != len(Ops()) {
		t.Fatalf("sampleArgs covers %d ops, want %d", len(sampleArgs()), len(Ops()))
	}
}

func TestProposal_JSON_RoundTripKeepsDigest(t *testing.T) {
	for op, a := range sampleArgs() {
		t.Run(string(op), func(t *testing.T) {
			p := sample(t, a)
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			var q Proposal
			if err := json.Unmarshal(b, &q); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if err := q.Validate(); err != nil {
				t.Fatalf("Validate after round trip: %v", err)
			}
			if q.Digest != p.Digest {
				t.Fatalf("digest changed: %s → %s", p.Digest, q.Digest)
			}
		})
	}
}

func TestProposal_Digest_Golden(t *testing.T) {
	p := sample(t, &BranchArgs{Name: "agent/y", StartPoint: "main"})
	c, err := canonical(Proposal{ID: p.ID, Op: p.Op, Repo: p.Repo, Pinned: p.Pinned, Args: p.Args, Reason: p.Reason,
		Agent: p.Agent, CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"agent":"claude-code","args":{"name":"agent/y","startPoint":"main"},"createdAt":"2025-03-04T05:06:07.890Z",` +
		`"expiresAt":"2025-03-04T05:21:07.890Z","id":"p-1","op":"branch","pinned":{"refs":{"main":"` + sha1 + `"}},` +
		`"reason":"because","repo":"/r/repo"}`
	if string(c) != want {
		t.Fatalf("canonical form\n got %s\nwant %s", c, want)
	}
	// sha256 of the line above, as `printf %s '…' | sha256sum` prints it.
	if want := "sha256:e027e32aae887543c4d7fa42b7b46bd695e784100cd34dd82aca594f4ab03dec"; p.Digest != want {
		t.Fatalf("digest = %s, want %s", p.Digest, want)
	}
	if got := ShortDigest(p.Digest); len(got) != 12 || !strings.HasPrefix(p.Digest, "sha256:"+got) {
		t.Fatalf("ShortDigest = %q", got)
	}
}

func TestProposal_Validate_DetectsTampering(t *testing.T) {
	cases := map[string]func(*Proposal){
		"reason":  func(p *Proposal) { p.Reason = "something else" },
		"pin":     func(p *Proposal) { p.Pinned.Refs["main"] = sha2 },
		"args":    func(p *Proposal) { p.Args.(*BranchArgs).Name = "agent/z"; p.Pinned.Refs["main"] = sha1 },
		"expires": func(p *Proposal) { p.ExpiresAt = At(t0.Add(time.Hour)) },
		"agent":   func(p *Proposal) { p.Agent = "other" },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			p := sample(t, &BranchArgs{Name: "agent/y", StartPoint: "main"})
			mutate(&p)
			if err := p.Validate(); !errors.Is(err, ErrDigestMismatch) {
				t.Fatalf("Validate = %v, want ErrDigestMismatch", err)
			}
		})
	}
}

func TestProposal_Validate_Refuses(t *testing.T) {
	cases := map[string]func(*Proposal){
		"id with slash":     func(p *Proposal) { p.ID = "a/b" },
		"id dots":           func(p *Proposal) { p.ID = "../x" },
		"relative repo":     func(p *Proposal) { p.Repo = "repo" },
		"unclean repo":      func(p *Proposal) { p.Repo = "/r/../etc" },
		"empty reason":      func(p *Proposal) { p.Reason = "  " },
		"long reason":       func(p *Proposal) { p.Reason = strings.Repeat("x", MaxReasonBytes+1) },
		"bad agent":         func(p *Proposal) { p.Agent = "a b" },
		"bad key":           func(p *Proposal) { p.IdempotencyKey = "a/b" },
		"unpinned":          func(p *Proposal) { delete(p.Pinned.Refs, "main") },
		"short sha":         func(p *Proposal) { p.Pinned.Refs["main"] = "abc123" },
		"upper sha":         func(p *Proposal) { p.Pinned.Refs["main"] = "ABCDEF" + sha1[6:] },
		"expiry before":     func(p *Proposal) { p.ExpiresAt = p.CreatedAt },
		"foreign repo pins": func(p *Proposal) { p.Pinned.Repos = map[string]map[string]string{"/x": {"HEAD": sha1}} },
		"op/args mismatch":  func(p *Proposal) { p.Op = OpMerge },
		"nested branch":     func(p *Proposal) { p.Pinned.WorktreeNestedIn = "/repo" },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			p := sample(t, &BranchArgs{Name: "agent/y", StartPoint: "main"})
			mutate(&p)
			_ = p.Seal()
			if err := p.Validate(); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestArgs_Validate_Refuses(t *testing.T) {
	big := strings.Repeat("+x\n", MaxPatchBytes/3+1)
	cases := map[string]Args{
		"merge strategy":          &MergeArgs{Source: "a", Target: "main", Strategy: "octopus"},
		"branch start option":     &BranchArgs{Name: "x", StartPoint: "--upload-pack=evil"},
		"merge source option":     &MergeArgs{Source: "--upload-pack=evil", Target: "main", Strategy: MergeCommit},
		"rebase onto option":      &RebaseArgs{Branch: "x", Onto: "-x"},
		"reset target option":     &ResetArgs{Mode: ResetHard, Target: "--hard"},
		"merge target full ref":   &MergeArgs{Source: "a", Target: "refs/heads/main", Strategy: MergeCommit},
		"merge range":             &MergeArgs{Source: "a..b", Target: "main", Strategy: MergeCommit},
		"merge path lookup":       &MergeArgs{Source: "HEAD:secret", Target: "main", Strategy: MergeCommit},
		"rebase lock":             &RebaseArgs{Branch: "x.lock", Onto: "main"},
		"discard none":            &DiscardArgs{},
		"discard dotdot":          &DiscardArgs{Paths: []string{"../x"}},
		"discard abs":             &DiscardArgs{Paths: []string{"/etc/passwd"}},
		"discard git dir":         &DiscardArgs{Paths: []string{"sub/.GIT/config"}},
		"discard .git. dot":       &DiscardArgs{Paths: []string{".git./config"}},
		"commit git stream":       &CommitArgs{Message: "m", Paths: []string{"sub/.Git::$INDEX_ALLOCATION/hooks"}},
		"commit git short name":   &CommitArgs{Message: "m", Paths: []string{"GIT~1/config"}},
		"patch quoted .GIT space": &PatchArgs{Target: PatchWorktree, Patch: "--- \"a/.GIT /config\"\n+++ \"b/.GIT /config\"\n@@ -1 +1 @@\n-a\n+b\n"},
		"discard dup":             &DiscardArgs{Paths: []string{"a", "a"}},
		"reset mode":              &ResetArgs{Mode: "keep", Target: "HEAD"},
		"patch empty":             &PatchArgs{Target: PatchWorktree},
		"patch too big":           &PatchArgs{Target: PatchWorktree, Patch: "--- a/x\n+++ b/x\n" + big},
		"patch not a diff":        &PatchArgs{Target: PatchWorktree, Patch: "hello\n"},
		"patch escapes":           &PatchArgs{Target: PatchWorktree, Patch: "--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n"},
		"patch into .git":         &PatchArgs{Target: PatchIndex, Patch: "--- a/.git/hooks/pre-commit\n+++ b/.git/hooks/pre-commit\n@@ -1 +1 @@\n-a\n+b\n"},
		"patch target":            &PatchArgs{Target: "remote", Patch: samplePatch},
		"plan empty":              &PlanArgs{},
		"plan nested":             &PlanArgs{Steps: []PlanStep{{Op: OpPlan, Args: &PlanArgs{}}}},
		"plan push":               &PlanArgs{Steps: []PlanStep{{Op: OpPush, Args: &PushArgs{Remote: "o", Branch: "b"}}}},
		"plan bad step":           &PlanArgs{Steps: []PlanStep{{Op: OpReset, Args: &ResetArgs{Mode: "x"}}}},
		"worktree relative":       &WorktreeArgs{Path: "wt", Branch: "b"},
		"worktree start":          &WorktreeArgs{Path: "/wt", Branch: "b", StartPoint: "main"},
		"commit both":             &CommitArgs{Message: "m", Paths: []string{"a"}, StageAll: true},
		"commit neither":          &CommitArgs{Message: "m"},
		"commit no message":       &CommitArgs{Paths: []string{"a"}},
		"push remote url":         &PushArgs{Remote: "https://x", Branch: "b"},
		"branch HEAD":             &BranchArgs{Name: "HEAD", StartPoint: "main"},
		"branch dash":             &BranchArgs{Name: "-f", StartPoint: "main"},
		"branch space":            &BranchArgs{Name: "a b", StartPoint: "main"},
		"branch delete none":      &BranchDeleteArgs{},
		"branch delete dup repo":  &BranchDeleteArgs{Branches: []string{"a"}, OtherRepos: []RepoBranches{{Repo: "/x", Branches: []string{"a"}}, {Repo: "/x", Branches: []string{"b"}}}},
		"submodule action":        &SubmodulePointerArgs{Path: "lib", Action: "update"},
		"submodule path dot":      &SubmodulePointerArgs{Path: ".", Action: SubmoduleRecord},
		"patch nul":               &PatchArgs{Target: PatchWorktree, Patch: samplePatch + "\x00"},
		"patch hunk overrun":      &PatchArgs{Target: PatchWorktree, Patch: "--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n-a\n"},
		"merge message too large": &MergeArgs{Source: "a", Target: "main", Strategy: MergeCommit, Message: strings.Repeat("m", MaxMessageBytes+1)},
	}
	for name, a := range cases {
		t.Run(name, func(t *testing.T) {
			if err := a.Validate(); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestProposal_Unmarshal_RefusesUnknownFields(t *testing.T) {
	p := sample(t, &CommitArgs{Message: "m", Paths: []string{"a"}})
	b, _ := json.Marshal(p)
	cases := map[string]string{
		"top level": strings.Replace(string(b), `"reason"`, `"amend":true,"reason"`, 1),
		"in args":   strings.Replace(string(b), `"message"`, `"amend":true,"message"`, 1),
		"trailing":  string(b) + "{}",
		"bad time":  strings.Replace(string(b), `07.890Z`, `07.89Z`, 1),
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			var q Proposal
			if err := json.Unmarshal([]byte(s), &q); err == nil {
				t.Fatalf("Unmarshal accepted %s", s)
			}
		})
	}
}

func TestProposal_Risk(t *testing.T) {
	upstream := Pinned{Refs: map[string]string{"refs/remotes/origin/feature": sha1}}
	cases := []struct {
		args   Args
		pinned Pinned
		want   Risk
	}{
		{&BranchArgs{Name: "a", StartPoint: "b"}, Pinned{}, RiskLow},
		{&CommitArgs{Message: "m", StageAll: true}, Pinned{}, RiskLow},
		{&WorktreeArgs{Path: "/w", Branch: "b"}, Pinned{}, RiskLow},
		{&WorktreeArgs{Path: "/repo/w", Branch: "b"}, Pinned{WorktreeNestedIn: "/repo"}, RiskHigh},
		{&MergeArgs{Source: "a", Target: "b", Strategy: MergeCommit}, Pinned{}, RiskMedium},
		{&PatchArgs{Patch: samplePatch, Target: PatchIndex}, Pinned{}, RiskMedium},
		{&PushArgs{Remote: "o", Branch: "b"}, Pinned{}, RiskMedium},
		{&ResetArgs{Mode: ResetSoft, Target: "x"}, Pinned{}, RiskHigh},
		{&RebaseArgs{Branch: "feature", Onto: "main"}, Pinned{}, RiskHigh},
		{&RebaseArgs{Branch: "feature", Onto: "main"}, upstream, RiskDestructive},
		{&ResetArgs{Mode: ResetHard, Target: "x"}, Pinned{}, RiskDestructive},
		{&DiscardArgs{Paths: []string{"."}}, Pinned{}, RiskDestructive},
		{&PushArgs{Remote: "o", Branch: "b", ForceWithLease: true}, Pinned{}, RiskDestructive},
		{&BranchDeleteArgs{Branches: []string{"x"}}, Pinned{}, RiskDestructive},
		{&PlanArgs{Steps: []PlanStep{{OpPatch, &PatchArgs{Patch: samplePatch, Target: PatchIndex}}, {OpReset, &ResetArgs{Mode: ResetHard, Target: "x"}}}}, Pinned{}, RiskDestructive},
	}
	for _, c := range cases {
		p := Proposal{Op: c.args.Op(), Args: c.args, Pinned: c.pinned}
		if got := p.Risk(); got != c.want {
			t.Errorf("%s %+v: Risk = %s, want %s", c.args.Op(), c.args, got, c.want)
		}
		if p.Destructive() != (c.want == RiskDestructive) {
			t.Errorf("%s: Destructive = %v", c.args.Op(), p.Destructive())
		}
	}
}

func TestProposal_FilesTouched(t *testing.T) {
	cases := []struct {
		args     Args
		want     string
		complete bool
	}{
		{&PatchArgs{Patch: samplePatch, Target: PatchWorktree}, "src/main.go", true},
		{&CommitArgs{Message: "m", Paths: []string{"b", "a"}}, "b,a", true},
		{&CommitArgs{Message: "m", StageAll: true}, "", false},
		{&DiscardArgs{Paths: []string{"."}}, ".", true},
		{&MergeArgs{Source: "a", Target: "b", Strategy: MergeCommit}, "", false},
		{&PlanArgs{Steps: []PlanStep{{OpDiscard, &DiscardArgs{Paths: []string{"z"}}}, {OpPatch, &PatchArgs{Patch: samplePatch, Target: PatchIndex}}}}, "src/main.go,z", true},
	}
	for _, c := range cases {
		files, complete := Proposal{Args: c.args}.FilesTouched()
		if strings.Join(files, ",") != c.want || complete != c.complete {
			t.Errorf("%s: FilesTouched = %v, %v; want %s, %v", c.args.Op(), files, complete, c.want, c.complete)
		}
	}
}

func TestSameIntent(t *testing.T) {
	a := sample(t, &BranchArgs{Name: "agent/y", StartPoint: "main"})
	b := a
	b.ID, b.CreatedAt, b.Pinned = "p-2", At(t0.Add(time.Second)), Pinned{Refs: map[string]string{"main": sha2}}
	if !SameIntent(a, b) {
		t.Fatalf("a retry with new id, time and pins is the same intent")
	}
	b.Args = &BranchArgs{Name: "agent/z", StartPoint: "main"}
	if SameIntent(a, b) {
		t.Fatalf("different args are a different intent")
	}
}

func TestPathsOverlap(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"a", "a", true}, {"a", "a/b", true}, {"a/b", "a", true}, {".", "x", true},
		{"a", "ab", false}, {"a/b", "a/c", false},
	}
	for _, c := range cases {
		if got := PathsOverlap(c.a, c.b); got != c.want {
			t.Errorf("PathsOverlap(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

func TestTimestamp_JSON(t *testing.T) {
	ts := At(time.Date(2025, 1, 2, 3, 4, 5, 6_789_000, time.FixedZone("X", 3600)))
	b, _ := json.Marshal(ts)
	if string(b) != `"2025-01-02T02:04:05.006Z"` {
		t.Fatalf("Marshal = %s", b)
	}
	var back Timestamp
	if err := json.Unmarshal(b, &back); err != nil || !back.Equal(ts.Time) {
		t.Fatalf("Unmarshal = %v, %v", back, err)
	}
	for _, bad := range []string{`"2025-01-02T02:04:05Z"`, `"2025-01-02T02:04:05.006+01:00"`, `1735783445006`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("Unmarshal(%s) accepted a non-canonical timestamp", bad)
		}
	}
}
