package app

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/proposal"
)

// authorizeLine is the URL mcp-remote prints, on the line after "Please
// authorize this client by visiting:", for the person to open (it also
// tries to open a browser itself; BROWSER=true makes that a no-op).
var authorizeLine = regexp.MustCompile(`^\s*(http://127\.0\.0\.1:\d+/authorize\?\S+)\s*$`)

// TestRemoteMCPRemote_EndToEnd: mcp-remote, the stdio-to-remote bridge
// many desktop clients use, connects to `sluice remote` with its own OAuth
// client (dynamic registration, PKCE, its loopback callback), the person
// allows it in headless Chromium on the real consent page, and an MCP
// client on its stdio reads, proposes and sees the person's approval
// complete.
func TestRemoteMCPRemote_EndToEnd(t *testing.T) {
	tools, path := toolsNode(t, "mcp-remote")
	assets := distFS(t)
	e := startRemoteEnvUI(t, assets, nil)
	os.WriteFile(filepath.Join(e.repo, "README.md"), []byte("hello from mcp-remote\n"), 0o644)

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(tools, "node_modules", ".bin", "mcp-remote"), e.rem.URL(), "--allow-http",
		"--host", "127.0.0.1", "--auth-timeout", "120")
	// Its tokens go to a fresh folder; BROWSER and a PATH without
	// xdg-open keep it from starting a browser of its own.
	cmd.Env = append(os.Environ(), "PATH="+path, "MCP_REMOTE_CONFIG_DIR="+t.TempDir(), "BROWSER=true", "HOME="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	urls := make(chan string, 1)
	// mcp-remote serves its stdio only once it is connected (after the
	// person allowed it); the client connects then.
	ready := make(chan struct{})
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		readyOnce := false
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if m := authorizeLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
			if strings.Contains(sc.Text(), "Proxy established") && !readyOnce {
				readyOnce = true
				close(ready)
			}
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var authorize string
	select {
	case authorize = <-urls:
	case <-ready:
		t.Fatal("mcp-remote connected without authorization")
	case <-ctx.Done():
		t.Fatalf("mcp-remote never asked for authorization\n%s", log.String())
	}
	consent := browserWithin(t, 120*time.Second)
	personAllows(t, consent, e, authorize, []string{"registered with Sluice", "127.0.0.1:"})
	// mcp-remote closes its callback server before it serves stdio, and
	// Node's close waits for the browser's kept-alive connection to it:
	// the person closes the window, as they would.
	// Wait until the browser is on mcp-remote's callback page (asking
	// again while the page navigates, which interrupts an evaluation).
	for deadline := time.Now().Add(60 * time.Second); ; {
		at, err := chromedp.Run(consent, chromedp.Evaluate[string](`document.readyState === "complete" ? location.pathname : ""`))
		if err == nil && at == "/oauth/callback" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the browser did not come back to mcp-remote (%q, %v)\n%s", at, err, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := chromedp.Cancel(consent); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ready:
	case <-ctx.Done():
		t.Fatalf("mcp-remote did not finish connecting\n%s", log.String())
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "desktop-client", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err != nil {
		t.Fatalf("connect through mcp-remote: %v\n%s", err, log.String())
	}
	t.Cleanup(func() { cs.Close() })
	if out, isErr := callTool(t, cs, "repo_brief", map[string]any{"repoPath": e.repo}); isErr {
		t.Fatalf("repo_brief: %v", out)
	}
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": e.repo, "reason": "Greet from mcp-remote", "message": "Greet from mcp-remote", "paths": []string{"README.md"},
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	pid := out["proposalId"].(string)
	waited := make(chan map[string]any, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "proposal_wait", Arguments: map[string]any{"proposalId": pid, "timeoutSeconds": 50}})
		if err != nil {
			waited <- map[string]any{"error": err.Error()}
			return
		}
		m, _ := res.StructuredContent.(map[string]any)
		waited <- m
	}()
	personApproves(t, browserWithin(t, 60*time.Second), e, pid, ", connector granted ")
	select {
	case w := <-waited:
		if w["status"] != string(proposal.Completed) {
			t.Fatalf("proposal_wait: %v", w)
		}
	case <-ctx.Done():
		t.Fatal("proposal_wait did not answer")
	}
}
