package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/proposal"
)

// TestBrowser_Approve_CommitLands_AndRestores is the whole loop in a real
// browser: an agent proposes a commit through the real sidecar, the card
// appears live, the person approves, the commit lands with its trailers,
// the agent's wait reports it done, the ledger verifies with signatures
// required, and the restore point on the timeline puts the branch back.
func TestBrowser_Approve_CommitLands_AndRestores(t *testing.T) {
	f := startWebFlow(t)
	before := gitxtest.Git(t, f.repo, "rev-parse", "HEAD")
	cs, out := f.proposeGreeting(t, "claude-code")
	id := out["proposalId"].(string)
	card := cardSel(id)
	if err := chromedp.Do(f.ctx,
		chromedp.WaitVisible(chromedp.CSS(card+" .diff-view .d2h-file-wrapper")),
		// Approve is enabled once the whole card is on screen.
		chromedp.WaitVisible(chromedp.CSS(card+" .approve:not([disabled])")),
		chromedp.Click(chromedp.CSS(card+" .approve")),
		chromedp.WaitVisible(chromedp.CSS(decidedSel(id)+`[data-state="completed"]`)),
	); err != nil {
		t.Fatalf("approve: %v", err)
	}
	msg := gitxtest.Git(t, f.repo, "log", "-1", "--format=%B")
	short := proposal.ShortDigest(out["digest"].(string))
	if !strings.Contains(msg, "Greet the world") || !strings.Contains(msg, "Sluice-Proposal: "+id) || !strings.Contains(msg, "Sluice-Approved-Digest: "+short) {
		t.Fatalf("commit message:\n%s", msg)
	}
	if got := gitxtest.Git(t, f.repo, "status", "--porcelain"); got != "" {
		t.Errorf("working tree after the commit: %q", got)
	}
	done, isErr := callTool(t, cs, "proposal_wait", map[string]any{"proposalId": id, "timeoutSeconds": 5})
	if isErr || done["status"] != "completed" || done["done"] != true {
		t.Fatalf("the agent's wait: isError=%v %v", isErr, done)
	}
	rep, err := (&API{app: f.app, kind: "web"}).VerifyAudit()
	if err != nil || !rep.OK || rep.Unsigned != 0 || rep.Signed < 4 {
		t.Fatalf("ledger after the loop: %+v %v", rep, err)
	}

	// The restore point of that commit, from the timeline.
	rec, err := f.app.journal.Get(id)
	if err != nil || rec.Outcome == nil || rec.Outcome.RestorePoint == "" {
		t.Fatalf("no restore point recorded: %+v %v", rec.Outcome, err)
	}
	rp := rec.Outcome.RestorePoint
	if err := chromedp.Do(f.ctx,
		chromedp.Navigate(f.base+"/#/timeline?repo="+f.repo),
		chromedp.WaitVisible(chromedp.CSS("#rp-"+rp+" .restore")),
		chromedp.Click(chromedp.CSS("#rp-"+rp+" .restore")),
		chromedp.WaitVisible(chromedp.CSS(".confirm-restore")),
	); err != nil {
		t.Fatalf("timeline: %v", err)
	}
	// The point is named by what it keeps, and the dialog says what a
	// restore changes compared with the repository now.
	after := gitxtest.Git(t, f.repo, "rev-parse", "HEAD")
	if err := chromedp.Do(f.ctx, chromedp.WaitVisible(chromedp.CSS(".restore-changes .restore-change"))); err != nil {
		t.Fatalf("the restore dialog never said what changes: %v", err)
	}
	label, err := chromedp.Run(f.ctx, chromedp.Text(chromedp.CSS("#rp-"+rp+" .rp-label")))
	if err != nil || label != "before commit 'Greet the world' by claude-code" {
		t.Fatalf("restore point label %q %v", label, err)
	}
	change, err := chromedp.Run(f.ctx, chromedp.Text(chromedp.CSS(".restore-changes .restore-change")))
	if err != nil {
		t.Fatal(err)
	}
	// innerText puts each SHA (with its copy button) on a line of its own.
	change = strings.ReplaceAll(change, "\n", "")
	if want := "main moves from " + after[:10] + " back to " + before[:10] + ": 1 commit leaves it"; !strings.Contains(change, want) {
		t.Fatalf("the restore dialog says %q, want %q", change, want)
	}
	f.shot(t, "web-timeline.png")
	if err := chromedp.Do(f.ctx, chromedp.Click(chromedp.CSS(".confirm-restore"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, desktopWait, "the branch to be restored", func() bool {
		return gitxtest.Git(t, f.repo, "rev-parse", "HEAD") == before
	})
	// The ledger entry of a finished restore is appended after the refs
	// moved: wait for it rather than race it.
	waitFor(t, desktopWait, "the restore in the ledger", func() bool {
		entries, err := (&API{app: f.app, kind: "web"}).Audit()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries.Entries {
			if e["event_type"] == "restore_completed" {
				return true
			}
		}
		return false
	})
}

// TestBrowser_StaleProposal_ShownStale: the branch moves after the
// proposal was made, with a commit of the person's to the file the card
// changes. The card says so before anyone decides, with what moved;
// Approve is disabled; sending it back reaches the agent's wait as
// stale_base with the new SHA, and nothing in the repository changed.
func TestBrowser_StaleProposal_ShownStale(t *testing.T) {
	f := startWebFlow(t)
	cs, out := f.proposeGreeting(t, "claude-code")
	id := out["proposalId"].(string)
	card := cardSel(id)
	if err := chromedp.Do(f.ctx, chromedp.WaitVisible(chromedp.CSS(card+" .outcome-block .sealed-files"))); err != nil {
		t.Fatalf("the card did not show its sealed outcome: %v", err)
	}
	// The person commits their own README.md first; the agent's edit is
	// still in the working tree.
	os.WriteFile(filepath.Join(f.repo, "README.md"), []byte("hello\nmine\n"), 0o644)
	gitxtest.Git(t, f.repo, "commit", "-q", "-am", "My readme")
	os.WriteFile(filepath.Join(f.repo, "README.md"), []byte("hello\nworld\n"), 0o644)
	head := gitxtest.Git(t, f.repo, "rev-parse", "HEAD")

	if err := chromedp.Do(f.ctx,
		chromedp.WaitVisible(chromedp.CSS(card+" .stale .send-back")),
		chromedp.WaitVisible(chromedp.CSS(card+" .approve[disabled]")),
	); err != nil {
		t.Fatalf("stale display: %v", err)
	}
	text, err := chromedp.Run(f.ctx, chromedp.Text(chromedp.CSS(card+" .stale")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "HEAD moved from") || !strings.Contains(text, head[:12]) {
		t.Errorf("the stale notice does not say what moved: %q", text)
	}
	f.shot(t, "web-stale.png")
	if err := chromedp.Do(f.ctx,
		chromedp.Click(chromedp.CSS(card+" .stale .send-back")),
		chromedp.WaitVisible(chromedp.CSS(decidedSel(id)+`[data-state="rejected"]`)),
	); err != nil {
		t.Fatalf("send back: %v", err)
	}
	if got := gitxtest.Git(t, f.repo, "rev-parse", "HEAD"); got != head {
		t.Fatalf("HEAD moved from %s to %s", head, got)
	}
	if got := gitxtest.Git(t, f.repo, "status", "--porcelain"); got != "M README.md" {
		t.Errorf("working tree changed: %q", got)
	}
	rec, _ := f.app.journal.Get(id)
	if rec.State != proposal.Rejected || rec.Outcome == nil || rec.Outcome.Code != "stale_base" {
		t.Fatalf("record: %s %+v", rec.State, rec.Outcome)
	}
	done, isErr := callTool(t, cs, "proposal_wait", map[string]any{"proposalId": id, "timeoutSeconds": 5})
	e, _ := done["error"].(map[string]any)
	if !isErr || e["code"] != "stale_base" || !strings.Contains(e["message"].(string), head[:12]) {
		t.Fatalf("the agent's wait: isError=%v %v", isErr, done)
	}
}

// TestBrowser_EditAfterProposal_SealedContentLands: the person edits a
// file of a pending commit. The card says so (without blocking); the
// approved commit holds exactly the content the card showed, and the
// person's later edit is still in the working tree, uncommitted.
func TestBrowser_EditAfterProposal_SealedContentLands(t *testing.T) {
	f := startWebFlow(t)
	_, out := f.proposeGreeting(t, "claude-code")
	id := out["proposalId"].(string)
	card := cardSel(id)
	if err := chromedp.Do(f.ctx, chromedp.WaitVisible(chromedp.CSS(card+" .diff-view .d2h-file-wrapper"))); err != nil {
		t.Fatal(err)
	}
	later := "hello\nworld\nand a line the person added later\n"
	os.WriteFile(filepath.Join(f.repo, "README.md"), []byte(later), 0o644)
	if err := chromedp.Do(f.ctx,
		chromedp.WaitVisible(chromedp.CSS(card+" .preflight-note")),
		chromedp.WaitVisible(chromedp.CSS(card+" .approve:not([disabled])")),
		chromedp.Click(chromedp.CSS(card+" .approve")),
		chromedp.WaitVisible(chromedp.CSS(decidedSel(id)+`[data-state="completed"]`)),
	); err != nil {
		t.Fatalf("approve after an edit: %v", err)
	}
	if got := gitxtest.Git(t, f.repo, "show", "HEAD:README.md"); got != "hello\nworld" {
		t.Errorf("the commit holds %q, not the content the card showed", got)
	}
	if got, _ := os.ReadFile(filepath.Join(f.repo, "README.md")); string(got) != later {
		t.Errorf("the person's later edit is gone: %q", got)
	}
	if got := gitxtest.Git(t, f.repo, "status", "--porcelain"); got != "M README.md" {
		t.Errorf("status after the commit: %q, want the later edit unstaged", got)
	}
}

// TestBrowser_ResealedCard_Approved: the person commits another file
// while a card is open. The card is not sent back: it says it was
// re-sealed on main at the new commit with the same changes, Approve
// stays enabled, and approving it lands the agent's commit on top of the
// person's.
func TestBrowser_ResealedCard_Approved(t *testing.T) {
	f := startWebFlow(t)
	_, out := f.proposeGreeting(t, "claude-code")
	id := out["proposalId"].(string)
	card := cardSel(id)
	if err := chromedp.Do(f.ctx, chromedp.WaitVisible(chromedp.CSS(card+" .outcome-block .sealed-files"))); err != nil {
		t.Fatalf("the card did not show its sealed outcome: %v", err)
	}
	os.WriteFile(filepath.Join(f.repo, "NOTES.md"), []byte("notes\n"), 0o644)
	gitxtest.Git(t, f.repo, "add", "NOTES.md")
	gitxtest.Git(t, f.repo, "commit", "-q", "-m", "Notes")
	head := gitxtest.Git(t, f.repo, "rev-parse", "HEAD")
	if err := chromedp.Do(f.ctx, chromedp.WaitVisible(chromedp.CSS(card+" #card-resealed"))); err != nil {
		t.Fatalf("the card does not say it was re-sealed: %v", err)
	}
	text, err := chromedp.Run(f.ctx, chromedp.Text(chromedp.CSS(card+" #card-resealed")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "Re-sealed on main at "+head[:7]+": same changes") {
		t.Fatalf("re-seal line %q", text)
	}
	f.shot(t, "web-resealed.png")
	if err := chromedp.Do(f.ctx,
		chromedp.WaitVisible(chromedp.CSS(card+" .approve:not([disabled])")),
		chromedp.Click(chromedp.CSS(card+" .approve")),
		chromedp.WaitVisible(chromedp.CSS(decidedSel(id)+`[data-state="completed"]`)),
	); err != nil {
		t.Fatalf("approve the re-sealed card: %v", err)
	}
	if got := gitxtest.Git(t, f.repo, "rev-parse", "HEAD^"); got != head {
		t.Fatalf("the agent's commit is on %s, want the person's %s", got, head)
	}
	if got := gitxtest.Git(t, f.repo, "show", "HEAD:README.md"); got != "hello\nworld" {
		t.Fatalf("README.md at HEAD %q", got)
	}
}
