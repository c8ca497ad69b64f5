package intake

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/policy"
	"github.com/sluicehq/sluice/core/proposal"
)

func apiCode(t *testing.T, err error) (int, errcode.Code) {
	t.Helper()
	var e *gateway.APIError
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *APIError", err)
	}
	return e.Status, e.Detail.Code
}

func TestProposals_SubmitGetCancel(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := t.Context()
	p := e.branchProposal(t, "agent-a")
	st, err := e.client.SubmitProposal(ctx, "agent-a", p)
	if err != nil {
		t.Fatal(err)
	}
	if st.ProposalID != p.ID || st.Status != proposal.Pending || st.Digest != p.Digest || st.ShortDigest != proposal.ShortDigest(p.Digest) ||
		st.ExpiresAt != p.ExpiresAt.String() || st.Done || st.Terminal || st.Replayed || st.Risk != "low" {
		t.Fatalf("submit answer = %+v", st)
	}
	// What the app stored is exactly what was sent.
	rec, err := e.j.Get(p.ID)
	if err != nil || rec.Proposal.Digest != p.Digest {
		t.Fatalf("journal has %+v, %v", rec.Proposal, err)
	}
	got, err := e.client.GetProposal(ctx, "agent-a", p.ID)
	if err != nil || got.Status != proposal.Pending {
		t.Fatalf("GetProposal = %+v, %v", got, err)
	}
	if _, err := e.client.GetProposal(ctx, "agent-b", p.ID); err == nil {
		t.Fatalf("another agent read the proposal")
	} else if status, code := apiCode(t, err); status != 403 || code != errcode.Forbidden {
		t.Fatalf("GetProposal by another agent = %d %s", status, code)
	}
	if _, err := e.client.GetProposal(ctx, "agent-a", "missing"); err == nil {
		t.Fatalf("GetProposal of a missing id succeeded")
	} else if status, code := apiCode(t, err); status != 404 || code != errcode.ProposalNotFound {
		t.Fatalf("GetProposal of a missing id = %d %s", status, code)
	}

	if _, err := e.client.CancelProposal(ctx, "agent-b", p.ID); err == nil {
		t.Fatalf("another agent cancelled")
	} else if status, _ := apiCode(t, err); status != 403 {
		t.Fatalf("cancel by another agent = %d", status)
	}
	c, err := e.client.CancelProposal(ctx, "agent-a", p.ID)
	if err != nil || c.Status != proposal.Cancelled || !c.Terminal || c.Done {
		t.Fatalf("CancelProposal = %+v, %v", c, err)
	}
	if _, err := e.client.CancelProposal(ctx, "agent-a", p.ID); err == nil {
		t.Fatalf("second cancel succeeded")
	} else if status, code := apiCode(t, err); status != 409 || code != errcode.ProposalTerminal {
		t.Fatalf("second cancel = %d %s", status, code)
	}

	q := e.branchProposal(t, "agent-a")
	e.client.SubmitProposal(ctx, "agent-a", q)
	e.j.Approve(q.ID, q.Digest, "person", "")
	if _, err := e.client.CancelProposal(ctx, "agent-a", q.ID); err == nil {
		t.Fatalf("cancel after approval succeeded")
	} else if status, _ := apiCode(t, err); status != 409 {
		t.Fatalf("cancel after approval = %d", status)
	}
}

