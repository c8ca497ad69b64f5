package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/core/proposal"
)

// axeSource is axe-core as pinned in build/tools (SLUICE_TOOLS_DIR).
func axeSource(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SLUICE_TOOLS_DIR")
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", "axe-core", "axe.min.js"))
	needOrSkip(t, dir != "" && err == nil, "axe-core in SLUICE_TOOLS_DIR (make test installs it from build/tools)")
	return string(b)
}

// axeViolation is one rule axe-core found broken, with where.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// axeRun runs axe-core on the page as it is and returns its serious and
// critical violations.
const axeRun = `axe.run(document, {resultTypes: ["violations"]}).then(r => JSON.stringify(
	r.violations.filter(v => v.impact === "serious" || v.impact === "critical").map(v => ({
		id: v.id, impact: v.impact, help: v.help,
		nodes: v.nodes.slice(0, 6).map(n => n.target.join(" ") + " — " + (n.failureSummary || "").replace(/\s+/g, " ")),
	}))))`

// screenReady holds once a screen has drawn what it loads: a heading, no
// "Loading…", nothing busy, and on a card its diff.
const screenReady = `(() => {
	const main = document.querySelector("main");
	if (!main || !main.querySelector("h1")) return false;
	if (/Loading/.test(main.textContent)) return false;
	if (main.querySelector("[aria-busy='true']")) return false;
	for (const c of main.querySelectorAll("article.card")) {
		if (!c.querySelector(".d2h-file-wrapper, .diff-toolbar .diff-progress")) return false;
		if (/not loaded yet/.test(c.querySelector(".diff-progress")?.textContent ?? "")) return false;
	}
	return true;
})()`

// TestBrowser_Axe_EveryScreen runs axe-core on every screen the
// navigation links to (found in the page, so a screen added later is
// covered), and on a proposal's own page, at 1366 and 420 px and in the
// dark colour scheme, with pending cards (one destructive), History rows
// and audit rows on them: no serious or critical violation, contrast
// included.
func TestBrowser_Axe_EveryScreen(t *testing.T) {
	axe := axeSource(t)
	f := startWebFlowWithin(t, 4*time.Minute)
	t.Setenv("SLUICE_SIDECAR", filepath.Join(binDir(t), "sluice-sidecar"))
	api := &API{app: f.app, kind: "web"}
	cs := agentSession(t, f.env, "claude-code")
	done := f.proposeFile(t, cs, "done.txt")
	if _, err := api.Approve(Decision{ID: done, Digest: f.digest(t, done)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, desktopWait, "the first commit to land", func() bool { return f.state(t, done) == proposal.Completed })
	no := f.proposeFile(t, cs, "no.txt")
	if _, err := api.Reject(Decision{ID: no, Digest: f.digest(t, no), Note: "not this one"}); err != nil {
		t.Fatal(err)
	}
	// A changed file, so that the card shows diff2html's CHANGED tag and
	// the file tree its +N/−N counts.
	_, greeting := f.proposeGreeting(t, "claude-code")
	open := greeting["proposalId"].(string)
	codex := agentSession(t, f.env, "codex")
	if out, isErr := callTool(t, codex, "propose_reset", map[string]any{
		"repoPath": f.repo, "reason": "Start over", "mode": "hard", "target": "HEAD", "branch": "main",
	}); isErr {
		t.Fatalf("propose_reset: %v", out)
	}

	type pass struct {
		name  string
		width int64
		dark  bool
	}
	var failures []string
	for _, p := range []pass{{"1366 px", 1366, false}, {"420 px", 420, false}, {"1366 px dark", 1366, true}} {
		scheme := "light"
		if p.dark {
			scheme = "dark"
		}
		if err := chromedp.Do(f.ctx,
			chromedp.EmulateViewport(p.width, 900),
			chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
					Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
				})
				return err
			}),
			chromedp.Navigate(f.base+"/#/pending"),
			chromedp.Reload(),
			chromedp.WaitVisible(chromedp.CSS("nav[aria-label='Screens']")),
		); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		if _, err := chromedp.Run(f.ctx, chromedp.Evaluate[bool](axe+"\n;true")); err != nil {
			t.Fatalf("injecting axe-core: %v", err)
		}
		screens := eval[[]string](t, f, `Array.from(document.querySelectorAll("nav[aria-label='Screens'] > *")).map(e => e.textContent.trim())`)
		if len(screens) < 7 {
			t.Fatalf("the navigation lists %q", screens)
		}
		check := func(screen string) {
			t.Helper()
			until(t, f, screen+" drawn", screenReady)
			out, err := chromedp.Run(f.ctx, chromedp.Evaluate[string](axeRun, chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatalf("axe on %s (%s): %v", screen, p.name, err)
			}
			var vs []axeViolation
			if err := json.Unmarshal([]byte(out), &vs); err != nil {
				t.Fatalf("axe's answer %q: %v", out, err)
			}
			for _, v := range vs {
				failures = append(failures, fmt.Sprintf("%s at %s: %s (%s) %s:\n    %s", screen, p.name, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n    ")))
			}
			t.Logf("%s at %s: %d serious or critical", screen, p.name, len(vs))
		}
		for i, name := range screens {
			if err := chromedp.Do(f.ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf("nav[aria-label='Screens'] > :nth-child(%d)", i+1)))); err != nil {
				t.Fatalf("opening %s: %v", name, err)
			}
			// The screen's own content, where the test knows what it is.
			switch {
			case strings.HasPrefix(name, "Pending"):
				until(t, f, "the open card with its CHANGED tag", `!!document.querySelector("#card-`+open+` .d2h-file-wrapper .d2h-changed-tag") && !!document.querySelector("#card-`+open+` .file-tree-add")`)
			case name == "History":
				until(t, f, "History's rows", `!!document.getElementById("history-`+no+`")`)
			case name == "Audit":
				until(t, f, "audit rows", `document.querySelectorAll("main td").length > 0`)
			}
			check(name)
		}
		// A proposal's own page, reached from History.
		if err := chromedp.Do(f.ctx, chromedp.Navigate(f.base+"/#/proposal/"+done)); err != nil {
			t.Fatal(err)
		}
		until(t, f, "the proposal page's audit entries", `document.querySelectorAll("main td").length > 0`)
		check("the proposal page")
	}
	if len(failures) > 0 {
		t.Errorf("axe-core found %d serious or critical violations:\n%s", len(failures), strings.Join(failures, "\n"))
	}
}
