package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/proposal"
)

// proposeFile writes name in the repository and has cs propose committing
// exactly that file.
func (f *webFlow) proposeFile(t *testing.T, cs *mcp.ClientSession, name string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.repo, name), []byte("content of "+name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": f.repo, "reason": "Add " + name, "message": "Add " + name, "paths": []string{name},
	})
	if isErr {
		t.Fatalf("propose_commit %s: %v", name, out)
	}
	return out["proposalId"].(string)
}

// proposeBranch has cs propose creating branch name at the commit HEAD is
// on now (a SHA, so that one approval does not make the others stale).
func (f *webFlow) proposeBranch(t *testing.T, cs *mcp.ClientSession, name string) string {
	t.Helper()
	out, isErr := callTool(t, cs, "propose_branch", map[string]any{
		"repoPath": f.repo, "reason": "Start " + name, "name": name,
		"startPoint": gitxtest.Git(t, f.repo, "rev-parse", "HEAD"),
	})
	if isErr {
		t.Fatalf("propose_branch %s: %v", name, out)
	}
	return out["proposalId"].(string)
}

// proposeWithReason is proposeFile with the agent's own reason.
func (f *webFlow) proposeWithReason(t *testing.T, cs *mcp.ClientSession, name, reason string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.repo, name), []byte("content of "+name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": f.repo, "reason": reason, "message": "Add " + name, "paths": []string{name},
	})
	if isErr {
		t.Fatalf("propose_commit %s: %v", name, out)
	}
	return out["proposalId"].(string)
}

// eval runs a JavaScript expression on the page.
func eval[T any](t *testing.T, f *webFlow, js string) T {
	t.Helper()
	v, err := chromedp.Run(f.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// until waits for a JavaScript condition on the page; the deadline only
// guards against a hang.
func until(t *testing.T, f *webFlow, what, js string) {
	t.Helper()
	if _, err := chromedp.Run(f.ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(desktopWait))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, js, err)
	}
}

// press types one key into whatever has the focus, as a person would.
func press(t *testing.T, f *webFlow, key string) {
	t.Helper()
	if err := chromedp.Do(f.ctx, chromedp.KeyEvent(key)); err != nil {
		t.Fatalf("key %q: %v", key, err)
	}
}

func (f *webFlow) state(t *testing.T, id string) proposal.State {
	t.Helper()
	rec, err := f.app.journal.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return rec.State
}

