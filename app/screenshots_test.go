package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// TestScreenshots_ForDocs renders the screens the README and docs show,
// into $SLUICE_SCREENSHOTS (make screenshots). It is not part of make test:
// it asserts only that each screen renders, and its output is reviewed by
// eye before it is committed.
func TestScreenshots_ForDocs(t *testing.T) {
	dir := os.Getenv("SLUICE_SCREENSHOTS")
	if dir == "" {
		t.Skip("set SLUICE_SCREENSHOTS (make screenshots) to render the documentation's screenshots")
	}
	f := startWebFlow(t)
	git := func(args ...string) { t.Helper(); gitxtest.Git(t, f.repo, args...) }
	os.WriteFile(filepath.Join(f.repo, "main.go"), []byte("package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n"), 0o644)
	git("add", "main.go")
	git("commit", "-q", "-m", "Add main")
	git("checkout", "-q", "-b", "feature/retry")
	os.WriteFile(filepath.Join(f.repo, "main.go"), []byte("package main\n\nimport \"time\"\n\n// retry calls fn until it succeeds or attempts run out.\nfunc retry(attempts int, fn func() error) (err error) {\n\tfor i := 0; i < attempts; i++ {\n\t\tif err = fn(); err == nil {\n\t\t\treturn nil\n\t\t}\n\t\ttime.Sleep(time.Duration(i) * 100 * time.Millisecond)\n\t}\n\treturn err\n}\n\nfunc main() {\n\t_ = retry(3, func() error { println(\"hello\"); return nil })\n}\n"), 0o644)
	git("commit", "-q", "-am", "Retry with backoff")
	git("checkout", "-q", "main")
	os.WriteFile(filepath.Join(f.repo, "README.md"), []byte("hello\n\nRun `go run .` to greet.\n"), 0o644)

	claude := agentSession(t, f.env, "claude-code")
	codex := agentSession(t, f.env, "codex")
	merge, _ := callTool(t, claude, "propose_merge", map[string]any{"repoPath": f.repo,
		"reason": "The retry helper is reviewed and its tests pass; merge it into main.", "source": "feature/retry", "target": "main", "strategy": "merge"})
	commit, _ := callTool(t, codex, "propose_commit", map[string]any{"repoPath": f.repo,
		"reason": "Document how to run the program.", "message": "Document go run", "paths": []string{"README.md"}})
	old, _ := callTool(t, codex, "propose_reset", map[string]any{"repoPath": f.repo,
		"reason": "Drop the experiment.", "mode": "hard", "target": "HEAD", "branch": "main"})

	shot := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(f.ctx, actions...); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := chromedp.Run(f.ctx, chromedp.FullScreenshot(92))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mergeCard := cardSel(merge["proposalId"].(string))
	threeRows := chromedp.Poll[bool](`document.querySelectorAll(".queue-row").length === 3 && document.title === "(3) Sluice"`)
	if _, err := chromedp.Run(f.ctx, threeRows); err != nil {
		t.Fatalf("the queue of three: %v", err)
	}
	shot("pending.png", chromedp.WaitVisible(chromedp.CSS(mergeCard+" .diff-view .d2h-file-wrapper")))
	// The same queue in a narrow window: one-line header, the diff line by line.
	shot("pending-narrow.png", chromedp.EmulateViewport(420, 900), chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(mergeCard+" .diff-view .d2h-file-wrapper")))
	if err := chromedp.Do(f.ctx, chromedp.EmulateViewport(1280, 860), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(mergeCard))); err != nil {
		t.Fatal(err)
	}
	if _, err := (&API{app: f.app, kind: "web"}).Reject(Decision{ID: old["proposalId"].(string), Digest: old["digest"].(string), Note: "keep the experiment for now"}); err != nil {
		t.Fatal(err)
	}
	shot("card.png", chromedp.Navigate(f.base+"/#/proposal/"+merge["proposalId"].(string)),
		chromedp.WaitVisible(chromedp.CSS(mergeCard+" .diff-view .d2h-file-wrapper")))
	shot("history.png", chromedp.Navigate(f.base+"/#/history"), chromedp.WaitVisible(chromedp.Search("//td[contains(., 'Drop the experiment')] | //*[contains(text(), 'Drop the experiment')]")))
	shot("connect.png", chromedp.Navigate(f.base+"/#/connect"), chromedp.WaitVisible(chromedp.Search("//*[contains(text(), 'Claude Code')]")))

	// Approve and trust similar: the rule as it will be saved, then the
	// Rules screen with it.
	commitCard := cardSel(commit["proposalId"].(string))
	row := ".queue-item[data-id='" + commit["proposalId"].(string) + "'] .queue-row"
	shot("trust-dialog.png", chromedp.Navigate(f.base+"/#/"), chromedp.WaitVisible(chromedp.CSS(row)), chromedp.Click(chromedp.CSS(row)),
		chromedp.WaitVisible(chromedp.CSS(commitCard+" .trust-similar:not([disabled])")), chromedp.Click(chromedp.CSS(commitCard+" .trust-similar")), chromedp.WaitVisible(chromedp.CSS(".trust-dialog .rule-name")))
	// The agent only declared its name: trusting it is the person's opt-in.
	shot("rules.png", chromedp.Click(chromedp.CSS(".trust-dialog .rule-trust-declared input")), chromedp.Click(chromedp.CSS(".trust-dialog .trust-confirm")),
		chromedp.WaitVisible(chromedp.CSS("#decided-"+commit["proposalId"].(string))),
		chromedp.Navigate(f.base+"/#/rules"), chromedp.WaitVisible(chromedp.CSS("table.rules tbody tr")))
	shot("audit.png", chromedp.Navigate(f.base+"/#/audit"), chromedp.WaitVisible(chromedp.CSS("main td")))
	shot("settings.png", chromedp.Navigate(f.base+"/#/settings"), chromedp.WaitVisible(chromedp.CSS("main h1")))
	// A used or wrong login link: the page that says what to do.
	// (A browser that still has a session goes straight to the UI, so the
	// session ends first.)
	shot("login-recovery.png", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, network.ClearBrowserCookies, cdp.Empty{})
		return err
	}), chromedp.Navigate(f.base+"/login?token=not-a-token"), chromedp.WaitVisible(chromedp.Search("//*[contains(text(), '"+loginCommand()+"')]")))
}
