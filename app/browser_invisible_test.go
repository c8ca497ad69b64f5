package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowser_InvisibleCharacters_ShownOnCardAndHistory: a reason with a
// right-to-left override and a commit message with a zero-width space are
// shown escaped and named on the card in a real browser, and History marks
// the row.
func TestBrowser_InvisibleCharacters_ShownOnCardAndHistory(t *testing.T) {
	f := startWebFlow(t)
	os.WriteFile(filepath.Join(f.repo, "README.md"), []byte("hello\nworld\n"), 0o644)
	cs := agentSession(t, f.env, "claude-code")
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": f.repo, "reason": "Rename the report \u202etxt.exe", "message": "Greet\u200b the world", "paths": []string{"README.md"},
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	id := out["proposalId"].(string)
	card := cardSel(id)
	if err := chromedp.Do(f.ctx, chromedp.WaitVisible(chromedp.CSS(card+" .invisible-chars"))); err != nil {
		t.Fatalf("the card shows no hidden-characters notice: %v", err)
	}
	text, err := chromedp.Run(f.ctx, chromedp.Text(chromedp.CSS(card)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Rename the report ⟨U+202E⟩txt.exe", "args.message:", "Greet⟨U+200B⟩ the world"} {
		if !strings.Contains(text, want) {
			t.Errorf("card lacks %q:\n%s", want, text)
		}
	}
	if strings.ContainsAny(text, "\u202e\u200b") {
		t.Errorf("the card renders a raw invisible character")
	}
	f.shot(t, "web-card-hidden-characters.png")

	row := "#history-" + id
	if err := chromedp.Do(f.ctx, chromedp.Navigate(f.base+"/#/history"), chromedp.WaitVisible(chromedp.CSS(row))); err != nil {
		t.Fatalf("history: %v", err)
	}
	rowText, err := chromedp.Run(f.ctx, chromedp.Text(chromedp.CSS(row)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rowText, "hidden characters") || strings.ContainsRune(rowText, '\u202e') {
		t.Errorf("history row %q", rowText)
	}
}

// TestBrowser_InvisibleContent_FlaggedAndShownInDiff: a commit whose
// src/auth.js holds a right-to-left override on line 12 (Trojan Source)
// shows, in a real browser, the line named on the card with the risk
// raised, and the diff line with the override written as ⟨U+202E⟩ on a
// marked line; nothing on the card renders the override raw.
func TestBrowser_InvisibleContent_FlaggedAndShownInDiff(t *testing.T) {
	f := startWebFlow(t)
	os.MkdirAll(filepath.Join(f.repo, "src"), 0o755)
	os.WriteFile(filepath.Join(f.repo, "src", "auth.js"), []byte(authJS()), 0o644)
	cs := agentSession(t, f.env, "claude-code")
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": f.repo, "reason": "Add the role check", "message": "Add the role check", "paths": []string{"src/auth.js"},
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	card := cardSel(out["proposalId"].(string))
	if err := chromedp.Do(f.ctx, chromedp.WaitVisible(chromedp.CSS(card+" .invisible-content"))); err != nil {
		t.Fatalf("the card shows no notice of hidden characters in its content: %v", err)
	}
	if err := chromedp.Do(f.ctx,
		chromedp.ScrollIntoView(chromedp.CSS(card+" .diff-view")),
		chromedp.WaitVisible(chromedp.CSS(card+" .diff-view .has-invisible")),
	); err != nil {
		t.Fatalf("the diff marks no line: %v", err)
	}
	notice, err := chromedp.Run(f.ctx, chromedp.Text(chromedp.CSS(card+" .invisible-content")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(notice, "src/auth.js line 12: right-to-left override U+202E") {
		t.Errorf("the notice does not name the line:\n%s", notice)
	}
	line, err := chromedp.Run(f.ctx, chromedp.Text(chromedp.CSS(card+" .diff-view .has-invisible")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, "admin⟨U+202E⟩ ⟨U+2066⟩// check admin⟨U+2069⟩") {
		t.Errorf("the marked diff line reads %q", line)
	}
	risk, err := chromedp.Run(f.ctx, chromedp.Text(chromedp.CSS(card+" .risk-why")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(risk, "Risk medium") || !strings.Contains(risk, "invisible characters (src/auth.js line 12") {
		t.Errorf("risk line %q", risk)
	}
	text, err := chromedp.Run(f.ctx, chromedp.Text(chromedp.CSS(card)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(text, "\u202e\u2066\u2069") {
		t.Errorf("the card renders a raw bidi control")
	}
	f.shot(t, "web-card-hidden-characters-in-content.png")
}
