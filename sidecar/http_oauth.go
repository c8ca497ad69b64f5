package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// OAuthResource makes the MCP endpoint an OAuth 2.1 protected resource for
// remote connectors (ChatGPT, Claude.ai): access tokens issued by Sluice's
// own authorization server, which lives in the app (core/oauth) and is
// handed in here, so that this package links none of its state.
type OAuthResource struct {
	// Resource is the MCP endpoint's public URL (the tokens' audience);
	// Issuer is the authorization server's issuer identifier.
	Resource string
	Issuer   string
	// Verify checks an access token: known, unexpired, unrevoked and
	// bound to Resource.
	Verify func(ctx context.Context, token string) (OAuthGrant, error)
	// Server serves the authorization server's endpoints at Paths on the
	// same listener.
	Server http.Handler
	Paths  []string
}

// OAuthGrant is what a verified access token grants.
type OAuthGrant struct {
	// Identity names the connector in proposals and the ledger.
	Identity string
	Scopes   []string
	Expires  time.Time
}

// OAuth scopes and the toolsets each opens. A connector's session gets
// these toolsets and cannot enable any other: no toolset decides,
// restores, grants a workspace anything or changes settings, and the
// workspace tools (which run commands on the person's machine) are not
// offered to remote connectors at all.
var oauthScopeToolsets = map[string][]string{
	"read":    {"git", "fleet", "safety"},
	"propose": {"propose", "propose_more"},
}

// oauthScopes are the scopes the resource knows, as its metadata lists
// them.
var oauthScopes = []string{"read", "propose"}

// oauthToolsets are the toolsets a grant's scopes open, and the subset of
// them a session starts with (the rest are one toolset_enable away).
func oauthToolsets(scopes []string) (allowed, start []string) {
	for _, sc := range oauthScopes {
		if !slices.Contains(scopes, sc) {
			continue
		}
		allowed = append(allowed, oauthScopeToolsets[sc]...)
		start = append(start, oauthScopeToolsets[sc][0])
	}
	return allowed, start
}

// oauthGrantKey is the context key of the request's OAuthGrant.
type oauthGrantKey struct{}

// metadataPath is where RFC 9728 puts the protected resource's metadata.
const metadataPath = "/.well-known/oauth-protected-resource"

// resourceMetadataURL is the metadata's URL, named in every 401's
// WWW-Authenticate so that a client finds the authorization server.
func (o *OAuthResource) resourceMetadataURL() string {
	return strings.TrimSuffix(o.Issuer, "/") + metadataPath
}

// metadataHandler serves RFC 9728 metadata, at the root and at the
// endpoint's path suffix (/.well-known/oauth-protected-resource/mcp), where
// clients look first.
func (o *OAuthResource) metadataHandler() http.Handler {
	return auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               o.Resource,
		AuthorizationServers:   []string{o.Issuer},
		ScopesSupported:        oauthScopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "Sluice",
	})
}

// oauthVerify is go-sdk's TokenVerifier over o.Verify: the SDK then
// checks the scopes a route needs and the expiry.
func (h *HTTPServer) oauthVerify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	g, err := h.opts.OAuth.Verify(ctx, token)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
	}
	return &auth.TokenInfo{UserID: g.Identity, Scopes: g.Scopes, Expiration: g.Expires,
		Extra: map[string]any{"grant": g}}, nil
}

// requireOAuth refuses a token anywhere but the Authorization header (a
// token in a URL ends up in logs and histories; RFC 9700), then lets the
// SDK's RequireBearerToken check it, answering 401 with the resource
// metadata's URL.
func (h *HTTPServer) requireOAuth(next http.Handler) http.Handler {
	o := h.opts.OAuth
	inner := auth.RequireBearerToken(h.oauthVerify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: o.resourceMetadataURL(),
		// The scopes are checked below rather than by the SDK: its
		// Scopes would also go into every challenge, and a client reads
		// the scopes to ask for from there (it would then never ask for
		// propose).
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ti := auth.TokenInfoFromContext(r.Context())
		g, _ := ti.Extra["grant"].(OAuthGrant)
		if !slices.Contains(g.Scopes, "read") {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="read propose", resource_metadata=%q`, o.resourceMetadataURL()))
			httpError(w, http.StatusForbidden, "the token does not grant read, which every session needs")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), oauthGrantKey{}, g)))
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("access_token") || r.Header.Get("Content-Type") == "application/x-www-form-urlencoded" {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="invalid_request", error_description="send the token in the Authorization header", resource_metadata=%q`, o.resourceMetadataURL()))
			httpError(w, http.StatusBadRequest, "an access token is accepted only in the Authorization header")
			return
		}
		inner.ServeHTTP(w, r)
	})
}

// errNoOAuthGrant is a request on the OAuth endpoint without a grant; it
// cannot happen past requireOAuth.
var errNoOAuthGrant = errors.New("no OAuth grant on the request")

// oauthSessionToolsets are the toolsets a connector's new session may use
// and starts with.
func oauthSessionToolsets(r *http.Request) (allowed, start []string, err error) {
	g, ok := r.Context().Value(oauthGrantKey{}).(OAuthGrant)
	if !ok {
		return nil, nil, errNoOAuthGrant
	}
	allowed, start = oauthToolsets(g.Scopes)
	return allowed, start, nil
}
