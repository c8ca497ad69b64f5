package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/proposal"
)

// gitRepo makes a real repository with one commit under root.
func gitRepo(t testing.TB, root, name string) string {
	t.Helper()
	r := gitxtest.InitAt(t, filepath.Join(root, name))
	// The person's identity, which approved commits use.
	r.Git("config", "user.name", "Ada")
	r.Git("config", "user.email", "ada@example.com")
	r.WriteCommit("README.md", "hello\n", "first")
	return r.Dir
}

// agentSession connects the real sidecar binary to the app of env.
func agentSession(t testing.TB, env []string, name string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir(t), "sluice-sidecar"))
	cmd.Env = env
	ctx, cancel := context.WithTimeout(context.Background(), desktopWait)
	t.Cleanup(cancel)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect sidecar: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// flowEnv starts an app whose allowed root holds one repository, and
// returns the app, the repository and the environment for sidecars.
func flowEnv(t testing.TB) (*App, string, []string) {
	t.Helper()
	return flowEnvWith(t, "")
}

// flowEnvWith is flowEnv with configJSON, when not empty, as the
// config.json the app and its sidecars read.
func flowEnvWith(t testing.TB, configJSON string) (*App, string, []string) {
	t.Helper()
	home := t.TempDir()
	if configJSON != "" {
		dir := filepath.Join(home, "config", "sluice")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(configJSON), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Join(home, "src")
	repo := gitRepo(t, root, "widgets")
	vars := map[string]string{
		"HOME":                 home,
		"PATH":                 os.Getenv("PATH"),
		"XDG_CONFIG_HOME":      filepath.Join(home, "config"),
		"XDG_STATE_HOME":       filepath.Join(home, "state"),
		"SLUICE_ALLOWED_ROOTS": root,
	}
	var env []string
	for k, v := range vars {
		t.Setenv(k, v)
		env = append(env, k+"="+v)
	}
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	a, err := Start(cfg, newLogger(&bytes.Buffer{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, repo, env
}

func callTool(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &out)
	return out, res.IsError
}

// TestFlow_ProposeCommit_CardAndReject: an agent proposes through the real
// sidecar and gateway; the card carries the pinned SHA, the files and the
// diff; the person rejects; the agent's wait reports it as an error; every
// step is in the signed ledger.
func TestFlow_ProposeCommit_CardAndReject(t *testing.T) {
	a, repo, env := flowEnv(t)
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("hello\nworld\n"), 0o644)
	cs := agentSession(t, env, "claude-code")

	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Say hello to the world", "message": "Greet the world", "paths": []string{"README.md"},
	})
	if isErr || out["status"] != "pending" {
		t.Fatalf("propose_commit: %v", out)
	}
	id := out["proposalId"].(string)

	api := &API{app: a, kind: "web"}
	pending, err := api.Pending()
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending: %v %v", pending, err)
	}
	card := pending[0]
	if card.ID != id || card.Agent != "claude-code" || card.Op != "commit" || card.RepoName != "widgets" || card.Reason != "Say hello to the world" {
		t.Fatalf("card: %+v", card)
	}
	if len(card.Files) != 1 || card.Files[0] != "README.md" || card.ShortDigest == "" || len(card.Pinned.Refs) == 0 {
		t.Fatalf("card details: %+v", card)
	}
	st, _ := api.Status()
	if st.Pending != 1 {
		t.Errorf("status pending = %d", st.Pending)
	}
	chunk, err := api.ProposalDiff(id, 0)
	if err != nil || !chunk.Done || !strings.Contains(chunk.Text, "+world") {
		t.Fatalf("diff: %+v %v", chunk, err)
	}

	// A decision bound to another digest is refused and changes nothing.
	if _, err := api.Reject(Decision{ID: id, Digest: "sha256:" + strings.Repeat("0", 64)}); !errors.Is(err, ErrStaleCard) {
		t.Fatalf("reject with a wrong digest: %v", err)
	}
	if _, err := api.Reject(Decision{ID: id, Digest: card.Digest, Note: "not now"}); err != nil {
		t.Fatal(err)
	}
	out, isErr = callTool(t, cs, "proposal_wait", map[string]any{"proposalId": id, "timeoutSeconds": 5})
	if !isErr || out["status"] != "rejected" {
		t.Fatalf("wait after reject: isError=%v %v", isErr, out)
	}
	if _, err := api.Approve(Decision{ID: id, Digest: card.Digest}); err == nil {
		t.Fatal("approving a rejected proposal succeeded")
	}

	trail, err := api.ProposalAudit(id)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range trail {
		kinds = append(kinds, e["event_type"].(string))
	}
	if strings.Join(kinds, ",") != "proposal_submitted,proposal_rejected" {
		t.Fatalf("audit trail of the proposal: %v", kinds)
	}
	rep, err := api.VerifyAudit()
	if err != nil || !rep.OK || rep.Unsigned != 0 {
		t.Fatalf("ledger: %+v %v", rep, err)
	}
	if raw, _ := os.ReadFile(a.cfg.AuditLog()); bytes.Contains(raw, []byte(repo)) {
		t.Error("the ledger holds a raw repository path")
	}
}

