package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// emptyEnvSidecar connects the real sidecar started as `env -i HOME=home
// sluice-sidecar`: no PATH, no XDG variables, no SLUICE_* variables, which
// is the least any agent passes on.
func emptyEnvSidecar(t *testing.T, home string) *mcp.ClientSession {
	t.Helper()
	envBin, err := exec.LookPath("env")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(envBin, "-i", "HOME="+home, filepath.Join(binDir(t), "sluice-sidecar"), "stdio")
	ctx, cancel := context.WithTimeout(context.Background(), desktopWait)
	t.Cleanup(cancel)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "empty-env", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect sidecar: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type capsView struct {
	AllowedRoots []string        `json:"allowedRoots"`
	Features     map[string]bool `json:"features"`
	Gateway      struct {
		Reachable bool `json:"reachable"`
	} `json:"gateway"`
}

func callJSON[T any](t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (T, *mcp.CallToolResult) {
	t.Helper()
	var v T
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v: %s", tool, err, b)
	}
	return v, res
}

// The README's way of setting the roots and the workspace image
// (environment variables given to the app) reaches a sidecar whose
// environment is empty but for HOME: the app saves them in config.json.
// Then `sluice roots add|list|remove` changes what the next sidecar sees.
func TestRoots_AppEnvironment_ReachesEmptyEnvSidecar(t *testing.T) {
	bin := filepath.Join(binDir(t), "sluice-headless")
	home := t.TempDir()
	root := filepath.Join(home, "src")
	repo := gitRepo(t, root, "widgets")
	image := "sha256:" + strings.Repeat("5e", 32)

	cmd := exec.Command(bin, "serve")
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "SLUICE_ALLOWED_ROOTS=" + root, "SLUICE_WORKSPACE_IMAGE=" + image}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "Login: ") {
	}
	go io.Copy(io.Discard, stdout)

	cs := emptyEnvSidecar(t, home)
	caps, _ := callJSON[capsView](t, cs, "sluice_capabilities", nil)
	canonRoot, _ := filepath.EvalSymlinks(root)
	if !slices.Equal(caps.AllowedRoots, []string{canonRoot}) || !caps.Features["workspaces"] || !caps.Gateway.Reachable {
		t.Fatalf("a sidecar with an empty environment sees roots %v, workspaces %v, app reachable %v (app log: %s)",
			caps.AllowedRoots, caps.Features["workspaces"], caps.Gateway.Reachable, stderr.String())
	}
	brief, res := callJSON[struct {
		Branch string `json:"branch"`
	}](t, cs, "repo_brief", map[string]any{"repoPath": repo})
	if res.IsError || brief.Branch != "main" {
		t.Fatalf("repo_brief from an empty environment: %+v", res.Content)
	}

	// `sluice roots` edits the same file.
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	os.Unsetenv("SLUICE_ALLOWED_ROOTS")
	other := filepath.Join(home, "work")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := Main([]string{"roots", "add", other}, nil, &out, &errOut); code != 0 {
		t.Fatalf("roots add: %d %s", code, errOut.String())
	}
	if code := Main([]string{"roots", "remove", root}, nil, &out, &errOut); code != 0 {
		t.Fatalf("roots remove: %d %s", code, errOut.String())
	}
	out.Reset()
	if code := Main([]string{"roots", "list"}, nil, &out, &errOut); code != 0 || !strings.Contains(out.String(), other) || strings.Contains(out.String(), root+"\n") {
		t.Fatalf("roots list: %d %q %s", code, out.String(), errOut.String())
	}
	if code := Main([]string{"roots", "remove", root}, nil, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "not an allowed root") {
		t.Errorf("removing a root twice: %d %s", code, errOut.String())
	}
	canonOther, _ := filepath.EvalSymlinks(other)
	caps, _ = callJSON[capsView](t, emptyEnvSidecar(t, home), "sluice_capabilities", nil)
	if !slices.Equal(caps.AllowedRoots, []string{canonOther}) {
		t.Fatalf("after roots add/remove a new sidecar sees %v, want [%s]", caps.AllowedRoots, canonOther)
	}
}

