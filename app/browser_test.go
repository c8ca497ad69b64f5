package app

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath finds Debian's Chromium.
func chromiumPath() string {
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, _ := exec.LookPath("chromium")
	return p
}

// newBrowser starts a real headless Chromium with a fresh profile and no
// background networking (this machine has no network but loopback).
func newBrowser(t testing.TB) context.Context {
	t.Helper()
	return browserWithin(t, 5*time.Minute)
}

// browserWithin is newBrowser with its own bound on the whole session.
func browserWithin(t testing.TB, limit time.Duration) context.Context {
	t.Helper()
	path := chromiumPath()
	needOrSkip(t, path != "", "chromium (apt install chromium)")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 860),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, limit)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	return ctx
}

// serveUI serves the built front end for a and returns the server and
// its single-use login token.
func serveUI(t testing.TB, a *App) (*Web, string) {
	t.Helper()
	w, token, err := NewWeb(a, distFS(t), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go w.Serve()
	t.Cleanup(func() { w.Shutdown(context.Background()) })
	return w, token
}

func TestBrowser_EmptyState_Renders(t *testing.T) {
	a := startApp(t)
	w, token := serveUI(t, a)
	ctx := newBrowser(t)
	// Before login the UI asks for the login link.
	if err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+w.Addr()+"/"),
		chromedp.WaitVisible(chromedp.ID("login-title")),
	); err != nil {
		t.Fatalf("UI without session: %v", err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(w.LoginURL(token)),
		chromedp.WaitVisible(chromedp.ID("empty-title")),
	); err != nil {
		t.Fatalf("empty state after login: %v", err)
	}
	title, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("empty-title")))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(title) != "No proposals waiting" {
		t.Fatalf("empty state title %q", title)
	}
	body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Connect an agent", "config --client claude-code --write", "Where are your repositories?", "SLUICE_ALLOWED_ROOTS"} {
		if !strings.Contains(body, want) {
			t.Errorf("empty state lacks %q", want)
		}
	}
	// The page called Ready through the API with its CSRF token.
	select {
	case <-a.ready:
	case <-time.After(desktopWait):
		t.Fatalf("the page never called Ready within %s", desktopWait)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(artifactDir(t), "web-empty-state.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBrowser_Audit_VerifyShowsCounts(t *testing.T) {
	a := startApp(t)
	w, token := serveUI(t, a)
	ctx := newBrowser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(w.LoginURL(token)),
		chromedp.WaitVisible(chromedp.ID("empty-title")),
		chromedp.Click(chromedp.Search("//nav//button[normalize-space()='Audit']")),
		chromedp.WaitVisible(chromedp.ID("audit-title")),
		chromedp.WaitVisible(chromedp.Search("//td[normalize-space()='app_started']")),
		chromedp.Click(chromedp.ID("verify-audit")),
		chromedp.WaitVisible(chromedp.ID("verify-result")),
	); err != nil {
		t.Fatalf("audit screen: %v", err)
	}
	result, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("verify-result")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Intact", "entries", "signed"} {
		if !strings.Contains(result, want) {
			t.Errorf("verify result lacks %q: %q", want, result)
		}
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(artifactDir(t), "web-audit.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
}
