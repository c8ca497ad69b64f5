package sidecar

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/intake"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/policy"
	"github.com/sluicehq/sluice/core/proposal"
)

// recorder keeps the journal's audit events.
type recorder struct {
	mu     sync.Mutex
	events []journal.Event
	// fail, when set, is every later Record's answer: the ledger cannot
	// be written.
	fail error
}

func (r *recorder) Record(ev journal.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.events = append(r.events, ev)
	return nil
}

// failWith makes every later Record fail with err.
func (r *recorder) failWith(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = err
}

// proposeEnv is a sidecar with the propose toolset, talking through a
// real gateway to a real journal, about a real git repository, all in
// temp dirs.
type proposeEnv struct {
	s   *Sidecar
	cs  *mcp.ClientSession
	j   *journal.Journal
	rec *recorder
	srv *gateway.Server
	// token is the gateway's token.
	token string
	root  string
	repo  string
	git   func(dir string, args ...string) string
}

func git(t *testing.T) func(dir string, args ...string) string {
	return func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// makeRepo builds root/repo: main with two files, a pushed branch feature
// (upstream origin/feature), agent/x, and a submodule at vendor/lib.
func makeRepo(t *testing.T, root string) string {
	g := git(t)
	lib := filepath.Join(root, "lib")
	os.Mkdir(lib, 0o755)
	g(lib, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(lib, "lib.go"), "package lib\n")
	g(lib, "add", ".")
	g(lib, "commit", "-q", "-m", "lib")

	repo := filepath.Join(root, "repo")
	os.Mkdir(repo, 0o755)
	g(repo, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(repo, "README.md"), "# repo\n")
	writeFile(t, filepath.Join(repo, "src", "a.go"), "package src\n\n// A is a.\nconst A = 1\n")
	g(repo, "add", ".")
	g(repo, "commit", "-q", "-m", "init")
	g(repo, "checkout", "-q", "-b", "feature")
	writeFile(t, filepath.Join(repo, "src", "b.go"), "package src\n")
	g(repo, "add", ".")
	g(repo, "commit", "-q", "-m", "feature")
	g(repo, "checkout", "-q", "main")
	g(repo, "branch", "agent/x")
	remote := filepath.Join(root, "remote.git")
	g(root, "init", "-q", "--bare", remote)
	g(repo, "remote", "add", "origin", remote)
	g(repo, "push", "-q", "-u", "origin", "feature")
	g(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "vendor/lib")
	g(repo, "commit", "-q", "-m", "add lib")
	return repo
}

type envOpt struct {
	policy     *policy.Policy
	clientName string
	identity   string
	// sealer, when set, makes what seals every proposal as the app does.
	sealer func(j *journal.Journal, roots gitx.Roots) intake.Sealer
}

func newProposeEnv(t *testing.T, o envOpt) *proposeEnv {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, cfg := testEnv(t, root)
	repo := makeRepo(t, root)

	rec := &recorder{}
	dbPath := filepath.Join(t.TempDir(), "journal.db")
	j, err := journal.Open(dbPath, journal.Options{Recorder: rec, PendingExpiry: cfg.PendingExpiry})
	if err != nil {
		t.Fatal(err)
	}
	token, _ := gateway.NewToken()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var sealer intake.Sealer
	if o.sealer != nil {
		sealer = o.sealer(j, gitx.Roots(cfg.AllowedRoots))
	}
	backend := intake.New(j, intake.Options{Roots: gitx.Roots(cfg.AllowedRoots), Policy: o.policy, Logger: quiet, Sealer: sealer})
	srv, err := gateway.Listen(gateway.Options{Token: token, AppVersion: "test", Backend: backend, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		j.Close()
	})
	s, err := New(Options{Config: cfg, Toolsets: []string{"propose", "propose_more"}, Logger: quiet, Identity: o.identity,
		Gateway: func() (*gateway.Client, error) { return gateway.NewClient(srv.Addr(), token) }})
	if err != nil {
		t.Fatal(err)
	}
	e := &proposeEnv{s: s, j: j, rec: rec, srv: srv, token: token, root: root, repo: repo, git: git(t)}
	e.cs = e.connect(t, o.clientName, nil)
	return e
}

// connect opens another MCP client session to the same sidecar.
func (e *proposeEnv) connect(t *testing.T, name string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	if name == "" {
		name = "test-agent"
	}
	return connectClient(t, e.s, name, opts)
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, ProposalOut) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	var out ProposalOut
	if res.StructuredContent != nil {
		out = decode[ProposalOut](t, res)
	}
	return res, out
}

