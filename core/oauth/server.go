package oauth

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
)

// Options configure the authorization server.
type Options struct {
	// Issuer is the public origin, "https://sluice.example.ts.net": the
	// issuer identifier and the base of every endpoint.
	Issuer string
	// Resource is the MCP endpoint's URL, the only audience a token has.
	Resource string
	// ConsentURL is the page of Sluice's UI where the person decides the
	// pending request id.
	ConsentURL func(id string) string
	// AccessTokenLifespan (default 15 minutes) and RefreshTokenLifespan
	// (default 30 days). Tests make an access token that is expired when
	// issued with a negative lifespan.
	AccessTokenLifespan  time.Duration
	RefreshTokenLifespan time.Duration
	// AllowLoopbackClientIDs accepts client ID metadata documents served
	// on http://127.0.0.1 (a client on this machine; the tests).
	AllowLoopbackClientIDs bool
	// MetadataTLS, when set, is the TLS configuration for fetching client
	// ID metadata documents (tests trust their own certificate with it).
	MetadataTLS *tls.Config
	// OnEvent is told of what the person and connectors do (registration,
	// consent, revocation), for the audit ledger.
	OnEvent func(Event)
}

// Event is something the audit ledger records.
type Event struct {
	// Type is oauth_consent_allowed, oauth_consent_denied or
	// oauth_client_revoked. A registration is not an event: it grants
	// nothing, anyone on the internet can make one, and the person's
	// decision records the client as registered.
	Type   string
	Client Client
	Scopes []string
	By     string // who decided: the UI's kind ("web", "desktop"), or "" for the connector itself
}

// Errors the app's UI branches on.
var (
	ErrNoSuchRequest = errors.New("no such authorization request: it was decided already, or it expired (ask the connector to connect again)")
	ErrNoSuchClient  = errors.New("no such connector")
)

// Limits on what a stranger can make the server hold.
const (
	pendingTTL       = 10 * time.Minute
	maxPending       = 64
	maxUnusedClients = 200
	// maxRegistrationsPerMinute is far above what a person connecting
	// a few connectors needs.
	maxRegistrationsPerMinute = 30
	maxRegisterBody           = 16 << 10
	defaultAccessTTL          = 15 * time.Minute
	defaultRefreshTTL         = 30 * 24 * time.Hour
	authorizeCodeTTL          = 2 * time.Minute
)

// Server is the authorization server.
type Server struct {
	opts     Options
	store    *store
	provider fosite.OAuth2Provider
	// issuerURL is opts.Issuer parsed.
	issuerURL *url.URL

	mu      sync.Mutex
	pending map[string]*pendingRequest
	// registrations bounds how fast strangers can register clients.
	registrations window
}

// window allows at most max events in any minute.
type window struct {
	mu    sync.Mutex
	times []time.Time
	max   int
}

func (w *window) allow(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	kept := w.times[:0]
	for _, t := range w.times {
		if now.Sub(t) < time.Minute {
			kept = append(kept, t)
		}
	}
	w.times = kept
	if len(w.times) >= w.max {
		return false
	}
	w.times = append(w.times, now)
	return true
}

// pendingRequest is an authorization request waiting for the person.
type pendingRequest struct {
	ar      fosite.AuthorizeRequester
	created time.Time
	// noState is set when the client sent no state (see authorize).
	noState bool
}

