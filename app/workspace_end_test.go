package app

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/errcode"
)

// TestWorkspace_CLI_StopAndDestroy drives `sluice workspace stop|destroy`
// as a person would while Sluice and an agent run, on the real Docker
// Engine: stop ends the agent's running command and keeps the workspace;
// destroy asks first and does nothing unless told yes; a sealed
// workspace whose changes are an open card is kept (from the terminal,
// which cannot read the running app's journal, and from the Workspaces
// screen's API, which names the card) until the card is decided; each
// step is in the ledger.
func TestWorkspace_CLI_StopAndDestroy(t *testing.T) {
	d, image := needWorkspaceDocker(t)
	t.Setenv("SLUICE_WORKSPACE_IMAGE", image)
	a, repo, env := flowEnv(t)
	env = append(env, "SLUICE_WORKSPACE_IMAGE="+image)
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		env = append(env, "DOCKER_HOST="+h)
	}
	if a.workspaces == nil {
		t.Fatal("the app did not open its workspace store")
	}
	cs := agentSession(t, env, "claude-code")
	sluice := func(stdin string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(filepath.Join(binDir(t), "sluice-headless"), append([]string{"workspace"}, args...)...)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(stdin)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}

	out, isErr := callTool(t, cs, "workspace_create", map[string]any{"kind": "repo", "repoPath": repo})
	if isErr {
		t.Fatalf("workspace_create: %v", out)
	}
	id := out["workspaceId"].(string)
	t.Cleanup(func() { a.workspaces.Destroy(context.Background(), id) })

	// The agent's long command, and the person stopping it from a terminal.
	runDone := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "workspace_run",
			Arguments: map[string]any{"workspaceId": id, "argv": []string{"sleep", "600"}}})
		runDone <- res
	}()
	args := filters.NewArgs(filters.Arg("label", "sluice.workspace="+id))
	waitFor(t, 60*time.Second, "the agent's run to start a container", func() bool {
		list, err := d.Client().ContainerList(context.Background(), container.ListOptions{All: true, Filters: args})
		return err == nil && len(list) > 0
	})
	if text, code := sluice("no\n", "stop", id); code != 1 || !strings.Contains(text, "Stop the commands running in workspace "+id) || !strings.Contains(text, "not confirmed") {
		t.Fatalf("stop answered no: exit %d\n%s", code, text)
	}
	text, code := sluice("yes\n", "stop", id)
	if code != 0 || !strings.Contains(text, "1 running command(s) stopped") {
		t.Fatalf("sluice workspace stop: exit %d\n%s", code, text)
	}
	select {
	case res := <-runDone:
		if res == nil {
			t.Fatal("the agent's run call failed")
		}
		b, _ := json.Marshal(res.StructuredContent)
		var out map[string]any
		json.Unmarshal(b, &out)
		if !res.IsError && out["interrupted"] != true && out["exitCode"] == float64(0) {
			t.Fatalf("the stopped run reported success: %s", b)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the agent's run did not end after sluice workspace stop")
	}
	if _, err := a.workspaces.Get(id); err != nil {
		t.Fatalf("stop removed the workspace: %v", err)
	}

	// Destroy asks; anything but yes does nothing.
	text, code = sluice("y\n", "destroy", id)
	if code != 1 || !strings.Contains(text, "Destroy workspace "+id+" (claude-code, ready)?") || !strings.Contains(text, "cannot be undone") {
		t.Fatalf("destroy answered y: exit %d\n%s", code, text)
	}
	if _, err := a.workspaces.Get(id); err != nil {
		t.Fatalf("an unconfirmed destroy removed the workspace: %v", err)
	}
	if text, code = sluice("yes\n", "destroy", id); code != 0 || !strings.Contains(text, "workspace "+id+" destroyed") {
		t.Fatalf("sluice workspace destroy: exit %d\n%s", code, text)
	}
	if _, err := a.workspaces.Get(id); !errcode.IsCode(err, errcode.WorkspaceNotFound) {
		t.Fatalf("after destroy: %v", err)
	}
	if out, isErr := callTool(t, cs, "workspace_status", map[string]any{"workspaceId": id}); !isErr {
		t.Fatalf("the agent still reaches the destroyed workspace: %v", out)
	}

	// A sealed workspace whose changes wait on a card.
	out, isErr = callTool(t, cs, "workspace_create", map[string]any{"kind": "repo", "repoPath": repo})
	if isErr {
		t.Fatalf("workspace_create: %v", out)
	}
	sealed := out["workspaceId"].(string)
	t.Cleanup(func() { a.workspaces.Destroy(context.Background(), sealed) })
	if out, isErr := callTool(t, cs, "workspace_file_write", map[string]any{"workspaceId": sealed, "path": "NOTES.md", "content": "notes\n"}); isErr {
		t.Fatalf("workspace_file_write: %v", out)
	}
	out, isErr = callTool(t, cs, "workspace_seal", map[string]any{"workspaceId": sealed, "reason": "Add notes", "message": "Add notes"})
	if isErr || out["status"] != "pending" {
		t.Fatalf("workspace_seal: %v", out)
	}
	proposalID := out["proposalId"].(string)
	if text, code = sluice("", "destroy", sealed, "--yes"); code != 1 || !strings.Contains(text, "destroy it from the Workspaces screen") {
		t.Fatalf("destroying a sealed workspace from the terminal while Sluice runs: exit %d\n%s", code, text)
	}
	api := &API{app: a, kind: "web"}
	if _, err := api.DestroyWorkspace(sealed); !errcode.IsCode(err, errcode.Conflict) || !strings.Contains(err.Error(), "card "+proposalID[:8]+", which is pending") {
		t.Fatalf("DestroyWorkspace with its card pending: %v", err)
	}
	if _, err := a.workspaces.Get(sealed); err != nil {
		t.Fatalf("the refused destroy removed the workspace: %v", err)
	}
	card, err := api.Proposal(proposalID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.Reject(Decision{ID: proposalID, Digest: card.Digest, Note: "not now"}); err != nil {
		t.Fatalf("reject: %v", err)
	}
	res, err := api.DestroyWorkspace(sealed)
	if err != nil || !res.Destroyed {
		t.Fatalf("DestroyWorkspace once its card was decided: %+v %v", res, err)
	}

	raw, err := os.ReadFile(a.cfg.AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{"workspace_stop_requested", "workspace_stopped", "workspace_destroy_requested", "workspace_destroyed"} {
		if !bytes.Contains(raw, []byte(`"`+ev+`"`)) {
			t.Errorf("the ledger has no %s", ev)
		}
	}
	if !bytes.Contains(raw, []byte(`"owner:terminal"`)) {
		t.Error("the ledger does not say the terminal did it")
	}
}
