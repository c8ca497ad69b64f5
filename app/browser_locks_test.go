package app

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowser_LeftLocks_NamedAndRemoved: after a crash in the middle of an
// approved commit, the proposal's page names the lock files git left and
// what each guards; removing them takes a confirmation, and then they are
// gone from the repository and the page says so.
func TestBrowser_LeftLocks_NamedAndRemoved(t *testing.T) {
	a, repo, _, id := interruptedWithLocks(t)
	w, token := serveUI(t, a)
	ctx := newBrowser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(w.LoginURL(token)),
		chromedp.WaitVisible(chromedp.ID("empty-title")),
		chromedp.Navigate("http://"+w.Addr()+"/#/proposal/"+id),
		chromedp.WaitVisible(chromedp.CSS(cardSel(id)+" .left-locks .lock-path")),
	); err != nil {
		t.Fatalf("the card of the interrupted execution: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(cardSel(id)+" .left-locks")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".git/index.lock", ".git/HEAD.lock", "git locks the index", "Left by this execution's git", "repo_locked"} {
		if !strings.Contains(text, want) {
			t.Errorf("the lock section does not say %q:\n%s", want, text)
		}
	}
	if b, err := chromedp.Run(ctx, chromedp.FullScreenshot(90)); err == nil {
		os.WriteFile(filepath.Join(artifactDir(t), "web-left-locks-before.png"), b, 0o644)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(cardSel(id)+" .remove-locks")),
		chromedp.WaitVisible(chromedp.CSS(".confirm-remove-locks")),
	); err != nil {
		t.Fatalf("ask to remove: %v", err)
	}
	// Asking removed nothing: the confirmation does.
	for _, name := range []string{"index.lock", "HEAD.lock"} {
		if _, err := os.Stat(filepath.Join(repo, ".git", name)); err != nil {
			t.Fatalf("%s went before the confirmation: %v", name, err)
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(".confirm-remove-locks")),
		chromedp.WaitVisible(chromedp.CSS(cardSel(id)+" .locks-removed")),
	); err != nil {
		t.Fatalf("confirm the removal: %v", err)
	}
	done, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(cardSel(id)+" .locks-removed")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(done, ".git/index.lock") || !strings.Contains(done, ".git/HEAD.lock") {
		t.Errorf("the page says %q", done)
	}
	for _, name := range []string{"index.lock", "HEAD.lock"} {
		if _, err := os.Stat(filepath.Join(repo, ".git", name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", name, err)
		}
	}
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	if err == nil {
		os.WriteFile(filepath.Join(artifactDir(t), "web-left-locks.png"), b, 0o644)
	}
}
