package app

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/core/config"
)

// TestBrowser_AppStopsAndRestarts_TabSaysSoAndReconnects: an open tab
// whose `sluice serve` stops says "Sluice isn't running" (never "Failed to
// fetch"); when the app starts again on the same port, the same tab takes
// up its session again by itself and a new proposal appears on it live.
func TestBrowser_AppStopsAndRestarts_TabSaysSoAndReconnects(t *testing.T) {
	a, repo, env := flowEnv(t)
	dist := distFS(t)
	var w *Web
	var token string
	addr := onFreeAddr(t, func(addr string) (err error) {
		w, token, err = NewWeb(a, dist, addr)
		return err
	})
	go w.Serve()
	ctx := newBrowser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(w.LoginURL(token)),
		chromedp.WaitVisible(chromedp.ID("empty-title")),
	); err != nil {
		t.Fatalf("login: %v", err)
	}

	w.Shutdown(context.Background())
	a.Close()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("app-down"))); err != nil {
		t.Fatalf("the tab never said the app stopped: %v", err)
	}
	body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, "Sluice isn't running") || !strings.Contains(body, "sluice serve") || strings.Contains(body, "Failed to fetch") {
		t.Fatalf("the page with the app down:\n%s", body)
	}
	f := &webFlow{ctx: ctx}
	f.shot(t, "web-not-running.png")

	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	a2, err := Start(cfg, newLogger(&bytes.Buffer{}))
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	t.Cleanup(func() { a2.Close() })
	var w2 *Web
	onSameAddr(t, "the same port again", func() (err error) {
		w2, _, err = NewWeb(a2, dist, addr)
		return err
	})
	go w2.Serve()
	t.Cleanup(func() { w2.Shutdown(context.Background()) })
	if err := chromedp.Do(ctx,
		chromedp.WaitNotPresent(chromedp.ID("app-down")),
		chromedp.WaitVisible(chromedp.ID("empty-title")),
	); err != nil {
		t.Fatalf("the tab did not reconnect: %v", err)
	}
	f = &webFlow{app: a2, repo: repo, env: env, ctx: ctx}
	_, out := f.proposeGreeting(t, "claude-code")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(cardSel(out["proposalId"].(string))))); err != nil {
		t.Fatalf("a proposal after the restart did not reach the tab live: %v", err)
	}
}
