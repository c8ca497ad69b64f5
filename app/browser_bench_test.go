package app

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The card's speed in a real browser, submitted through the real sidecar:
//
//	go test -run '^$' -bench 'Browser_' -benchtime 10x ./app/
//
// (make build first: the sidecar binary is the one the agent runs).

// BenchmarkBrowser_SubmitToCard: an agent's propose_commit through the
// sidecar until its card is on the open page (live, without a reload).
func BenchmarkBrowser_SubmitToCard(b *testing.B) {
	a, repo, env := flowEnv(b)
	w, token := serveUI(b, a)
	ctx := browserWithin(b, 30*time.Minute)
	if err := chromedp.Do(ctx, chromedp.Navigate(w.LoginURL(token)), chromedp.WaitVisible(chromedp.ID("empty-title"))); err != nil {
		b.Fatal(err)
	}
	cs := agentSession(b, env, "claude-code")
	lat := make([]time.Duration, 0, b.N)
	for i := range b.N {
		os.WriteFile(filepath.Join(repo, "README.md"), []byte(fmt.Sprintf("hello %d\n", i)), 0o644)
		t0 := time.Now()
		out, isErr := callTool(b, cs, "propose_commit", map[string]any{
			"repoPath": repo, "reason": "Bench", "message": "Bench", "paths": []string{"README.md"},
		})
		if isErr {
			b.Fatalf("propose_commit: %v", out)
		}
		id := out["proposalId"].(string)
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(cardSel(id)))); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		if _, isErr := callTool(b, cs, "proposal_cancel", map[string]any{"proposalId": id}); isErr {
			b.Fatal("cancel failed")
		}
	}
	reportLatency(b, lat)
}

// BenchmarkBrowser_FirstDiffPaint1000: a pending commit of 1,000 new
// files; each round opens the Pending screen, where its card is the open
// one, until the first lines of its diff are on screen.
func BenchmarkBrowser_FirstDiffPaint1000(b *testing.B) { firstDiffPaint(b, 1000) }

// BenchmarkBrowser_FirstDiffPaint20000: the same with a commit of 20,000
// new files (a diff of about 4 MB).
func BenchmarkBrowser_FirstDiffPaint20000(b *testing.B) { firstDiffPaint(b, 20000) }

// firstDiffPaint proposes a commit of n new files through the real
// sidecar, then measures in each round what a person waits for when they
// open the card: from navigating to the Pending screen (the card is the
// open one) until the first lines of its diff are drawn inside the
// viewport, scrolling to the diff when it is below the fold. Each round
// computes the diff anew in the app, as the first opening of a card does.
func firstDiffPaint(b *testing.B, n int) {
	a, repo, env := flowEnv(b)
	for i := range n {
		p := filepath.Join(repo, fmt.Sprintf("src/pkg%03d/file%05d.txt", i%(n/20), i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, fmt.Appendf(nil, "file %d\nline two\nline three\n", i), 0o644)
	}
	cs := agentSession(b, env, "claude-code")
	out, isErr := callTool(b, cs, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Bench", "message": fmt.Sprintf("%d files", n), "stageAll": true,
	})
	if isErr {
		b.Fatalf("propose_commit: %v", out)
	}
	card := cardSel(out["proposalId"].(string))
	w, token := serveUI(b, a)
	ctx := browserWithin(b, 30*time.Minute)
	if err := chromedp.Do(ctx, chromedp.Navigate(w.LoginURL(token)), chromedp.WaitVisible(chromedp.CSS(card))); err != nil {
		b.Fatal(err)
	}
	// True once a line of the card's diff with text is inside the
	// viewport; otherwise the diff is scrolled to, as a person would.
	onScreen := `(() => {
		const view = document.querySelector(` + "`" + card + ` .diff-view` + "`" + `);
		if (!view) return false;
		for (const l of view.querySelectorAll(".d2h-code-line-ctn")) {
			const r = l.getBoundingClientRect();
			if (r.height > 0 && r.bottom > 0 && r.top < innerHeight && r.left < innerWidth && r.right > 0 && l.textContent.trim() !== "") return true;
		}
		view.scrollIntoView();
		return false;
	})()`
	lat := make([]time.Duration, 0, b.N)
	for range b.N {
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			b.Fatal(err)
		}
		a.diffs = diffCache{}
		t0 := time.Now()
		if err := chromedp.Do(ctx, chromedp.Navigate("http://"+w.Addr()+"/")); err != nil {
			b.Fatal(err)
		}
		// A poll started while the page replaces its document ends with
		// that document; it is started again on the new one.
		var err error
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
			if _, err = chromedp.Run(ctx, chromedp.Poll[bool](onScreen, chromedp.WithPollingTimeout(time.Until(deadline)))); err == nil ||
				!strings.Contains(err.Error(), "Cannot find context") {
				break
			}
		}
		if err != nil {
			if shot, serr := chromedp.Run(ctx, chromedp.CaptureScreenshot()); serr == nil && os.Getenv("SLUICE_ARTIFACTS") != "" {
				os.WriteFile(filepath.Join(os.Getenv("SLUICE_ARTIFACTS"), fmt.Sprintf("first-diff-paint-%d.png", n)), shot, 0o644)
			}
			b.Fatalf("the first lines of the diff were not drawn on screen: %v", err)
		}
		lat = append(lat, time.Since(t0))
	}
	reportLatency(b, lat)
}

func reportLatency(b *testing.B, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	b.ReportMetric(float64(sum)/float64(len(lat)), "ns/op")
	b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100])/1e6, "p99-ms")
}
