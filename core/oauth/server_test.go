package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// testAS is an authorization server on a real HTTP listener, with a
// client ID metadata document served on 127.0.0.1 beside it.
type testAS struct {
	t      testing.TB
	srv    *Server
	http   *httptest.Server
	events []Event
	// docURL is the client ID of the metadata document; redirect is its
	// only redirect URI.
	docURL   string
	redirect string
}

const testResourcePath = "/mcp"

func newTestAS(t testing.TB, mod func(*Options)) *testAS {
	t.Helper()
	ta := &testAS{t: t}
	mux := http.NewServeMux()
	ta.http = httptest.NewServer(mux)
	t.Cleanup(ta.http.Close)
	opts := Options{
		Issuer:                 ta.http.URL,
		Resource:               ta.http.URL + testResourcePath,
		ConsentURL:             func(id string) string { return "http://127.0.0.1:1/#/consent/" + id },
		AllowLoopbackClientIDs: true,
		OnEvent:                func(e Event) { ta.events = append(ta.events, e) },
	}
	if mod != nil {
		mod(&opts)
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ta.srv = srv
	ta.docURL = ta.http.URL + "/client/metadata.json"
	ta.redirect = ta.http.URL + "/callback"
	mux.HandleFunc("GET /client/metadata.json", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{
			"client_id": ta.docURL, "client_name": "Test Connector", "redirect_uris": []string{ta.redirect},
			"token_endpoint_auth_method": "none",
		})
	})
	mux.Handle("/", srv.Handler())
	return ta
}

func noRedirects() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// pkcePair is a verifier and its S256 challenge.
func pkcePair() (verifier, challenge string) {
	verifier = strings.Repeat("v", 20) + randomID()
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorizeQuery is a well-formed authorization request of the document's
// client; mod changes it.
func (ta *testAS) authorizeQuery(challenge string, mod func(url.Values)) url.Values {
	q := url.Values{
		"response_type": {"code"}, "client_id": {ta.docURL}, "redirect_uri": {ta.redirect},
		"scope": {"read propose"}, "state": {"state-123456"}, "code_challenge": {challenge},
		"code_challenge_method": {"S256"}, "resource": {ta.srv.opts.Resource},
	}
	if mod != nil {
		mod(q)
	}
	return q
}

// authorize sends an authorization request and returns the response (no
// redirect followed).
func (ta *testAS) authorize(q url.Values) *http.Response {
	ta.t.Helper()
	resp, err := noRedirects().Get(ta.http.URL + "/authorize?" + q.Encode())
	if err != nil {
		ta.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// consentID is the pending request id a consent redirect names.
func (ta *testAS) consentID(resp *http.Response) string {
	ta.t.Helper()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.Contains(loc, "/#/consent/") {
		ta.t.Fatalf("authorize: %d %q, want a redirect to the consent page", resp.StatusCode, loc)
	}
	return loc[strings.LastIndex(loc, "/")+1:]
}

// code runs authorize and the person's Allow, and returns the code and
// the verifier.
func (ta *testAS) code(mod func(url.Values)) (code, verifier string) {
	ta.t.Helper()
	verifier, challenge := pkcePair()
	id := ta.consentID(ta.authorize(ta.authorizeQuery(challenge, mod)))
	to, err := ta.srv.Decide(context.Background(), id, true, "web")
	if err != nil {
		ta.t.Fatal(err)
	}
	u, err := url.Parse(to)
	if err != nil {
		ta.t.Fatal(err)
	}
	if got := u.Query().Get("iss"); got != ta.srv.Issuer() {
		ta.t.Fatalf("authorization response iss = %q, want %q (RFC 9207)", got, ta.srv.Issuer())
	}
	if u.Query().Get("state") != "state-123456" || u.Query().Get("code") == "" {
		ta.t.Fatalf("authorization response %s lacks code or state", to)
	}
	return u.Query().Get("code"), verifier
}

type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
	ExpiresIn    int    `json:"expires_in"`
	Error        string `json:"error"`
	Status       int    `json:"-"`
}

func (ta *testAS) token(form url.Values) tokenAnswer {
	ta.t.Helper()
	resp, err := http.PostForm(ta.http.URL+"/token", form)
	if err != nil {
		ta.t.Fatal(err)
	}
	defer resp.Body.Close()
	var a tokenAnswer
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &a); err != nil {
		ta.t.Fatalf("token answer %s: %v", body, err)
	}
	a.Status = resp.StatusCode
	return a
}

func (ta *testAS) exchange(code, verifier string) tokenAnswer {
	return ta.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
		"redirect_uri": {ta.redirect}, "client_id": {ta.docURL}, "resource": {ta.srv.opts.Resource}})
}

