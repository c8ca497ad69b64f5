package app

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/workspace"
	"github.com/sluicehq/sluice/core/workspace/dockerrt"
	"github.com/sluicehq/sluice/core/workspace/workspacetest"
)

// startWorkspaceFlow is startWebFlow with workspaces on the test image, and
// an agent connected through a real sidecar that finds the same Engine; env
// is that sidecar's environment.
func startWorkspaceFlow(t *testing.T) (f *webFlow, cs *mcp.ClientSession, env []string) {
	t.Helper()
	_, image := needWorkspaceDocker(t)
	t.Setenv("SLUICE_WORKSPACE_IMAGE", image)
	f = startWebFlow(t)
	env = append(f.env, "SLUICE_WORKSPACE_IMAGE="+image)
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		env = append(env, "DOCKER_HOST="+h)
	}
	return f, agentSession(t, env, "claude-code"), env
}

// needWorkspaceDocker returns a Docker runtime and the local test image's
// ID, skipping when the Engine is unreachable unless SLUICE_REQUIRE_E2E=1.
func needWorkspaceDocker(t testing.TB) (*dockerrt.Docker, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), desktopWait)
	defer cancel()
	d, err := dockerrt.New(ctx)
	if err != nil {
		needOrSkip(t, false, "Docker Engine reachable ("+err.Error()+")")
	}
	t.Cleanup(func() { d.Close() })
	id, err := workspacetest.EnsureImage(context.Background(), d.Client())
	if err != nil {
		t.Fatalf("test image: %v", err)
	}
	return d, id
}

// The workspace files: a function with a bug, a JUnit report generator
// and a test script, all busybox sh.
const (
	calcBuggy = "add() { echo $(($1 - $2)); }\n"
	calcFixed = "add() { echo $(($1 + $2)); }\n"
	junitSh   = `#!/bin/sh
# junit.sh NAME FAILURE-MESSAGE: writes reports/junit.xml with one test case,
# failed when a message is given.
mkdir -p reports
if [ -n "$2" ]; then
  body="<testcase classname=\"calc\" name=\"$1\"><failure message=\"$2\"/></testcase>"; failures=1
else
  body="<testcase classname=\"calc\" name=\"$1\"/>"; failures=0
fi
printf '<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="calc" tests="1" failures="%s">%s</testsuite>\n' "$failures" "$body" > reports/junit.xml
`
	testSh = `#!/bin/sh
. ./calc.sh
got=$(add 2 3)
echo "add 2 3 = $got"
if [ "$got" = 5 ]; then sh junit.sh add; exit 0; fi
sh junit.sh add "add 2 3 = $got, want 5"
exit 1
`
)

// writeCalc writes the calc files, with calc as calc.sh, through the
// agent's workspace_file_write.
func writeCalc(t *testing.T, cs *mcp.ClientSession, id, calc string) {
	t.Helper()
	for path, content := range map[string]string{"calc.sh": calc, "junit.sh": junitSh, "test.sh": testSh, ".gitignore": "reports/\n"} {
		if out, isErr := callTool(t, cs, "workspace_file_write", map[string]any{"workspaceId": id, "path": path, "content": content}); isErr {
			t.Fatalf("workspace_file_write %s: %v", path, out)
		}
	}
}

