package app

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestBrowser_LoginRecovery: in Chromium, a used link and a wrong link
// answer the page that says to run `sluice login`; the fresh link that
// command asks the running instance for logs the browser in.
func TestBrowser_LoginRecovery(t *testing.T) {
	a := startApp(t)
	w, token := serveUI(t, a)
	if err := w.Publish(UIEndpointFile(a.cfg)); err != nil {
		t.Fatal(err)
	}
	ctx := newBrowser(t)
	forget := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, network.ClearBrowserCookies, cdp.Empty{})
		return err
	})
	// The page names the command as this binary is typed (see loginCommand).
	cmd, _ := json.Marshal(loginCommand())
	recovery := `document.body.textContent.includes("no longer works") && document.querySelector("pre code")?.textContent === ` + string(cmd)

	// The link works once.
	if err := chromedp.Do(ctx, chromedp.Navigate(w.LoginURL(token)), chromedp.WaitVisible(chromedp.ID("empty-title"))); err != nil {
		t.Fatalf("first use of the link: %v", err)
	}
	for name, url := range map[string]string{"used": w.LoginURL(token), "wrong": w.LoginURL("not-a-token")} {
		if err := chromedp.Do(ctx, forget, chromedp.Navigate(url)); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](recovery)); err != nil {
			body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("%s link: not the recovery page: %v\n%s", name, err, body)
		}
	}

	// What `sluice login` prints: a fresh link from the running instance.
	fresh, err := requestLoginLink(t.Context(), a.cfg)
	if err != nil {
		t.Fatalf("sluice login: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(fresh), chromedp.WaitVisible(chromedp.ID("empty-title"))); err != nil {
		t.Fatalf("the fresh link: %v", err)
	}
}
