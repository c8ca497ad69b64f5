package sidecar

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/connect"
	"github.com/sluicehq/sluice/core/tokens"
)

// runMain runs sluice-sidecar's Main in this process (after testEnv set the
// environment) and returns exit code, stdout and stderr.
func runMain(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

const fakeCommand = "/opt/sluice/bin/sluice-sidecar"

func TestCLIConfig_DryRun_WritesNothing(t *testing.T) {
	testEnv(t)
	home := os.Getenv("HOME")
	code, out, errs := runMain("config", "--client", "cursor", "--command", fakeCommand)
	path := filepath.Join(home, ".cursor", "mcp.json")
	if code != 0 || !strings.Contains(out, path) || !strings.Contains(out, "will be created") || !strings.Contains(out, fakeCommand) || !strings.Contains(out, "Dry run") {
		t.Fatalf("dry run: %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("a dry run wrote the file")
	}
}

// For an agent Sluice can start, the config command leads with the
// confined way; for one it cannot (Cursor), it does not offer it.
func TestCLIConfig_LeadsWithTheConfinedWay(t *testing.T) {
	testEnv(t)
	for client, want := range map[string]string{"claude-code": "sluice run claude", "codex": "sluice run codex", "gemini-cli": "sluice run gemini",
		"copilot-cli": "sluice run copilot", "opencode": "sluice run opencode", "qwen-code": "sluice run qwen", "cursor": ""} {
		code, out, errs := runMain("config", "--client", client, "--command", fakeCommand)
		if code != 0 {
			t.Fatalf("%s: %d\n%s", client, code, errs)
		}
		first := strings.SplitN(out, "\n", 2)[0]
		switch {
		case want == "" && strings.Contains(out, "sluice run"):
			t.Errorf("%s is offered a confined start it does not have:\n%s", client, out)
		case want != "" && (!strings.Contains(first, "`"+want+"`") || !strings.Contains(out, "could write to\nthe repository without asking")):
			t.Errorf("%s: the output does not lead with %q:\n%s", client, want, out)
		}
	}
}

func TestCLIConfig_Write_SecondRunNoChange(t *testing.T) {
	testEnv(t)
	home := os.Getenv("HOME")
	code, out, errs := runMain("config", "--client", "claude-code", "--command", fakeCommand, "--write", "--toolsets", "git,propose")
	if code != 0 || !strings.Contains(out, "wrote "+filepath.Join(home, ".claude.json")) || !strings.Contains(out, "mcp__sluice__repo_brief") {
		t.Fatalf("write: %d\n%s\n%s", code, out, errs)
	}
	settings, _ := os.ReadFile(filepath.Join(home, ".claude", "settings.json"))
	if !bytes.Contains(settings, []byte("mcp__sluice__propose_merge")) || bytes.Contains(settings, []byte("workspace")) {
		t.Fatalf("settings.json:\n%s", settings)
	}
	before, _ := os.ReadFile(filepath.Join(home, ".claude.json"))
	code, out, _ = runMain("config", "--client", "claude-code", "--command", fakeCommand, "--write", "--toolsets", "git,propose")
	after, _ := os.ReadFile(filepath.Join(home, ".claude.json"))
	if code != 0 || !strings.Contains(out, "Nothing to change") || strings.Contains(out, "wrote") || !bytes.Equal(before, after) {
		t.Fatalf("second run: %d\n%s", code, out)
	}
}

func TestCLIConfig_Project_VSCode(t *testing.T) {
	testEnv(t)
	project := t.TempDir()
	os.MkdirAll(filepath.Join(project, ".vscode"), 0o755)
	orig := "{\n  // shared with the team\n  \"servers\": {}\n}\n"
	os.WriteFile(filepath.Join(project, ".vscode", "mcp.json"), []byte(orig), 0o644)
	code, out, errs := runMain("config", "--client", "vscode", "--scope", "project", "--project", project, "--command", fakeCommand, "--write")
	if code != 0 {
		t.Fatalf("%d\n%s\n%s", code, out, errs)
	}
	got, _ := os.ReadFile(filepath.Join(project, ".vscode", "mcp.json"))
	if !bytes.Contains(got, []byte("// shared with the team")) || !bytes.Contains(got, []byte(`"sluice": {`)) {
		t.Fatalf("mcp.json:\n%s", got)
	}
	if !strings.Contains(out, "backup: ") || !strings.Contains(out, "nothing was pre-allowed") {
		t.Errorf("output should name the backup and say nothing was pre-allowed:\n%s", out)
	}
}

func TestCLIConfig_Malformed_RefusedUntouched(t *testing.T) {
	testEnv(t)
	path := filepath.Join(os.Getenv("HOME"), ".codex", "config.toml")
	os.MkdirAll(filepath.Dir(path), 0o700)
	bad := "model = \"gpt-5\"\n[mcp_servers.x\n"
	os.WriteFile(path, []byte(bad), 0o600)
	code, out, errs := runMain("config", "--client", "codex", "--command", fakeCommand, "--write")
	if code != 1 || !strings.Contains(errs, path) || !strings.Contains(errs, "malformed") || !strings.Contains(errs, "line 2") {
		t.Fatalf("malformed: %d\n%s\n%s", code, out, errs)
	}
	if got, _ := os.ReadFile(path); string(got) != bad {
		t.Fatal("malformed file changed")
	}
}

func TestCLIConfig_ReadOnly_Refused(t *testing.T) {
	testEnv(t)
	path := filepath.Join(os.Getenv("HOME"), ".codeium", "windsurf", "mcp_config.json")
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte("{}"), 0o444)
	code, out, errs := runMain("config", "--client", "windsurf", "--command", fakeCommand)
	if code != 0 || !strings.Contains(out, "read-only") {
		t.Fatalf("dry run should warn: %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = runMain("config", "--client", "windsurf", "--command", fakeCommand, "--write")
	if code != 1 || !strings.Contains(errs, "read-only") || !strings.Contains(errs, path) {
		t.Fatalf("write: %d\n%s", code, errs)
	}
	if got, _ := os.ReadFile(path); string(got) != "{}" {
		t.Fatal("read-only file changed")
	}
}

func TestCLIConfig_ChatGPT_StepsAndToken(t *testing.T) {
	_, cfg := testEnv(t)
	code, out, _ := runMain("config", "--client", "chatgpt", "--command", fakeCommand)
	if code != 0 || !strings.Contains(out, "--allow-path-token") || strings.Contains(out, tokens.Prefix) {
		t.Fatalf("dry run: %d\n%s", code, out)
	}
	code, out, errs := runMain("config", "--client", "chatgpt", "--command", fakeCommand, "--write")
	if code != 0 || !strings.Contains(out, tokens.Prefix) {
		t.Fatalf("write: %d\n%s\n%s", code, out, errs)
	}
	secret := out[strings.LastIndex(out, tokens.Prefix):]
	if tok, err := tokens.Open(tokens.DefaultPath(cfg)).Verify(strings.TrimSpace(secret)); err != nil || tok.Name != "chatgpt" {
		t.Fatalf("printed token does not verify: %v", err)
	}
	code, out, _ = runMain("config", "--client", "chatgpt", "--command", fakeCommand, "--write")
	if code != 0 || strings.Contains(out, tokens.Prefix) || !strings.Contains(out, "already exists") {
		t.Fatalf("second run: %d\n%s", code, out)
	}
}

func TestCLIConfig_Usage(t *testing.T) {
	testEnv(t)
	for _, args := range [][]string{
		{"config"},
		{"config", "--client", "notepad", "--command", fakeCommand},
		{"config", "--client", "windsurf", "--scope", "project", "--command", fakeCommand},
		{"config", "--client", "cursor", "--command", "relative/sluice-sidecar"},
	} {
		if code, _, _ := runMain(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestCLIToken_CreateListRevoke(t *testing.T) {
	testEnv(t)
	code, secret, _ := runMain("token", "create", "--name", "build-bot")
	if code != 0 || !strings.HasPrefix(secret, tokens.Prefix) {
		t.Fatalf("create: %d %q", code, secret)
	}
	if code, _, _ := runMain("token", "create", "--name", "build-bot"); code != 1 {
		t.Errorf("duplicate create: %d", code)
	}
	if code, _, _ := runMain("token", "create", "--name", "bad name"); code != 2 {
		t.Errorf("bad name: %d", code)
	}
	code, out, _ := runMain("token", "list")
	if code != 0 || !strings.Contains(out, "build-bot") || strings.Contains(out, strings.TrimSpace(secret)) {
		t.Fatalf("list: %d\n%s", code, out)
	}
	if code, _, _ := runMain("token", "revoke", "--name", "build-bot"); code != 0 {
		t.Fatal("revoke failed")
	}
	if code, out, _ := runMain("token", "list"); code != 0 || strings.Contains(out, "build-bot") {
		t.Fatalf("after revoke: %s", out)
	}
}

// The real binary points clients at its own absolute path by default.
func TestCLIConfig_Binary_DefaultCommandIsItself(t *testing.T) {
	bin := sidecarBinary(t)
	env, _ := testEnv(t)
	cmd := exec.Command(bin, "config", "--client", "codex", "--write")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(os.Getenv("HOME"), ".codex", "config.toml"))
	if err != nil || !bytes.Contains(got, []byte("command = \""+bin+"\"")) {
		t.Fatalf("config.toml does not point at %s:\n%s", bin, got)
	}
}

// The pre-allow lists in core/connect must cover every tool registered in
// the git and propose toolsets (propose_more included), and every listed
// read tool must be annotated read-only: a new tool is either pre-allowed
// deliberately or this test fails.
func TestConnect_PreAllowLists_MatchRegisteredTools(t *testing.T) {
	_, cfg := testEnv(t)
	for _, c := range []struct {
		set  string
		list []string
	}{{"git", connect.ReadTools}, {"fleet", connect.ReadTools}, {"safety", connect.ReadTools}, {"propose", connect.ProposeTools},
		{"propose_more", connect.ProposeTools}} {
		if toolsetRegistration(c.set) == nil {
			continue
		}
		s, err := New(Options{Config: cfg, Toolsets: []string{c.set}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := connectInMemory(t, s).ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			if tool.Name == "sluice_capabilities" || tool.Name == "toolset_enable" {
				continue
			}
			if !slices.Contains(c.list, tool.Name) {
				t.Errorf("%s tool %s is not in core/connect's %s list", c.set, tool.Name, c.set)
			}
			if !strings.HasPrefix(c.set, "propose") && (tool.Annotations == nil || !tool.Annotations.ReadOnlyHint) {
				t.Errorf("pre-allowed read tool %s is not annotated read-only", tool.Name)
			}
		}
	}
}