// TestFlow_Workspace_FullLoop is the whole workspace loop through the real
// sidecar binary, the gateway, the Docker Engine and the headless UI:
// create from the person's repository, write a test and a JUnit
// generator, run it failing, fix, run it passing, seal into a proposal,
// approve it on the card in Chromium, find the commit fast-forwarded onto
// the person's branch, destroy the workspace and verify it is gone.
func TestFlow_Workspace_FullLoop(t *testing.T) {
	d, image := needWorkspaceDocker(t)
	t.Setenv("SLUICE_WORKSPACE_IMAGE", image)
	f := startWebFlow(t)
	if f.app.workspaces == nil {
		t.Fatal("the app did not open its workspace store")
	}
	env := append(f.env, "SLUICE_WORKSPACE_IMAGE="+image)
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		env = append(env, "DOCKER_HOST="+h)
	}
	cs := agentSession(t, env, "claude-code")
	base := gitxtest.Git(t, f.repo, "rev-parse", "main")

	out, isErr := callTool(t, cs, "workspace_create", map[string]any{"kind": "repo", "repoPath": f.repo})
	if isErr || out["state"] != "ready" || out["base"] != base || out["commit"] != "refs/heads/main" {
		t.Fatalf("workspace_create: %v", out)
	}
	id := out["workspaceId"].(string)
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			f.app.workspaces.Destroy(context.Background(), id)
		}
	})

	writeCalc(t, cs, id, calcBuggy)
	runTests := func() (map[string]any, map[string]any) {
		t.Helper()
		out, isErr := callTool(t, cs, "workspace_run", map[string]any{"workspaceId": id, "argv": []string{"sh", "test.sh"},
			"reportPath": "reports/junit.xml", "reportFormat": "junit", "timeoutSeconds": 60})
		if isErr {
			t.Fatalf("workspace_run: %v", out)
		}
		tests, _ := out["tests"].(map[string]any)
		if tests == nil {
			t.Fatalf("workspace_run has no test evidence: %v", out)
		}
		return out, tests
	}
	run, tests := runTests()
	if run["exitCode"] != float64(1) || tests["failed"].(float64) < 1 || tests["format"] != "junit" || !strings.Contains(run["stdout"].(string), "add 2 3 = -1") {
		t.Fatalf("failing run: %v", run)
	}
	if out, isErr := callTool(t, cs, "workspace_file_edit", map[string]any{"workspaceId": id, "path": "calc.sh", "old": "$1 - $2", "new": "$1 + $2"}); isErr {
		t.Fatalf("workspace_file_edit: %v", out)
	}
	run, tests = runTests()
	if run["exitCode"] != float64(0) || tests["passed"] != float64(1) || tests["failed"] != float64(0) {
		t.Fatalf("passing run: %v", run)
	}

	// The workspaces screen's contract carries the evidence.
	api := &API{app: f.app, kind: "web"}
	views, err := api.Workspaces()
	if err != nil || len(views) != 1 || views[0].ID != id || len(views[0].Runs) != 2 || views[0].Runs[1].Tests == nil || views[0].Runs[1].Tests.Passed != 1 {
		t.Fatalf("Workspaces() = %+v, %v", views, err)
	}
	if !strings.Contains(views[0].Runs[0].Stdout, "add 2 3 = -1") || !strings.Contains(views[0].Runs[1].Stdout, "add 2 3 = 5") {
		t.Fatalf("the runs' output is not on the workspaces screen: %q / %q", views[0].Runs[0].Stdout, views[0].Runs[1].Stdout)
	}

	out, isErr = callTool(t, cs, "workspace_seal", map[string]any{"workspaceId": id, "reason": "Fix add: it subtracted", "message": "Fix add"})
	if isErr || out["status"] != "pending" || out["nextAction"] != "proposal_wait" || out["op"] != "merge" {
		t.Fatalf("workspace_seal: %v", out)
	}
	proposalID := out["proposalId"].(string)
	ref := "refs/sluice/proposals/" + id
	head := gitxtest.Git(t, f.repo, "rev-parse", ref)
	if pinned, _ := out["pinned"].(map[string]any); pinned[ref] != head || pinned["refs/heads/main"] != base {
		t.Fatalf("pins = %v, want %s→%s and main→%s", out["pinned"], ref, head, base)
	}
	if gitxtest.Git(t, f.repo, "rev-parse", "main") != base {
		t.Fatal("sealing changed the person's branch")
	}
	if files := gitxtest.Git(t, f.repo, "diff-tree", "--no-commit-id", "--name-only", "-r", base, head); files != ".gitignore\ncalc.sh\njunit.sh\ntest.sh" {
		t.Fatalf("handed-off commit changes %q", files)
	}

	// The Workspaces screen shows it sealed, linked to its proposal, with
	// no grants to make; its owner is named.
	wsSel := "#ws-" + id
	if err := chromedp.Do(f.ctx,
		chromedp.Navigate(f.base+"/#/workspaces"),
		chromedp.WaitVisible(chromedp.CSS(wsSel+` .workspace-proposal[href="#/proposal/`+proposalID+`"]`)),
	); err != nil {
		t.Fatalf("the sealed workspace's link to its proposal: %v", err)
	}
	wsText, err := chromedp.Run(f.ctx, chromedp.Text(chromedp.CSS(wsSel)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(wsText, "Grant access") || !strings.Contains(wsText, "claude-code") || !strings.Contains(wsText, "sealed") {
		t.Fatalf("the sealed workspace on the Workspaces screen:\n%s", wsText)
	}
	if err := chromedp.Do(f.ctx, chromedp.Navigate(f.base+"/#/pending")); err != nil {
		t.Fatal(err)
	}

	card := cardSel(proposalID)
	if err := chromedp.Do(f.ctx, chromedp.WaitVisible(chromedp.CSS(card))); err != nil {
		t.Fatalf("the workspace's proposal card did not appear: %v", err)
	}
	// The runs are Sluice's own record, in their own block apart from the
	// agent's reason, red because a run failed: the first one did, the
	// last one passed.
	evidence, err := chromedp.Run(f.ctx, chromedp.Text(chromedp.CSS(card+` .evidence.failed[aria-label="Workspace evidence"]`)))
	if err != nil {
		t.Fatalf("the evidence block: %v", err)
	}
	if !strings.Contains(evidence, "Recorded by Sluice") || !strings.Contains(evidence, "2 run(s); the last passed (1 failed in all)") {
		t.Errorf("evidence block: %q", evidence)
	}
	text, err := chromedp.Run(f.ctx, chromedp.Text(chromedp.CSS(card)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"claude-code", "Fix add: it subtracted", "tests: 1 passed, 0 failed", "(junit)"} {
		if !strings.Contains(text, want) {
			t.Errorf("card lacks %q:\n%s", want, text)
		}
	}
	f.shot(t, "web-workspace-card.png")
	if err := chromedp.Do(f.ctx,
		chromedp.WaitVisible(chromedp.CSS(card+" .approve:not([disabled])")),
		chromedp.Click(chromedp.CSS(card+" .approve")),
		chromedp.WaitVisible(chromedp.CSS(decidedSel(proposalID)+`[data-state="completed"]`)),
	); err != nil {
		t.Fatalf("approve: %v", err)
	}
	out, isErr = callTool(t, cs, "proposal_wait", map[string]any{"proposalId": proposalID, "timeoutSeconds": 10})
	if isErr || out["status"] != "completed" || out["done"] != true {
		t.Fatalf("proposal_wait: %v", out)
	}
	// A fast-forward: main is now exactly the workspace's commit.
	if got := gitxtest.Git(t, f.repo, "rev-parse", "main"); got != head {
		t.Fatalf("main = %s, want the workspace commit %s (fast-forward)", got, head)
	}
	if parent := gitxtest.Git(t, f.repo, "rev-parse", "main^"); parent != base {
		t.Fatalf("main^ = %s, want the base %s", parent, base)
	}

	out, isErr = callTool(t, cs, "workspace_destroy", map[string]any{"workspaceId": id})
	if isErr || out["containersGone"] != true || out["treeRemoved"] != true {
		t.Fatalf("workspace_destroy: %v", out)
	}
	destroyed = true
	if out, isErr = callTool(t, cs, "workspace_status", map[string]any{"workspaceId": id}); !isErr || out["error"].(map[string]any)["code"] != "workspace_not_found" {
		t.Fatalf("workspace_status after destroy: %v", out)
	}
	left, err := d.Client().ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", workspace.LabelWorkspace+"="+id))})
	if err != nil || len(left) != 0 {
		t.Fatalf("containers labelled with the workspace remain: %v %v", left, err)
	}
}