func TestProposals_Submit_IdempotentReplay(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.branchProposal(t, "agent-a")
	p.IdempotencyKey = "make-branch"
	reseal(t, &p)
	first, err := e.client.SubmitProposal(t.Context(), "agent-a", p)
	if err != nil {
		t.Fatal(err)
	}
	retry := p
	retry.ID = p.ID + "-retry"
	reseal(t, &retry)
	again, err := e.client.SubmitProposal(t.Context(), "agent-a", retry)
	if err != nil || !again.Replayed || again.ProposalID != first.ProposalID || again.Digest != first.Digest {
		t.Fatalf("replay = %+v, %v", again, err)
	}
	// The same change in other words is the same proposal again.
	reworded := retry
	reworded.Reason = "another reason"
	reseal(t, &reworded)
	if again, err := e.client.SubmitProposal(t.Context(), "agent-a", reworded); err != nil || !again.Replayed || again.ProposalID != first.ProposalID {
		t.Fatalf("a reworded retry = %+v, %v; want the first proposal", again, err)
	}
	changed := retry
	changed.Args = &proposal.BranchArgs{Name: "agent/other", StartPoint: "main"}
	reseal(t, &changed)
	if _, err := e.client.SubmitProposal(t.Context(), "agent-a", changed); err == nil {
		t.Fatalf("a different request under the same key was accepted")
	} else if status, code := apiCode(t, err); status != 409 || code != errcode.Conflict {
		t.Fatalf("conflict = %d %s", status, code)
	}
}

func TestProposals_Submit_Refuses(t *testing.T) {
	e := newEnv(t, envOptions{})
	outside := t.TempDir()
	link := filepath.Join(e.root, "link")
	if err := os.Symlink(e.repo, link); err != nil {
		t.Fatal(err)
	}
	// A directory whose .git file leads out of the roots, a .git
	// directory and a bare repository inside them.
	pointsOut := filepath.Join(e.root, "points-out")
	mkdirs(t, pointsOut, filepath.Join(e.repo, ".git", "objects"), filepath.Join(e.repo, ".git", "refs"),
		filepath.Join(e.root, "bare.git", "objects"), filepath.Join(e.root, "bare.git", "refs"))
	writeTestFile(t, filepath.Join(pointsOut, ".git"), "gitdir: "+filepath.Join(outside, ".git")+"\n")
	writeTestFile(t, filepath.Join(e.repo, ".git", "HEAD"), "ref: refs/heads/main\n")
	writeTestFile(t, filepath.Join(e.root, "bare.git", "HEAD"), "ref: refs/heads/main\n")
	worktree := func(path, nested string) func(*proposal.Proposal) {
		return func(p *proposal.Proposal) {
			*p = e.proposal(t, "agent-a", &proposal.WorktreeArgs{Path: path, Branch: "agent/wt", NewBranch: true, StartPoint: "main"}, func(p *proposal.Proposal) {
				p.Pinned.Refs["main"] = sha
				p.Pinned.WorktreeNestedIn = nested
			})
		}
	}
	cases := []struct {
		name   string
		agent  string
		mutate func(*proposal.Proposal)
		status int
		code   errcode.Code
	}{
		{"git file points outside the roots", "agent-a", func(p *proposal.Proposal) { p.Repo = pointsOut; reseal(t, p) }, 403, errcode.PathOutsideRoots},
		{"worktree under a tree whose git dir is outside", "agent-a", worktree(filepath.Join(pointsOut, "wt"), pointsOut), 403, errcode.PathOutsideRoots},
		{"worktree in .git/hooks", "agent-a", worktree(filepath.Join(e.repo, ".git", "hooks"), e.repo), 400, errcode.InvalidArgument},
		{"worktree in a bare repository", "agent-a", worktree(filepath.Join(e.root, "bare.git", "hooks"), ""), 400, errcode.InvalidArgument},
		{"nested worktree that does not say so", "agent-a", worktree(filepath.Join(e.repo, "wt"), ""), 400, errcode.InvalidArgument},
		{"worktree that claims a nesting it has not", "agent-a", worktree(filepath.Join(e.root, "wt"), e.repo), 400, errcode.InvalidArgument},
		{"tampered after sealing", "agent-a", func(p *proposal.Proposal) {
			p.Reason = "changed"
			p.Digest = strings.Replace(p.Digest, p.Digest[10:14], "0000", 1)
		}, 400, errcode.InvalidArgument},
		{"agent header differs", "agent-b", func(p *proposal.Proposal) {}, 400, errcode.InvalidArgument},
		{"outside the roots", "agent-a", func(p *proposal.Proposal) { p.Repo = outside; reseal(t, p) }, 403, errcode.PathOutsideRoots},
		{"not canonical", "agent-a", func(p *proposal.Proposal) { p.Repo = link; reseal(t, p) }, 400, errcode.InvalidArgument},
		{"clock far off", "agent-a", func(p *proposal.Proposal) {
			p.CreatedAt = proposal.At(time.Now().Add(-10 * time.Minute))
			p.ExpiresAt = proposal.At(time.Now().Add(time.Minute))
			reseal(t, p)
		}, 400, errcode.InvalidArgument},
		{"expiry too long", "agent-a", func(p *proposal.Proposal) {
			p.ExpiresAt = proposal.At(time.Now().Add(journal.DefaultPendingExpiry + time.Hour))
			reseal(t, p)
		}, 400, errcode.InvalidArgument},
		{"unpinned", "agent-a", func(p *proposal.Proposal) { delete(p.Pinned.Refs, "main"); reseal(t, p) }, 400, errcode.InvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := e.branchProposal(t, "agent-a")
			c.mutate(&p)
			_, err := e.client.SubmitProposal(t.Context(), c.agent, p)
			if err == nil {
				t.Fatalf("accepted")
			}
			if status, code := apiCode(t, err); status != c.status || code != c.code {
				t.Fatalf("got %d %s (%v), want %d %s", status, code, err, c.status, c.code)
			}
		})
	}
	t.Run("unknown field in the body", func(t *testing.T) {
		p := e.branchProposal(t, "agent-a")
		b, _ := json.Marshal(p)
		body := strings.Replace(string(b), `"reason"`, `"approved":true,"reason"`, 1)
		status, resp := raw(t, e.srv.Addr(), e.req("POST", "/v1/proposals", fmt.Sprintf("Content-Length: %d", len(body)))+body)
		if status != 400 || !strings.Contains(resp, string(errcode.InvalidArgument)) {
			t.Fatalf("got %d %s", status, resp)
		}
	})
	if got := e.rec.types(); len(got) != 0 {
		t.Fatalf("refused submits were recorded: %v", got)
	}
}

