package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/proposal"
)

// TestCard_EmbeddedBareRepository_RatedHigh: a commit that adds a bare
// repository (made by git init --bare, its config naming an fsmonitor
// program) is rated high and says why; the same commit without it is low.
func TestCard_EmbeddedBareRepository_RatedHigh(t *testing.T) {
	a, repo, env := flowEnv(t)
	bare := filepath.Join(repo, "vendor", "tool")
	gitIn(t, repo, "init", "-q", "--bare", bare)
	// Without git's sample hooks (executable files, a reason of their
	// own): HEAD, config, description and info/exclude are enough.
	os.RemoveAll(filepath.Join(bare, "hooks"))
	cfg := filepath.Join(bare, "config")
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(cfg, append(raw, []byte("\tfsmonitor = \"echo planted >&2; false\"\n")...), 0o644)
	os.WriteFile(filepath.Join(repo, "vendor", "README.md"), []byte("vendored tools\n"), 0o644)
	cs := agentSession(t, env, "claude-code")
	api := &API{app: a, kind: "web"}

	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Vendor the tool", "message": "Vendor the tool", "paths": []string{"vendor"},
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	card, err := api.Proposal(out["proposalId"].(string))
	if err != nil {
		t.Fatal(err)
	}
	want := "adds a git repository's directory, vendor/tool (a bare repository: its config can run programs when git is used in it)"
	if card.Risk < proposal.RiskHigh || !strings.HasPrefix(card.RiskWhy, want) {
		t.Errorf("card risk %s %q, want high: %q", card.Risk, card.RiskWhy, want)
	}

	out, _ = callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Only the readme", "message": "Readme", "paths": []string{"vendor/README.md"},
	})
	if plain, _ := api.Proposal(out["proposalId"].(string)); plain.Risk != proposal.RiskLow {
		t.Errorf("a commit without the repository: %s %q", plain.Risk, plain.RiskWhy)
	}
}
