package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/proposal"
)

// proposeFiles writes n files of many lines each and has cs propose one
// commit of all of them: a card whose diff is far taller than a window.
func (f *webFlow) proposeFiles(t *testing.T, cs *mcp.ClientSession, n int) string {
	t.Helper()
	var paths []string
	for i := 0; i < n; i++ {
		var b strings.Builder
		for l := 0; l < 40; l++ {
			fmt.Fprintf(&b, "line %d of file %d: some content a reviewer reads\n", l, i)
		}
		name := fmt.Sprintf("part%d.txt", i)
		if err := os.WriteFile(filepath.Join(f.repo, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, name)
	}
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": f.repo, "reason": "Add the seven parts", "message": "Add the seven parts\n\nEach part is a file.", "paths": paths,
	})
	if isErr {
		t.Fatalf("propose_commit of %d files: %v", n, out)
	}
	return out["proposalId"].(string)
}

// pressKey presses a printable key as a keyboard does: one keydown that
// carries its text, so that a page which handles the keydown keeps the
// character from being typed (chromedp's KeyEvent sends the character as
// an event of its own, which no keydown handler can stop).
func pressKey(t *testing.T, f *webFlow, key string) {
	t.Helper()
	if err := chromedp.Do(f.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: input.DispatchKeyEventTypeKeyDown, Key: key, Text: key, UnmodifiedText: key,
		}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Key: key})
		return err
	})); err != nil {
		t.Fatalf("key %q: %v", key, err)
	}
}

