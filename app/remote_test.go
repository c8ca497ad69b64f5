package app

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/proposal"
)

// remoteEnv is an app with a repository under its allowed root, its web
// UI, and the remote listener, all on real sockets.
type remoteEnv struct {
	a    *App
	web  *Web
	rem  *Remote
	repo string
	// login opens the person's session in a browser-like client, once;
	// browser and csrf are that session.
	login   string
	browser *http.Client
	csrf    string
}

func startRemoteEnv(t *testing.T, mod func(*remoteOptions)) *remoteEnv {
	t.Helper()
	return startRemoteEnvUI(t, testAssets, mod)
}

// startRemoteEnvUI is startRemoteEnv with the front end assets (the built
// one for a browser).
func startRemoteEnvUI(t *testing.T, assets fs.FS, mod func(*remoteOptions)) *remoteEnv {
	t.Helper()
	a, repo, _ := flowEnv(t)
	w, token, err := NewWeb(a, assets, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go w.Serve()
	t.Cleanup(func() { w.Shutdown(context.Background()) })
	o := remoteOptions{Addr: "127.0.0.1:0", allowLoopbackClientIDs: true}
	if mod != nil {
		mod(&o)
	}
	rem, err := StartRemote(a, w, o)
	if err != nil {
		t.Fatal(err)
	}
	go rem.Serve()
	t.Cleanup(func() { rem.Shutdown(context.Background()) })
	return &remoteEnv{a: a, web: w, rem: rem, repo: repo, login: w.LoginURL(token)}
}

func (e *remoteEnv) base() string { return strings.TrimSuffix(e.rem.URL(), "/mcp") }

// register registers a client by RFC 7591 with a loopback redirect URI.
func (e *remoteEnv) register(t *testing.T, name string) (id, redirect string) {
	t.Helper()
	redirect = "http://127.0.0.1:9/callback"
	body := `{"client_name":"` + name + `","redirect_uris":["` + redirect + `"],"token_endpoint_auth_method":"none"}`
	resp, err := http.Post(e.base()+"/register", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reg struct {
		ClientID string `json:"client_id"`
	}
	json.NewDecoder(resp.Body).Decode(&reg)
	if resp.StatusCode != http.StatusCreated || reg.ClientID == "" {
		t.Fatalf("register: %d", resp.StatusCode)
	}
	return reg.ClientID, redirect
}

// authorize starts an authorization request and returns the consent id
// the browser is sent to, and the PKCE verifier.
func (e *remoteEnv) authorize(t *testing.T, clientID, redirect string) (id, verifier string) {
	t.Helper()
	verifier = "verifier-" + strings.Repeat("abc", 15)
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect},
		"scope": {"read propose"}, "state": {"st-12345678"}, "code_challenge": {s256(verifier)},
		"code_challenge_method": {"S256"}, "resource": {e.rem.URL()}}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(e.base() + "/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	prefix := "http://" + e.web.Addr() + "/#/consent/"
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, prefix) {
		t.Fatalf("authorize: %d %q, want the local UI's consent page", resp.StatusCode, loc)
	}
	return strings.TrimPrefix(loc, prefix), verifier
}

// session logs a browser-like client in and returns it with its CSRF
// token.
func (e *remoteEnv) session(t *testing.T) (*http.Client, string) {
	t.Helper()
	if e.browser != nil {
		return e.browser, e.csrf
	}
	c := newBrowserClient(t)
	get(t, c, e.login, nil)
	_, body := get(t, c, "http://"+e.web.Addr()+"/api/session", nil)
	var s struct{ CSRF string }
	if err := json.Unmarshal([]byte(body), &s); err != nil || s.CSRF == "" {
		t.Fatalf("session: %q", body)
	}
	e.browser, e.csrf = c, s.CSRF
	return c, s.CSRF
}

func postConsent(t *testing.T, c *http.Client, u string, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, b.String()
}