// TestFlow_Destructive_NeedsConfirmation: a hard reset cannot be approved
// without typing its confirmation word.
func TestFlow_Destructive_NeedsConfirmation(t *testing.T) {
	a, repo, env := flowEnv(t)
	// Uncommitted work the reset would throw away (one that loses nothing
	// is not destructive).
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
	if err != nil {
		t.Fatal(err)
	}
	if !card.Destructive || card.ConfirmWord != "main" {
		t.Fatalf("card: destructive=%v confirm=%q", card.Destructive, card.ConfirmWord)
	}
	for _, word := range []string{"", "yes", "Main"} {
		if _, err := api.Approve(Decision{ID: card.ID, Digest: card.Digest, Confirm: word}); !errors.Is(err, ErrConfirmation) {
			t.Fatalf("approve with %q: %v", word, err)
		}
	}
	if c, _ := api.Proposal(card.ID); c.State != "pending" {
		t.Fatalf("state after refused approvals: %s", c.State)
	}
	c, err := api.Approve(Decision{ID: card.ID, Digest: card.Digest, Confirm: "main"})
	if err != nil || c.Decision == nil || !c.Decision.Approved {
		t.Fatalf("approve with the word: %+v %v", c, err)
	}
}

// TestFlow_SealedCommit_CardAndHistory: a commit of new files (a small
// CHANGELOG.md, a 3.5 MB catalog.json) shows both files with their
// content and sizes and says why its risk is raised; once approved, its
// page in History keeps the executed diff after the branch moved on.
func TestFlow_SealedCommit_CardAndHistory(t *testing.T) {
	a, repo, env := flowEnv(t)
	os.WriteFile(filepath.Join(repo, "CHANGELOG.md"), []byte("# Changes\n\n- first release\n"), 0o644)
	var catalog bytes.Buffer
	catalog.WriteString("[\n")
	for i := 0; catalog.Len() < 3_500_000; i++ {
		fmt.Fprintf(&catalog, "  {\"sku\": \"item-%07d\", \"price\": %d},\n", i, i%997)
	}
	catalog.WriteString("  {}\n]\n")
	os.WriteFile(filepath.Join(repo, "catalog.json"), catalog.Bytes(), 0o644)
	cs := agentSession(t, env, "claude-code")
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Add the changelog and the catalog", "message": "Add changelog and catalog",
		"paths": []string{"CHANGELOG.md", "catalog.json"},
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	id := out["proposalId"].(string)
	api := &API{app: a, kind: "web"}
	card, err := api.Proposal(id)
	if err != nil {
		t.Fatal(err)
	}
	if card.Sealed == nil || len(card.Sealed.Files) != 2 {
		t.Fatalf("sealed outcome on the card: %+v", card.Sealed)
	}
	for _, f := range card.Sealed.Files {
		if f.Status != proposal.FileAdded {
			t.Errorf("%s is %s, want added", f.Path, f.Status)
		}
		if f.Path == "catalog.json" && f.Size != int64(catalog.Len()) {
			t.Errorf("catalog.json sealed at %d bytes, it has %d", f.Size, catalog.Len())
		}
	}
	if card.Risk != proposal.RiskMedium || !strings.Contains(card.RiskWhy, "adds a 3.3 MB file (catalog.json)") {
		t.Errorf("risk %s: %q", card.Risk, card.RiskWhy)
	}
	diff := wholeDiff(t, api, id)
	if !strings.Contains(diff, "+- first release") || !strings.Contains(diff, "item-0000000") {
		t.Fatalf("the card's diff does not show the new files' content (%d bytes)", len(diff))
	}
	if _, err := api.Approve(Decision{ID: id, Digest: card.Digest}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, desktopWait, "the commit to complete", func() bool {
		c, _ := api.Proposal(id)
		return c.State == proposal.Completed
	})
	// The person moves the branch back; History still shows what ran.
	gitxtest.Git(t, repo, "reset", "-q", "--hard", "HEAD~1")
	a.diffs = diffCache{}
	if again := wholeDiff(t, api, id); again != diff {
		t.Errorf("the executed diff changed after the branch moved (%d bytes, was %d)", len(again), len(diff))
	}
}

// wholeDiff reads every chunk of a proposal's diff.
func wholeDiff(t *testing.T, api *API, id string) string {
	t.Helper()
	var b strings.Builder
	for off := 0; ; {
		c, err := api.ProposalDiff(id, off)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(c.Text)
		if c.Done {
			return b.String()
		}
		off = c.NextOffset
	}
}