// viewShot keeps a screenshot of the window as a person sees it (a full
// page of a tall card would hide what is in view).
func (f *webFlow) viewShot(t *testing.T, name string) {
	t.Helper()
	b, err := chromedp.Run(f.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(artifactDir(t), name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// rect is an element's box in the viewport, as getBoundingClientRect says.
type rect struct{ Top, Bottom, Left, Right float64 }

func (f *webFlow) rect(t *testing.T, sel string) rect {
	t.Helper()
	s := eval[string](t, f, `(() => { const e = document.querySelector(`+"`"+sel+"`"+`); if (!e) return "";
		const r = e.getBoundingClientRect(); return [r.top, r.bottom, r.left, r.right].join(" "); })()`)
	if s == "" {
		t.Fatalf("nothing matches %s", sel)
	}
	var r rect
	fmt.Sscan(s, &r.Top, &r.Bottom, &r.Left, &r.Right)
	return r
}

// inView says whether r lies wholly inside a viewport of height h.
func (r rect) inView(h float64) bool { return r.Top >= 0 && r.Bottom <= h && r.Bottom > r.Top }

// TestBrowser_Review_Layout: with 14 proposals waiting, at 1280×800, the
// queue is beside the open card and its first rows are in view; the open
// card is a 7-file commit far taller than the window, and its decision
// bar is in view without scrolling, stays in view while the card scrolls
// (and so does the queue), and after an approval the notice with its Undo
// is drawn in the next card's bar, in view. Below 1100 px the card is
// above the queue. Rows are named by their commit message and count
// their files.
func TestBrowser_Review_Layout(t *testing.T) {
	f := startWebFlowWithin(t, 3*time.Minute)
	// An agent may have only so many proposals waiting: two agents.
	cs := agentSession(t, f.env, "claude-code")
	other := agentSession(t, f.env, "codex")
	big := f.proposeFiles(t, cs, 7)
	var ids []string
	for i := 0; i < 13; i++ {
		who := cs
		if i%2 == 1 {
			who = other
		}
		ids = append(ids, f.proposeFile(t, who, fmt.Sprintf("f%02d.txt", i)))
	}
	const w, h = 1280, 800
	if err := chromedp.Do(f.ctx, chromedp.EmulateViewport(w, h), chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	until(t, f, "14 rows", `document.querySelectorAll(".queue-row").length === 14`)
	until(t, f, "the 7-file card's diff", `!!document.querySelector("#card-`+big+` .d2h-file-wrapper")`)
	until(t, f, "Approve enabled", `!!document.querySelector("#card-`+big+` .approve:not([disabled])")`)
	f.viewShot(t, "web-review-1280.png")

	if y := eval[float64](t, f, `window.scrollY`); y != 0 {
		t.Fatalf("the page opened scrolled to %.0f", y)
	}
	cardH := f.rect(t, cardSel(big))
	t.Logf("the 7-file card is %.0f px tall in a %d px window", cardH.Bottom-cardH.Top, h)
	if cardH.Bottom-cardH.Top < 2*h {
		t.Fatalf("the card is only %.0f px tall: the test needs one far taller than the window", cardH.Bottom-cardH.Top)
	}
	list := f.rect(t, ".review-list")
	if cardH.Left < list.Right {
		t.Errorf("the card (left %.0f) is not beside the queue (right %.0f)", cardH.Left, list.Right)
	}
	// The first rows and the decision bar, without scrolling.
	check := func(when string) {
		t.Helper()
		for i := 1; i <= 3; i++ {
			r := f.rect(t, fmt.Sprintf(".queue-item:nth-child(%d) .queue-row", i))
			if !r.inView(h) {
				t.Errorf("%s: row %d is at %.0f–%.0f px, outside the %d px window", when, i, r.Top, r.Bottom, h)
			}
		}
		bar := f.rect(t, cardSel(big)+" form.decision-bar")
		approve := f.rect(t, cardSel(big)+" .approve")
		t.Logf("%s: first row at %.0f px, decision bar at %.0f–%.0f px", when, f.rect(t, ".queue-row").Top, bar.Top, bar.Bottom)
		if !bar.inView(h) || !approve.inView(h) {
			t.Errorf("%s: the decision bar is at %.0f–%.0f px (Approve %.0f–%.0f), outside the %d px window", when, bar.Top, bar.Bottom, approve.Top, approve.Bottom, h)
		}
	}
	check("unscrolled")
	rows := eval[string](t, f, `document.querySelector(".queue-item[data-id='`+big+`'] .queue-row").textContent`)
	for _, want := range []string{"Add the seven parts", "commit in widgets", "claude-code", "7 files"} {
		if !strings.Contains(rows, want) {
			t.Errorf("the row %q lacks %q", rows, want)
		}
	}
	if got := eval[string](t, f, `document.getElementById("pending-title").textContent`); got != "14 proposals waiting" {
		t.Errorf("heading %q", got)
	}

	// Halfway down the card, the bar and the queue are still in view.
	eval[bool](t, f, `window.scrollTo(0, 1200), true`)
	until(t, f, "the scroll", `window.scrollY >= 1100`)
	check("scrolled 1200 px")
	f.viewShot(t, "web-review-1280-scrolled.png")

	// Approving from there: the next card opens, and what became of the
	// approval (with its Undo once it landed) is next to its bar, in view.
	until(t, f, "the card ready to approve", `!!document.querySelector("`+cardSel(big)+` .approve:not([disabled])")`)
	press(t, f, "a")
	until(t, f, "the approval's notice, landed", `!!document.querySelector("#decided-`+big+`[data-state='completed']")`)
	until(t, f, "the next card", `!!document.querySelector("#card-`+ids[0]+`")`)
	if in := eval[bool](t, f, `!!document.querySelector("#card-`+ids[0]+` form.decision-bar #decided-`+big+`")`); !in {
		t.Errorf("the approval's notice is not in the next card's decision bar")
	}
	until(t, f, "the Undo of the approval", `!!document.querySelector("#decided-`+big+` .undo-approval")`)
	if n := f.rect(t, "#decided-"+big); !n.inView(h) {
		t.Errorf("the approval's notice is at %.0f–%.0f px, outside the %d px window", n.Top, n.Bottom, h)
	}
	if s := f.state(t, big); s != proposal.Completed {
		t.Fatalf("the 7-file commit is %s", s)
	}
	f.viewShot(t, "web-review-undo-notice.png")

	// A narrow window: the card above the queue.
	if err := chromedp.Do(f.ctx, chromedp.EmulateViewport(1000, h)); err != nil {
		t.Fatal(err)
	}
	until(t, f, "the narrow layout", `document.querySelector(".review-card").getBoundingClientRect().top < document.querySelector(".review-list").getBoundingClientRect().top`)
	f.viewShot(t, "web-review-1000.png")
}

// TestBrowser_Review_ReplacedCardTakesNoKey: the open card is withdrawn
// by its agent through the real sidecar; the next card takes its place,
// the page says so, and an a pressed as soon as that card could be
// approved does not approve the card the person never saw. After the pause, a key press lets the keys act
// again.
func TestBrowser_Review_ReplacedCardTakesNoKey(t *testing.T) {
	f := startWebFlow(t)
	cs := agentSession(t, f.env, "claude-code")
	a := f.proposeFile(t, cs, "a.txt")
	b := f.proposeFile(t, cs, "b.txt")
	until(t, f, "two rows", `document.querySelectorAll(".queue-row").length === 2`)
	until(t, f, "card A open", `!!document.querySelector("`+cardSel(a)+`") && !document.querySelector("`+cardSel(b)+`")`)
	until(t, f, "A's Approve enabled", `!!document.querySelector("`+cardSel(a)+` .approve:not([disabled])")`)
	// A pause a loaded machine cannot outlast between the card taking A's
	// place and the test's key press (the default is 1.5 s).
	eval[bool](t, f, `localStorage.setItem("sluice.replacedPauseMs", "8000"), true`)

	if out, isErr := callTool(t, cs, "proposal_cancel", map[string]any{"proposalId": a}); isErr {
		t.Fatalf("proposal_cancel: %v", out)
	}
	// a at the first moment it could approve card B.
	until(t, f, "card B in A's place, ready to approve", `!!document.querySelector("`+cardSel(b)+` .approve:not([disabled])")`)
	press(t, f, "a")
	until(t, f, "the notice that the card was replaced", `(() => {
		const n = document.getElementById("replaced-notice");
		return !!n && n.getBoundingClientRect().height > 0 && /withdrawn by the agent; this is another card/.test(n.textContent);
	})()`)
	if r := f.rect(t, "#replaced-notice"); !r.inView(eval[float64](t, f, `window.innerHeight`)) {
		t.Errorf("the notice is at %.0f–%.0f px, out of view", r.Top, r.Bottom)
	}
	f.viewShot(t, "web-review-replaced.png")
	// The keys wait for the pause, and then for one key press.
	until(t, f, "the end of the pause", `/Press any key/.test(document.getElementById("replaced-notice").textContent)`)
	if s := f.state(t, b); s != proposal.Pending {
		t.Fatalf("card B is %s after an a meant for card A", s)
	}
	if n := eval[int](t, f, `document.querySelectorAll("#decided-`+b+`").length`); n != 0 {
		t.Fatalf("card B was decided")
	}
	if s := f.state(t, a); s != proposal.Cancelled {
		t.Fatalf("card A is %s", s)
	}
	press(t, f, "x")
	until(t, f, "the keys free again", `document.getElementById("replaced-notice").dataset.holding === "false"`)
	until(t, f, "B's Approve enabled", `!!document.querySelector("`+cardSel(b)+` .approve:not([disabled])")`)
	press(t, f, "a")
	until(t, f, "B approved by the person's a", `!!document.querySelector("#decided-`+b+`")`)
	waitFor(t, desktopWait, "B to land", func() bool { return f.state(t, b) == proposal.Completed })
}

// TestBrowser_Review_KeysAndSearch: ? lists the keys in a dialog that
// Escape closes; / puts the cursor in the search box, which filters the
// queue by file name and by subject; Escape goes back to the card. a on a
// stale card says why it cannot be approved.
func TestBrowser_Review_KeysAndSearch(t *testing.T) {
	f := startWebFlow(t)
	cs := agentSession(t, f.env, "claude-code")
	one := f.proposeWithReason(t, cs, "notes.md", "Keep the meeting notes")
	two := f.proposeFile(t, cs, "todo.txt")
	until(t, f, "two rows", `document.querySelectorAll(".queue-row").length === 2`)
	until(t, f, "the first card", `!!document.querySelector("`+cardSel(one)+`")`)

	pressKey(t, f, "?")
	until(t, f, "the keys dialog", `!!document.querySelector("[role=dialog]#keys-help")`)
	text := eval[string](t, f, `document.getElementById("keys-help").textContent`)
	for _, want := range []string{"approve", "reject", "undo", "search", "send a stale proposal back"} {
		if !strings.Contains(text, want) {
			t.Errorf("the keys dialog lacks %q: %q", want, text)
		}
	}
	f.shot(t, "web-review-keys.png")
	f.axeClean(t, "the keys dialog")
	press(t, f, "\x1b")
	until(t, f, "the dialog closed", `!document.getElementById("keys-help")`)

	pressKey(t, f, "/")
	until(t, f, "the search box focused", `document.activeElement && document.activeElement.id === "queue-search"`)
	press(t, f, "todo")
	until(t, f, "only the todo row", `Array.from(document.querySelectorAll(".queue-item")).map(e => e.dataset.id).join() === "`+two+`"`)
	until(t, f, "its card open", `!!document.querySelector("`+cardSel(two)+`")`)
	// Keys typed in the box are text: nothing was approved.
	if s := f.state(t, two); s != proposal.Pending {
		t.Fatalf("typing in the search box decided: %s", s)
	}
	eval[bool](t, f, `(() => { const s = document.getElementById("queue-search"); s.select(); return true; })()`)
	press(t, f, "Add notes.md")
	until(t, f, "only the notes row, by its commit message", `Array.from(document.querySelectorAll(".queue-item")).map(e => e.dataset.id).join() === "`+one+`"`)
	press(t, f, "\x1b")
	until(t, f, "the focus back on the card", `document.activeElement && document.activeElement.id === "card-`+one+`"`)

	// The person commits other notes to the same file first: the open
	// card is stale (a real conflict, which no re-sealing can cure), and a
	// says why it cannot be approved.
	if err := os.WriteFile(filepath.Join(f.repo, "notes.md"), []byte("other notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitxtest.Git(t, f.repo, "add", "notes.md")
	gitxtest.Git(t, f.repo, "commit", "-q", "-m", "My own notes")
	until(t, f, "the card stale", `document.querySelector("`+cardSel(one)+`")?.dataset.stale === "true"`)
	press(t, f, "a")
	until(t, f, "why it cannot be approved", `/cannot be approved: it is stale .*Send it back/.test(document.querySelector("`+cardSel(one)+` .decision-bar .refusal")?.textContent ?? "")`)
	if s := f.state(t, one); s != proposal.Pending {
		t.Fatalf("the stale card is %s", s)
	}
	f.viewShot(t, "web-review-stale-a.png")
	f.axeClean(t, "a stale card's refusal")

	// The log of notices, opened (at the top of the page: the sticky
	// header would cover a button scrolled just into view).
	eval[bool](t, f, `window.scrollTo(0, 0), true`)
	until(t, f, "the top of the page", `window.scrollY === 0`)
	if err := chromedp.Do(f.ctx, chromedp.Click(chromedp.CSS(".notice-log-toggle"))); err != nil {
		t.Fatal(err)
	}
	until(t, f, "the notices log", `!!document.getElementById("notice-log")`)
	f.axeClean(t, "the notices log")
}

// axeClean runs axe-core (when SLUICE_TOOLS_DIR has it) on the page as it
// is: what the review layout adds has no serious or critical violation.
func (f *webFlow) axeClean(t *testing.T, what string) {
	t.Helper()
	if !eval[bool](t, f, `typeof axe !== "undefined"`) {
		if _, err := chromedp.Run(f.ctx, chromedp.Evaluate[bool](axeSource(t)+"\n;true")); err != nil {
			t.Fatalf("injecting axe-core: %v", err)
		}
	}
	out, err := chromedp.Run(f.ctx, chromedp.Evaluate[string](axeRun, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe on %s: %v", what, err)
	}
	var vs []axeViolation
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		t.Fatalf("axe's answer %q: %v", out, err)
	}
	for _, v := range vs {
		t.Errorf("%s: %s (%s) %s:\n    %s", what, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n    "))
	}
}