// token redeems a code.
func (e *remoteEnv) token(t *testing.T, clientID, redirect, code, verifier string) string {
	t.Helper()
	resp, err := http.PostForm(e.base()+"/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"code_verifier": {verifier}, "redirect_uri": {redirect}, "client_id": {clientID}, "resource": {e.rem.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	json.NewDecoder(resp.Body).Decode(&tok)
	if resp.StatusCode != http.StatusOK || tok.AccessToken == "" {
		t.Fatalf("token: %d", resp.StatusCode)
	}
	return tok.AccessToken
}

// allow has the person allow the request id in their session and returns
// the code.
func (e *remoteEnv) allow(t *testing.T, id string) string {
	t.Helper()
	c, csrf := e.session(t)
	resp, body := postConsent(t, c, "http://"+e.web.Addr()+"/api/connectors/consent/"+id, `{"allow":true}`, map[string]string{csrfHeader: csrf})
	var out ConnectorDecided
	if err := json.Unmarshal([]byte(body), &out); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("allow: %d %s", resp.StatusCode, body)
	}
	u, _ := url.Parse(out.Redirect)
	if u.Query().Get("iss") != e.base() || u.Query().Get("code") == "" {
		t.Fatalf("allow redirect %s", out.Redirect)
	}
	return u.Query().Get("code")
}

func (e *remoteEnv) connect(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), desktopWait)
	t.Cleanup(cancel)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "claimed-name", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: e.rem.URL(), HTTPClient: &http.Client{Transport: tokenBearer{token}}, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestRemote_Connector_ProposesAndPersonApproves: discovery from a 401,
// registration, the person's consent in their session, a token, an MCP
// session that reads and proposes, the person's approval, and the
// connector's wait seeing it complete; the proposal and the ledger name
// the connector by client and grant; Settings lists it; Revoke ends it.
func TestRemote_Connector_ProposesAndPersonApproves(t *testing.T) {
	e := startRemoteEnv(t, nil)

	// Discovery as a client does it: a 401 names the resource metadata,
	// which names the authorization server.
	resp, err := http.Post(e.rem.URL(), "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	wa := resp.Header.Get("WWW-Authenticate")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(wa, `resource_metadata="`+e.base()+`/.well-known/oauth-protected-resource"`) {
		t.Fatalf("unauthenticated: %d %q", resp.StatusCode, wa)
	}
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		resp, body := get(t, http.DefaultClient, e.base()+p, nil)
		var prm struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		if json.Unmarshal([]byte(body), &prm); resp.StatusCode != http.StatusOK || prm.Resource != e.rem.URL() || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != e.base() {
			t.Fatalf("%s: %d %s", p, resp.StatusCode, body)
		}
	}

	clientID, redirect := e.register(t, "ChatGPT")
	id, verifier := e.authorize(t, clientID, redirect)

	c, _ := e.session(t)
	resp, body := get(t, c, "http://"+e.web.Addr()+"/api/connectors/consent/"+id, nil)
	var cv ConsentView
	if err := json.Unmarshal([]byte(body), &cv); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("consent view: %d %s", resp.StatusCode, body)
	}
	if cv.Client.Name != "ChatGPT" || cv.RedirectHost != "127.0.0.1:9" || strings.Join(cv.Scopes, " ") != "read propose" || len(cv.AllowedRoots) != 1 {
		t.Fatalf("consent view %+v", cv)
	}

	code := e.allow(t, id)
	token := e.token(t, clientID, redirect, code, verifier)
	cs := e.connect(t, token)

	// The connector's tools are its scopes': git and propose, nothing
	// that runs commands or grants anything.
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if strings.HasPrefix(tl.Name, "workspace_") {
			t.Fatalf("a connector was given %s", tl.Name)
		}
	}
	if !strings.Contains(strings.Join(names, ","), "repo_brief") || !strings.Contains(strings.Join(names, ","), "propose_commit") {
		t.Fatalf("tools %v", names)
	}
	if out, isErr := callTool(t, cs, "toolset_enable", map[string]any{"toolset": "workspace"}); !isErr {
		t.Fatalf("toolset_enable workspace: %v", out)
	}
	if out, isErr := callTool(t, cs, "repo_brief", map[string]any{"repoPath": e.repo}); isErr {
		t.Fatalf("repo_brief: %v", out)
	}
	os.WriteFile(filepath.Join(e.repo, "README.md"), []byte("hello from a connector\n"), 0o644)
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": e.repo, "reason": "Greet", "message": "Greet", "paths": []string{"README.md"},
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	pid := out["proposalId"].(string)
	api := &API{app: e.a, kind: "web"}
	card, err := api.Proposal(pid)
	if err != nil {
		t.Fatal(err)
	}
	want := "ChatGPT:connector-granted-" + time.Now().Format("2-Jan")
	if card.Agent != want {
		t.Fatalf("card agent %q, want %q", card.Agent, want)
	}
	if _, err := api.Approve(Decision{ID: pid, Digest: card.Digest}); err != nil {
		t.Fatal(err)
	}
	out, isErr = callTool(t, cs, "proposal_wait", map[string]any{"proposalId": pid, "timeoutSeconds": 30})
	if isErr || out["status"] != string(proposal.Completed) {
		t.Fatalf("proposal_wait: %v %v", isErr, out)
	}

	// The ledger has the person's Allow and the connector's calls.
	av, err := api.Audit()
	if err != nil {
		t.Fatal(err)
	}
	var allowed, byConnector bool
	for _, en := range av.Entries {
		if en["event_type"] == "oauth_consent_allowed" || en["eventType"] == "oauth_consent_allowed" {
			allowed = true
		}
		if en["agent"] == want || en["session_id"] == want {
			byConnector = true
		}
		b, _ := json.Marshal(en)
		if strings.Contains(string(b), "oauth_consent_allowed") {
			allowed = true
		}
		if strings.Contains(string(b), want) {
			byConnector = true
		}
	}
	if !allowed || !byConnector {
		t.Fatalf("ledger: allowed=%v byConnector=%v", allowed, byConnector)
	}

	// Settings lists it with its last use; Revoke ends its token at once.
	list, err := api.Connectors()
	if err != nil || len(list.Connectors) != 1 || list.Connectors[0].LastUse.IsZero() || strings.Join(list.Connectors[0].Scopes, " ") != "read propose" {
		t.Fatalf("connectors %+v %v", list, err)
	}
	if _, err := api.RevokeConnector(ConnectorRevoke{ID: clientID}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, e.rem.URL(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("revoked connector's token: %d, want 401", resp.StatusCode)
	}
}