// mustPropose calls a propose tool and expects a pending (or approved)
// proposal that the journal stored byte for byte.
func (e *proposeEnv) mustPropose(t *testing.T, tool string, args map[string]any) ProposalOut {
	t.Helper()
	res, out := call(t, e.cs, tool, args)
	if res.IsError {
		t.Fatalf("%s failed: %s", tool, resultText(res))
	}
	if out.ProposalID == "" || !strings.HasPrefix(out.Digest, "sha256:") || out.NextAction != "proposal_wait" || out.Done || out.ExpiresAt == "" {
		t.Fatalf("%s answer = %+v", tool, out)
	}
	rec, err := e.j.Get(out.ProposalID)
	if err != nil {
		t.Fatalf("%s: not in the journal: %v", tool, err)
	}
	if rec.Proposal.Digest != out.Digest || rec.Proposal.Agent != "test-agent" || rec.Proposal.Repo != e.repo {
		t.Fatalf("%s: journal has %+v", tool, rec.Proposal)
	}
	if err := rec.Proposal.Validate(); err != nil {
		t.Fatalf("%s: stored proposal does not validate: %v", tool, err)
	}
	return out
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func withCommon(e *proposeEnv, args map[string]any) map[string]any {
	out := map[string]any{"repoPath": e.repo, "reason": "the person asked for it"}
	for k, v := range args {
		out[k] = v
	}
	return out
}

const testPatch = "diff --git a/src/a.go b/src/a.go\n--- a/src/a.go\n+++ b/src/a.go\n@@ -1,4 +1,4 @@\n package src\n \n-// A is a.\n+// A is the answer.\n const A = 1\n"

func TestProposeTools_EveryTool(t *testing.T) {
	e := newProposeEnv(t, envOpt{})
	head := e.git(e.repo, "rev-parse", "HEAD")
	feature := e.git(e.repo, "rev-parse", "feature")
	other := filepath.Join(e.root, "other")
	os.Mkdir(other, 0o755)
	e.git(other, "init", "-q", "-b", "main")
	e.git(other, "commit", "-q", "--allow-empty", "-m", "x")
	e.git(other, "branch", "old")

	cases := []struct {
		tool  string
		args  map[string]any
		op    proposal.Op
		pins  map[string]string
		risk  string
		check func(t *testing.T, rec journal.Record)
	}{
		{"propose_merge", map[string]any{"source": "feature", "target": "main", "strategy": "squash"}, proposal.OpMerge,
			map[string]string{"feature": feature, "refs/heads/main": head}, "medium", nil},
		{"propose_rebase", map[string]any{"branch": "agent/x", "onto": "feature"}, proposal.OpRebase,
			map[string]string{"refs/heads/agent/x": e.git(e.repo, "rev-parse", "agent/x"), "feature": feature}, "high", nil},
		{"propose_discard", map[string]any{"paths": []string{"src"}, "branch": "main"}, proposal.OpDiscard,
			map[string]string{"HEAD": head, "refs/heads/main": head}, "destructive", nil},
		{"propose_reset", map[string]any{"mode": "hard", "target": "HEAD~1"}, proposal.OpReset,
			map[string]string{"HEAD": head, "HEAD~1": e.git(e.repo, "rev-parse", "HEAD~1")}, "destructive", nil},
		{"propose_patch", map[string]any{"patch": testPatch, "applyTo": "worktree"}, proposal.OpPatch,
			map[string]string{"HEAD": head}, "medium", nil},
		{"propose_plan", map[string]any{"steps": []map[string]any{
			{"op": "patch", "patch": testPatch, "applyTo": "index"},
			{"op": "merge", "source": "feature", "target": "main", "strategy": "merge"},
		}}, proposal.OpPlan, map[string]string{"HEAD": head, "feature": feature, "refs/heads/main": head}, "medium", nil},
		{"propose_worktree", map[string]any{"path": filepath.Join(e.root, "wt"), "branch": "agent/wt", "newBranch": true}, proposal.OpWorktree,
			map[string]string{"HEAD": head}, "low", func(t *testing.T, rec journal.Record) {
				if a := rec.Proposal.Args.(*proposal.WorktreeArgs); a.Path != filepath.Join(e.root, "wt") || a.StartPoint != "HEAD" {
					t.Fatalf("worktree args = %+v", a)
				}
			}},
		{"propose_commit", map[string]any{"message": "Update a", "paths": []string{"src/a.go"}, "branch": "main"}, proposal.OpCommit,
			map[string]string{"HEAD": head, "refs/heads/main": head}, "low", nil},
		{"propose_push", map[string]any{"branch": "feature", "forceWithLease": true}, proposal.OpPush,
			map[string]string{"refs/heads/feature": feature, "refs/remotes/origin/feature": feature}, "destructive", func(t *testing.T, rec journal.Record) {
				if a := rec.Proposal.Args.(*proposal.PushArgs); a.Remote != "origin" {
					t.Fatalf("remote = %q, want the default origin", a.Remote)
				}
			}},
		{"propose_branch", map[string]any{"name": "agent/new"}, proposal.OpBranch,
			map[string]string{"HEAD": head}, "low", nil},
		{"propose_branch_delete", map[string]any{"branches": []string{"agent/x"},
			"otherRepos": []map[string]any{{"repoPath": other, "branches": []string{"old"}}}}, proposal.OpBranchDelete,
			map[string]string{"refs/heads/agent/x": e.git(e.repo, "rev-parse", "agent/x")}, "destructive", func(t *testing.T, rec journal.Record) {
				want := e.git(other, "rev-parse", "old")
				if got := rec.Proposal.Pinned.Repos[other]["refs/heads/old"]; got != want {
					t.Fatalf("other repo pin = %q, want %q (%+v)", got, want, rec.Proposal.Pinned.Repos)
				}
			}},
		{"propose_submodule_pointer", map[string]any{"path": "vendor/lib", "action": "record"}, proposal.OpSubmodulePointer,
			map[string]string{"HEAD": head}, "medium", func(t *testing.T, rec journal.Record) {
				sub := filepath.Join(e.repo, "vendor", "lib")
				if got := rec.Proposal.Pinned.Repos[sub]["HEAD"]; got != e.git(sub, "rev-parse", "HEAD") {
					t.Fatalf("submodule pin = %+v", rec.Proposal.Pinned.Repos)
				}
			}},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			seen[c.tool] = true
			out := e.mustPropose(t, c.tool, withCommon(e, c.args))
			rec, _ := e.j.Get(out.ProposalID)
			if rec.Proposal.Op != c.op || out.Op != string(c.op) || out.Status != "pending" {
				t.Fatalf("op %s status %s, want %s pending", out.Op, out.Status, c.op)
			}
			if !maps(rec.Proposal.Pinned.Refs, c.pins) || !maps(out.Pinned, c.pins) {
				t.Fatalf("pins = %v, want %v", rec.Proposal.Pinned.Refs, c.pins)
			}
			if out.Risk != c.risk || out.Destructive != (c.risk == "destructive") {
				t.Fatalf("risk = %s (destructive %v), want %s", out.Risk, out.Destructive, c.risk)
			}
			if c.check != nil {
				c.check(t, rec)
			}
			// Stay under the pending cap of 10 per agent.
			if _, err := e.j.Cancel(out.ProposalID, "test-agent"); err != nil {
				t.Fatal(err)
			}
		})
	}
	tools, err := e.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if strings.HasPrefix(tool.Name, "propose_") && !seen[tool.Name] {
			t.Errorf("%s is not exercised", tool.Name)
		}
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestProposeRebase_PushedBranch_IsDestructive(t *testing.T) {
	e := newProposeEnv(t, envOpt{})
	out := e.mustPropose(t, "propose_rebase", withCommon(e, map[string]any{"branch": "feature", "onto": "main"}))
	if out.Risk != "destructive" || out.Pinned["refs/remotes/origin/feature"] == "" {
		t.Fatalf("rebase of a pushed branch: risk %s, pins %v", out.Risk, out.Pinned)
	}
}

