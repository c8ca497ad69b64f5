package app

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// toolsNode is the tools folder (SLUICE_TOOLS_DIR, where build/tools
// installs the pinned MCP clients) and a PATH with SLUICE_NODE_BIN first.
func toolsNode(t *testing.T, pkg string) (dir, path string) {
	t.Helper()
	dir = os.Getenv("SLUICE_TOOLS_DIR")
	_, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json"))
	needOrSkip(t, dir != "" && err == nil, pkg+" in SLUICE_TOOLS_DIR (make test installs it from build/tools)")
	path = os.Getenv("PATH")
	if nb := os.Getenv("SLUICE_NODE_BIN"); nb != "" {
		path = nb + string(os.PathListSeparator) + path
	}
	return dir, path
}

// callbackServer is a connector's redirect URI on 127.0.0.1: it hands on
// the code and iss the person's browser brings back.
func callbackServer(t *testing.T) (string, chan url.Values) {
	t.Helper()
	got := make(chan url.Values, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/callback", func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.URL.Query():
		default:
		}
		io.WriteString(w, "<!doctype html><title>connected</title><p id=done>You can close this window.</p>")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/callback", got
}

// TestRemoteSDK_MetadataDocument_EndToEnd and
// TestRemoteSDK_DynamicRegistration_EndToEnd: the official TypeScript
// SDK's OAuth client, unchanged, connects through discovery, registration,
// the person's consent given in headless Chromium on the real page, the
// token exchange, then reads, proposes, and sees the person's approval
// (given on the card in the same browser) complete.
func TestRemoteSDK_MetadataDocument_EndToEnd(t *testing.T) { runSDKConnector(t, true) }

func TestRemoteSDK_DynamicRegistration_EndToEnd(t *testing.T) { runSDKConnector(t, false) }