// TestRemote_Refused_ConsentWithoutSession: the consent page's API answers
// nothing without the person's session, and the request stays pending.
func TestRemote_Refused_ConsentWithoutSession(t *testing.T) {
	e := startRemoteEnv(t, nil)
	clientID, redirect := e.register(t, "Intruder")
	id, _ := e.authorize(t, clientID, redirect)
	anon := newBrowserClient(t)
	if resp, _ := get(t, anon, "http://"+e.web.Addr()+"/api/connectors/consent/"+id, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("consent view without session: %d", resp.StatusCode)
	}
	if resp, _ := postConsent(t, anon, "http://"+e.web.Addr()+"/api/connectors/consent/"+id, `{"allow":true}`, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("allow without session: %d", resp.StatusCode)
	}
	// Nor is any of it on the internet-facing listener.
	for _, p := range []string{"/api/connectors/consent/" + id, "/api/status", "/", "/login", "/v1/proposals"} {
		if resp, _ := get(t, http.DefaultClient, e.base()+p, nil); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("remote listener serves %s: %d", p, resp.StatusCode)
		}
	}
	e.allow(t, id) // still pending: the person can answer it
}

// TestRemote_Refused_CrossSiteConsentPost: a page elsewhere that posts
// Allow with the person's cookie (and even a stolen CSRF token) is
// refused, and the request stays pending.
func TestRemote_Refused_CrossSiteConsentPost(t *testing.T) {
	e := startRemoteEnv(t, nil)
	clientID, redirect := e.register(t, "Intruder")
	id, _ := e.authorize(t, clientID, redirect)
	c, csrf := e.session(t)
	u := "http://" + e.web.Addr() + "/api/connectors/consent/" + id
	for _, hdr := range []map[string]string{
		{csrfHeader: csrf, "Origin": "https://evil.example"},
		{csrfHeader: csrf, "Sec-Fetch-Site": "cross-site"},
		{"Origin": "http://" + e.web.Addr()},
	} {
		if resp, body := postConsent(t, c, u, `{"allow":true}`, hdr); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("cross-site allow %v: %d %s", hdr, resp.StatusCode, body)
		}
	}
	e.allow(t, id)
}

