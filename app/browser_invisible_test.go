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