func TestProposalWait_Completed_WithProgress(t *testing.T) {
	old := progressInterval
	progressInterval = 100 * time.Millisecond
	t.Cleanup(func() { progressInterval = old })

	e := newProposeEnv(t, envOpt{})
	var mu sync.Mutex
	var progress []float64
	// The person decides once the agent has been told twice that it is
	// still waiting: a condition, not a duration.
	twice := make(chan struct{})
	cs := e.connect(t, "test-agent", &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			if req.Params.ProgressToken == "tok-1" {
				progress = append(progress, req.Params.Progress)
				if len(progress) == 2 {
					close(twice)
				}
			}
		},
	})
	p := e.mustPropose(t, "propose_branch", withCommon(e, map[string]any{"name": "agent/w"}))
	go func() {
		<-twice
		e.j.Approve(p.ProposalID, p.Digest, "person", "fine")
		e.j.MarkExecuting(p.ProposalID, p.Digest)
		e.j.Complete(p.ProposalID, "executor", journal.Outcome{})
	}()
	params := &mcp.CallToolParams{Name: "proposal_wait", Arguments: map[string]any{"proposalId": p.ProposalID, "timeoutSeconds": 50}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	out := decode[ProposalOut](t, res)
	if res.IsError || out.Status != "completed" || !out.Done || !out.Terminal || out.Decision == nil || out.Decision.By != "person" {
		t.Fatalf("proposal_wait = %+v (isError %v)", out, res.IsError)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) < 2 || !slices.IsSorted(progress) {
		t.Fatalf("progress notifications = %v, want at least two, increasing", progress)
	}
}

