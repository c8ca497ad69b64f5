package app

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/policy"
)

// press focuses sel and sends keys to it, as a person at the keyboard.
func focusPress(sel, keys string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.Focus(chromedp.CSS(sel)), chromedp.KeyEvent(keys))
}

// waitText polls until sel's text contains want, and fails with what it was.
func (f *webFlow) waitText(t *testing.T, sel, want string) {
	t.Helper()
	js := `(() => { const e = document.querySelector(` + jsString(sel) + `); return !!e && e.textContent.includes(` + jsString(want) + `); })()`
	if _, err := chromedp.Run(f.ctx, chromedp.Poll[bool](js)); err != nil {
		got, _ := chromedp.Run(f.ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("%s never showed %q: %v\npage: %s", sel, want, err, got)
	}
}

// count is how many elements match sel now.
func (f *webFlow) count(t *testing.T, sel string) int {
	t.Helper()
	n, err := chromedp.Run(f.ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(sel)+`).length`))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// TestBrowser_TrustSimilar_KeyboardOnly: with the keyboard only, the
// person approves a card and trusts similar ones, editing the rule first;
// the next similar proposal is approved by the rule and shows in History
// marked with it; the Rules screen shows the rule with a count of 1; the
// person revokes it, and the proposal after that waits for a card again.
// The ledger holds rule_created and rule_revoked, and verify-audit passes
// with signatures required.
func TestBrowser_TrustSimilar_KeyboardOnly(t *testing.T) {
	f := startWebFlow(t)
	cs := agentSession(t, f.env, "claude-code")
	propose := func(content string) string {
		t.Helper()
		return f.proposeReadme(t, cs, content)
	}

	first := propose("hello\nworld\n")
	card := cardSel(first)
	if err := chromedp.Do(f.ctx,
		chromedp.WaitVisible(chromedp.CSS(card+" .diff-view .d2h-file-wrapper")),
		// Enabled once the whole card is on screen.
		chromedp.WaitVisible(chromedp.CSS(card+" .trust-similar:not([disabled])")),
		focusPress(card+" .trust-similar", kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(".trust-dialog .rule-name")),
	); err != nil {
		t.Fatalf("open the trust dialog: %v", err)
	}
	f.waitText(t, ".trust-dialog .rule-preview", `"agent": "claude-code"`)
	f.waitText(t, ".trust-dialog .rule-preview", `"paths": [`)
	f.shot(t, "web-trust-dialog.png")
	// Edit: a longer name, and "always" instead of today.
	if err := chromedp.Do(f.ctx,
		focusPress(".trust-dialog .rule-name", kb.End),
		chromedp.KeyEvent("-readme"),
		focusPress(".trust-dialog .rule-expiry", "a"),
	); err != nil {
		t.Fatal(err)
	}
	const name = "claude-code-commit-readme"
	f.waitText(t, ".trust-dialog .rule-preview", `"name": "`+name+`"`)
	noExpiry := `!document.querySelector(".trust-dialog .rule-preview").textContent.includes("expiresAt")`
	if _, err := chromedp.Run(f.ctx, chromedp.Poll[bool](noExpiry)); err != nil {
		t.Fatalf("choosing Always did not remove the expiry: %v", err)
	}
	// claude-code only declared its name over stdio: the dialog says whom
	// the rule would trust, and saves it only once the person opts in.
	f.waitText(t, ".trust-dialog .rule-scope", "any program calling itself claude-code")
	disabled := `document.querySelector(".trust-dialog .trust-confirm").disabled`
	if _, err := chromedp.Run(f.ctx, chromedp.Poll[bool](disabled)); err != nil {
		t.Fatalf("the rule could be saved without opting in to the declared name: %v", err)
	}
	if err := chromedp.Do(f.ctx,
		focusPress(".trust-dialog .rule-trust-declared input", " "),
		focusPress(".trust-dialog .trust-confirm", kb.Enter),
		chromedp.WaitNotPresent(chromedp.CSS(".trust-dialog")),
	); err != nil {
		t.Fatalf("confirm: %v", err)
	}
	if out := f.wait(t, cs, first); out["status"] != "completed" || out["autoApproved"] == true {
		t.Fatalf("the first card: %v", out)
	}
	pol, err := policy.Load(f.app.cfg.DefaultPolicyFile())
	if err != nil || len(pol.Rules) != 1 || pol.Rules[0].Name != name || !pol.Rules[0].ExpiresAt.IsZero() || pol.Rules[0].FromProposal != first {
		t.Fatalf("the saved policy: %+v %v", pol, err)
	}

	// Similar: approved by the rule, without a card; History marks it.
	second := propose("hello\nworld, again\n")
	if out := f.wait(t, cs, second); out["status"] != "completed" || out["autoApproved"] != true {
		t.Fatalf("the similar proposal: %v", out)
	}
	if err := chromedp.Do(f.ctx, focusPress(`nav.tabs button:nth-child(2)`, kb.Enter)); err != nil {
		t.Fatal(err)
	}
	f.waitText(t, "#history-"+second+" .rule-mark", "by rule "+name)
	if n := f.count(t, "#history-"+first+" .rule-mark"); n != 0 {
		t.Fatal("the card the person approved is marked as a rule's")
	}
	f.shot(t, "web-history-rule.png")

	// The Rules screen: count 1, made from the first card; revoke.
	if err := chromedp.Do(f.ctx, focusPress(`nav.tabs button:nth-child(3)`, kb.Enter)); err != nil {
		t.Fatal(err)
	}
	row := "#rule-" + name
	f.waitText(t, row+" .rule-count", "1")
	count, err := chromedp.Run(f.ctx, chromedp.Text(chromedp.CSS(row+" .rule-count")))
	if err != nil || !strings.HasPrefix(strings.TrimSpace(count), "1") {
		t.Fatalf("count %q: %v", count, err)
	}
	if n := f.count(t, row+` a[href="#/proposal/`+first+`"]`); n != 1 {
		t.Fatalf("the rule links to its card %d times, want once", n)
	}
	// The feed names what the rule approved.
	f.waitText(t, "#auto-feed-"+second, "by rule "+name)
	f.shot(t, "web-rules.png")
	if err := chromedp.Do(f.ctx,
		focusPress(row+" .revoke-rule", kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(".revoke-confirm")),
		focusPress(".revoke-confirm", kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(".rules-empty")),
	); err != nil {
		t.Fatalf("revoke: %v", err)
	}

	// After revoking, a similar proposal waits for a person.
	third := propose("hello\nworld, once more\n")
	if err := chromedp.Do(f.ctx,
		focusPress(`nav.tabs button:nth-child(1)`, kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(cardSel(third)+" .trust-similar")),
	); err != nil {
		t.Fatalf("the proposal after revoking has no card: %v", err)
	}
	// The Pending screen tells of what the rule approved, naming it, with
	// an Undo (its restore point).
	f.waitText(t, "#auto-"+second, "approved automatically by rule "+name)
	if n := f.count(t, "#auto-"+second+" .undo-auto"); n != 1 {
		t.Fatalf("the automatic approval's notice has %d Undo buttons, want 1", n)
	}
	f.shot(t, "web-pending-auto-approved.png")
	if rec, err := f.app.journal.Get(third); err != nil || rec.State != "pending" {
		t.Fatalf("after revoking: %s %v", rec.State, err)
	}

	entries, err := audit.Tail(f.app.cfg.AuditLog(), audit.MaxTail)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range entries {
		if ev, _ := e["event_type"].(string); ev == "rule_created" || ev == "rule_revoked" {
			if d, _ := e["data"].(map[string]any); d["rule"] == name {
				seen[ev]++
			}
		}
	}
	if seen["rule_created"] != 1 || seen["rule_revoked"] != 1 {
		t.Fatalf("ledger rule events: %v", seen)
	}
	cmd := exec.Command(filepath.Join(binDir(t), "sluice-sidecar"), "verify-audit", f.app.cfg.AuditLog(), "--pubkey", f.app.cfg.AuditPublicKeyFile(), "--require-signed")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("verify-audit: %v\n%s", err, out)
	}
}

// proposeReadme writes content to README.md and has the agent of cs
// propose committing it.
func (f *webFlow) proposeReadme(t *testing.T, cs *mcp.ClientSession, content string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.repo, "README.md"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": f.repo, "reason": "Update the greeting", "message": "Update the greeting", "paths": []string{"README.md"},
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	return out["proposalId"].(string)
}

// wait is the agent's proposal_wait until the proposal ends.
func (f *webFlow) wait(t *testing.T, cs *mcp.ClientSession, id string) map[string]any {
	t.Helper()
	out, _ := callTool(t, cs, "proposal_wait", map[string]any{"proposalId": id, "timeoutSeconds": 40})
	return out
}