// New builds the server. Issuer and Resource must be absolute URLs.
func New(opts Options) (*Server, error) {
	iss, err := url.Parse(opts.Issuer)
	if err != nil || (iss.Scheme != "https" && iss.Scheme != "http") || iss.Host == "" || (iss.Path != "" && iss.Path != "/") || iss.RawQuery != "" {
		return nil, fmt.Errorf("oauth: issuer %q: give an origin like https://sluice.example.com", opts.Issuer)
	}
	opts.Issuer = strings.TrimSuffix(opts.Issuer, "/")
	if u, err := url.Parse(opts.Resource); err != nil || u.Host == "" || u.Fragment != "" {
		return nil, fmt.Errorf("oauth: resource %q: give the MCP endpoint's absolute URL", opts.Resource)
	}
	if opts.ConsentURL == nil {
		return nil, errors.New("oauth: no consent page")
	}
	if opts.AccessTokenLifespan == 0 {
		opts.AccessTokenLifespan = defaultAccessTTL
	}
	if opts.RefreshTokenLifespan == 0 {
		opts.RefreshTokenLifespan = defaultRefreshTTL
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	cfg := &fosite.Config{
		AccessTokenLifespan:   opts.AccessTokenLifespan,
		RefreshTokenLifespan:  opts.RefreshTokenLifespan,
		AuthorizeCodeLifespan: authorizeCodeTTL,
		// PKCE for every client, S256 only (OAuth 2.1).
		EnforcePKCE:                    true,
		EnforcePKCEForPublicClients:    true,
		EnablePKCEPlainChallengeMethod: false,
		ScopeStrategy:                  fosite.ExactScopeStrategy,
		AudienceMatchingStrategy:       fosite.ExactAudienceMatchingStrategy,
		// A refresh token is issued without an offline_access scope:
		// connectors run for days and Sluice has no such scope.
		RefreshTokenScopes:         []string{},
		TokenURL:                   opts.Issuer + "/token",
		SendDebugMessagesToClients: false,
		GlobalSecret:               secret,
		TokenEntropy:               32,
		RedirectSecureChecker: func(_ context.Context, u *url.URL) bool {
			return checkRedirect(u.String()) == nil
		},
	}
	st := newStore()
	fetcher := newMetadataFetcher(opts.AllowLoopbackClientIDs)
	if opts.MetadataTLS != nil {
		fetcher.http.Transport.(*http.Transport).TLSClientConfig = opts.MetadataTLS
	}
	st.fetch = func(ctx context.Context, id string) (*client, error) {
		c, err := fetcher.fetch(ctx, id)
		if err != nil {
			return nil, err
		}
		c.fosite.Audience = []string{opts.Resource}
		return c, nil
	}
	provider := compose.Compose(cfg, st, compose.NewOAuth2HMACStrategy(cfg),
		compose.OAuth2AuthorizeExplicitFactory,
		compose.OAuth2RefreshTokenGrantFactory,
		compose.OAuth2TokenIntrospectionFactory,
		compose.OAuth2TokenRevocationFactory,
		compose.OAuth2PKCEFactory,
	)
	return &Server{opts: opts, store: st, provider: provider, issuerURL: iss, pending: map[string]*pendingRequest{},
		registrations: window{max: maxRegistrationsPerMinute}}, nil
}

// Issuer is the issuer identifier.
func (s *Server) Issuer() string { return s.opts.Issuer }

// Handler serves the authorization server's endpoints:
// /.well-known/oauth-authorization-server (RFC 8414), /authorize, /token,
// /register (RFC 7591) and /revoke (RFC 7009).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("POST /revoke", s.revoke)
	return mux
}

// Paths the handler answers, for a router in front of it.
var Paths = []string{"/.well-known/oauth-authorization-server", "/authorize", "/token", "/register", "/revoke"}

func (s *Server) metadata(rw http.ResponseWriter, _ *http.Request) {
	writeJSON(rw, http.StatusOK, map[string]any{
		"issuer":                                         s.opts.Issuer,
		"authorization_endpoint":                         s.opts.Issuer + "/authorize",
		"token_endpoint":                                 s.opts.Issuer + "/token",
		"registration_endpoint":                          s.opts.Issuer + "/register",
		"revocation_endpoint":                            s.opts.Issuer + "/revoke",
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none", "client_secret_basic", "client_secret_post"},
		"revocation_endpoint_auth_methods_supported":     []string{"none", "client_secret_basic", "client_secret_post"},
		"scopes_supported":                               Scopes,
		"client_id_metadata_document_supported":          true,
		"authorization_response_iss_parameter_supported": true,
	})
}

