package app

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/workspace"
)

func TestCard_InvisibleCharacters_EscapedAndFlagged(t *testing.T) {
	a, repo, env := flowEnv(t)
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("hello\nworld\n"), 0o644)
	cs := agentSession(t, env, "claude-code")
	api := &API{app: a, kind: "web"}

	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Rename the report \u202etxt.exe",
		"message": "Greet\u200b the world\u2066", "paths": []string{"README.md"},
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	hidden := out["proposalId"].(string)
	out, isErr = callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "A plain reason", "message": "A plain message", "paths": []string{"README.md"},
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	plain := out["proposalId"].(string)

	card, err := api.Proposal(hidden)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(card.Reason, "\u202e\u200b") || card.Reason != "Rename the report ⟨U+202E⟩txt.exe" {
		t.Errorf("card reason %q, want the override escaped", card.Reason)
	}
	flagged := map[string]string{}
	for _, f := range card.Invisible {
		flagged[f.Field] = f.Shown
	}
	if flagged["reason"] != "Rename the report ⟨U+202E⟩txt.exe" || flagged["args.message"] != "Greet⟨U+200B⟩ the world⟨U+2066⟩" {
		t.Errorf("flagged fields %v, want reason and args.message", flagged)
	}
	if c, _ := api.Proposal(plain); len(c.Invisible) != 0 || c.Reason != "A plain reason" {
		t.Errorf("plain card flagged: %+v %q", c.Invisible, c.Reason)
	}

	// History shows the same card.
	hist, err := api.History(HistoryQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range hist {
		if c.ID == hidden && (len(c.Invisible) != 2 || strings.ContainsRune(c.Reason, '\u202e')) {
			t.Errorf("history card: %+v %q", c.Invisible, c.Reason)
		}
	}

	// The proposal itself is untouched: what runs is what was sealed.
	rec, err := a.journal.Get(hidden)
	if err != nil {
		t.Fatal(err)
	}
	if ca, ok := rec.Proposal.Args.(*proposal.CommitArgs); !ok || ca.Message != "Greet\u200b the world\u2066" || rec.Proposal.Reason != "Rename the report \u202etxt.exe" {
		t.Errorf("escaping for the card changed the stored proposal: %+v %q", rec.Proposal.Args, rec.Proposal.Reason)
	}
	if c, _ := api.Proposal(hidden); c.Digest != rec.Proposal.Digest {
		t.Errorf("card digest %s, proposal digest %s", c.Digest, rec.Proposal.Digest)
	}

	// The notification says so, without the text.
	title, body := noteText(rec)
	if !strings.Contains(body, "hidden characters") || strings.ContainsAny(title+body, "\u202e\u200b\u2066") {
		t.Errorf("notification %q / %q", title, body)
	}
	rec, _ = a.journal.Get(plain)
	if _, body := noteText(rec); strings.Contains(body, "hidden") {
		t.Errorf("plain notification %q", body)
	}
}

func TestVisible_EscapesFormatAndControlCharacters(t *testing.T) {
	for in, want := range map[string]string{
		"plain\nlines\tand tabs":      "plain\nlines\tand tabs",
		"a\u202eb":                    "a⟨U+202E⟩b",
		"zero\u200bwidth\ufeff":       "zero⟨U+200B⟩width⟨U+FEFF⟩",
		"join\u200d\u200c":            "join⟨U+200D⟩⟨U+200C⟩",
		"iso\u2066\u2067\u2068\u2069": "iso⟨U+2066⟩⟨U+2067⟩⟨U+2068⟩⟨U+2069⟩",
		"mark\u200e\u200f\u061c":      "mark⟨U+200E⟩⟨U+200F⟩⟨U+061C⟩",
		"bell\a esc\x1b":              "bell⟨U+0007⟩ esc⟨U+001B⟩",
		"ünïcode – ok":                "ünïcode – ok",
	} {
		got, hidden := visible(in)
		if got != want || hidden != (in != want) {
			t.Errorf("visible(%q) = %q %v, want %q", in, got, hidden, want)
		}
	}
}