// The first screen, in a real browser, asks where the repositories are
// when no root is set, and the answer lands in config.json.
func TestBrowser_FirstScreen_AsksForRoot(t *testing.T) {
	a := startApp(t)
	w, token := serveUI(t, a)
	ctx := newBrowser(t)
	dir := t.TempDir()
	form := `form[aria-labelledby="roots-title"]`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(w.LoginURL(token)),
		chromedp.WaitVisible(chromedp.CSS(form)),
		chromedp.Focus(chromedp.CSS(form+" input")), chromedp.KeyEvent(dir),
		chromedp.Click(chromedp.CSS(form+` button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.empty div[role="status"]`)),
	); err != nil {
		t.Fatalf("first screen: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.empty div[role="status"]`)))
	if err != nil {
		t.Fatal(err)
	}
	canon, _ := filepath.EvalSymlinks(dir)
	if !strings.Contains(text, canon) || !strings.Contains(text, "nothing needs a restart") {
		t.Errorf("after allowing a root the screen says %q", text)
	}
	roots, err := a.cfg.FileRoots()
	if err != nil || !slices.Equal(roots, []string{canon}) {
		t.Fatalf("config.json roots %v (%v), want [%s]", roots, err, canon)
	}
}

// A root added with `sluice roots add` while the app and an agent's MCP
// server both run is usable at once: the same sidecar session reads the
// repository on its next call, and the same app accepts its proposal
// there. Nothing is restarted.
func TestRoots_AddedWhileRunning_NoRestart(t *testing.T) {
	bin := filepath.Join(binDir(t), "sluice-headless")
	home := t.TempDir()
	root := filepath.Join(home, "src")
	repo := gitRepo(t, root, "widgets")

	cmd := exec.Command(bin, "serve")
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "Login: ") {
	}
	go io.Copy(io.Discard, stdout)

	cs := emptyEnvSidecar(t, home)
	caps, _ := callJSON[capsView](t, cs, "sluice_capabilities", nil)
	if len(caps.AllowedRoots) != 0 || !caps.Gateway.Reachable {
		t.Fatalf("before: roots %v, app reachable %v (app log: %s)", caps.AllowedRoots, caps.Gateway.Reachable, stderr.String())
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "repo_brief", Arguments: map[string]any{"repoPath": repo}})
	if err != nil {
		t.Fatal(err)
	}
	text, _ := json.Marshal(res.Content)
	if !res.IsError || !strings.Contains(string(text), "path_outside_roots") || !strings.Contains(string(text), "ask the person") {
		t.Fatalf("before the root was added, repo_brief: %s", text)
	}

	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	os.Unsetenv("SLUICE_ALLOWED_ROOTS")
	var out, errOut bytes.Buffer
	if code := Main([]string{"roots", "add", root}, nil, &out, &errOut); code != 0 {
		t.Fatalf("roots add: %d %s", code, errOut.String())
	}

	// The same session, its next call.
	brief, res := callJSON[struct {
		Branch string `json:"branch"`
	}](t, cs, "repo_brief", map[string]any{"repoPath": repo})
	if res.IsError || brief.Branch != "main" {
		t.Fatalf("repo_brief after `sluice roots add`: %+v", res.Content)
	}
	prop, res := callJSON[struct {
		ProposalID string `json:"proposalId"`
		Status     string `json:"status"`
	}](t, cs, "propose_branch", map[string]any{"repoPath": repo, "reason": "a branch to work on", "name": "agent/live"})
	if res.IsError || prop.Status != "pending" || prop.ProposalID == "" {
		t.Fatalf("the running app refused a proposal in the root added while it ran: %+v (app log: %s)", res.Content, stderr.String())
	}
}