func TestProposals_Wait(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := t.Context()

	t.Run("returns the terminal result", func(t *testing.T) {
		p := e.branchProposal(t, "agent-a")
		e.client.SubmitProposal(ctx, "agent-a", p)
		go func() {
			time.Sleep(30 * time.Millisecond)
			e.j.Approve(p.ID, p.Digest, "person", "ok")
			time.Sleep(30 * time.Millisecond)
			e.j.MarkExecuting(p.ID, p.Digest)
			time.Sleep(30 * time.Millisecond)
			e.j.Complete(p.ID, "executor", journal.Outcome{RestorePoint: "rp-1"})
		}()
		st, err := e.client.WaitProposal(ctx, "agent-a", p.ID, gateway.MaxWait)
		if err != nil || st.Status != proposal.Completed || !st.Done || st.Decision == nil || st.Decision.By != "person" || st.Outcome.RestorePoint != "rp-1" {
			t.Fatalf("WaitProposal = %+v, %v", st, err)
		}
	})
	t.Run("returns the current state at the timeout", func(t *testing.T) {
		p := e.branchProposal(t, "agent-a")
		e.client.SubmitProposal(ctx, "agent-a", p)
		e.j.Approve(p.ID, p.Digest, "person", "")
		start := time.Now()
		st, err := e.client.WaitProposal(ctx, "agent-a", p.ID, 200*time.Millisecond)
		if err != nil || st.Status != proposal.Approved || st.Done || st.Terminal {
			t.Fatalf("WaitProposal = %+v, %v", st, err)
		}
		if d := time.Since(start); d < 150*time.Millisecond {
			t.Fatalf("waited %s for a 200ms timeout", d)
		}
	})
	t.Run("expiry", func(t *testing.T) {
		// The journal's clock stands still until the proposal is in, so
		// however late the submit arrives it arrives before the expiry;
		// from then on it runs with real time, and the wait ends when the
		// expiry passes.
		base := time.Now()
		var since atomic.Pointer[time.Time]
		e := newEnv(t, envOptions{journalNow: func() time.Time {
			if r := since.Load(); r != nil {
				return base.Add(time.Since(*r))
			}
			return base
		}})
		p := e.branchProposal(t, "agent-a")
		p.ExpiresAt = proposal.At(p.CreatedAt.Add(300 * time.Millisecond))
		reseal(t, &p)
		st, err := e.client.SubmitProposal(ctx, "agent-a", p)
		if err != nil || st.Status != proposal.Pending {
			t.Fatalf("SubmitProposal = %+v, %v", st, err)
		}
		released := time.Now()
		since.Store(&released)
		st, err = e.client.WaitProposal(ctx, "agent-a", p.ID, gateway.MaxWait)
		if err != nil || st.Status != proposal.Expired || !st.Terminal || st.Done {
			t.Fatalf("WaitProposal = %+v, %v", st, err)
		}
	})
	t.Run("rejection", func(t *testing.T) {
		p := e.branchProposal(t, "agent-a")
		e.client.SubmitProposal(ctx, "agent-a", p)
		e.j.Reject(p.ID, "person", "not now")
		st, err := e.client.WaitProposal(ctx, "agent-a", p.ID, time.Second)
		if err != nil || st.Status != proposal.Rejected || st.Decision.Note != "not now" || st.Done {
			t.Fatalf("WaitProposal = %+v, %v", st, err)
		}
	})
}

