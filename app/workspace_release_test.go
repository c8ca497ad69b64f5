package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/workspace"
)

// TestWorkspace_RefusedSubmit_Unseals: a sealed workspace's commits are
// handed off, and its proposal is then refused by the app (the person's
// branch changed the same file: the merge conflicts). The handoff is taken
// back: the ref is gone, the workspace is open to edits again, and the
// agent is told so; sealing again after the fix hands off again.
func TestWorkspace_RefusedSubmit_Unseals(t *testing.T) {
	_, image := needWorkspaceDocker(t)
	t.Setenv("SLUICE_WORKSPACE_IMAGE", image)
	a, repo, _ := flowEnv(t)
	if a.workspaces == nil {
		t.Fatal("the app opened no workspace store")
	}
	ctx := context.Background()
	m := a.workspaces
	gw, err := gateway.NewClientFromEndpoint(a.cfg.GatewayFile())
	if err != nil {
		t.Fatal(err)
	}
	const agent = "claude-code"
	ws, err := m.Create(ctx, workspace.CreateRequest{Source: workspace.Source{Kind: workspace.SourceRepo, Path: repo}, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Destroy(context.Background(), ws.ID) })
	if _, err := m.WriteFile(ctx, ws.ID, "notes.txt", []byte("agent\n"), 0); err != nil {
		t.Fatal(err)
	}
	if res, err := m.Seal(ctx, ws.ID, "notes"); err != nil || res.Refused {
		t.Fatalf("Seal: %+v %v", res, err)
	}
	// The person writes the same file on main meanwhile.
	if err := os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("person\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", "notes.txt")
	gitIn(t, repo, "-c", "user.name=Ada", "-c", "user.email=ada@example.com", "commit", "-q", "-m", "person's notes")

	hr, err := gw.WorkspaceHandoff(ctx, agent, ws.ID, repo)
	if err != nil {
		t.Fatal(err)
	}
	args := &proposal.MergeArgs{Source: hr.Ref, Target: "main", Strategy: proposal.MergeCommit, Message: "merge"}
	now := time.Now()
	p := proposal.Proposal{ID: "ws-release-1", Op: proposal.OpMerge, Repo: repo, Args: args, Reason: "workspace", Agent: agent,
		Pinned: proposal.Pinned{Refs: map[string]string{}}, CreatedAt: proposal.At(now), ExpiresAt: proposal.At(now.Add(10 * time.Minute))}
	for _, ref := range args.Pins() {
		p.Pinned.Refs[ref] = strings.TrimSpace(gitIn(t, repo, "rev-parse", "--verify", ref+"^{commit}"))
	}
	if err := p.Seal(); err != nil {
		t.Fatal(err)
	}
	_, err = gw.SubmitProposal(ctx, agent, p)
	var api *gateway.APIError
	if !errors.As(err, &api) || api.Detail.Code != errcode.MergeConflict {
		t.Fatalf("submit: %v, want merge_conflict", err)
	}
	if !strings.Contains(api.Detail.Message, "workspace "+ws.ID+" is open again") {
		t.Errorf("the agent is not told the workspace is open again: %q", api.Detail.Message)
	}
	if refs := strings.TrimSpace(gitIn(t, repo, "for-each-ref", "refs/sluice/proposals/")); refs != "" {
		t.Errorf("the handoff ref stayed: %q", refs)
	}
	if got, err := m.Get(ws.ID); err != nil || got.State != workspace.StateReady {
		t.Fatalf("the workspace stayed sealed: %+v %v", got, err)
	}
	if _, err := m.WriteFile(ctx, ws.ID, "notes2.txt", []byte("agent\n"), 0); err != nil {
		t.Fatalf("an edit after the refusal: %v", err)
	}
	if _, err := m.Seal(ctx, ws.ID, "again"); err != nil {
		t.Fatal(err)
	}
	if _, err := gw.WorkspaceHandoff(ctx, agent, ws.ID, repo); err != nil {
		t.Fatalf("handoff after sealing again: %v", err)
	}
}
