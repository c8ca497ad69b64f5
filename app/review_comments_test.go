package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// proposeTwoFiles changes README.md and adds main.go in repo, and has cs
// propose committing both.
func proposeTwoFiles(t *testing.T, cs *mcp.ClientSession, repo string) string {
	t.Helper()
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("hello\nworld\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n\nfunc main() {\n\tfor {\n\t}\n}\n"), 0o644)
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Greet and loop", "message": "Greet and loop", "paths": []string{"README.md", "main.go"},
	})
	if isErr || out["status"] != "pending" {
		t.Fatalf("propose_commit: %v", out)
	}
	return out["proposalId"].(string)
}

// auditKinds lists the event types of proposal id's ledger entries.
func auditKinds(t *testing.T, api *API, id string) []AuditEntry {
	t.Helper()
	trail, err := api.ProposalAudit(id)
	if err != nil {
		t.Fatal(err)
	}
	return trail
}

// The decision's comments as the agent reads them: decision.comments of
// the tool's structured output.
func agentComments(t *testing.T, out map[string]any) []journal.Comment {
	t.Helper()
	dec, _ := out["decision"].(map[string]any)
	b, _ := json.Marshal(dec["comments"])
	var cs []journal.Comment
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatalf("decision.comments: %v (%s)", err, b)
	}
	return cs
}

// TestFlow_RejectComments_ReachAgentAndLedger: a rejection's notes on a
// file and on lines are checked against the proposal (nothing is recorded
// for bad ones), reach the agent through the real sidecar in proposal_wait
// and proposal_status, and are bound by the ledger's rejection entry,
// which the verifier accepts.
func TestFlow_RejectComments_ReachAgentAndLedger(t *testing.T) {
	a, repo, env := flowEnv(t)
	cs := agentSession(t, env, "claude-code")
	id := proposeTwoFiles(t, cs, repo)
	api := &API{app: a, kind: "web"}
	card, err := api.Proposal(id)
	if err != nil {
		t.Fatal(err)
	}

	long := strings.Repeat("x", journal.MaxCommentBytes+1)
	many := make([]journal.Comment, journal.MaxComments+1)
	for i := range many {
		many[i] = journal.Comment{Path: "README.md", Note: "n"}
	}
	for _, tc := range []struct {
		name     string
		comments []journal.Comment
		want     string
	}{
		{"a file the proposal does not touch", []journal.Comment{{Path: "LICENSE", Note: "x"}}, `"LICENSE" is not one of the proposal's files`},
		{"a negative line", []journal.Comment{{Path: "main.go", Line: -2, Side: "new", Note: "x"}}, "line -2 is negative"},
		{"a line without its side", []journal.Comment{{Path: "main.go", Line: 4, Note: "x"}}, `side must be "new" or "old"`},
		{"an empty note", []journal.Comment{{Path: "main.go", Note: " "}}, "the note is empty"},
		{"a note too long", []journal.Comment{{Path: "main.go", Note: long}}, "more than 2000"},
		{"too many", many, "at most 200 comments"},
	} {
		_, err := api.Reject(Decision{ID: id, Digest: card.Digest, Note: "no", Comments: tc.comments})
		if e, ok := errcode.As(err); !ok || e.Code != errcode.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Reject = %v, want invalid_argument with %q", tc.name, err, tc.want)
		}
	}
	// Notes go with a rejection only.
	if _, err := api.Approve(Decision{ID: id, Digest: card.Digest, Comments: []journal.Comment{{Path: "main.go", Note: "x"}}}); err == nil ||
		!strings.Contains(err.Error(), "with a rejection only") {
		t.Errorf("Approve with comments = %v", err)
	}
	// Nothing of it was recorded.
	if rec, _ := a.journal.Get(id); rec.State != proposal.Pending || rec.Decision != nil {
		t.Fatalf("after refused decisions the proposal is %s %+v", rec.State, rec.Decision)
	}
	if trail := auditKinds(t, api, id); len(trail) != 1 || trail[0]["event_type"] != "proposal_submitted" {
		t.Fatalf("after refused decisions the ledger has %v", trail)
	}

	comments := []journal.Comment{
		{Path: "main.go", Line: 4, Side: "new", Note: "this loop never ends"},
		{Path: "README.md", Line: 1, Side: "old", Note: "keep the first line as it was"},
		{Path: "README.md", Note: "say who the greeting is for"},
	}
	got, err := api.Reject(Decision{ID: id, Digest: card.Digest, Note: "not like this", Comments: comments})
	if err != nil || got.State != proposal.Rejected || got.Decision == nil || !slices.Equal(got.Decision.Comments, comments) {
		t.Fatalf("Reject = %+v, %v", got.Decision, err)
	}

	for _, tool := range []string{"proposal_wait", "proposal_status"} {
		out, isErr := callTool(t, cs, tool, map[string]any{"proposalId": id})
		if !isErr || out["status"] != "rejected" {
			t.Fatalf("%s: isError=%v %v", tool, isErr, out)
		}
		if cs := agentComments(t, out); !slices.Equal(cs, comments) {
			t.Errorf("%s: the agent reads %+v, want %+v", tool, cs, comments)
		}
		errObj, _ := out["error"].(map[string]any)
		if msg, _ := errObj["message"].(string); !strings.Contains(msg, "not like this (with 3 note(s) on files and lines in decision.comments)") {
			t.Errorf("%s: error message %q", tool, msg)
		}
	}

	trail := auditKinds(t, api, id)
	last := trail[len(trail)-1]
	data, _ := last["data"].(map[string]any)
	fp, _ := audit.ArgsFingerprint(comments)
	if last["event_type"] != "proposal_rejected" || fmt.Sprint(data["comments"]) != "3" || data["comments_fingerprint"] != fp {
		t.Fatalf("the ledger's rejection entry: %v", last)
	}
	if raw, _ := os.ReadFile(a.cfg.AuditLog()); bytes.Contains(raw, []byte("this loop never ends")) || bytes.Contains(raw, []byte("main.go")) {
		t.Error("the ledger holds a note or a file name")
	}
	var outb, errb bytes.Buffer
	if code := audit.VerifyCommand([]string{a.cfg.AuditLog(), "--pubkey", a.cfg.AuditPublicKeyFile(), "--require-signed"}, &outb, &errb); code != 0 {
		t.Fatalf("verify-audit exit %d: %s %s", code, outb.String(), errb.String())
	}
}

