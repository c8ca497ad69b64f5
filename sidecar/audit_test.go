package sidecar

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/audit"
)

func TestAudit_ToolCalls_Recorded(t *testing.T) {
	repo := t.TempDir()
	_, cfg := testEnv(t, repo)
	ledger, err := OpenLedger(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Config: cfg, Ledger: ledger})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectInMemory(t, s)
	ctx := context.Background()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sluice_capabilities"}); err != nil {
		t.Fatal(err)
	}
	// A protocol fault is recorded too: what the agent attempted matters.
	cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{"repoPath": repo}})
	ledger.Close()

	entries, err := audit.Tail(cfg.AuditLog(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("want 2 entries, got %d: %v", len(entries), entries)
	}
	first, second := entries[0], entries[1]
	if first["tool"] != "sluice_capabilities" || first["result"] != "ok" || first["session_id"] != "test-client" {
		t.Errorf("first entry: %v", first)
	}
	if second["tool"] != "no_such_tool" || second["result"] != "protocol_error" || second["repo_scope"] != audit.RepoScope(repo) {
		t.Errorf("second entry: %v", second)
	}
	raw, _ := os.ReadFile(cfg.AuditLog())
	if bytes.Contains(raw, []byte(repo)) {
		t.Error("the ledger contains a raw repository path")
	}
	var out, errb bytes.Buffer
	if code := audit.VerifyCommand([]string{cfg.AuditLog(), "--pubkey", cfg.AuditPublicKeyFile(), "--require-signed"}, &out, &errb); code != 0 {
		t.Fatalf("verify: %d %s %s", code, out.String(), errb.String())
	}
}

// TestCLI_KeygenAndVerify runs the real binary's audit commands.
func TestCLI_KeygenAndVerify(t *testing.T) {
	env, cfg := testEnv(t)
	bin := sidecarBinary(t)
	run := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	out, code := run("audit", "keygen")
	if code != 0 || !strings.Contains(out, "key id: ") {
		t.Fatalf("keygen: %d %s", code, out)
	}
	if _, code := run("audit", "keygen"); code == 0 {
		t.Fatal("a second keygen replaced the key")
	}

	// A session over stdio writes signed entries with that key.
	cmd := exec.Command(bin)
	cmd.Env = env
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sluice_capabilities"}); err != nil {
		t.Fatal(err)
	}
	cs.Close()

	out, code = run("verify-audit", cfg.AuditLog(), "--pubkey", cfg.AuditPublicKeyFile(), "--require-signed")
	if code != 0 {
		t.Fatalf("verify-audit: %d\n%s", code, out)
	}
	for _, want := range []string{"entries: 1", "chained: 1", "signed: 1", "unsigned: 0", "sequence: 1..1", "retention_checkpoint_used: none"} {
		if !strings.Contains(out, want) {
			t.Errorf("verify-audit output lacks %q:\n%s", want, out)
		}
	}
	if _, code := run("verify-audit"); code != 2 {
		t.Errorf("verify-audit without a file: exit %d, want 2", code)
	}
	other := filepath.Join(t.TempDir(), "other.pem")
	if err := audit.GenerateKey(other, other+".pub"); err != nil {
		t.Fatal(err)
	}
	if out, code := run("verify-audit", cfg.AuditLog(), "--pubkey", other+".pub"); code != 3 {
		t.Errorf("verify-audit with a wrong key: exit %d, want 3\n%s", code, out)
	}
}