// TestRemote_Refused_TokenInQuery: a token in the URL is refused even when
// it is valid; only the Authorization header carries one.
func TestRemote_Refused_TokenInQuery(t *testing.T) {
	e := startRemoteEnv(t, nil)
	clientID, redirect := e.register(t, "ChatGPT")
	id, verifier := e.authorize(t, clientID, redirect)
	token := e.token(t, clientID, redirect, e.allow(t, id), verifier)
	req, _ := http.NewRequest(http.MethodPost, e.rem.URL()+"?access_token="+url.QueryEscape(token), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "Authorization header") {
		t.Fatalf("token in query: %d %q, want 400 naming the header", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	// Nor is a token in the path (the bearer-token transport's
	// --allow-path-token) accepted here.
	if resp, _ := get(t, http.DefaultClient, e.base()+"/mcp/"+token, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("token in the path: %d", resp.StatusCode)
	}
}

// TestRemote_Refused_ExpiredToken: an access token past its lifetime is
// answered 401 with the resource metadata, so the client refreshes.
func TestRemote_Refused_ExpiredToken(t *testing.T) {
	e := startRemoteEnv(t, func(o *remoteOptions) { o.accessTokenLifespan = -time.Minute })
	clientID, redirect := e.register(t, "ChatGPT")
	id, verifier := e.authorize(t, clientID, redirect)
	token := e.token(t, clientID, redirect, e.allow(t, id), verifier)
	req, _ := http.NewRequest(http.MethodPost, e.rem.URL(), strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Fatalf("expired token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

// TestRemote_Refused_ForeignHost: the listener answers only to the public
// URL's host, and a browser origin other than it is refused.
func TestRemote_Refused_ForeignHost(t *testing.T) {
	e := startRemoteEnv(t, nil)
	// Refused as the MCP endpoint refuses any other host (403, or 421
	// Misdirected Request).
	if resp, _ := get(t, http.DefaultClient, e.base()+"/.well-known/oauth-authorization-server", map[string]string{"Host": "evil.example"}); resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("foreign Host: %d", resp.StatusCode)
	}
	if resp, _ := get(t, http.DefaultClient, e.base()+"/.well-known/oauth-authorization-server", map[string]string{"Origin": "https://evil.example"}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign Origin: %d", resp.StatusCode)
	}
}

func TestCheckPublicURL(t *testing.T) {
	for _, ok := range []string{"https://x.trycloudflare.com", "https://x.example/", "http://127.0.0.1:8766"} {
		if _, err := checkPublicURL(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://x.example", "https://x.example/mcp", "https://u:p@x.example", "x.example", "https://x.example?a=1"} {
		if _, err := checkPublicURL(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// s256 is a PKCE verifier's S256 challenge.
func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// TestForwardedFrom_TrustedProxiesOnly: X-Forwarded-* and Forwarded are
// dropped from a peer that is not a configured proxy, and a configured
// proxy's X-Forwarded-For names the client.
func TestForwardedFrom_TrustedProxiesOnly(t *testing.T) {
	var got *http.Request
	h := forwardedFrom([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r }))
	for _, tc := range []struct {
		peer, wantAddr, wantXFF string
	}{
		{"203.0.113.9:4000", "203.0.113.9:4000", ""},
		{"127.0.0.1:4000", "198.51.100.7:0", "10.0.0.1, 198.51.100.7"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/token", nil)
		r.RemoteAddr = tc.peer
		r.Header.Set("X-Forwarded-For", "10.0.0.1, 198.51.100.7")
		r.Header.Set("X-Forwarded-Host", "evil.example")
		r.Header.Set("Forwarded", "host=evil.example")
		h.ServeHTTP(httptest.NewRecorder(), r)
		if got.RemoteAddr != tc.wantAddr || got.Header.Get("X-Forwarded-For") != tc.wantXFF {
			t.Errorf("peer %s: RemoteAddr %q, X-Forwarded-For %q", tc.peer, got.RemoteAddr, got.Header.Get("X-Forwarded-For"))
		}
		if tc.wantXFF == "" && (got.Header.Get("X-Forwarded-Host") != "" || got.Header.Get("Forwarded") != "") {
			t.Errorf("peer %s: forwarded headers kept", tc.peer)
		}
	}
}
