package sidecar

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/oauth"
	"github.com/sluicehq/sluice/core/tokens"
)

// benchHTTPEnv is a configuration in temp dirs whose allowed root holds
// one small repository, for the HTTP transport's benchmarks.
func benchHTTPEnv(b *testing.B) (*config.Config, string) {
	b.Helper()
	dir := b.TempDir()
	root, _ := filepath.EvalSymlinks(dir)
	repo := filepath.Join(root, "widgets")
	b.Setenv("HOME", dir)
	b.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	b.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	b.Setenv("SLUICE_ALLOWED_ROOTS", root)
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo}, {"-C", repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "first"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	cfg, err := config.Load()
	if err != nil {
		b.Fatal(err)
	}
	return cfg, repo
}

// benchOAuthServer is the HTTP transport as `sluice remote` runs it: the
// MCP endpoint a protected resource of a real authorization server on the
// same listener.
func benchOAuthServer(b *testing.B, cfg *config.Config) (*HTTPServer, *oauth.Server) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	as, err := oauth.New(oauth.Options{Issuer: issuer, Resource: issuer + "/mcp",
		ConsentURL: func(id string) string { return "http://127.0.0.1:1/#/consent/" + id }})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := ListenHTTP(HTTPOptions{Config: cfg, Addr: ln.Addr().String(), Listener: ln,
		OAuth: &OAuthResource{Resource: issuer + "/mcp", Issuer: issuer, Server: as.Handler(), Paths: oauth.Paths,
			Verify: func(ctx context.Context, token string) (OAuthGrant, error) {
				g, err := as.Verify(ctx, token)
				return OAuthGrant{Identity: "bench", Scopes: g.Scopes, Expires: g.Expires}, err
			}}})
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve()
	b.Cleanup(func() { srv.Shutdown(context.Background()) })
	return srv, as
}

// benchAuthorize is a connector's whole sign-in: registration, the
// authorization request, the person's Allow (the call the consent page
// makes), and the token exchange. It returns the access token.
func benchAuthorize(b *testing.B, srv *HTTPServer, as *oauth.Server) string {
	b.Helper()
	base := "http://" + srv.Addr()
	redirect := "http://127.0.0.1:9/callback"
	resp, err := http.Post(base+"/register", "application/json",
		strings.NewReader(`{"client_name":"Bench","redirect_uris":["`+redirect+`"],"token_endpoint_auth_method":"none"}`))
	if err != nil {
		b.Fatal(err)
	}
	var reg struct {
		ClientID string `json:"client_id"`
	}
	json.NewDecoder(resp.Body).Decode(&reg)
	resp.Body.Close()
	verifier := strings.Repeat("v", 43)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {redirect}, "scope": {"read propose"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "resource": {srv.URL()}}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noFollow.Get(base + "/authorize?" + q.Encode())
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	to, err := as.Decide(context.Background(), loc[strings.LastIndex(loc, "/")+1:], true, "web")
	if err != nil {
		b.Fatal(err)
	}
	u, _ := url.Parse(to)
	resp, err = http.PostForm(base+"/token", url.Values{"grant_type": {"authorization_code"}, "code": {u.Query().Get("code")},
		"code_verifier": {verifier}, "redirect_uri": {redirect}, "client_id": {reg.ClientID}, "resource": {srv.URL()}})
	if err != nil {
		b.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if tok.AccessToken == "" {
		b.Fatalf("no access token (%d)", resp.StatusCode)
	}
	return tok.AccessToken
}

// benchConnect opens an MCP session with token ("" for none) and makes
// its first tool call, repo_brief.
func benchConnect(b *testing.B, endpoint, token, repo string) *mcp.ClientSession {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearerTransport{token}}, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "repo_brief", Arguments: map[string]any{"repoPath": repo}})
	if err != nil || res.IsError {
		b.Fatalf("repo_brief: %v %+v", err, res)
	}
	return cs
}

// BenchmarkRemote_AuthorizeToFirstToolCall: a connector's sign-in through
// the authorization server (without the person's reading time), then its
// MCP session and first tool call.
func BenchmarkRemote_AuthorizeToFirstToolCall(b *testing.B) {
	cfg, repo := benchHTTPEnv(b)
	srv, as := benchOAuthServer(b, cfg)
	b.ResetTimer()
	for b.Loop() {
		cs := benchConnect(b, srv.URL(), benchAuthorize(b, srv, as), repo)
		cs.Close()
	}
}

// BenchmarkRemote_BearerTokenToFirstToolCall: the same first tool call
// with a bearer token the person made beforehand (`sluice-sidecar token
// create`), for comparison.
func BenchmarkRemote_BearerTokenToFirstToolCall(b *testing.B) {
	cfg, repo := benchHTTPEnv(b)
	store := tokens.Open(tokens.DefaultPath(cfg))
	secret, err := store.Create("bench")
	if err != nil {
		b.Fatal(err)
	}
	srv, err := ListenHTTP(HTTPOptions{Config: cfg, Addr: "127.0.0.1:0", Tokens: store})
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve()
	b.Cleanup(func() { srv.Shutdown(context.Background()) })
	b.ResetTimer()
	for b.Loop() {
		cs := benchConnect(b, srv.URL(), secret, repo)
		cs.Close()
	}
}

// benchRequests measures one request on an open session: a ping (the
// cheapest request, where the token check weighs most) and a repo_brief.
func benchRequests(b *testing.B, cs *mcp.ClientSession, repo string) {
	b.Run("ping", func(b *testing.B) {
		for b.Loop() {
			if err := cs.Ping(context.Background(), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("repo_brief", func(b *testing.B) {
		for b.Loop() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "repo_brief", Arguments: map[string]any{"repoPath": repo}})
			if err != nil || res.IsError {
				b.Fatalf("repo_brief: %v", err)
			}
		}
	})
}

// BenchmarkRemote_Request_NoAuth, _OAuth and _BearerToken: the same
// requests on a session without authentication (the conformance suite's
// server), with an OAuth access token checked on every request, and with a
// bearer token of the token store, in one run.
func BenchmarkRemote_Request_NoAuth(b *testing.B) {
	cfg, repo := benchHTTPEnv(b)
	srv, err := ListenHTTP(HTTPOptions{Config: cfg, Addr: "127.0.0.1:0", insecureNoAuthForTests: true})
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve()
	b.Cleanup(func() { srv.Shutdown(context.Background()) })
	cs := benchConnect(b, srv.URL(), "", repo)
	defer cs.Close()
	benchRequests(b, cs, repo)
}

func BenchmarkRemote_Request_OAuth(b *testing.B) {
	cfg, repo := benchHTTPEnv(b)
	srv, as := benchOAuthServer(b, cfg)
	cs := benchConnect(b, srv.URL(), benchAuthorize(b, srv, as), repo)
	defer cs.Close()
	benchRequests(b, cs, repo)
}

func BenchmarkRemote_Request_BearerToken(b *testing.B) {
	cfg, repo := benchHTTPEnv(b)
	store := tokens.Open(tokens.DefaultPath(cfg))
	secret, err := store.Create("bench")
	if err != nil {
		b.Fatal(err)
	}
	srv, err := ListenHTTP(HTTPOptions{Config: cfg, Addr: "127.0.0.1:0", Tokens: store})
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve()
	b.Cleanup(func() { srv.Shutdown(context.Background()) })
	cs := benchConnect(b, srv.URL(), secret, repo)
	defer cs.Close()
	benchRequests(b, cs, repo)
}
