package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
)

// TestBrowser_FileTree_FilterJumpImageApprove: an agent proposes, through
// the real sidecar, a commit of a PNG and some 300 text files. While the
// card's diff is still on its way (its first request held in the
// browser), Approve is disabled and says it is loading; the file tree
// already counts every file. Once the diff and the image are there, Approve
// is enabled, the PNG is an <img> the browser decoded, the tree filters by
// path, and a file far down is shown by loading only its own part of the
// diff.
func TestBrowser_FileTree_FilterJumpImageApprove(t *testing.T) {
	f := startWebFlowWithin(t, 3*time.Minute)
	paths := []string{"assets/logo.png", "zz/far/target.txt"}
	os.MkdirAll(filepath.Join(f.repo, "assets"), 0o755)
	if err := os.WriteFile(filepath.Join(f.repo, "assets", "logo.png"), imageBytes(t, "png"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(f.repo, "zz", "far"), 0o755)
	writeFile(t, filepath.Join(f.repo, "zz", "far", "target.txt"), "the file to find\n")
	for i := range 300 {
		p := fmt.Sprintf("src/pkg%d/file-%03d.txt", i%10, i)
		os.MkdirAll(filepath.Dir(filepath.Join(f.repo, p)), 0o755)
		var b strings.Builder
		for l := range 80 {
			fmt.Fprintf(&b, "line %d of %s, long enough to weigh something\n", l, p)
		}
		writeFile(t, filepath.Join(f.repo, p), b.String())
		paths = append(paths, p)
	}

	// Hold the card's first diff request in the browser.
	held := make(chan fetch.RequestID, 1)
	if err := chromedp.Do(f.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		events := cdp.Events(ctx, tg, fetch.RequestPaused)
		go func() {
			for ev, err := range events {
				if err == nil {
					held <- ev.RequestID
				}
				return
			}
		}()
		_, err := cdp.Call(ctx, tg, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
			{URLPattern: "*/api/proposals/*/diff?offset=0", RequestStage: fetch.RequestStageRequest},
		}})
		return err
	})); err != nil {
		t.Fatal(err)
	}

	cs := agentSession(t, f.env, "claude-code")
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": f.repo, "reason": "Add the logo and the generated files", "message": "Add logo and files", "paths": paths,
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	id := out["proposalId"].(string)
	card := cardSel(id)

	var request fetch.RequestID
	select {
	case request = <-held:
	case <-time.After(60 * time.Second):
		t.Fatal("the card never asked for its diff")
	}
	until(t, f, "the card to say it is loading", `!!document.querySelector("`+card+` .approve-wait")`)
	if !eval[bool](t, f, `document.querySelector("`+card+` .approve").disabled`) {
		t.Fatal("Approve is enabled while the diff has not arrived")
	}
	if wait := eval[string](t, f, `document.querySelector("`+card+` .approve-wait").textContent`); !strings.HasPrefix(wait, "Loading…") {
		t.Errorf("the reason beside Approve: %q", wait)
	}
	// The count is the sealed outcome's from the start, not the part streamed.
	if title := eval[string](t, f, `document.querySelector("`+card+` .file-tree-title").textContent`); title != "Files changed (302)" {
		t.Errorf("the tree says %q while the diff loads", title)
	}
	f.shot(t, "filetree-loading.png")
	if err := chromedp.Do(f.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: request}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, fetch.Disable, cdp.Empty{})
		return err
	})); err != nil {
		t.Fatal(err)
	}

	// The diff and the image arrive; then, and only then, Approve is enabled.
	until(t, f, "Approve to be enabled", `(() => {
		const c = document.querySelector("`+card+`");
		const b = c && c.querySelector(".approve");
		return !!b && !b.disabled && !c.querySelector(".approve-wait");
	})()`)
	type pngState struct {
		Width  int    `json:"width"`
		Src    string `json:"src"`
		Drawn  int    `json:"drawn"`
		Binary bool   `json:"binary"`
	}
	img := eval[pngState](t, f, `(() => {
		const c = document.querySelector("`+card+`");
		const w = c.querySelector(".d2h-file-wrapper[data-path='assets/logo.png']");
		const i = w && w.querySelector(".image-preview img");
		const body = w && w.querySelector(".d2h-files-diff, .d2h-file-diff");
		return { width: i ? i.naturalWidth : 0, src: i ? i.getAttribute("src") : "",
			drawn: c.querySelectorAll(".d2h-file-wrapper").length,
			binary: !!body && getComputedStyle(body).display !== "none" };
	})()`)
	if img.Width != 12 || !strings.Contains(img.Src, "/api/proposals/"+id+"/blob/") || img.Binary {
		t.Fatalf("the PNG: natural width %d, src %q, \"Binary file\" still shown: %v", img.Width, img.Src, img.Binary)
	}
	if img.Drawn == 0 || img.Drawn >= 302 {
		t.Fatalf("%d files drawn: the first part of the diff should be on screen, not all of it", img.Drawn)
	}

	// Filter, then jump to the file far down.
	target := card + ` .d2h-file-wrapper[data-path='zz/far/target.txt']`
	if eval[bool](t, f, `!!document.querySelector("`+target+`")`) {
		t.Fatal("the far file was loaded before the jump: the diff is too small for this test")
	}
	if err := chromedp.Do(f.ctx,
		chromedp.SendKeys(chromedp.CSS(card+" input.file-tree-filter"), "far/targ"),
	); err != nil {
		t.Fatal(err)
	}
	until(t, f, "the filter to find the file", `document.querySelector("`+card+` .file-tree-matches")?.textContent === "1 file matches"`)
	if rows := eval[int](t, f, `document.querySelectorAll("`+card+` .file-tree-file").length`); rows != 1 {
		t.Errorf("%d files listed for the filter", rows)
	}
	clicked := time.Now()
	if err := chromedp.Do(f.ctx,
		chromedp.Click(chromedp.CSS(card+` .file-tree-file[data-path='zz/far/target.txt']`)),
	); err != nil {
		t.Fatal(err)
	}
	until(t, f, "the far file on screen, focused", `(() => {
		const w = document.querySelector("`+target+`");
		if (!w) return false;
		const r = w.getBoundingClientRect();
		return document.activeElement === w && r.top < window.innerHeight && r.bottom > 0;
	})()`)
	t.Logf("the far file on screen %v after the click (a bound, not a measurement: the wait polls)", time.Since(clicked).Round(time.Millisecond))
	// Only the far file's part was loaded: what lies between is a gap.
	gaps := eval[int](t, f, `document.querySelectorAll("`+card+` .diff-gap").length`)
	drawn := eval[int](t, f, `document.querySelectorAll("`+card+` .d2h-file-wrapper").length`)
	if gaps != 1 || drawn >= 302 {
		t.Errorf("after the jump: %d gaps, %d files drawn", gaps, drawn)
	}
	f.shot(t, "filetree-jump.png")
}