func (ta *testAS) refresh(rt string) tokenAnswer {
	return ta.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {ta.docURL}})
}

func (ta *testAS) mustVerify(tok string) Grant {
	ta.t.Helper()
	g, err := ta.srv.Verify(context.Background(), tok)
	if err != nil {
		ta.t.Fatalf("Verify: %v", err)
	}
	return g
}

func (ta *testAS) refused(tok string) {
	ta.t.Helper()
	if _, err := ta.srv.Verify(context.Background(), tok); err == nil {
		ta.t.Fatal("Verify accepted a token that must be refused")
	}
}

func TestOAuth_Metadata_RFC8414(t *testing.T) {
	ta := newTestAS(t, nil)
	resp, err := http.Get(ta.http.URL + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var md map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&md); err != nil {
		t.Fatal(err)
	}
	if md["issuer"] != ta.http.URL || md["registration_endpoint"] != ta.http.URL+"/register" ||
		md["client_id_metadata_document_supported"] != true || md["authorization_response_iss_parameter_supported"] != true {
		t.Fatalf("metadata: %v", md)
	}
	if m, _ := json.Marshal(md["code_challenge_methods_supported"]); string(m) != `["S256"]` {
		t.Fatalf("code_challenge_methods_supported = %s, want only S256", m)
	}
}

// TestOAuth_MetadataDocument_FullFlow: a client ID metadata document on
// 127.0.0.1, the person's Allow, a token bound to the resource with the
// scopes, a refresh that rotates, and the ledger's events.
func TestOAuth_MetadataDocument_FullFlow(t *testing.T) {
	ta := newTestAS(t, nil)
	code, verifier := ta.code(nil)
	tok := ta.exchange(code, verifier)
	if tok.Status != http.StatusOK || tok.AccessToken == "" || tok.RefreshToken == "" {
		t.Fatalf("token: %+v", tok)
	}
	if tok.ExpiresIn <= 0 || tok.ExpiresIn > int(defaultAccessTTL/time.Second) {
		t.Fatalf("expires_in = %d, want a short-lived token", tok.ExpiresIn)
	}
	g := ta.mustVerify(tok.AccessToken)
	if g.ClientName != "Test Connector" || strings.Join(g.Scopes, " ") != "read propose" || g.GrantedAt.IsZero() {
		t.Fatalf("grant %+v", g)
	}
	next := ta.refresh(tok.RefreshToken)
	if next.Status != http.StatusOK || next.RefreshToken == "" || next.RefreshToken == tok.RefreshToken {
		t.Fatalf("refresh: %+v, want a new refresh token", next)
	}
	ta.refused(tok.AccessToken) // the old access token ends with the rotation
	ta.mustVerify(next.AccessToken)
	if len(ta.srv.Clients()) != 1 {
		t.Fatalf("Clients = %+v", ta.srv.Clients())
	}
	var types []string
	for _, e := range ta.events {
		types = append(types, e.Type)
	}
	if strings.Join(types, ",") != "oauth_consent_allowed" {
		t.Fatalf("events %v", types)
	}
}