// TestBrowser_Queue_KeyboardOnly: several proposals wait in a compact
// queue with one card open. With the keyboard only, the person moves with
// j/k, approves with a, rejects with r and undoes it with u; after every
// decision the focus is on the next card, the decided card leaves the
// queue with a notice, and the count in the navigation and the title
// follows. A proposal that expires on screen stays, saying so.
func TestBrowser_Queue_KeyboardOnly(t *testing.T) {
	f := startWebFlow(t)
	// The undo window is made long, so that the undo below is the
	// person's doing and never a race with the clock; the reject is sent
	// when the person moves on.
	eval[bool](t, f, `localStorage.setItem("sluice.rejectUndoMs", "600000"), true`)
	cs := agentSession(t, f.env, "claude-code")
	ids := []string{f.proposeFile(t, cs, "a.txt"), f.proposeBranch(t, cs, "agent/b"), f.proposeBranch(t, cs, "agent/c")}

	until(t, f, "three rows", `document.querySelectorAll(".queue-row").length === 3`)
	until(t, f, "the count in the title", `document.title === "(3) Sluice"`)
	until(t, f, "the count in the navigation", `!!document.querySelector('nav button[aria-label="Pending 3 waiting"]')`)
	open := func() string {
		return eval[string](t, f, `Array.from(document.querySelectorAll("article.card")).map(e => e.id).join(",")`)
	}
	if got := open(); got != "card-"+ids[0] {
		t.Fatalf("open cards %q, want only the oldest", got)
	}
	rows := eval[string](t, f, `document.querySelector(".queue-item[data-id='`+ids[1]+`'] .queue-row").textContent`)
	for _, want := range []string{"branch in widgets", "claude-code", "low", "ago"} {
		if !strings.Contains(rows, want) {
			t.Errorf("row %q lacks %q", rows, want)
		}
	}
	if h := eval[float64](t, f, `document.querySelector(".queue").getBoundingClientRect().height`); h > 1200 {
		t.Errorf("a queue of three is %.0f px tall", h)
	}
	t.Logf("queue of three with one card open: %.0f px", eval[float64](t, f, `document.querySelector(".queue").getBoundingClientRect().height`))

	press(t, f, "j")
	until(t, f, "j to open the second card", `document.activeElement && document.activeElement.id === "card-`+ids[1]+`"`)
	if got := open(); got != "card-"+ids[1] {
		t.Fatalf("after j: open %q", got)
	}
	press(t, f, "k")
	until(t, f, "k to open the first card again", `document.activeElement && document.activeElement.id === "card-`+ids[0]+`"`)

	// a approves the first (once its diff is on screen): it lands, leaves
	// the queue with a notice, and the focus is on the next card.
	until(t, f, "the first card ready to approve", `!!document.querySelector("#card-`+ids[0]+` .approve:not([disabled])")`)
	press(t, f, "a")
	until(t, f, "the approved card's notice", `!!document.querySelector("#decided-`+ids[0]+`[data-state='completed']")`)
	until(t, f, "the focus on the next card", `document.activeElement && document.activeElement.id === "card-`+ids[1]+`"`)
	if got := gitxtest.Git(t, f.repo, "log", "-1", "--format=%s"); got != "Add a.txt" {
		t.Fatalf("HEAD after approving: %q", got)
	}
	until(t, f, "the count of two in the title", `document.title === "(2) Sluice"`)
	until(t, f, "the count of two in the navigation", `!!document.querySelector('nav button[aria-label="Pending 2 waiting"]')`)
	if n := eval[int](t, f, `document.querySelectorAll(".queue-item[data-id='`+ids[0]+`']").length`); n != 0 {
		t.Errorf("the approved card is still in the queue")
	}

	// r holds the reject back: the card leaves, the next one is focused,
	// nothing is sent yet; u brings it back.
	press(t, f, "r")
	until(t, f, "the undo notice", `!!document.querySelector(".undo-notice[data-id='`+ids[1]+`']")`)
	until(t, f, "the focus on the third card", `document.activeElement && document.activeElement.id === "card-`+ids[2]+`"`)
	if s := f.state(t, ids[1]); s != proposal.Pending {
		t.Fatalf("the held reject was sent at once: %s", s)
	}
	f.shot(t, "web-queue-undo.png")
	press(t, f, "u")
	until(t, f, "the undone card open and focused", `document.activeElement && document.activeElement.id === "card-`+ids[1]+`" && !document.querySelector(".undo-notice")`)
	if s := f.state(t, ids[1]); s != proposal.Pending {
		t.Fatalf("after undo the proposal is %s", s)
	}

	// r again, then a on the next card: moving on sends the reject, then
	// the approval.
	press(t, f, "r")
	until(t, f, "the focus on the third card", `document.activeElement && document.activeElement.id === "card-`+ids[2]+`"`)
	until(t, f, "the third card ready to approve", `!!document.querySelector("#card-`+ids[2]+` .approve:not([disabled])")`)
	press(t, f, "a")
	until(t, f, "the rejected card's notice", `!!document.querySelector("#decided-`+ids[1]+`[data-state='rejected']")`)
	until(t, f, "the third card's notice", `!!document.querySelector("#decided-`+ids[2]+`[data-state='completed']")`)
	if got := gitxtest.Git(t, f.repo, "branch", "--list", "agent/*"); strings.TrimSpace(got) != "agent/c" {
		t.Errorf("branches after the decisions: %q", got)
	}
	if s := f.state(t, ids[1]); s != proposal.Rejected {
		t.Fatalf("the second proposal is %s, want rejected", s)
	}
	out, isErr := callTool(t, cs, "proposal_wait", map[string]any{"proposalId": ids[1], "timeoutSeconds": 5})
	if !isErr || out["status"] != "rejected" {
		t.Fatalf("the agent sees: isError=%v %v", isErr, out)
	}
	until(t, f, "no count in the title", `document.title === "Sluice"`)
	until(t, f, "no count in the navigation", `!document.querySelector('nav button[aria-label^="Pending "]')`)
	f.shot(t, "web-queue-decided.png")

}

