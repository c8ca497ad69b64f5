package app

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
)

// TestFlow_Workspace_Owner: a workspace answers only the agent that
// created it, through the real sidecar binary; the app's handoff follows
// the same rule (a workspace without an owner is nobody's); and the
// Workspaces screen in Chromium names the owner.
func TestFlow_Workspace_Owner(t *testing.T) {
	f, cs, env := startWorkspaceFlow(t)
	out, isErr := callTool(t, cs, "workspace_create", map[string]any{"kind": "fresh"})
	if isErr {
		t.Fatalf("workspace_create: %v", out)
	}
	id := out["workspaceId"].(string)
	t.Cleanup(func() { callTool(t, cs, "workspace_destroy", map[string]any{"workspaceId": id}) })

	other := agentSession(t, env, "other-agent")
	for tool, args := range map[string]map[string]any{
		"workspace_file_write": {"workspaceId": id, "path": "x.txt", "content": "not yours\n"},
		"workspace_run":        {"workspaceId": id, "argv": []string{"true"}},
		"workspace_destroy":    {"workspaceId": id},
	} {
		out, isErr := callTool(t, other, tool, args)
		e, _ := out["error"].(map[string]any)
		if !isErr || e["code"] != "workspace_not_found" {
			t.Errorf("%s by another agent: %v", tool, out)
		}
	}
	// Listing is in the workspace_search toolset, off by default.
	if out, isErr := callTool(t, cs, "toolset_enable", map[string]any{"toolset": "workspace_search"}); isErr {
		t.Fatalf("toolset_enable workspace_search: %v", out)
	}
	if out, isErr := callTool(t, cs, "workspace_file_list", map[string]any{"workspaceId": id}); isErr || len(out["entries"].([]any)) != 0 {
		t.Fatalf("the owner's workspace changed: %v", out)
	}

	h := workspaceHandoff{m: f.app.workspaces}
	var ge *errcode.Error
	if _, err := h.Handoff(context.Background(), "other-agent", id, f.repo); !errors.As(err, &ge) || ge.Code != errcode.Forbidden {
		t.Fatalf("handoff by another agent: %v", err)
	}
	orphan, err := f.app.workspaces.Create(context.Background(), workspace.CreateRequest{Source: workspace.Source{Kind: workspace.SourceFresh}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.app.workspaces.Destroy(context.Background(), orphan.ID) })
	if _, err := h.Handoff(context.Background(), "claude-code", orphan.ID, f.repo); !errors.As(err, &ge) || ge.Code != errcode.Forbidden {
		t.Fatalf("handoff of a workspace without an owner: %v", err)
	}

	api := &API{app: f.app, kind: "web"}
	views, err := api.Workspaces()
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]string{}
	for _, v := range views {
		owners[v.ID] = v.Owner
	}
	if owners[id] != "claude-code" || owners[orphan.ID] != "" {
		t.Fatalf("owners = %v", owners)
	}
	shown := fmt.Sprintf(`document.querySelector("#ws-%s .workspace-owner")?.textContent === "claude-code"`, id)
	if err := chromedp.Do(f.ctx, chromedp.Navigate(f.base+"/#/workspaces")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(f.ctx, chromedp.Poll[bool](shown, chromedp.WithPollingTimeout(time.Minute))); err != nil {
		t.Fatalf("the Workspaces screen does not name the owner: %v", err)
	}
}
