package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// webFlow is an app serving the built UI, a logged-in headless Chromium on
// it, and the environment for real sidecar processes.
type webFlow struct {
	app  *App
	repo string
	env  []string
	ctx  context.Context
	base string
}

func startWebFlow(t *testing.T) *webFlow {
	t.Helper()
	return startWebFlowWithin(t, 5*time.Minute)
}

// startWebFlowWithin is startWebFlow with its own bound on the browser
// session.
func startWebFlowWithin(t *testing.T, limit time.Duration) *webFlow {
	t.Helper()
	return startWebFlowConfig(t, limit, "")
}

// startWebFlowConfig is startWebFlowWithin with configJSON as config.json.
func startWebFlowConfig(t *testing.T, limit time.Duration, configJSON string) *webFlow {
	t.Helper()
	a, repo, env := flowEnvWith(t, configJSON)
	w, token := serveUI(t, a)
	ctx := browserWithin(t, limit)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(w.LoginURL(token)),
		chromedp.WaitVisible(chromedp.ID("empty-title")),
	); err != nil {
		t.Fatalf("login: %v", err)
	}
	return &webFlow{app: a, repo: repo, env: env, ctx: ctx, base: "http://" + w.Addr()}
}

func (f *webFlow) shot(t *testing.T, name string) {
	t.Helper()
	b, err := chromedp.Run(f.ctx, chromedp.FullScreenshot(90))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(artifactDir(t), name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func cardSel(id string) string { return "#card-" + id }

// decidedSel selects the notice that a card decided on the Pending screen
// leaves in the queue's place; its data-state follows the proposal.
func decidedSel(id string) string { return "#decided-" + id }

// proposeGreeting changes README.md in the repository and has agent
// propose committing it through a real sidecar.
func (f *webFlow) proposeGreeting(t *testing.T, agent string) (*mcp.ClientSession, map[string]any) {
	t.Helper()
	os.WriteFile(filepath.Join(f.repo, "README.md"), []byte("hello\nworld\n"), 0o644)
	cs := agentSession(t, f.env, agent)
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": f.repo, "reason": "Greet the world", "message": "Greet the world", "paths": []string{"README.md"},
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	return cs, out
}

// TestBrowser_ProposeReject_Live: a proposal from a real sidecar appears on
// the open page without a reload; rejecting it with a note reaches the
// agent as a rejected, error result.
func TestBrowser_ProposeReject_Live(t *testing.T) {
	f := startWebFlow(t)
	cs, out := f.proposeGreeting(t, "claude-code")
	id := out["proposalId"].(string)
	card := cardSel(id)
	if err := chromedp.Do(f.ctx,
		chromedp.WaitVisible(chromedp.CSS(card)),
		chromedp.WaitVisible(chromedp.CSS(card+" .diff-view .d2h-file-wrapper")),
	); err != nil {
		t.Fatalf("the card did not appear live with its diff: %v", err)
	}
	text, err := chromedp.Run(f.ctx, chromedp.Text(chromedp.CSS(card)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"claude-code", "widgets", "Greet the world", "README.md", "world"} {
		if !strings.Contains(text, want) {
			t.Errorf("card lacks %q", want)
		}
	}
	f.shot(t, "web-card.png")
	if err := chromedp.Do(f.ctx,
		chromedp.Focus(chromedp.CSS(card+" .note-input")), chromedp.KeyEvent("not this week"),
		chromedp.Click(chromedp.CSS(card+" .reject")),
		chromedp.WaitVisible(chromedp.CSS(decidedSel(id)+`[data-state="rejected"]`)),
	); err != nil {
		t.Fatalf("reject: %v", err)
	}
	out, isErr := callTool(t, cs, "proposal_wait", map[string]any{"proposalId": id, "timeoutSeconds": 5})
	if !isErr || out["status"] != "rejected" {
		t.Fatalf("agent sees: isError=%v %v", isErr, out)
	}
	dec, _ := out["decision"].(map[string]any)
	if dec == nil || dec["note"] != "not this week" {
		t.Errorf("the note did not reach the agent: %v", out["decision"])
	}

	// Its entries on the Audit screen link to its page.
	link := `.audit-proposal[href="#/proposal/` + id + `"]`
	if err := chromedp.Do(f.ctx,
		chromedp.Navigate(f.base+"/#/audit"),
		chromedp.WaitVisible(chromedp.CSS(link)),
		chromedp.Click(chromedp.CSS(link)),
		chromedp.WaitVisible(chromedp.ID("proposal-title")),
	); err != nil {
		t.Fatalf("from the audit row to the proposal: %v", err)
	}
	if u, err := chromedp.Run(f.ctx, chromedp.Evaluate[string]("location.hash")); err != nil || u != "#/proposal/"+id {
		t.Fatalf("the audit link led to %q %v", u, err)
	}

	// History lists it, every column of its row in line.
	row := "#history-" + id
	if err := chromedp.Do(f.ctx, chromedp.Navigate(f.base+"/#/history"), chromedp.WaitVisible(chromedp.CSS(row))); err != nil {
		t.Fatalf("history: %v", err)
	}
	layout, err := chromedp.Run(f.ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("`+row+` > td")).map(td => getComputedStyle(td).display + "@" + td.getBoundingClientRect().top).join(" ")`))
	if err != nil {
		t.Fatal(err)
	}
	cells := strings.Fields(layout)
	if len(cells) != 7 {
		t.Fatalf("history row cells: %q", layout)
	}
	for _, c := range cells {
		if c != cells[0] || !strings.HasPrefix(c, "table-cell@") {
			t.Errorf("history row cells out of line: %q", layout)
			break
		}
	}
}

// TestBrowser_Destructive_NeedsTypedWord: a hard reset's Approve stays
// disabled until the branch name is typed.
func TestBrowser_Destructive_NeedsTypedWord(t *testing.T) {
	f := startWebFlow(t)
	// Uncommitted work the reset would throw away (one that loses nothing
	// is not destructive).
	if err := os.WriteFile(filepath.Join(f.repo, "README.md"), []byte("hello\nmy draft\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs := agentSession(t, f.env, "codex")
	out, isErr := callTool(t, cs, "propose_reset", map[string]any{
		"repoPath": f.repo, "reason": "Start over", "mode": "hard", "target": "HEAD", "branch": "main",
	})
	if isErr {
		t.Fatalf("propose_reset: %v", out)
	}
	card := cardSel(out["proposalId"].(string))
	disabled := func() bool {
		v, err := chromedp.Run(f.ctx, chromedp.Evaluate[bool](`document.querySelector("`+card+` .approve").disabled`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if err := chromedp.Do(f.ctx, chromedp.WaitVisible(chromedp.CSS(card+" .confirm-input"))); err != nil {
		t.Fatalf("no confirmation field on a hard reset: %v", err)
	}
	if !disabled() {
		t.Fatal("Approve is enabled before the word is typed")
	}
	// Typed into the focused field key by key: chromedp's SendKeys reads
	// the field's attributes while the page changes them (its own data
	// race under -race).
	if err := chromedp.Do(f.ctx, chromedp.Focus(chromedp.CSS(card+" .confirm-input")), chromedp.KeyEvent("mai")); err != nil {
		t.Fatal(err)
	}
	if !disabled() {
		t.Fatal("Approve is enabled with a partial word")
	}
	f.shot(t, "web-destructive.png")
	if err := chromedp.Do(f.ctx, chromedp.Focus(chromedp.CSS(card+" .confirm-input")), chromedp.KeyEvent("n")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(desktopWait)
	for disabled() {
		if time.Now().After(deadline) {
			t.Fatal("Approve stays disabled after the word is typed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