func TestProposals_PendingCap(t *testing.T) {
	e := newEnv(t, envOptions{pendingCap: 2})
	for range 2 {
		if _, err := e.client.SubmitProposal(t.Context(), "agent-a", e.branchProposal(t, "agent-a")); err != nil {
			t.Fatal(err)
		}
	}
	_, err := e.client.SubmitProposal(t.Context(), "agent-a", e.branchProposal(t, "agent-a"))
	if err == nil {
		t.Fatalf("third pending proposal accepted")
	}
	if status, code := apiCode(t, err); status != 429 || code != errcode.TooManyPending {
		t.Fatalf("got %d %s", status, code)
	}
	if _, err := e.client.SubmitProposal(t.Context(), "agent-b", e.branchProposal(t, "agent-b")); err != nil {
		t.Fatalf("the cap is per agent: %v", err)
	}
}

func TestProposals_DefaultPendingCap(t *testing.T) {
	e := newEnv(t, envOptions{})
	for i := range journal.DefaultPendingCap {
		if _, err := e.client.SubmitProposal(t.Context(), "agent-a", e.branchProposal(t, "agent-a")); err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
	}
	_, err := e.client.SubmitProposal(t.Context(), "agent-a", e.branchProposal(t, "agent-a"))
	if status, _ := apiCode(t, err); status != 429 {
		t.Fatalf("submit beyond the default cap = %d", status)
	}
}