// TestBrowser_Queue_ExpiredCardStays: a proposal that expires while it is
// on screen stays in the queue, saying so, and the count drops. The
// shortest expiry a sidecar accepts is a minute, so this test waits for
// the real one.
func TestBrowser_Queue_ExpiredCardStays(t *testing.T) {
	f := startWebFlowWithin(t, 3*time.Minute)
	short := agentSession(t, append(append([]string{}, f.env...), "SLUICE_PENDING_EXPIRY=1m"), "codex")
	gone := f.proposeFile(t, short, "d.txt")
	until(t, f, "the short-lived card", `!!document.getElementById("card-`+gone+`")`)
	until(t, f, "the count in the title", `document.title === "(1) Sluice"`)
	if _, err := chromedp.Run(f.ctx, chromedp.Poll[bool](
		`!!document.querySelector(".queue-item[data-id='`+gone+`'][data-state='expired']")`,
		chromedp.WithPollingTimeout(100*time.Second))); err != nil {
		t.Fatalf("the expired card vanished or never expired: %v", err)
	}
	if s := f.state(t, gone); s != proposal.Expired {
		t.Fatalf("the proposal is %s", s)
	}
	text := eval[string](t, f, `document.querySelector(".queue-item[data-id='`+gone+`']").textContent`)
	if !strings.Contains(text, "expired") || !strings.Contains(text, "before anyone decided") {
		t.Errorf("the expired card does not say so: %q", text)
	}
	until(t, f, "no count in the title", `document.title === "Sluice"`)
	f.shot(t, "web-queue-expired.png")
}