// TestOAuth_DynamicRegistration: RFC 7591 registration, then the whole
// flow with a client secret.
func TestOAuth_DynamicRegistration(t *testing.T) {
	ta := newTestAS(t, nil)
	body := `{"client_name":"Claude","redirect_uris":["https://claude.ai/api/mcp/auth_callback"],"token_endpoint_auth_method":"client_secret_post","scope":"read propose"}`
	resp, err := http.Post(ta.http.URL+"/register", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reg map[string]any
	json.NewDecoder(resp.Body).Decode(&reg)
	if resp.StatusCode != http.StatusCreated || reg["client_id"] == "" || reg["client_secret"] == nil {
		t.Fatalf("register: %d %v", resp.StatusCode, reg)
	}
	id, secret := reg["client_id"].(string), reg["client_secret"].(string)
	verifier, challenge := pkcePair()
	q := ta.authorizeQuery(challenge, func(q url.Values) {
		q.Set("client_id", id)
		q.Set("redirect_uri", "https://claude.ai/api/mcp/auth_callback")
	})
	to, err := ta.srv.Decide(context.Background(), ta.consentID(ta.authorize(q)), true, "web")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(to)
	if u.Host != "claude.ai" || u.Query().Get("code") == "" {
		t.Fatalf("redirect %s", to)
	}
	tok := ta.token(url.Values{"grant_type": {"authorization_code"}, "code": {u.Query().Get("code")}, "code_verifier": {verifier},
		"redirect_uri": {"https://claude.ai/api/mcp/auth_callback"}, "client_id": {id}, "client_secret": {secret}})
	if tok.Status != http.StatusOK || tok.AccessToken == "" {
		t.Fatalf("token %+v", tok)
	}
	ta.mustVerify(tok.AccessToken)
}

func TestOAuth_Refused_MissingPKCE(t *testing.T) {
	ta := newTestAS(t, nil)
	resp := ta.authorize(ta.authorizeQuery("", func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }))
	assertErrorRedirect(t, ta, resp, "invalid_request")
}

func TestOAuth_Refused_PlainPKCE(t *testing.T) {
	ta := newTestAS(t, nil)
	verifier, _ := pkcePair()
	resp := ta.authorize(ta.authorizeQuery(verifier, func(q url.Values) { q.Set("code_challenge_method", "plain") }))
	assertErrorRedirect(t, ta, resp, "invalid_request")
}

// TestOAuth_Refused_WrongVerifier: a code redeemed without its verifier,
// or with another one, gives no token.
func TestOAuth_Refused_WrongVerifier(t *testing.T) {
	ta := newTestAS(t, nil)
	code, _ := ta.code(nil)
	for _, v := range []string{"", strings.Repeat("x", 50)} {
		if tok := ta.exchange(code, v); tok.Status == http.StatusOK || tok.AccessToken != "" {
			t.Fatalf("verifier %q: got a token %+v", v, tok)
		}
	}
}

// assertErrorRedirect: the request is refused with an error sent back to
// the registered redirect URI (with iss), and the person never sees it.
func assertErrorRedirect(t *testing.T, ta *testAS, resp *http.Response, code string) {
	t.Helper()
	loc := resp.Header.Get("Location")
	u, err := url.Parse(loc)
	if err != nil || resp.StatusCode < 300 || resp.StatusCode > 399 || !strings.HasPrefix(loc, ta.redirect) {
		t.Fatalf("answer %d %q, want an error redirect to %s", resp.StatusCode, loc, ta.redirect)
	}
	if u.Query().Get("error") != code || u.Query().Get("code") != "" || u.Query().Get("iss") != ta.srv.Issuer() {
		t.Fatalf("redirect %s, want error=%s, no code, and iss", loc, code)
	}
}