// authJS is a file whose line 12 reads, on screen, as a check of the
// user's role and is, to the interpreter, a comment that ends the line:
// the right-to-left override turns the rest of the line around.
func authJS() string {
	var b strings.Builder
	for i := 1; i <= 11; i++ {
		fmt.Fprintf(&b, "// line %d\n", i)
	}
	b.WriteString("if (user.role != \"admin\u202e \u2066// check admin\u2069 \u2066\") {\n")
	b.WriteString("  deny();\n}\n")
	return b.String()
}

// checkContentFlag: the card lists src/auth.js line 12 with the override,
// its risk is at least medium and says why, and its diff shows the
// override as ⟨U+202E⟩ and never raw.
func checkContentFlag(t *testing.T, api *API, id string) {
	t.Helper()
	card, err := api.Proposal(id)
	if err != nil {
		t.Fatal(err)
	}
	var found *InvisibleLine
	for i, l := range card.InvisibleContent {
		if l.File == "src/auth.js" && l.Line == 12 {
			found = &card.InvisibleContent[i]
		}
	}
	if found == nil || !strings.HasPrefix(found.Text, "src/auth.js line 12: right-to-left override U+202E") ||
		!strings.Contains(found.Shown, "admin⟨U+202E⟩ ⟨U+2066⟩") || strings.ContainsRune(found.Shown, '\u202e') {
		t.Fatalf("card's invisible content %+v, want src/auth.js line 12 with the override", card.InvisibleContent)
	}
	if card.Risk < proposal.RiskMedium || !strings.Contains(card.RiskWhy, "invisible characters (src/auth.js line 12: right-to-left override U+202E") {
		t.Errorf("card risk %s (%q), want at least medium naming the line", card.Risk, card.RiskWhy)
	}
	diff := wholeDiff(t, api, id)
	if strings.ContainsAny(diff, "\u202e\u2066\u2069") || !strings.Contains(diff, "+if (user.role != \"admin⟨U+202E⟩ ⟨U+2066⟩// check admin⟨U+2069⟩ ⟨U+2066⟩\") {\n") {
		t.Errorf("the card's diff does not show the override:\n%s", diff)
	}
}

func TestCard_InvisibleContent_SealedCommitFlaggedWithFileAndLine(t *testing.T) {
	a, repo, env := flowEnv(t)
	os.MkdirAll(filepath.Join(repo, "src"), 0o755)
	os.WriteFile(filepath.Join(repo, "src", "auth.js"), []byte(authJS()), 0o644)
	os.WriteFile(filepath.Join(repo, "src", "plain.js"), []byte("// a BOM starts a file and CRLF ends its lines\r\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "src", "bom.js"), []byte("\ufefffirst\r\nsecond\r\n"), 0o644)
	cs := agentSession(t, env, "claude-code")
	api := &API{app: a, kind: "web"}

	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Add the role check", "message": "Add the role check", "paths": []string{"src"},
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	id := out["proposalId"].(string)
	checkContentFlag(t, api, id)
	card, _ := api.Proposal(id)
	for _, l := range card.InvisibleContent {
		if l.File != "src/auth.js" {
			t.Errorf("flagged %+v: a byte order mark at a file's start and CRLF line ends are no hidden text", l)
		}
	}
	// The queue shows the same, and History once the diff is known.
	pending, err := api.Pending()
	if err != nil || len(pending) != 1 || len(pending[0].InvisibleContent) != 1 || pending[0].Risk < proposal.RiskMedium {
		t.Errorf("queue card: %+v %v", pending, err)
	}
	hist, err := api.History(HistoryQuery{})
	if err != nil || len(hist) != 1 || len(hist[0].InvisibleContent) != 1 {
		t.Errorf("history card: %+v %v", hist, err)
	}

	// A commit without any is left as it was: low.
	os.WriteFile(filepath.Join(repo, "NOTES.md"), []byte("plain\r\n"), 0o644)
	out, _ = callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Notes", "message": "Notes", "paths": []string{"NOTES.md"},
	})
	plain, _ := api.Proposal(out["proposalId"].(string))
	if len(plain.InvisibleContent) != 0 || plain.Risk != proposal.RiskLow {
		t.Errorf("plain commit: %+v risk %s", plain.InvisibleContent, plain.Risk)
	}
}

