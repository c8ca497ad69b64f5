package app

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestApprove_ConfirmationWord_MustMatchExactly: the word a destructive
// card asks for is taken as typed; a space before or after it, or any
// other character, is not the word.
func TestApprove_ConfirmationWord_MustMatchExactly(t *testing.T) {
	a, repo, env := flowEnv(t)
	// Uncommitted work the reset would throw away (one that loses nothing
	// is not destructive and asks for no word).
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("hello\nmy draft\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs := agentSession(t, env, "codex")
	out, isErr := callTool(t, cs, "propose_reset", map[string]any{
		"repoPath": repo, "reason": "Start over", "mode": "hard", "target": "HEAD", "branch": "main",
	})
	if isErr {
		t.Fatalf("propose_reset: %v", out)
	}
	api := &API{app: a, kind: "web"}
	card, err := api.Proposal(out["proposalId"].(string))
	if err != nil || card.ConfirmWord != "main" {
		t.Fatalf("card: %q %v", card.ConfirmWord, err)
	}
	for _, word := range []string{"main ", " main", "main\n", "\tmain", "main\u200b"} {
		if _, err := api.Approve(Decision{ID: card.ID, Digest: card.Digest, Confirm: word}); !errors.Is(err, ErrConfirmation) {
			t.Fatalf("approve with %q: %v, want %v", word, err, ErrConfirmation)
		}
	}
	if c, err := api.Approve(Decision{ID: card.ID, Digest: card.Digest, Confirm: "main"}); err != nil || !c.Decision.Approved {
		t.Fatalf("approve with the word: %v", err)
	}
}
