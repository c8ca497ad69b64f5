package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/proposal"
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
