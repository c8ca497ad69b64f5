package app

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowser_EventStream_OnePerPageNoneInPageCache: in Chromium, the
// Pending screen with a card listens to the app through one stream (the
// queue, the pending count and the automatic approvals share it), and a
// page left for another keeps none open while the browser caches it, so
// that opening the app again never waits for one of the browser's six
// connections to the app.
func TestBrowser_EventStream_OnePerPageNoneInPageCache(t *testing.T) {
	f := startWebFlow(t)
	_, out := f.proposeGreeting(t, "claude-code")
	card := cardSel(out["proposalId"].(string))
	if err := chromedp.Do(f.ctx, chromedp.Navigate(f.base+"/"), chromedp.WaitVisible(chromedp.CSS(card+" .diff-view"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, desktopWait, "the page's stream of events", func() bool { return f.app.events.Subscribers() >= 1 })
	if n := f.app.events.Subscribers(); n != 1 {
		t.Errorf("the Pending screen holds %d streams of events, want 1", n)
	}
	// Another page: this one goes to the back/forward cache.
	if err := chromedp.Do(f.ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, desktopWait, "the cached page's stream to close", func() bool { return f.app.events.Subscribers() == 0 })
	// Opening the app again draws the card, with its stream.
	if err := chromedp.Do(f.ctx, chromedp.Navigate(f.base+"/"), chromedp.WaitVisible(chromedp.CSS(card+" .diff-view"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, desktopWait, "the page's stream of events", func() bool { return f.app.events.Subscribers() == 1 })
}
