package app

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkspace_Grant_HumanOnly: a person grants a secret from a terminal
// (`sluice workspace grant`, value on standard input); the agent's run sees
// it in its environment but gets its output back redacted; the ledger
// records the grant by name only; the secret never appears on a command
// line or in the ledger. The agent has no tool for this.
func TestWorkspace_Grant_HumanOnly(t *testing.T) {
	f, cs, env := startWorkspaceFlow(t)
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if strings.Contains(tool.Name, "grant") || strings.Contains(tool.Name, "secret") || strings.Contains(tool.Name, "egress") {
			t.Errorf("an agent tool can grant: %s", tool.Name)
		}
	}
	out, isErr := callTool(t, cs, "workspace_create", map[string]any{"kind": "repo", "repoPath": f.repo})
	if isErr {
		t.Fatalf("workspace_create: %v", out)
	}
	id := out["workspaceId"].(string)

	const secret = "s3cr3t-value-9d2f7c41"
	grant := exec.Command(filepath.Join(binDir(t), "sluice-headless"), "workspace", "grant", "--id", id, "--secret", "DEPLOY_TOKEN")
	grant.Env = env
	grant.Stdin = strings.NewReader(secret + "\n")
	if b, err := grant.CombinedOutput(); err != nil {
		t.Fatalf("sluice workspace grant: %v\n%s", err, b)
	}
	out, isErr = callTool(t, cs, "workspace_run", map[string]any{"workspaceId": id,
		"argv": []string{"sh", "-c", `test "$DEPLOY_TOKEN" = "` + secret + `" && echo "have $DEPLOY_TOKEN"`}})
	if isErr {
		t.Fatalf("workspace_run: %v", out)
	}
	text := strings.Join([]string{toString(out["stdout"]), toString(out["stderr"])}, "\n")
	if !strings.Contains(text, "have [redacted:DEPLOY_TOKEN]") || strings.Contains(text, secret) {
		t.Fatalf("run output: %v", out)
	}
	raw, _ := os.ReadFile(f.app.cfg.AuditLog())
	if bytes.Contains(raw, []byte(secret)) {
		t.Fatal("the ledger holds the secret")
	}
	if !bytes.Contains(raw, []byte(`"workspace_grant"`)) || !bytes.Contains(raw, []byte("DEPLOY_TOKEN")) {
		t.Fatal("the grant is not in the ledger")
	}
}

func toString(v any) string {
	s, _ := v.(string)
	return s
}
