package app

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestFlow_Workspace_LiveRunInTheBrowser: an agent's run, executed by its
// sidecar, shows on the Workspaces screen in Chromium while it goes on,
// output and all; it ends only when the test, having seen that, creates
// the file the run waits for; the screen then shows the rest by itself.
func TestFlow_Workspace_LiveRunInTheBrowser(t *testing.T) {
	f, cs, _ := startWorkspaceFlow(t)
	out, isErr := callTool(t, cs, "workspace_create", map[string]any{"kind": "fresh"})
	if isErr {
		t.Fatalf("workspace_create: %v", out)
	}
	id := out["workspaceId"].(string)
	t.Cleanup(func() { callTool(t, cs, "workspace_destroy", map[string]any{"workspaceId": id}) })

	done := make(chan map[string]any, 1)
	go func() {
		out, _ := callTool(t, cs, "workspace_run", map[string]any{"workspaceId": id,
			"argv": []string{"sh", "-c", "echo first-line; while [ ! -f stop ]; do sleep 0.1; done; echo second-line"}})
		done <- out
	}()

	row := fmt.Sprintf("#ws-%s tbody tr", id)
	running := fmt.Sprintf(`(() => { const r = document.querySelector(%q); return !!r && r.classList.contains("run-running") &&
		r.textContent.includes("running") && r.querySelector("pre[aria-label='standard output']")?.textContent === "first-line\n"; })()`, row)
	if err := chromedp.Do(f.ctx, chromedp.Navigate(f.base+"/#/workspaces")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(f.ctx, chromedp.Poll[bool](running, chromedp.WithPollingTimeout(time.Minute))); err != nil {
		t.Fatalf("the running run with its first line: %v", err)
	}
	select {
	case out := <-done:
		t.Fatalf("the run ended before it was told to: %v", out)
	default:
	}
	f.shot(t, "workspace-live-run.png")
	if err := os.WriteFile(filepath.Join(f.app.cfg.StateDir, "workspaces", id, "tree", "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ended := fmt.Sprintf(`(() => { const r = document.querySelector(%q); return !!r && !r.classList.contains("run-running") &&
		r.getAttribute("title")?.startsWith("exited 0") && r.querySelector("pre[aria-label='standard output']")?.textContent === "first-line\nsecond-line\n"; })()`, row)
	if _, err := chromedp.Run(f.ctx, chromedp.Poll[bool](ended, chromedp.WithPollingTimeout(time.Minute))); err != nil {
		t.Fatalf("the ended run, without a reload: %v", err)
	}
	if out := <-done; out["exitCode"] != float64(0) || out["stdout"] != "first-line\nsecond-line\n" {
		t.Fatalf("workspace_run: %v", out)
	}
}