// TestBrowser_NarrowLayout: at 420 px the header is one short line, a
// diff opens line by line, and no screen scrolls sideways (tables scroll
// inside themselves). At 1366 px, and in the desktop window's 1100 px,
// Connect does not overflow and History's last column is not cut off.
func TestBrowser_NarrowLayout(t *testing.T) {
	f := startWebFlow(t)
	// Connect shows the configurations for the sidecar that was built.
	t.Setenv("SLUICE_SIDECAR", filepath.Join(binDir(t), "sluice-sidecar"))
	cs := agentSession(t, f.env, "claude-code")
	api := &API{app: f.app, kind: "web"}
	// History gets what makes its columns wide: a long reason, a commit's
	// outcome, and a stale proposal sent back with what moved.
	long := f.proposeWithReason(t, cs, "long.txt", "Add the long file, because the reason an agent gives is often a whole paragraph that explains what it changed and why, and the History screen must still show every column of its row")
	stale := f.proposeWithReason(t, cs, "stale.txt", "Add a file that will go stale when the other commit lands first")
	if _, err := api.Approve(Decision{ID: long, Digest: f.digest(t, long)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, desktopWait, "the long commit to land", func() bool { return f.state(t, long) == proposal.Completed })
	// Re-sealed on the long commit (it touches another file), it goes
	// stale only when the person commits their own stale.txt.
	waitFor(t, time.Minute, "the other card to be re-sealed", func() bool {
		rec, err := f.app.journal.Get(stale)
		return err == nil && len(rec.Reseals) > 0
	})
	if err := os.WriteFile(filepath.Join(f.repo, "stale.txt"), []byte("the person's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitxtest.Git(t, f.repo, "add", "stale.txt")
	gitxtest.Git(t, f.repo, "commit", "-q", "-m", "my stale.txt")
	waitFor(t, time.Minute, "the other card to be marked stale", func() bool { return f.app.pending.staleWhy(stale) != "" })
	if _, err := api.SendBack(Decision{ID: stale, Digest: f.digest(t, stale)}); err != nil {
		t.Fatal(err)
	}
	a := f.proposeFile(t, cs, "a.txt")
	b := f.proposeFile(t, cs, "b.txt")
	if _, err := api.Reject(Decision{ID: b, Digest: f.digest(t, b), Note: "a long note so that the outcome column has something to hold"}); err != nil {
		t.Fatal(err)
	}

	if err := chromedp.Do(f.ctx, chromedp.EmulateViewport(420, 860), chromedp.Navigate(f.base+"/#/pending"), chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	until(t, f, "the card's diff", `!!document.querySelector("#card-`+a+` .d2h-file-wrapper")`)
	header := eval[float64](t, f, `document.querySelector(".topbar").getBoundingClientRect().height`)
	t.Logf("header at 420 px: %.0f px", header)
	if header > 56 {
		t.Errorf("the header takes %.0f px at 420 px", header)
	}
	if mode := eval[string](t, f, `document.querySelector("#card-`+a+` .d2h-file-side-diff") ? "side-by-side" : document.querySelector("#card-`+a+` .d2h-file-diff") ? "line-by-line" : "none"`); mode != "line-by-line" {
		t.Errorf("diff at 420 px: %s", mode)
	}
	f.shot(t, "web-narrow-pending.png")
	noOverflow := func(width int, screen string) {
		t.Helper()
		w := eval[int](t, f, `document.documentElement.scrollWidth`)
		if w > width {
			wide := eval[string](t, f, `Array.from(document.querySelectorAll("body *")).filter(e => e.getBoundingClientRect().right > `+fmt.Sprint(width)+` && e.children.length === 0).slice(0, 8).map(e => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right)).join("; ")`)
			t.Errorf("%s at %d px: the page is %d px wide; wider: %s", screen, width, w, wide)
		}
	}
	noOverflow(420, "pending")
	for _, s := range []struct{ hash, ready string }{
		{"history", `!!document.getElementById("history-` + b + `")`},
		{"audit", `document.querySelectorAll("main td").length > 0`},
		{"connect", connectReady},
		{"settings", `!!document.querySelector("main h1")`},
		{"timeline", `!!document.querySelector("main h1")`},
		{"rules", `!!document.querySelector("main h1")`},
		{"workspaces", `!!document.querySelector("main h1")`},
	} {
		if err := chromedp.Do(f.ctx, chromedp.Navigate(f.base+"/#/"+s.hash)); err != nil {
			t.Fatal(err)
		}
		until(t, f, s.hash, s.ready)
		noOverflow(420, s.hash)
	}
	if err := chromedp.Do(f.ctx, chromedp.Navigate(f.base+"/#/history")); err != nil {
		t.Fatal(err)
	}
	until(t, f, "history", `!!document.getElementById("history-`+b+`")`)
	f.shot(t, "web-narrow-history.png")

	for _, width := range []int64{1366, 1100} {
		if err := chromedp.Do(f.ctx, chromedp.EmulateViewport(width, 860), chromedp.Navigate(f.base+"/#/connect")); err != nil {
			t.Fatal(err)
		}
		until(t, f, "connect", connectReady)
		noOverflow(int(width), "connect")
		f.shot(t, fmt.Sprintf("web-connect-%d.png", width))
		if err := chromedp.Do(f.ctx, chromedp.Navigate(f.base+"/#/history")); err != nil {
			t.Fatal(err)
		}
		until(t, f, "history", `!!document.getElementById("history-`+b+`")`)
		noOverflow(int(width), "history")
		f.shot(t, fmt.Sprintf("web-history-%d.png", width))
		// The Outcome column ends inside the table's box and the window,
		// with no scrolling needed.
		clip := eval[string](t, f, `(() => {
			const th = Array.from(document.querySelectorAll("table.history th")).pop();
			const box = document.querySelector("table.history").parentElement;
			const r = th.getBoundingClientRect(), b = box.getBoundingClientRect();
			return th.textContent + " " + Math.round(r.right) + " " + Math.round(b.right) + " " + box.scrollWidth + " " + box.clientWidth;
		})()`)
		var name string
		var right, boxRight, scrollW, clientW int
		fmt.Sscan(clip, &name, &right, &boxRight, &scrollW, &clientW)
		if name != "Outcome" || right > boxRight || right > int(width) || scrollW > clientW {
			t.Errorf("History's Outcome column at %d px: %s", width, clip)
		}
	}
}

// connectReady holds once the Connect screen shows a client's configuration.
const connectReady = `(document.querySelector(".preview code")?.textContent ?? "").length > 0`

// digest is the digest the journal holds for id.
func (f *webFlow) digest(t *testing.T, id string) string {
	t.Helper()
	rec, err := f.app.journal.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Proposal.Digest
}