func TestProposalWait_NotCompleted_IsError(t *testing.T) {
	e := newProposeEnv(t, envOpt{})
	cases := []struct {
		name   string
		decide func(p ProposalOut)
		status string
		code   errcode.Code
	}{
		{"rejected", func(p ProposalOut) { e.j.Reject(p.ProposalID, "person", "not this way") }, "rejected", errcode.ProposalRefused},
		{"failed with stale base", func(p ProposalOut) {
			e.j.Approve(p.ProposalID, p.Digest, "person", "")
			e.j.MarkExecuting(p.ProposalID, p.Digest)
			e.j.Fail(p.ProposalID, "executor", journal.Outcome{Code: "stale_base", Message: "main moved"})
		}, "failed", errcode.StaleBase},
		{"needs reconciliation", func(p ProposalOut) {
			e.j.Approve(p.ProposalID, p.Digest, "person", "")
			e.j.MarkExecuting(p.ProposalID, p.Digest)
			e.j.Transition(p.ProposalID, proposal.Executing, proposal.NeedsReconciliation, journal.Details{By: "recovery"})
		}, "needs_reconciliation", errcode.ProposalTerminal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := e.mustPropose(t, "propose_branch", withCommon(e, map[string]any{"name": "agent/" + strings.ReplaceAll(c.name, " ", "-")}))
			c.decide(p)
			for _, tool := range []string{"proposal_wait", "proposal_status"} {
				res, out := call(t, e.cs, tool, map[string]any{"proposalId": p.ProposalID})
				if !res.IsError || out.Status != c.status || out.Done || out.Error == nil || out.Error.Code != c.code {
					t.Fatalf("%s = %+v (isError %v)", tool, out, res.IsError)
				}
			}
		})
	}
}

func TestProposalWait_Timeout_ReturnsCurrentState(t *testing.T) {
	e := newProposeEnv(t, envOpt{})
	p := e.mustPropose(t, "propose_branch", withCommon(e, map[string]any{"name": "agent/t"}))
	e.j.Approve(p.ProposalID, p.Digest, "person", "")
	start := time.Now()
	res, out := call(t, e.cs, "proposal_wait", map[string]any{"proposalId": p.ProposalID, "timeoutSeconds": 1})
	if res.IsError || out.Status != "approved" || out.Done || out.Terminal || out.NextAction != "proposal_wait" {
		t.Fatalf("proposal_wait = %+v (isError %v)", out, res.IsError)
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("waited %s for a 1 s timeout", d)
	}
}