// authorize checks an authorization request completely before the person
// sees it, then sends the browser to the consent page. A request whose
// client or redirect URI is wrong is answered here, never redirected: the
// redirect URI must be one the client registered, character for
// character.
func (s *Server) authorize(rw http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	// fosite wants a state of at least 8 characters, but OAuth 2.1 leaves
	// state to the client (PKCE, required here, already binds the code
	// to the client that asked for it) and the TypeScript SDK's client
	// sends none. A request without one is given one of the server's,
	// which the response then leaves out again.
	noState := !q.Has("state")
	if noState {
		q.Set("state", randomID())
		r = r.Clone(ctx)
		r.URL.RawQuery = q.Encode()
	}
	c, err := s.store.GetClient(ctx, q.Get("client_id"))
	if err != nil {
		plainError(rw, http.StatusBadRequest, "invalid_client", "unknown client")
		return
	}
	redirect := q.Get("redirect_uri")
	if redirect == "" || !slices.Contains(c.GetRedirectURIs(), redirect) {
		plainError(rw, http.StatusBadRequest, "invalid_request", "redirect_uri is missing or is not one the client registered")
		return
	}
	ar, err := s.provider.NewAuthorizeRequest(ctx, r)
	if err != nil {
		s.authorizeError(rw, r, ar, err, noState)
		return
	}
	// PKCE is checked by fosite when the code is issued; it is checked
	// here too so that a request without it never reaches the person.
	if m := q.Get("code_challenge_method"); q.Get("code_challenge") == "" || m != "S256" {
		s.authorizeError(rw, r, ar, fosite.ErrInvalidRequest.WithHint("PKCE with code_challenge_method S256 is required"), noState)
		return
	}
	if err := s.checkResource(q["resource"]); err != nil {
		s.authorizeError(rw, r, ar, err, noState)
		return
	}
	if len(ar.GetRequestedScopes()) == 0 {
		ar.SetRequestedScopes(fosite.Arguments(Scopes))
	}
	id := randomID()
	s.mu.Lock()
	s.sweepLocked(time.Now())
	if len(s.pending) >= maxPending {
		s.mu.Unlock()
		s.authorizeError(rw, r, ar, fosite.ErrTemporarilyUnavailable.WithHint("too many authorization requests wait for the person"), noState)
		return
	}
	s.pending[id] = &pendingRequest{ar: ar, created: time.Now(), noState: noState}
	s.mu.Unlock()
	rw.Header().Set("Cache-Control", "no-store")
	http.Redirect(rw, r, s.opts.ConsentURL(id), http.StatusFound)
}

// checkResource accepts no resource parameter or exactly this server's
// MCP resource (RFC 8707): a token is never minted for another.
func (s *Server) checkResource(rs []string) error {
	for _, r := range rs {
		if r != s.opts.Resource {
			return fosite.ErrInvalidRequest.WithHintf("resource %q is not served here; the only resource is %s", r, s.opts.Resource).WithWrap(errInvalidTarget)
		}
	}
	if len(rs) > 1 {
		return fosite.ErrInvalidRequest.WithHint("give one resource").WithWrap(errInvalidTarget)
	}
	return nil
}

var errInvalidTarget = errors.New("invalid_target")

// authorizeError answers through fosite (a redirect to the validated
// redirect URI, or a page) with the RFC 9207 iss parameter added.
func (s *Server) authorizeError(rw http.ResponseWriter, r *http.Request, ar fosite.AuthorizeRequester, err error, noState bool) {
	rec := httptest.NewRecorder()
	s.provider.WriteAuthorizeError(r.Context(), rec, ar, err)
	s.relay(rw, rec, noState)
}