// TestOAuth_Refused_RedirectOneCharacterOff: a redirect URI one character
// away from the registered one (even only the loopback port, which RFC
// 8252 would allow) is refused, and nothing is redirected anywhere.
func TestOAuth_Refused_RedirectOneCharacterOff(t *testing.T) {
	ta := newTestAS(t, nil)
	_, challenge := pkcePair()
	for _, r := range []string{ta.redirect + "x", strings.TrimSuffix(ta.redirect, "k"), strings.Replace(ta.redirect, "/callback", "/Callback", 1),
		strings.Replace(ta.redirect, "127.0.0.1:", "127.0.0.1:1", 1)} {
		resp := ta.authorize(ta.authorizeQuery(challenge, func(q url.Values) { q.Set("redirect_uri", r) }))
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
			t.Fatalf("redirect_uri %s: %d %q, want 400 and no redirect", r, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
}

// TestOAuth_Refused_OpenRedirect: an unregistered redirect URI elsewhere,
// or an unknown client, never turns the server into a redirector.
func TestOAuth_Refused_OpenRedirect(t *testing.T) {
	ta := newTestAS(t, nil)
	_, challenge := pkcePair()
	for _, mod := range []func(url.Values){
		func(q url.Values) { q.Set("redirect_uri", "https://evil.example/steal") },
		func(q url.Values) { q.Set("client_id", "unknown"); q.Set("redirect_uri", "https://evil.example/steal") },
		func(q url.Values) { q.Del("redirect_uri") },
		func(q url.Values) { q.Set("client_id", "https://evil.example/steal") },
	} {
		resp := ta.authorize(ta.authorizeQuery(challenge, mod))
		if resp.Header.Get("Location") != "" || resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%d %q, want 400 and no redirect", resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	// Registration refuses a redirect URI that is neither https nor
	// loopback http.
	resp, err := http.Post(ta.http.URL+"/register", "application/json",
		strings.NewReader(`{"client_name":"x","redirect_uris":["http://evil.example/cb"]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("register with http redirect: %d", resp.StatusCode)
	}
}

func TestOAuth_Refused_CodeUsedTwice(t *testing.T) {
	ta := newTestAS(t, nil)
	code, verifier := ta.code(nil)
	first := ta.exchange(code, verifier)
	if first.Status != http.StatusOK {
		t.Fatalf("first: %+v", first)
	}
	second := ta.exchange(code, verifier)
	if second.Status == http.StatusOK || second.Error != "invalid_grant" {
		t.Fatalf("second use: %+v, want invalid_grant", second)
	}
	// The tokens the code gave are revoked too (RFC 6749 §4.1.2).
	ta.refused(first.AccessToken)
	if r := ta.refresh(first.RefreshToken); r.Status == http.StatusOK {
		t.Fatalf("refresh token of a replayed code still works: %+v", r)
	}
}

// TestOAuth_Refused_OtherResource: a token is asked for another resource
// (at authorization or at the token endpoint), or was issued by another
// server.
func TestOAuth_Refused_OtherResource(t *testing.T) {
	ta := newTestAS(t, nil)
	_, challenge := pkcePair()
	resp := ta.authorize(ta.authorizeQuery(challenge, func(q url.Values) { q.Set("resource", "https://other.example/mcp") }))
	assertErrorRedirect(t, ta, resp, "invalid_request")

	code, verifier := ta.code(nil)
	tok := ta.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
		"redirect_uri": {ta.redirect}, "client_id": {ta.docURL}, "resource": {"https://other.example/mcp"}})
	if tok.Status != http.StatusBadRequest || tok.Error != "invalid_target" {
		t.Fatalf("token for another resource: %+v", tok)
	}

	other := newTestAS(t, nil)
	c2, v2 := other.code(nil)
	foreign := other.exchange(c2, v2)
	if foreign.Status != http.StatusOK {
		t.Fatalf("other server's token: %+v", foreign)
	}
	ta.refused(foreign.AccessToken)
}

// TestOAuth_Refused_WrongAudience: a token whose grant names another
// audience is refused by Verify even though it is otherwise valid.
func TestOAuth_Refused_WrongAudience(t *testing.T) {
	ta := newTestAS(t, nil)
	code, verifier := ta.code(nil)
	tok := ta.exchange(code, verifier)
	ta.srv.opts.Resource = ta.http.URL + "/elsewhere"
	if _, err := ta.srv.Verify(context.Background(), tok.AccessToken); !errors.Is(err, ErrWrongAudience) {
		t.Fatalf("Verify = %v, want ErrWrongAudience", err)
	}
}

func TestOAuth_Refused_ExpiredToken(t *testing.T) {
	ta := newTestAS(t, func(o *Options) { o.AccessTokenLifespan = -time.Minute })
	code, verifier := ta.code(nil)
	tok := ta.exchange(code, verifier)
	if tok.Status != http.StatusOK {
		t.Fatalf("token: %+v", tok)
	}
	ta.refused(tok.AccessToken)
}

// TestOAuth_Refused_RefreshReuseRevokesFamily: a refresh token used a
// second time (stolen and used by one side after the other) revokes the
// whole family: the newest access and refresh tokens too.
func TestOAuth_Refused_RefreshReuseRevokesFamily(t *testing.T) {
	ta := newTestAS(t, nil)
	code, verifier := ta.code(nil)
	first := ta.exchange(code, verifier)
	second := ta.refresh(first.RefreshToken)
	if second.Status != http.StatusOK {
		t.Fatalf("refresh: %+v", second)
	}
	ta.mustVerify(second.AccessToken)
	if again := ta.refresh(first.RefreshToken); again.Status == http.StatusOK {
		t.Fatalf("a rotated refresh token worked again: %+v", again)
	}
	ta.refused(second.AccessToken)
	if r := ta.refresh(second.RefreshToken); r.Status == http.StatusOK {
		t.Fatalf("the family's newest refresh token still works: %+v", r)
	}
}

// TestOAuth_Refused_DecideScope: no scope but read and propose exists; a
// request for decide (or restore, or settings) never reaches the person,
// and registration refuses it too.
func TestOAuth_Refused_DecideScope(t *testing.T) {
	ta := newTestAS(t, nil)
	_, challenge := pkcePair()
	for _, sc := range []string{"read decide", "approve", "restore", "settings", "workspace:grant"} {
		resp := ta.authorize(ta.authorizeQuery(challenge, func(q url.Values) { q.Set("scope", sc) }))
		assertErrorRedirect(t, ta, resp, "invalid_scope")
	}
	resp, err := http.Post(ta.http.URL+"/register", "application/json",
		strings.NewReader(`{"client_name":"x","redirect_uris":["https://x.example/cb"],"scope":"read decide"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("register with scope decide: %d", resp.StatusCode)
	}
}

// TestOAuth_Refused_RevokedClient: Revoke ends the client's tokens at
// once and refuses its refresh token; only a new decision of the person
// lets it back.
func TestOAuth_Refused_RevokedClient(t *testing.T) {
	ta := newTestAS(t, nil)
	code, verifier := ta.code(nil)
	tok := ta.exchange(code, verifier)
	ta.mustVerify(tok.AccessToken)
	_, challenge := pkcePair()
	waiting := ta.consentID(ta.authorize(ta.authorizeQuery(challenge, nil)))
	if err := ta.srv.RevokeClient(ta.docURL, "web"); err != nil {
		t.Fatal(err)
	}
	if _, err := ta.srv.Decide(context.Background(), waiting, true, "web"); !errors.Is(err, ErrNoSuchRequest) {
		t.Fatalf("a request made before Revoke was still answerable: %v", err)
	}
	ta.refused(tok.AccessToken)
	if r := ta.refresh(tok.RefreshToken); r.Status == http.StatusOK {
		t.Fatalf("refresh after revoke: %+v", r)
	}
	if last := ta.events[len(ta.events)-1]; last.Type != "oauth_client_revoked" || last.By != "web" {
		t.Fatalf("last event %+v", last)
	}
	// To come back it asks the person again; the old tokens stay dead.
	code, verifier = ta.code(nil)
	again := ta.exchange(code, verifier)
	ta.mustVerify(again.AccessToken)
	ta.refused(tok.AccessToken)
	if r := ta.refresh(tok.RefreshToken); r.Status == http.StatusOK {
		t.Fatalf("old refresh token after the new grant: %+v", r)
	}
}

// TestOAuth_Revocation_RFC7009: the client revokes its refresh token; the
// family's access token ends with it.
func TestOAuth_Revocation_RFC7009(t *testing.T) {
	ta := newTestAS(t, nil)
	code, verifier := ta.code(nil)
	tok := ta.exchange(code, verifier)
	resp, err := http.PostForm(ta.http.URL+"/revoke", url.Values{"token": {tok.RefreshToken}, "token_type_hint": {"refresh_token"}, "client_id": {ta.docURL}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	ta.refused(tok.AccessToken)
	if r := ta.refresh(tok.RefreshToken); r.Status == http.StatusOK {
		t.Fatalf("refresh after revocation: %+v", r)
	}
}

// TestOAuth_Deny: the person's Deny sends access_denied back, with iss,
// and is recorded.
func TestOAuth_Deny(t *testing.T) {
	ta := newTestAS(t, nil)
	_, challenge := pkcePair()
	id := ta.consentID(ta.authorize(ta.authorizeQuery(challenge, nil)))
	to, err := ta.srv.Decide(context.Background(), id, false, "web")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(to)
	if u.Query().Get("error") != "access_denied" || u.Query().Get("code") != "" || u.Query().Get("iss") != ta.srv.Issuer() {
		t.Fatalf("deny redirect %s", to)
	}
	if _, err := ta.srv.Decide(context.Background(), id, true, "web"); !errors.Is(err, ErrNoSuchRequest) {
		t.Fatalf("a decided request decided again: %v", err)
	}
	if ta.events[len(ta.events)-1].Type != "oauth_consent_denied" {
		t.Fatalf("events %+v", ta.events)
	}
}

// TestOAuth_MetadataDocument_MustNameItself: a document whose client_id is
// not its own URL is refused (anyone's document could otherwise be passed
// off under another URL), and a non-loopback http one is never fetched.
func TestOAuth_MetadataDocument_MustNameItself(t *testing.T) {
	ta := newTestAS(t, nil)
	f := newMetadataFetcher(false)
	if _, err := f.fetch(context.Background(), ta.docURL); err == nil {
		t.Fatal("a loopback document was fetched without AllowLoopbackClientIDs")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/doc", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"client_id":"https://chatgpt.com/oauth/client.json","client_name":"ChatGPT","redirect_uris":["https://x.example/cb"]}`))
	})
	liar := httptest.NewServer(mux)
	defer liar.Close()
	if _, err := newMetadataFetcher(true).fetch(context.Background(), liar.URL+"/doc"); !errors.Is(err, errBadMetadata) {
		t.Fatalf("fetch = %v, want errBadMetadata", err)
	}
}

// TestOAuth_NoState: a client that sends no state (the TypeScript SDK's)
// is served, PKCE binding its code, and gets no made-up state back.
func TestOAuth_NoState(t *testing.T) {
	ta := newTestAS(t, nil)
	verifier, challenge := pkcePair()
	id := ta.consentID(ta.authorize(ta.authorizeQuery(challenge, func(q url.Values) { q.Del("state") })))
	to, err := ta.srv.Decide(context.Background(), id, true, "web")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(to)
	if u.Query().Has("state") || u.Query().Get("code") == "" {
		t.Fatalf("redirect %s", to)
	}
	if tok := ta.exchange(u.Query().Get("code"), verifier); tok.Status != http.StatusOK {
		t.Fatalf("token %+v", tok)
	}
}

// BenchmarkOAuth_Verify is the token check every request to the MCP
// endpoint makes.
func BenchmarkOAuth_Verify(b *testing.B) {
	ta := newTestAS(b, nil)
	code, verifier := ta.code(nil)
	tok := ta.exchange(code, verifier)
	for b.Loop() {
		if _, err := ta.srv.Verify(context.Background(), tok.AccessToken); err != nil {
			b.Fatal(err)
		}
	}
}

// TestOAuth_Register_RateLimited: registration is open to the internet,
// so it is bounded per minute, and it writes nothing to the ledger.
func TestOAuth_Register_RateLimited(t *testing.T) {
	ta := newTestAS(t, nil)
	body := `{"client_name":"x","redirect_uris":["https://x.example/cb"],"token_endpoint_auth_method":"none"}`
	codes := map[int]int{}
	for range maxRegistrationsPerMinute + 5 {
		resp, err := http.Post(ta.http.URL+"/register", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	if codes[http.StatusCreated] != maxRegistrationsPerMinute || codes[http.StatusTooManyRequests] != 5 {
		t.Fatalf("answers %v", codes)
	}
	if len(ta.events) != 0 {
		t.Fatalf("registrations wrote events: %+v", ta.events)
	}
}