func TestProposalCancel_OwnerOnlyWhilePending(t *testing.T) {
	e := newProposeEnv(t, envOpt{})
	p := e.mustPropose(t, "propose_branch", withCommon(e, map[string]any{"name": "agent/c"}))
	intruder := e.connect(t, "other-agent", nil)
	res, out := call(t, intruder, "proposal_cancel", map[string]any{"proposalId": p.ProposalID})
	if !res.IsError || out.Error.Code != errcode.ProposalRefused {
		t.Fatalf("cancel by another agent = %+v", out)
	}
	res, out = call(t, intruder, "proposal_status", map[string]any{"proposalId": p.ProposalID})
	if !res.IsError || out.Error.Code != errcode.ProposalRefused {
		t.Fatalf("status by another agent = %+v", out)
	}
	res, out = call(t, e.cs, "proposal_cancel", map[string]any{"proposalId": p.ProposalID})
	if res.IsError || out.Status != "cancelled" || !out.Terminal {
		t.Fatalf("cancel = %+v (isError %v)", out, res.IsError)
	}
	res, out = call(t, e.cs, "proposal_cancel", map[string]any{"proposalId": p.ProposalID})
	if !res.IsError || out.Error.Code != errcode.ProposalTerminal {
		t.Fatalf("second cancel = %+v", out)
	}
	res, out = call(t, e.cs, "proposal_status", map[string]any{"proposalId": "no-such-proposal"})
	if !res.IsError || out.Error.Code != errcode.ProposalNotFound {
		t.Fatalf("status of an unknown id = %+v", out)
	}
}

func TestPropose_Idempotency(t *testing.T) {
	e := newProposeEnv(t, envOpt{})
	args := withCommon(e, map[string]any{"name": "agent/i", "idempotencyKey": "make-i"})
	first := e.mustPropose(t, "propose_branch", args)
	res, again := call(t, e.cs, "propose_branch", args)
	if res.IsError || !again.Replayed || again.ProposalID != first.ProposalID || again.Digest != first.Digest {
		t.Fatalf("replay = %+v", again)
	}
	noKey := withCommon(e, map[string]any{"name": "agent/j"})
	a, b := e.mustPropose(t, "propose_branch", noKey), e.mustPropose(t, "propose_branch", noKey)
	if a.ProposalID == b.ProposalID {
		t.Fatalf("without a key, each call is a new intent")
	}
}

func TestPropose_Collisions(t *testing.T) {
	e := newProposeEnv(t, envOpt{})
	first := e.mustPropose(t, "propose_patch", withCommon(e, map[string]any{"patch": testPatch, "applyTo": "worktree"}))
	second := e.mustPropose(t, "propose_commit", withCommon(e, map[string]any{"message": "m", "paths": []string{"src"}}))
	if len(second.Collisions) != 1 || second.Collisions[0].ProposalID != first.ProposalID || !strings.Contains(second.Message, "same files") {
		t.Fatalf("collisions = %+v, message %q", second.Collisions, second.Message)
	}
}