func runSDKConnector(t *testing.T, metadataDocument bool) {
	tools, path := toolsNode(t, "@modelcontextprotocol/sdk")
	assets := distFS(t)
	redirect, codes := callbackServer(t)

	// The client ID metadata document, on https (the SDK sends only an
	// https client ID) on 127.0.0.1, with a certificate Sluice is told to
	// trust.
	var docURL string
	var metaTLS *tls.Config
	if metadataDocument {
		mux := http.NewServeMux()
		doc := httptest.NewTLSServer(mux)
		t.Cleanup(doc.Close)
		docURL = doc.URL + "/oauth/client.json"
		mux.HandleFunc("/oauth/client.json", func(w http.ResponseWriter, _ *http.Request) {
			json.NewEncoder(w).Encode(map[string]any{"client_id": docURL, "client_name": "SDK Test Client",
				"redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none"})
		})
		pool := x509.NewCertPool()
		pool.AddCert(doc.Certificate())
		metaTLS = &tls.Config{RootCAs: pool}
	}
	e := startRemoteEnvUI(t, assets, func(o *remoteOptions) { o.metadataTLS = metaTLS })
	os.WriteFile(filepath.Join(e.repo, "README.md"), []byte("hello from the SDK\n"), 0o644)

	node := exec.Command("node", "testdata/oauth_sdk_client.mjs")
	node.Env = append(os.Environ(), "PATH="+path, "TOOLS_DIR="+tools, "MCP_URL="+e.rem.URL(), "REDIRECT="+redirect,
		"CLIENT_ID_URL="+docURL, "REPO="+e.repo)
	stdin, _ := node.StdinPipe()
	stdout, _ := node.StdoutPipe()
	var stderr strings.Builder
	node.Stderr = &stderr
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Process.Kill(); node.Wait() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(prefix string) string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok || !strings.HasPrefix(l, prefix+" ") {
				t.Fatalf("SDK client: got %q (open: %v), want %s …\nstderr: %s", l, ok, prefix, stderr.String())
			}
			return strings.TrimPrefix(l, prefix+" ")
		case <-time.After(90 * time.Second):
			t.Fatalf("SDK client: no %s line\nstderr: %s", prefix, stderr.String())
		}
		return ""
	}

	authorize := next("AUTHORIZE")
	ctx := browserWithin(t, 120*time.Second)
	u, _ := url.Parse(redirect)
	wants := []string{"Allow SDK Test Client to connect?", u.Host}
	if metadataDocument {
		wants = append(wants, docURL)
	} else {
		wants = append(wants, "registered with Sluice")
	}
	personAllows(t, ctx, e, authorize, wants)
	var q url.Values
	select {
	case q = <-codes:
	case <-time.After(desktopWait):
		t.Fatal("the browser never came back to the connector")
	}
	if q.Get("iss") != strings.TrimSuffix(e.rem.URL(), "/mcp") || q.Get("code") == "" {
		t.Fatalf("authorization response %v", q)
	}
	io.WriteString(stdin, q.Get("code")+"\n")
	if scope := next("TOKEN"); scope != "read propose" {
		t.Fatalf("token scope %q", scope)
	}
	if id := next("CLIENT"); metadataDocument && id != docURL {
		t.Fatalf("client id %q, want the metadata document's URL", id)
	}
	next("BRIEF")
	pid := next("PROPOSED")

	personApproves(t, ctx, e, pid, "SDK Test Client, connector granted ")
	if status := next("WAITED"); status != "completed" {
		t.Fatalf("proposal_wait: %s", status)
	}

	// Settings lists the connector with its scopes and last use; Revoke
	// there ends it.
	row := `#connectors tbody tr`
	if err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+e.web.Addr()+"/#/settings"),
		chromedp.WaitVisible(chromedp.CSS(row)),
	); err != nil {
		t.Fatalf("connector list: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(row)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "SDK Test Client") || !strings.Contains(text, "read, propose") || strings.Contains(text, "never") {
		t.Fatalf("connector row: %s", text)
	}
	// The button's own click handler, dispatched on the element: a mouse
	// click at its coordinates can land beside it when the section
	// re-renders (a refresh of the list) between locating and clicking.
	revoke := row + ` button[aria-label="Revoke SDK Test Client"]`
	if err := chromedp.Do(ctx, chromedp.WaitEnabled(chromedp.CSS(revoke))); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector(`+strconv.Quote(revoke)+`).click(), true`)); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`[...document.querySelectorAll("#connectors td")].some((td) => td.textContent === "revoked")`,
		chromedp.WithPollingTimeout(desktopWait))); err != nil {
		section, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`section[aria-labelledby="connectors-title"]`)))
		t.Fatalf("the row does not say revoked: %v; the section says:\n%s", err, section)
	}
	list, err := (&API{app: e.a, kind: "web"}).Connectors()
	if err != nil || len(list.Connectors) != 1 || !list.Connectors[0].Revoked {
		t.Fatalf("after Revoke: %+v %v", list, err)
	}
}

// personAllows is the person, logging in to their UI in the browser ctx,
// opening the authorization URL a connector gave them, reading who asks
// for what (wants, besides the scopes and the allowed root), and
// allowing; the browser then goes back to the connector's redirect URI.
func personAllows(t *testing.T, ctx context.Context, e *remoteEnv, authorize string, wants []string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(e.web.LoginURL(e.web.NewLoginToken())),
		chromedp.WaitVisible(chromedp.ID("empty-title")),
		chromedp.Navigate(authorize),
		chromedp.WaitVisible(chromedp.ID("consent-title")),
	); err != nil {
		t.Fatalf("consent page: %v", err)
	}
	page, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range append(wants, "read", "propose", filepath.Dir(e.repo)) {
		if !strings.Contains(page, want) {
			t.Errorf("consent page lacks %q:\n%s", want, page)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(".consent button.primary"))); err != nil {
		t.Fatalf("allow: %v", err)
	}
}

// personApproves logs in to the UI in the browser ctx, where the queue
// opens, and approves proposal pid on its card, which names the connector
// (agent is a part of its identity).
func personApproves(t *testing.T, ctx context.Context, e *remoteEnv, pid, agent string) {
	t.Helper()
	card := cardSel(pid)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(e.web.LoginURL(e.web.NewLoginToken())),
		chromedp.WaitVisible(chromedp.CSS(card+" .approve:not([disabled])")),
	); err != nil {
		t.Fatalf("card: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(card)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, agent) {
		t.Errorf("the card does not name the connector and its grant (%s):\n%s", agent, text)
	}
	// Approve is disabled until the whole diff is drawn: a click before
	// that would do nothing.
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(card+" .approve:not([disabled])")), chromedp.Click(chromedp.CSS(card+" .approve"))); err != nil {
		t.Fatalf("approve: %v", err)
	}
}

// TestRemoteBrowser_ConsentWithoutSession_AsksForLogin: the consent page
// opened in a browser without the person's session shows how to log in
// (a command on this machine, never a password form) and nothing of the
// request.
func TestRemoteBrowser_ConsentWithoutSession_AsksForLogin(t *testing.T) {
	e := startRemoteEnvUI(t, distFS(t), nil)
	clientID, redirect := e.register(t, "Intruder")
	id, _ := e.authorize(t, clientID, redirect)
	ctx := browserWithin(t, 60*time.Second)
	if err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+e.web.Addr()+"/#/consent/"+id),
		chromedp.WaitVisible(chromedp.ID("login-title")),
	); err != nil {
		t.Fatalf("consent page without session: %v", err)
	}
	page, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, "sluice login") || !strings.Contains(page, "open this page again") || strings.Contains(page, "Intruder") {
		t.Fatalf("page without session:\n%s", page)
	}
	passwords, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("input[type=password], form").length`))
	if err != nil || passwords != 0 {
		t.Fatalf("a form or password field on the page: %d %v", passwords, err)
	}
}