// relay copies a recorded fosite response, adding iss to a redirect.
func (s *Server) relay(rw http.ResponseWriter, rec *httptest.ResponseRecorder, noState bool) {
	for k, v := range rec.Header() {
		rw.Header()[k] = v
	}
	if loc := rec.Header().Get("Location"); loc != "" {
		rw.Header().Set("Location", s.withIssuer(loc, noState))
	}
	rw.WriteHeader(rec.Code)
	rw.Write(rec.Body.Bytes())
}

// withIssuer adds iss (RFC 9207) to an authorization response's redirect,
// and drops the state the server made up for a client that sent none.
func (s *Server) withIssuer(loc string, noState bool) string {
	u, err := url.Parse(loc)
	if err != nil {
		return loc
	}
	q := u.Query()
	q.Set("iss", s.opts.Issuer)
	if noState {
		q.Del("state")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// ConsentRequest is a pending authorization request as the consent page
// shows it.
type ConsentRequest struct {
	ID           string    `json:"id"`
	Client       Client    `json:"client"`
	RedirectURI  string    `json:"redirectUri"`
	RedirectHost string    `json:"redirectHost"`
	Scopes       []string  `json:"scopes"`
	Resource     string    `json:"resource"`
	Created      time.Time `json:"created"`
}

// Pending is the request id waiting for the person.
func (s *Server) Pending(id string) (ConsentRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(time.Now())
	p := s.pending[id]
	if p == nil {
		return ConsentRequest{}, ErrNoSuchRequest
	}
	c := s.clientLocked(p.ar.GetClient().GetID())
	if c == nil {
		return ConsentRequest{}, ErrNoSuchRequest
	}
	ru := p.ar.GetRedirectURI()
	return ConsentRequest{ID: id, Client: c.view(), RedirectURI: ru.String(), RedirectHost: ru.Host,
		Scopes: slices.Clone(p.ar.GetRequestedScopes()), Resource: s.opts.Resource, Created: p.created}, nil
}

func (s *Server) clientLocked(id string) *client {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	return s.store.clients[id]
}

// Decide is the person's answer to the request id; it returns where the
// browser goes next: the client's redirect URI with a code (allowed) or
// access_denied (denied), with iss and state. by names the UI that
// decided, for the ledger.
func (s *Server) Decide(ctx context.Context, id string, allow bool, by string) (string, error) {
	s.mu.Lock()
	s.sweepLocked(time.Now())
	p := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if p == nil {
		return "", ErrNoSuchRequest
	}
	ar := p.ar
	c := s.clientLocked(ar.GetClient().GetID())
	if c == nil {
		return "", ErrNoSuchRequest
	}
	rec := httptest.NewRecorder()
	scopes := slices.Clone([]string(ar.GetRequestedScopes()))
	if !allow {
		s.provider.WriteAuthorizeError(ctx, rec, ar, fosite.ErrAccessDenied.WithHint("The person denied the request."))
		s.event(Event{Type: "oauth_consent_denied", Client: c.view(), Scopes: scopes, By: by})
		return s.withIssuer(rec.Header().Get("Location"), p.noState), nil
	}
	for _, sc := range scopes {
		ar.GrantScope(sc)
	}
	ar.GrantAudience(s.opts.Resource)
	sess := &fosite.DefaultSession{Subject: "owner"}
	resp, err := s.provider.NewAuthorizeResponse(ctx, ar, sess)
	if err != nil {
		s.provider.WriteAuthorizeError(ctx, rec, ar, err)
		return s.withIssuer(rec.Header().Get("Location"), p.noState), nil
	}
	s.provider.WriteAuthorizeResponse(ctx, rec, ar, resp)
	s.store.mu.Lock()
	c.grantedAt = time.Now()
	c.scopes = scopes
	c.revoked = false
	view := c.view()
	s.store.mu.Unlock()
	s.event(Event{Type: "oauth_consent_allowed", Client: view, Scopes: scopes, By: by})
	return s.withIssuer(rec.Header().Get("Location"), p.noState), nil
}

func (s *Server) event(e Event) {
	if s.opts.OnEvent != nil {
		s.opts.OnEvent(e)
	}
}

// sweepLocked drops pending requests nobody decided in time, and expired
// tokens.
func (s *Server) sweepLocked(now time.Time) {
	for id, p := range s.pending {
		if now.Sub(p.created) > pendingTTL {
			delete(s.pending, id)
		}
	}
	s.store.sweep(now)
}

// token is the token endpoint: authorization code and refresh grants.
func (s *Server) token(rw http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := r.ParseForm(); err != nil {
		plainError(rw, http.StatusBadRequest, "invalid_request", "cannot parse the form")
		return
	}
	if err := s.checkResource(r.PostForm["resource"]); err != nil {
		plainError(rw, http.StatusBadRequest, "invalid_target", fosite.ErrorToRFC6749Error(err).GetDescription())
		return
	}
	ar, err := s.provider.NewAccessRequest(ctx, r, &fosite.DefaultSession{})
	if err != nil {
		s.provider.WriteAccessError(ctx, rw, ar, err)
		return
	}
	resp, err := s.provider.NewAccessResponse(ctx, ar)
	if err != nil {
		s.provider.WriteAccessError(ctx, rw, ar, err)
		return
	}
	s.provider.WriteAccessResponse(ctx, rw, ar, resp)
}

func (s *Server) revoke(rw http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s.provider.WriteRevocationResponse(ctx, rw, s.provider.NewRevocationRequest(ctx, r))
}

// register is RFC 7591 dynamic registration for clients that do not use a
// client ID metadata document. A client asking for a secret
// (client_secret_basic or _post) gets one, shown only in this answer.
func (s *Server) register(rw http.ResponseWriter, r *http.Request) {
	if !s.registrations.allow(time.Now()) {
		rw.Header().Set("Retry-After", "60")
		plainError(rw, http.StatusTooManyRequests, "temporarily_unavailable", "too many registrations; try again in a minute")
		return
	}
	var md clientMetadata
	dec := json.NewDecoder(http.MaxBytesReader(rw, r.Body, maxRegisterBody))
	if err := dec.Decode(&md); err != nil {
		plainError(rw, http.StatusBadRequest, "invalid_client_metadata", "the body is not client metadata JSON")
		return
	}
	if md.ClientID != "" {
		plainError(rw, http.StatusBadRequest, "invalid_client_metadata", "client_id is assigned by the server")
		return
	}
	c, err := md.check(false)
	if err != nil {
		code := "invalid_client_metadata"
		if strings.Contains(err.Error(), "redirect_uri") {
			code = "invalid_redirect_uri"
		}
		plainError(rw, http.StatusBadRequest, code, err.Error())
		return
	}
	c.kind = KindRegistered
	c.fosite.ID = "sluice-" + randomID()
	c.fosite.Audience = []string{s.opts.Resource}
	secret := ""
	if !c.fosite.Public {
		secret = randomID() + randomID()
		h, err := (&fosite.BCrypt{Config: &fosite.Config{HashCost: 10}}).Hash(r.Context(), []byte(secret))
		if err != nil {
			plainError(rw, http.StatusInternalServerError, "server_error", "cannot hash the secret")
			return
		}
		c.fosite.Secret = h
	}
	s.store.mu.Lock()
	s.store.dropUnusedLocked()
	s.store.clients[c.fosite.ID] = c
	s.store.mu.Unlock()
	out := map[string]any{
		"client_id":                  c.fosite.ID,
		"client_id_issued_at":        c.createdAt.Unix(),
		"client_name":                c.name,
		"redirect_uris":              c.fosite.RedirectURIs,
		"grant_types":                c.fosite.GrantTypes,
		"response_types":             c.fosite.ResponseTypes,
		"scope":                      strings.Join(Scopes, " "),
		"token_endpoint_auth_method": c.fosite.TokenEndpointAuthMethod,
	}
	if secret != "" {
		out["client_secret"] = secret
		out["client_secret_expires_at"] = 0
	}
	writeJSON(rw, http.StatusCreated, out)
}

// dropUnusedLocked forgets the oldest clients (registered, or known by a
// metadata document) the person never allowed once there are too many:
// both are open to anyone who can reach the server. s.mu is held.
func (s *store) dropUnusedLocked() {
	var unused []*client
	for _, c := range s.clients {
		if c.grantedAt.IsZero() {
			unused = append(unused, c)
		}
	}
	if len(unused) < maxUnusedClients {
		return
	}
	slices.SortFunc(unused, func(a, b *client) int { return a.createdAt.Compare(b.createdAt) })
	for _, c := range unused[:len(unused)-maxUnusedClients+1] {
		delete(s.clients, c.fosite.ID)
	}
}

// Clients are the connectors the person allowed at least once, newest
// grant first.
func (s *Server) Clients() []Client {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	var out []Client
	for _, c := range s.store.clients {
		if !c.grantedAt.IsZero() {
			out = append(out, c.view())
		}
	}
	slices.SortFunc(out, func(a, b Client) int { return b.GrantedAt.Compare(a.GrantedAt) })
	return out
}

// RevokeClient ends every token and code of the client at once, and its
// requests waiting for the person; to come back it has to ask the person
// again. by names who revoked it, for the ledger.
func (s *Server) RevokeClient(id, by string) error {
	s.store.mu.Lock()
	c := s.store.clients[id]
	s.store.mu.Unlock()
	if c == nil || !s.store.revokeClient(id) {
		return ErrNoSuchClient
	}
	s.mu.Lock()
	for pid, p := range s.pending {
		if p.ar.GetClient().GetID() == id {
			delete(s.pending, pid)
		}
	}
	s.mu.Unlock()
	s.store.mu.Lock()
	view := c.view()
	s.store.mu.Unlock()
	s.event(Event{Type: "oauth_client_revoked", Client: view, By: by})
	return nil
}

// Grant is what a valid access token carries.
type Grant struct {
	ClientID   string
	ClientName string
	Scopes     []string
	GrantedAt  time.Time
	Expires    time.Time
}

// Errors of Verify.
var (
	ErrInvalidToken  = errors.New("invalid, expired or revoked access token")
	ErrWrongAudience = errors.New("the access token is for another resource")
)

// Verify checks an access token: known, unexpired, unrevoked, its client
// not revoked, and bound to this server's MCP resource. It records the
// client's last use.
func (s *Server) Verify(ctx context.Context, token string) (Grant, error) {
	_, ar, err := s.provider.IntrospectToken(ctx, token, fosite.AccessToken, &fosite.DefaultSession{})
	if err != nil {
		return Grant{}, ErrInvalidToken
	}
	if !slices.Contains(ar.GetGrantedAudience(), s.opts.Resource) {
		return Grant{}, ErrWrongAudience
	}
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	c := s.store.clients[ar.GetClient().GetID()]
	if c == nil || c.revoked {
		return Grant{}, ErrInvalidToken
	}
	now := time.Now()
	if now.Sub(c.lastUse) > time.Second {
		c.lastUse = now
	}
	return Grant{ClientID: c.fosite.ID, ClientName: c.name, Scopes: slices.Clone([]string(ar.GetGrantedScopes())),
		GrantedAt: c.grantedAt, Expires: ar.GetSession().GetExpiresAt(fosite.AccessToken)}, nil
}

func randomID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func writeJSON(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(status)
	_ = json.NewEncoder(rw).Encode(v)
}

// plainError is an OAuth error answered to the caller, never redirected.
func plainError(rw http.ResponseWriter, status int, code, desc string) {
	writeJSON(rw, status, map[string]string{"error": code, "error_description": desc})
}