func TestCard_InvisibleContent_PatchFlaggedWithFileAndLine(t *testing.T) {
	a, repo, env := flowEnv(t)
	os.MkdirAll(filepath.Join(repo, "src"), 0o755)
	lines := strings.SplitAfter(authJS(), "\n")
	before := strings.Join(lines[:11], "") + "if (user.role != \"admin\") {\n" + strings.Join(lines[12:], "")
	os.WriteFile(filepath.Join(repo, "src", "auth.js"), []byte(before), 0o644)
	gitIn(t, repo, "add", "src/auth.js")
	gitIn(t, repo, "commit", "-q", "-m", "auth")
	patch := "diff --git a/src/auth.js b/src/auth.js\n--- a/src/auth.js\n+++ b/src/auth.js\n@@ -10,4 +10,4 @@\n" +
		" // line 10\n // line 11\n-if (user.role != \"admin\") {\n+" + lines[11] + "   deny();\n"
	cs := agentSession(t, env, "claude-code")
	api := &API{app: a, kind: "web"}
	out, isErr := callTool(t, cs, "propose_patch", map[string]any{
		"repoPath": repo, "reason": "Tighten the role check", "patch": patch, "applyTo": "worktree",
	})
	if isErr {
		t.Fatalf("propose_patch: %v", out)
	}
	checkContentFlag(t, api, out["proposalId"].(string))
}

func TestCard_InvisibleContent_RunOutputFlaggedWithRunAndLine(t *testing.T) {
	run := runView(workspace.RunResult{ID: "r1", Argv: []string{"sh", "-c", "echo \u202eok"}, ExitCode: 0,
		Stdout: "PASS: auth\nall \u202e1 tests passed\n", Stderr: "warning\u200b\n"})
	var f contentFlags
	shown := visibleRun(run, 2, &f)
	if shown.Stdout != "PASS: auth\nall ⟨U+202E⟩1 tests passed\n" || shown.Stderr != "warning⟨U+200B⟩\n" || shown.Argv[2] != "echo ⟨U+202E⟩ok" {
		t.Errorf("run shown as %+v", shown)
	}
	c := Card{Risk: proposal.RiskLow, RiskWhy: "adds a commit", Evidence: &CardEvidence{Runs: []WorkspaceRunView{shown}, invisible: f}}
	a := &App{}
	a.flagContent(&c, proposal.Proposal{ID: "p1"}, false)
	var texts []string
	for _, l := range c.InvisibleContent {
		texts = append(texts, l.Text)
	}
	want := []string{
		"workspace run 2 argument 3: right-to-left override U+202E",
		"workspace run 2 stdout line 2: right-to-left override U+202E",
		"workspace run 2 stderr line 1: zero-width space U+200B",
	}
	if !slices.Equal(texts, want) {
		t.Errorf("flagged %q, want %q", texts, want)
	}
	if c.Risk != proposal.RiskMedium || !strings.HasPrefix(c.RiskWhy, "the content holds invisible characters (workspace run 2 argument 3") {
		t.Errorf("risk %s %q", c.Risk, c.RiskWhy)
	}
}

func TestVisibleDiff_LineNumbersOnBothSides(t *testing.T) {
	diff := "diff --git a/x.go b/x.go\nindex 1..2 100644\n--- a/x.go\n+++ b/x.go\n@@ -3,3 +3,3 @@ func f() {\n" +
		" a\u200b\n-b\u202e\n+c\n\\ No newline at end of file\n" +
		"diff --git \"a/\\342\\200\\256y\" \"b/\\342\\200\\256y\"\n--- /dev/null\n+++ \"b/\\342\\200\\256y\"\n@@ -0,0 +1,2 @@\n+ok\n+-- \u2067\n"
	var f contentFlags
	got := visibleDiff(diff, &f)
	if strings.ContainsAny(got, "\u200b\u202e\u2067") {
		t.Errorf("diff still holds invisible characters:\n%s", got)
	}
	var texts []string
	for _, l := range f.lines {
		texts = append(texts, l.Text)
	}
	want := []string{
		"x.go line 3: zero-width space U+200B",
		"x.go line 4 (removed): right-to-left override U+202E",
		"⟨U+202E⟩y line 2: right-to-left isolate U+2067",
	}
	if !slices.Equal(texts, want) {
		t.Errorf("flagged %q, want %q", texts, want)
	}
}