func TestPropose_Refusals(t *testing.T) {
	e := newProposeEnv(t, envOpt{})
	outside := t.TempDir()
	// A directory inside the roots whose .git file names a repository
	// outside them.
	e.git(outside, "init", "-q")
	e.git(outside, "commit", "-q", "--allow-empty", "-m", "outside")
	pointsOut := filepath.Join(e.root, "points-out")
	writeFile(t, filepath.Join(pointsOut, ".git"), "gitdir: "+filepath.Join(outside, ".git")+"\n")
	cases := []struct {
		name string
		tool string
		args map[string]any
		code errcode.Code // empty: refused by the input schema
	}{
		{"outside the roots", "propose_branch", map[string]any{"repoPath": outside, "reason": "r", "name": "x"}, errcode.PathOutsideRoots},
		{"relative repo", "propose_branch", map[string]any{"repoPath": "repo", "reason": "r", "name": "x"}, errcode.InvalidArgument},
		{"not a repository", "propose_branch", map[string]any{"repoPath": e.root, "reason": "r", "name": "x"}, errcode.NotARepository},
		{"missing reason", "propose_branch", map[string]any{"repoPath": e.repo, "name": "x"}, ""},
		{"blank reason", "propose_branch", withCommon(e, map[string]any{"reason": "   ", "name": "x"}), errcode.InvalidArgument},
		{"unknown field", "propose_commit", withCommon(e, map[string]any{"message": "m", "stageAll": true, "amend": true}), ""},
		{"interactive rebase", "propose_rebase", withCommon(e, map[string]any{"branch": "agent/x", "onto": "main", "interactive": true}), ""},
		{"bad enum", "propose_reset", withCommon(e, map[string]any{"mode": "keep", "target": "HEAD"}), ""},
		{"reason too long", "propose_branch", withCommon(e, map[string]any{"reason": strings.Repeat("r", 2001), "name": "x"}), ""},
		{"patch too large", "propose_patch", withCommon(e, map[string]any{"patch": strings.Repeat("x", 4<<20+1), "applyTo": "index"}), ""},
		{"option-like ref", "propose_branch", withCommon(e, map[string]any{"name": "x", "startPoint": "--output=/tmp/x"}), errcode.InvalidArgument},
		{"unknown ref", "propose_branch", withCommon(e, map[string]any{"name": "x", "startPoint": "no-such-branch"}), errcode.InvalidArgument},
		{"wrong branch checked out", "propose_commit", withCommon(e, map[string]any{"message": "m", "stageAll": true, "branch": "feature"}), errcode.StaleBase},
		{"patch escaping the tree", "propose_patch", withCommon(e, map[string]any{"applyTo": "worktree",
			"patch": "--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n"}), errcode.InvalidArgument},
		{"plan step mismatch", "propose_plan", withCommon(e, map[string]any{"steps": []map[string]any{
			{"op": "reset", "source": "a", "target": "main", "strategy": "merge"}}}), errcode.InvalidArgument},
		{"plan step with a field no step takes", "propose_plan", withCommon(e, map[string]any{"steps": []map[string]any{
			{"op": "reset", "mode": "soft", "target": "HEAD", "interactive": true}}}), errcode.InvalidArgument},
		{"plan step nesting its arguments", "propose_plan", withCommon(e, map[string]any{"steps": []map[string]any{
			{"op": "reset", "reset": map[string]any{"mode": "soft", "target": "HEAD"}}}}), errcode.InvalidArgument},
		{"plan step of an unknown op", "propose_plan", withCommon(e, map[string]any{"steps": []map[string]any{
			{"op": "commit", "message": "m"}}}), ""},
		{"too many plan steps", "propose_plan", withCommon(e, map[string]any{"steps": slices.Repeat([]map[string]any{
			{"op": "reset", "mode": "soft", "target": "HEAD"}}, 11)}), errcode.InvalidArgument},
		{"lease without tracking ref", "propose_push", withCommon(e, map[string]any{"branch": "agent/x", "forceWithLease": true}), errcode.InvalidArgument},
		{"worktree exists", "propose_worktree", withCommon(e, map[string]any{"path": e.repo, "branch": "main"}), errcode.InvalidArgument},
		{"worktree in .git", "propose_worktree", withCommon(e, map[string]any{"path": filepath.Join(e.repo, ".git", "wt"), "branch": "agent/wt", "newBranch": true}), errcode.InvalidArgument},
		{"worktree in .git through ..", "propose_worktree", withCommon(e, map[string]any{"path": e.repo + "/src/../.git/wt", "branch": "agent/wt", "newBranch": true}), errcode.InvalidArgument},
		{"worktree in a bare repository", "propose_worktree", withCommon(e, map[string]any{"path": filepath.Join(e.root, "remote.git", "wt"), "branch": "agent/wt", "newBranch": true}), errcode.InvalidArgument},
		{"worktree in a submodule's git dir", "propose_worktree", withCommon(e, map[string]any{"path": filepath.Join(e.repo, ".git", "modules", "vendor", "lib", "wt"), "branch": "agent/wt", "newBranch": true}), errcode.InvalidArgument},
		{"git file points outside", "propose_branch", map[string]any{"repoPath": pointsOut, "reason": "r", "name": "x"}, errcode.PathOutsideRoots},
		{"worktree under a tree whose git dir is outside", "propose_worktree", withCommon(e, map[string]any{"path": filepath.Join(pointsOut, "wt"), "branch": "agent/wt", "newBranch": true}), errcode.PathOutsideRoots},
		{"not a submodule", "propose_submodule_pointer", withCommon(e, map[string]any{"path": "src", "action": "record"}), errcode.InvalidArgument},
		{"bad idempotency key", "propose_branch", withCommon(e, map[string]any{"name": "x", "idempotencyKey": "a b"}), errcode.InvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, out := call(t, e.cs, c.tool, c.args)
			if !res.IsError {
				t.Fatalf("accepted: %+v", out)
			}
			if c.code == "" {
				// The SDK refused the arguments against the schema, before
				// the handler (which would answer with a coded error).
				if out.Error != nil || !strings.Contains(resultText(res), "validating \"arguments\"") {
					t.Fatalf("want a schema refusal, got error %+v: %s", out.Error, resultText(res))
				}
				return
			}
			if out.Error == nil || out.Error.Code != c.code {
				t.Fatalf("error = %+v (%s), want %s", out.Error, resultText(res), c.code)
			}
			if c.code == errcode.PathOutsideRoots && strings.Contains(resultText(res), outside) {
				t.Fatalf("the refused path was echoed back")
			}
		})
	}
	if n := len(e.rec.events); n != 0 {
		t.Fatalf("refused proposals reached the journal: %d events", n)
	}
}

