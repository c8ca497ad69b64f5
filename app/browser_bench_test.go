package app

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
// files; each round loads the page, scrolls to the card's diff and waits
// until it shows its first file.
func BenchmarkBrowser_FirstDiffPaint1000(b *testing.B) {
	a, repo, env := flowEnv(b)
	for i := range 1000 {
		p := filepath.Join(repo, fmt.Sprintf("src/pkg%02d/file%04d.txt", i%50, i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, fmt.Appendf(nil, "file %d\nline two\nline three\n", i), 0o644)
	}
	cs := agentSession(b, env, "claude-code")
	out, isErr := callTool(b, cs, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Bench", "message": "1,000 files", "stageAll": true,
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
	lat := make([]time.Duration, 0, b.N)
	for range b.N {
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			b.Fatal(err)
		}
		a.diffs = diffCache{} // each round computes the diff, as the first open of a card does
		t0 := time.Now()
		// The diff loads when it comes into view: the reader scrolls to it.
		if err := chromedp.Do(ctx,
			chromedp.Navigate("http://"+w.Addr()+"/"),
			chromedp.ScrollIntoView(chromedp.CSS(card+" .diff-view")),
			chromedp.WaitVisible(chromedp.CSS(card+" .diff-view .d2h-file-wrapper")),
		); err != nil {
			b.Fatal(err)
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
