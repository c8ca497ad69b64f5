package app

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowser_History_OlderPagesAndSearchOverEveryRecord: in a real
// browser, History shows the newest 200 proposals, "Show older
// proposals" adds the rest, and a search finds a proposal older than the
// first page.
func TestBrowser_History_OlderPagesAndSearchOverEveryRecord(t *testing.T) {
	f := startWebFlow(t)
	ids := fillHistory(t, f.app, 230, func(i int) (string, string) {
		if i == 3 {
			return "Tidy the oldest greeting", "/work/src/widgets"
		}
		return fmt.Sprintf("Routine update %d", i), "/work/src/widgets"
	})
	oldest := "#history-" + ids[3]
	if err := chromedp.Do(f.ctx, chromedp.Navigate(f.base+"/#/history")); err != nil {
		t.Fatal(err)
	}
	f.waitText(t, "[role=status]", "200+ proposals")
	if n := f.count(t, "table.history tbody tr"); n != 200 || f.count(t, oldest) != 0 {
		t.Fatalf("first page: %d rows, oldest shown %d times; want 200 without it", n, f.count(t, oldest))
	}

	if err := chromedp.Do(f.ctx, chromedp.Click(chromedp.CSS(".history-more"))); err != nil {
		t.Fatal(err)
	}
	f.waitText(t, "[role=status]", "230 proposals")
	if n := f.count(t, "table.history tbody tr"); n != 230 || f.count(t, oldest) != 1 || f.count(t, ".history-more") != 0 {
		t.Fatalf("after the older page: %d rows, oldest %d, more buttons %d; want 230, 1, 0", n, f.count(t, oldest), f.count(t, ".history-more"))
	}
	f.shot(t, "web-history-older.png")

	// Away to Rules (History goes off the screen and forgets its older
	// pages) and back: each move waits for its screen, or a loaded machine
	// could take both moves in one render and never leave History.
	if err := chromedp.Do(f.ctx, chromedp.Navigate(f.base+"/#/rules")); err != nil {
		t.Fatal(err)
	}
	f.waitText(t, "#rules-title", "Rules")
	if err := chromedp.Do(f.ctx, chromedp.Navigate(f.base+"/#/history")); err != nil {
		t.Fatal(err)
	}
	f.waitText(t, "[role=status]", "200+ proposals")
	if err := chromedp.Do(f.ctx, chromedp.SendKeys(chromedp.CSS(".history-search"), "oldest greeting")); err != nil {
		t.Fatal(err)
	}
	f.waitText(t, "[role=status]", "1 proposal match")
	if f.count(t, oldest) != 1 || f.count(t, "table.history tbody tr") != 1 {
		t.Fatalf("search: %d rows; want only %s", f.count(t, "table.history tbody tr"), ids[3])
	}
}