func TestProposals_Policy(t *testing.T) {
	pol, err := policy.Parse([]byte(`{"version":1,"agents":{"agent-a":{
		"ops":["branch","commit"], "refs":["agent/**"], "paths":["src"],
		"autoApprove":[{"name":"agent-branches","ops":["branch"],"refs":["agent/**"]}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOptions{policy: pol})
	ctx := t.Context()

	denied := e.commitProposal(t, "agent-a", "secrets/key.pem")
	_, err = e.client.SubmitProposal(ctx, "agent-a", denied)
	if err == nil {
		t.Fatalf("policy did not deny")
	}
	if status, code := apiCode(t, err); status != 403 || code != errcode.PolicyDenied {
		t.Fatalf("got %d %s", status, code)
	}
	if _, err := e.j.Get(denied.ID); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("a denied proposal was stored (a card would open): %v", err)
	}

	auto := e.branchProposal(t, "agent-a")
	st, err := e.client.SubmitProposal(ctx, "agent-a", auto)
	if err != nil || st.Status != proposal.Approved || !st.AutoApproved || st.Decision == nil || st.Decision.By != "policy:agent-branches" {
		t.Fatalf("auto-approve = %+v, %v", st, err)
	}

	manual := e.commitProposal(t, "agent-a", "src/a.go")
	st, err = e.client.SubmitProposal(ctx, "agent-a", manual)
	if err != nil || st.Status != proposal.Pending || st.AutoApproved {
		t.Fatalf("allowed commit = %+v, %v", st, err)
	}
	want := []string{journal.EventPolicyDenied, journal.EventSubmitted, journal.EventAutoApproved, journal.EventSubmitted}
	if got := e.rec.types(); !slices.Equal(got, want) {
		t.Fatalf("audit = %v, want %v", got, want)
	}
}

// TestProposals_PolicyReplaced_RuleExpires: a policy handed over while the
// gateway runs applies to the next submit, and a rule stops approving when
// its expiry comes on the backend's clock.
func TestProposals_PolicyReplaced_RuleExpires(t *testing.T) {
	t0 := time.Now().Truncate(time.Second)
	var offset atomic.Int64
	e := newEnv(t, envOptions{now: func() time.Time { return t0.Add(time.Duration(offset.Load())) }})
	ctx := t.Context()
	submit := func() gateway.ProposalStatus {
		t.Helper()
		st, err := e.client.SubmitProposal(ctx, "agent-a", e.branchProposal(t, "agent-a"))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := submit(); st.Status != proposal.Pending {
		t.Fatalf("no policy: %+v", st)
	}
	pol, err := policy.Parse([]byte(`{"version": 1, "rules": [
		{"name": "branches", "agent": "agent-a", "ops": ["branch"], "refs": ["agent/*"],
		 "expiresAt": "` + t0.Add(time.Minute).UTC().Format(time.RFC3339) + `"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	e.backend.SetPolicy(pol)
	if st := submit(); st.Status != proposal.Approved || st.Decision == nil || st.Decision.By != "policy:branches" {
		t.Fatalf("after SetPolicy: %+v", st)
	}
	offset.Store(int64(time.Minute))
	if st := submit(); st.Status != proposal.Pending || st.AutoApproved {
		t.Fatalf("at the rule's expiry: %+v", st)
	}
}

func TestProposals_Collisions(t *testing.T) {
	e := newEnv(t, envOptions{})
	first := e.commitProposal(t, "agent-a", "src/a.go", "README.md")
	if st, err := e.client.SubmitProposal(t.Context(), "agent-a", first); err != nil || len(st.Collisions) != 0 {
		t.Fatalf("first = %+v, %v", st, err)
	}
	second := e.commitProposal(t, "agent-b", "src", "docs/x.md")
	st, err := e.client.SubmitProposal(t.Context(), "agent-b", second)
	if err != nil || len(st.Collisions) != 1 || st.Collisions[0].ProposalID != first.ID || !slices.Equal(st.Collisions[0].Files, []string{"src"}) {
		t.Fatalf("second = %+v, %v", st.Collisions, err)
	}
}

func TestProposals_RestorePoints_SaysUnsupported(t *testing.T) {
	e := newEnv(t, envOptions{})
	rp, err := e.client.RestorePoints(t.Context(), "agent-a", e.repo)
	if err != nil || rp.Supported || rp.RestorePoints == nil || len(rp.RestorePoints) != 0 || rp.Message == "" {
		t.Fatalf("RestorePoints = %+v, %v", rp, err)
	}
}

// TestRoutes_NoneDecides enumerates every route the gateway serves and
// throws every method and decision-shaped body at each with the sidecar
// token; no proposal may end up approved or rejected, and nothing may be
// recorded as a decision.
func TestRoutes_NoneDecides(t *testing.T) {
	e := newEnv(t, envOptions{})
	want := slices.Concat([]string{"GET /v1/health"}, gateway.ProposalRoutes, gateway.WorkspaceRoutes, gateway.SessionRoutes, gateway.RuntimeRoutes)
	if got := e.srv.Routes(); !slices.Equal(got, want) {
		t.Fatalf("routes = %v\nwant %v\n(a new route must be added here and proven not to decide)", got, want)
	}
	p := e.branchProposal(t, "agent-a")
	if _, err := e.client.SubmitProposal(t.Context(), "agent-a", p); err != nil {
		t.Fatal(err)
	}
	bodies := []string{
		"",
		`{}`,
		`{"approve":true}`,
		`{"decision":"approved","digest":"` + p.Digest + `"}`,
		`{"state":"approved"}`,
		`{"action":"reject","note":"x"}`,
	}
	var paths []string
	for _, r := range e.srv.Routes() {
		_, pattern, _ := strings.Cut(r, " ")
		path := strings.ReplaceAll(strings.ReplaceAll(pattern, "{id}", p.ID), "{run}", "00000000-0000-4000-8000-000000000001")
		if strings.HasSuffix(path, "/wait") {
			path += "?timeout=0"
		}
		paths = append(paths, path)
	}
	for _, verb := range []string{"approve", "reject", "decide", "decision", "approval", "state"} {
		paths = append(paths, "/v1/proposals/"+p.ID+"/"+verb, "/v1/"+verb, "/v1/proposals/"+verb)
	}
	for _, path := range paths {
		for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			for _, body := range bodies {
				if strings.HasSuffix(path, "/cancel") {
					continue // cancel is exercised below: it ends the proposal, legitimately
				}
				raw(t, e.srv.Addr(), e.req(method, path, fmt.Sprintf("Content-Length: %d", len(body)), "Content-Type: application/json")+body)
			}
		}
	}
	rec, err := e.j.Get(p.ID)
	if err != nil || rec.State != proposal.Pending || rec.Decision != nil {
		t.Fatalf("after every route: %s, decision %+v, %v", rec.State, rec.Decision, err)
	}
	// Cancel is the one route that ends a proposal; it is not a decision.
	for _, body := range bodies {
		raw(t, e.srv.Addr(), e.req("POST", "/v1/proposals/"+p.ID+"/cancel", fmt.Sprintf("Content-Length: %d", len(body)))+body)
	}
	rec, _ = e.j.Get(p.ID)
	if rec.State != proposal.Cancelled || rec.Decision != nil {
		t.Fatalf("after cancel: %s, decision %+v", rec.State, rec.Decision)
	}
	for _, ev := range e.rec.types() {
		if ev == journal.EventApproved || ev == journal.EventRejected || ev == journal.EventAutoApproved {
			t.Fatalf("a decision was recorded: %v", e.rec.types())
		}
	}
	// And the gateway.Backend interface has no way to decide at all.
	bt := reflect.TypeFor[gateway.Backend]()
	for i := range bt.NumMethod() {
		name := strings.ToLower(bt.Method(i).Name)
		for _, bad := range []string{"approve", "reject", "decide", "transition", "complete", "fail", "execut"} {
			if strings.Contains(name, bad) {
				t.Fatalf("Backend has a deciding method %s", bt.Method(i).Name)
			}
		}
	}
}

func mkdirs(t testing.TB, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func writeTestFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestProposals_Submit_NestedWorktree: a worktree inside another working
// tree is accepted when the proposal says so, and its card is high risk.
func TestProposals_Submit_NestedWorktree(t *testing.T) {
	e := newEnv(t, envOptions{})
	mkdirs(t, filepath.Join(e.repo, ".git"))
	p := e.proposal(t, "agent-a", &proposal.WorktreeArgs{Path: filepath.Join(e.repo, "wt"), Branch: "agent/wt", NewBranch: true, StartPoint: "main"}, func(p *proposal.Proposal) {
		p.Pinned.Refs["main"] = sha
		p.Pinned.WorktreeNestedIn = e.repo
	})
	st, err := e.client.SubmitProposal(t.Context(), "agent-a", p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Risk != "high" {
		t.Fatalf("risk = %s, want high", st.Risk)
	}
}