func TestPropose_PolicyDenied(t *testing.T) {
	pol, err := policy.Parse([]byte(`{"version":1,"agents":{"test-agent":{"ops":["branch"],"refs":["agent/**"],
		"autoApprove":[{"name":"agent-branches","ops":["branch"]}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newProposeEnv(t, envOpt{policy: pol})
	res, out := call(t, e.cs, "propose_branch", withCommon(e, map[string]any{"name": "release"}))
	if !res.IsError || out.Error.Code != errcode.PolicyDenied {
		t.Fatalf("denied = %+v", out)
	}
	res, out = call(t, e.cs, "propose_branch", withCommon(e, map[string]any{"name": "agent/ok"}))
	if res.IsError || out.Status != "approved" || !out.AutoApproved || out.Done {
		t.Fatalf("auto-approved = %+v (isError %v)", out, res.IsError)
	}
}

// An identity set by the transport (an HTTP token's name) is what the
// proposal is attributed to, whatever the client calls itself.
func TestPropose_IdentityOverride(t *testing.T) {
	e := newProposeEnv(t, envOpt{identity: "build-bot"})
	res, out := call(t, e.cs, "propose_branch", withCommon(e, map[string]any{"name": "agent/bot"}))
	if res.IsError {
		t.Fatalf("propose_branch: %s", resultText(res))
	}
	rec, err := e.j.Get(out.ProposalID)
	if err != nil || rec.Proposal.Agent != "build-bot" {
		t.Fatalf("agent = %q, %v", rec.Proposal.Agent, err)
	}
}

func TestPropose_GatewayDown_IsUnavailable(t *testing.T) {
	e := newProposeEnv(t, envOpt{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e.srv.Shutdown(ctx)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"propose_branch", withCommon(e, map[string]any{"name": "agent/down"})},
		{"proposal_status", map[string]any{"proposalId": "p1"}},
		{"proposal_wait", map[string]any{"proposalId": "p1", "timeoutSeconds": 1}},
		{"proposal_cancel", map[string]any{"proposalId": "p1"}},
	} {
		res, out := call(t, e.cs, c.tool, c.args)
		if !res.IsError || out.Error == nil || out.Error.Code != errcode.GatewayUnavailable || out.Done || out.Status != "" {
			t.Fatalf("%s with the app down = %+v (isError %v)", c.tool, out, res.IsError)
		}
	}
}

func TestProposeTools_Annotations(t *testing.T) {
	e := newProposeEnv(t, envOpt{})
	tools, err := e.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"propose_branch", "propose_branch_delete", "propose_commit", "propose_discard", "propose_merge",
		"propose_patch", "propose_plan", "propose_push", "propose_rebase", "propose_reset", "propose_submodule_pointer",
		"propose_worktree", "proposal_cancel", "proposal_status", "proposal_wait"}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		a := tool.Annotations
		if a == nil || tool.Title == "" || len(tool.Description) < 40 {
			t.Errorf("%s lacks a title, description or annotations", tool.Name)
			continue
		}
		switch {
		case strings.HasPrefix(tool.Name, "propose_"):
			destructive := tool.Name == "propose_reset" || tool.Name == "propose_discard"
			if a.ReadOnlyHint || a.IdempotentHint || a.DestructiveHint == nil || *a.DestructiveHint != destructive {
				t.Errorf("%s annotations = %+v", tool.Name, a)
			}
			schema, _ := json.Marshal(tool.InputSchema)
			if !strings.Contains(string(schema), `"reason"`) || !strings.Contains(string(schema), `"additionalProperties":false`) ||
				!strings.Contains(string(schema), `"maxLength"`) {
				t.Errorf("%s schema is not strict and bounded: %s", tool.Name, schema)
			}
		case tool.Name == "proposal_status" || tool.Name == "proposal_wait":
			if !a.ReadOnlyHint {
				t.Errorf("%s should be read-only", tool.Name)
			}
		case tool.Name == "proposal_cancel":
			if a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint {
				t.Errorf("proposal_cancel annotations = %+v", a)
			}
		}
	}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("tool %s is missing", w)
		}
	}
}

// With no allowed roots, a proposal says how to add one, as the read tools
// do, rather than only that the path is outside them.
func TestPropose_NoRoots_SaysHow(t *testing.T) {
	_, cfg := testEnv(t)
	cfg.AllowedRoots = nil
	s, err := New(Options{Config: cfg, Toolsets: []string{"propose", "git"}})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectInMemory(t, s)
	for tool, args := range map[string]map[string]any{
		"propose_branch":  {"repoPath": t.TempDir(), "reason": "r", "name": "x"},
		"agents_presence": {"repoPath": t.TempDir()},
	} {
		e := gitCallErr(t, cs, tool, args)
		if e.Code != errcode.PathOutsideRoots || !strings.Contains(e.Message, "SLUICE_ALLOWED_ROOTS") {
			t.Errorf("%s: %+v", tool, e)
		}
	}
}

// TestPropose_NestedWorktree_IsHighRisk: a worktree inside another
// working tree is pinned as nested and its card is high risk.
func TestPropose_NestedWorktree_IsHighRisk(t *testing.T) {
	e := newProposeEnv(t, envOpt{})
	out := e.mustPropose(t, "propose_worktree", withCommon(e, map[string]any{"path": filepath.Join(e.repo, "src", "wt"), "branch": "agent/wt", "newBranch": true}))
	rec, err := e.j.Get(out.ProposalID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Proposal.Pinned.WorktreeNestedIn != e.repo || rec.Proposal.Risk() != proposal.RiskHigh || out.Risk != "high" {
		t.Fatalf("nested worktree: pinned %+v, risk %s / %s", rec.Proposal.Pinned, rec.Proposal.Risk(), out.Risk)
	}
}

// A plan step takes the arguments of its op's own tool; one that carries
// another op's field, or nests its arguments as before, is told which
// fields its op takes, and nothing is submitted.
func TestPropose_PlanStep_NamesItsFields(t *testing.T) {
	e := newProposeEnv(t, envOpt{})
	for _, step := range []map[string]any{
		{"op": "reset", "mode": "soft", "target": "HEAD", "source": "main"},
		{"op": "reset", "reset": map[string]any{"mode": "soft", "target": "HEAD"}},
	} {
		res, out := call(t, e.cs, "propose_plan", withCommon(e, map[string]any{"steps": []map[string]any{step}}))
		if !res.IsError || out.Error == nil || out.Error.Code != errcode.InvalidArgument || out.ProposalID != "" {
			t.Fatalf("step %v: %+v", step, out)
		}
		if !strings.Contains(out.Error.Message, "steps[0]") || !strings.Contains(out.Error.Message, "propose_") {
			t.Errorf("step %v: %q does not say which step and whose arguments it takes", step, out.Error.Message)
		}
	}
	if _, out := call(t, e.cs, "propose_plan", withCommon(e, map[string]any{"steps": []map[string]any{
		{"op": "reset", "mode": "soft", "target": "HEAD", "source": "main"}}})); !strings.Contains(out.Error.Message, "mode, target, branch") {
		t.Errorf("a reset step's error does not name reset's fields: %q", out.Error.Message)
	}
	if n := len(e.rec.events); n != 0 {
		t.Fatalf("refused plans reached the journal: %d events", n)
	}
}
