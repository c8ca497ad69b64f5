package app

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/workspace"
	"github.com/sluicehq/sluice/core/workspace/kube/kubetest"
	"github.com/sluicehq/sluice/core/workspace/workspacetest"
)

// TestFlow_Workspace_Kubernetes is the workspace loop with
// workspaceRuntime kubernetes on the real single-node cluster make test
// starts: an agent, through the real sidecar binary, creates a workspace
// from the person's repository, runs its test in a pod (the run's output
// and exit code come back, and so do the files it wrote), proves from
// inside the pod that it has no network and no service-account token,
// seals; the card appears in Chromium and its approval lands the commit;
// destroy leaves nothing of the run's in the namespace.
func TestFlow_Workspace_Kubernetes(t *testing.T) {
	cl := kubetest.Node(t)
	needWorkspaceDocker(t) // the test image, in the Docker Engine, to import
	image := cl.ImportImage(t, workspacetest.ImageRef)
	ns := kubetest.Namespace(t, cl.Config)
	conf, err := json.Marshal(map[string]any{"workspaceRuntime": "kubernetes", "kubernetes": map[string]any{
		"kubeconfig": cl.Kubeconfig, "namespace": ns, "image": image, "imagePullPolicy": "Never"}})
	if err != nil {
		t.Fatal(err)
	}
	f := startWebFlowConfig(t, 8*time.Minute, string(conf))
	start := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }
	if f.app.workspaces == nil || f.app.workspaces.Runtime() == nil || f.app.workspaces.Runtime().Name() != "kubernetes" {
		t.Fatalf("the app did not open the cluster runtime")
	}
	cs := agentSession(t, f.env, "claude-code")
	base := gitxtest.Git(t, f.repo, "rev-parse", "main")

	out, isErr := callTool(t, cs, "workspace_create", map[string]any{"kind": "repo", "repoPath": f.repo})
	if isErr || out["state"] != "ready" {
		t.Fatalf("workspace_create: %v", out)
	}
	id := out["workspaceId"].(string)
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			f.app.workspaces.Destroy(context.Background(), id)
		}
	})
	writeCalc(t, cs, id, calcFixed)
	step("workspace created, files written")
	run, isErr := callTool(t, cs, "workspace_run", map[string]any{"workspaceId": id, "argv": []string{"sh", "test.sh"},
		"reportPath": "reports/junit.xml", "reportFormat": "junit", "timeoutSeconds": 120})
	tests, _ := run["tests"].(map[string]any)
	if isErr || run["exitCode"] != float64(0) || tests == nil || tests["passed"] != float64(1) || !strings.Contains(run["stdout"].(string), "add 2 3 = 5") {
		t.Fatalf("the test run in a pod: %v", run)
	}
	// The report the run wrote came back from the pod into the tree.
	if out, isErr := callTool(t, cs, "workspace_file_read", map[string]any{"workspaceId": id, "path": "reports/junit.xml"}); isErr || !strings.Contains(out["content"].(string), `name="add"`) {
		t.Fatalf("the run's report is not in the workspace: %v", out)
	}

	step("test run done")
	// The tools must be there for their answers to mean anything: ip and
	// nc present, and the pod's own eth0 listed.
	probe := `command -v ip && command -v nc || echo NO-TOOLS; ip -o addr; ` +
		`ls /var/run/secrets/kubernetes.io/serviceaccount 2>&1 || echo NO-TOKEN; ` +
		`ip route 2>&1 | grep -q default && echo HAS-ROUTE || echo NO-ROUTE; ` +
		`nc -w 3 10.96.0.1 443 </dev/null 2>&1 && echo REACHED || echo NO-NET`
	run, isErr = callTool(t, cs, "workspace_run", map[string]any{"workspaceId": id, "argv": []string{"sh", "-c", probe}, "timeoutSeconds": 60})
	stdout, _ := run["stdout"].(string)
	if isErr || strings.Contains(stdout, "NO-TOOLS") || !strings.Contains(stdout, "eth0") {
		t.Fatalf("the probe's tools did not run: %v", run)
	}
	if !strings.Contains(stdout, "NO-TOKEN") || !strings.Contains(stdout, "NO-ROUTE") || !strings.Contains(stdout, "NO-NET") || strings.Contains(stdout, "REACHED") {
		t.Fatalf("the pod had a token or a network: %v", run)
	}

	step("probe run done")
	out, isErr = callTool(t, cs, "workspace_seal", map[string]any{"workspaceId": id, "reason": "Add calc with its test", "message": "Add calc"})
	if isErr || out["status"] != "pending" {
		t.Fatalf("workspace_seal: %v", out)
	}
	proposalID := out["proposalId"].(string)
	head := gitxtest.Git(t, f.repo, "rev-parse", "refs/sluice/proposals/"+id)
	card := cardSel(proposalID)
	if err := chromedp.Do(f.ctx,
		chromedp.Navigate(f.base+"/#/pending"),
		chromedp.WaitVisible(chromedp.CSS(card)),
	); err != nil {
		t.Fatalf("the workspace's card did not appear: %v", err)
	}
	text, err := chromedp.Run(f.ctx, chromedp.Text(chromedp.CSS(card)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Add calc with its test", "calc.sh", "tests: 1 passed, 0 failed"} {
		if !strings.Contains(text, want) {
			t.Errorf("card lacks %q:\n%s", want, text)
		}
	}
	step("card shown")
	// Approve is disabled until the whole diff is drawn: a click before
	// that would do nothing.
	if err := chromedp.Do(f.ctx,
		chromedp.WaitVisible(chromedp.CSS(card+" .approve:not([disabled])")),
		chromedp.Click(chromedp.CSS(card+" .approve")),
		chromedp.WaitVisible(chromedp.CSS(decidedSel(proposalID)+`[data-state="completed"]`)),
	); err != nil {
		rec, _ := f.app.journal.Get(proposalID)
		t.Fatalf("approve: %v (the proposal is %s: %+v)", err, rec.State, rec.Outcome)
	}
	step("approved and landed")
	if got := gitxtest.Git(t, f.repo, "rev-parse", "main"); got != head || gitxtest.Git(t, f.repo, "rev-parse", "main^") != base {
		t.Fatalf("main = %s, want the workspace's commit %s on %s", got, head, base)
	}

	out, isErr = callTool(t, cs, "workspace_destroy", map[string]any{"workspaceId": id})
	if isErr || out["containersGone"] != true || out["treeRemoved"] != true {
		t.Fatalf("workspace_destroy: %v", out)
	}
	destroyed = true
	k, err := kubernetes.NewForConfig(cl.Config)
	if err != nil {
		t.Fatal(err)
	}
	sel := metav1.ListOptions{LabelSelector: workspace.LabelWorkspace}
	ctx := context.Background()
	pods, err := k.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := k.CoreV1().Secrets(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	policies, err := k.NetworkingV1().NetworkPolicies(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(pods.Items) + len(secrets.Items) + len(policies.Items); n != 0 {
		t.Fatalf("%d objects of Sluice's runs are left in %s: %d pods, %d secrets, %d policies", n, ns, len(pods.Items), len(secrets.Items), len(policies.Items))
	}
}