// TestWeb_RejectComments_Route: the web route takes a rejection with the
// most notes of the longest size (far over a plain decision's body), and
// answers a bad one with invalid_argument, recording nothing.
func TestWeb_RejectComments_Route(t *testing.T) {
	a, repo, env := flowEnv(t)
	cs := agentSession(t, env, "codex")
	id := proposeTwoFiles(t, cs, repo)
	card, err := (&API{app: a, kind: "web"}).Proposal(id)
	if err != nil {
		t.Fatal(err)
	}
	w, token, err := NewWeb(a, testAssets, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go w.Serve()
	t.Cleanup(func() { w.Shutdown(t.Context()) })
	base := "http://" + w.Addr()
	c := newBrowserClient(t)
	get(t, c, w.LoginURL(token), nil)
	_, body := get(t, c, base+"/api/session", nil)
	var s struct{ CSRF string }
	json.Unmarshal([]byte(body), &s)
	post := func(v any) (int, string) {
		b, _ := json.Marshal(v)
		req, _ := http.NewRequest(http.MethodPost, base+"/api/proposals/"+id+"/reject", bytes.NewReader(b))
		req.Header.Set(csrfHeader, s.CSRF)
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}

	status, out := post(map[string]any{"digest": card.Digest, "note": "no",
		"comments": []map[string]any{{"path": "main.go", "line": 0, "note": "x"}, {"path": "go.mod", "line": 0, "note": "x"}}})
	if status != http.StatusBadRequest || !strings.Contains(out, `"invalid_argument"`) || !strings.Contains(out, "comment 2") {
		t.Fatalf("a bad comment: %d %s", status, out)
	}
	if rec, _ := a.journal.Get(id); rec.State != proposal.Pending {
		t.Fatalf("after a refused rejection the proposal is %s", rec.State)
	}

	most := make([]map[string]any, journal.MaxComments)
	for i := range most {
		// Each note as long as it may be, of characters JSON escapes.
		most[i] = map[string]any{"path": "main.go", "line": i + 1, "side": "new", "note": strings.Repeat("<", journal.MaxCommentBytes)}
	}
	status, out = post(map[string]any{"digest": card.Digest, "note": "no", "comments": most})
	if status != http.StatusOK {
		t.Fatalf("the most comments: %d %.300s", status, out)
	}
	rec, _ := a.journal.Get(id)
	if rec.State != proposal.Rejected || len(rec.Decision.Comments) != journal.MaxComments {
		t.Fatalf("after the rejection: %s, %d comments", rec.State, len(rec.Decision.Comments))
	}
}

// TestBrowser_RejectWithNotes_ReachAgent: an agent proposes through the
// real sidecar; in headless Chromium the person notes a line of the diff
// (clicking its number) and a file (its Note button), sees both above
// Reject, and rejects; the agent's proposal_wait returns both notes with
// their paths and lines.
func TestBrowser_RejectWithNotes_ReachAgent(t *testing.T) {
	f := startWebFlow(t)
	cs := agentSession(t, f.env, "claude-code")
	id := proposeTwoFiles(t, cs, f.repo)
	card := cardSel(id)
	if err := chromedp.Do(f.ctx,
		chromedp.WaitVisible(chromedp.CSS(card+" .diff-view .d2h-file-wrapper")),
		chromedp.WaitVisible(chromedp.CSS(card+" .review-note-add")),
	); err != nil {
		t.Fatalf("the card's diff: %v", err)
	}
	// Line 4 of main.go (the loop), on the new side: the right-hand
	// table of side by side, or the second number of line by line.
	clickLine := `(() => {
		const w = Array.from(document.querySelectorAll("` + card + ` .d2h-file-wrapper")).find((w) => w.querySelector(".d2h-file-name")?.textContent.trim() === "main.go");
		if (!w) return false;
		const sides = w.querySelectorAll(".d2h-file-side-diff");
		const cells = sides.length === 2
			? Array.from(sides[1].querySelectorAll(".d2h-code-side-linenumber"))
			: Array.from(w.querySelectorAll(".d2h-code-linenumber .line-num2"));
		const cell = cells.find((c) => c.textContent.trim() === "4");
		if (!cell) return false;
		cell.scrollIntoView({block: "center"});
		cell.click();
		return true;
	})()`
	if _, err := chromedp.Run(f.ctx, chromedp.Poll[bool](clickLine, chromedp.WithPollingTimeout(desktopWait))); err != nil {
		t.Fatalf("line 4 of main.go: %v", err)
	}
	if err := chromedp.Do(f.ctx,
		chromedp.WaitVisible(chromedp.CSS(card+` .note-editor[aria-label="Note on main.go, line 4"] textarea`)),
		chromedp.SendKeys(chromedp.CSS(card+" .note-editor textarea"), "this loop never ends"),
		chromedp.Click(chromedp.CSS(card+" .note-editor .note-save")),
		chromedp.WaitVisible(chromedp.CSS(card+" .review-note-row .review-note-inline")),
	); err != nil {
		t.Fatalf("a note on a line: %v", err)
	}
	// The file's Note button, from the keyboard.
	readmeNote := card + ` .review-note-add[aria-label="Add a note on README.md for the agent"]`
	if err := chromedp.Do(f.ctx,
		chromedp.Focus(chromedp.CSS(readmeNote)),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(card+` .note-editor[aria-label="Note on README.md"] textarea`)),
		chromedp.SendKeys(chromedp.CSS(card+" .note-editor textarea"), "say who the greeting is for"),
		chromedp.Click(chromedp.CSS(card+" .note-editor .note-save")),
		chromedp.WaitVisible(chromedp.CSS(card+" .review-note-file")),
	); err != nil {
		t.Fatalf("a note on a file: %v", err)
	}
	listed, err := chromedp.Run(f.ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("`+card+` .review-notes li")).map((li) => li.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || !strings.HasPrefix(listed[0], "main.go, line 4 this loop never ends") || !strings.HasPrefix(listed[1], "README.md say who the greeting is for") {
		t.Fatalf("the notes above Reject: %q", listed)
	}
	f.shot(t, "web-review-notes.png")
	if err := chromedp.Do(f.ctx,
		chromedp.Click(chromedp.CSS(card+" .reject")),
		chromedp.WaitVisible(chromedp.CSS(decidedSel(id)+`[data-state="rejected"]`)),
	); err != nil {
		t.Fatalf("reject: %v", err)
	}
	out, isErr := callTool(t, cs, "proposal_wait", map[string]any{"proposalId": id, "timeoutSeconds": 5})
	if !isErr || out["status"] != "rejected" {
		t.Fatalf("the agent sees: isError=%v %v", isErr, out)
	}
	want := []journal.Comment{
		{Path: "main.go", Line: 4, Side: "new", Note: "this loop never ends"},
		{Path: "README.md", Note: "say who the greeting is for"},
	}
	if got := agentComments(t, out); !slices.Equal(got, want) {
		t.Fatalf("the agent reads %+v, want %+v", got, want)
	}
}
