package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/ory/fosite"
)

// Scopes a connector can be granted. Nothing else exists: deciding,
// restoring, workspace grants and settings belong to the person.
const (
	ScopeRead    = "read"
	ScopePropose = "propose"
)

// Scopes is every scope, in the order they are shown.
var Scopes = []string{ScopeRead, ScopePropose}

// How a client came to be known.
const (
	KindMetadata   = "metadata document" // its client ID is the URL of a client ID metadata document
	KindRegistered = "registered"        // RFC 7591 dynamic registration
)

// client is one connector as the authorization server knows it.
type client struct {
	fosite *fosite.DefaultOpenIDConnectClient
	name   string
	kind   string
	// uri is the client's home page from its metadata, shown on the
	// consent page; never fetched.
	uri       string
	createdAt time.Time

	// What the person allowed, and when the connector last used it.
	grantedAt time.Time
	scopes    []string
	lastUse   time.Time
	revoked   bool
}

// Client is a connector as the consent page and Settings show it.
type Client struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Kind is KindMetadata (ID is the metadata document's URL) or
	// KindRegistered.
	Kind         string    `json:"kind"`
	URI          string    `json:"uri,omitempty"`
	RedirectURIs []string  `json:"redirectUris"`
	CreatedAt    time.Time `json:"createdAt"`
	GrantedAt    time.Time `json:"grantedAt,omitzero"`
	Scopes       []string  `json:"scopes"`
	LastUse      time.Time `json:"lastUse,omitzero"`
	Revoked      bool      `json:"revoked"`
}

func (c *client) view() Client {
	return Client{ID: c.fosite.ID, Name: c.name, Kind: c.kind, URI: c.uri, RedirectURIs: slices.Clone(c.fosite.RedirectURIs),
		CreatedAt: c.createdAt, GrantedAt: c.grantedAt, Scopes: slices.Clone(c.scopes), LastUse: c.lastUse, Revoked: c.revoked}
}

// clientMetadata is what RFC 7591 registration and client ID metadata
// documents share.
type clientMetadata struct {
	ClientID                string   `json:"client_id,omitempty"`
	ClientName              string   `json:"client_name,omitempty"`
	ClientURI               string   `json:"client_uri,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	ResponseTypes           []string `json:"response_types,omitempty"`
	Scope                   string   `json:"scope,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
}

// errBadMetadata is a registration or metadata document Sluice refuses.
var errBadMetadata = errors.New("invalid client metadata")

// check validates md and returns the client it describes. Redirect URIs
// are https, or http on a loopback address (a client on the person's
// machine), absolute, without a fragment; they are matched exactly later.
func (md *clientMetadata) check(public bool) (*client, error) {
	if len(md.RedirectURIs) == 0 || len(md.RedirectURIs) > 10 {
		return nil, fmt.Errorf("%w: give 1 to 10 redirect_uris", errBadMetadata)
	}
	for _, r := range md.RedirectURIs {
		if err := checkRedirect(r); err != nil {
			return nil, fmt.Errorf("%w: redirect_uri %q: %v", errBadMetadata, r, err)
		}
	}
	for _, g := range md.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return nil, fmt.Errorf("%w: grant type %q is not served (only authorization_code and refresh_token)", errBadMetadata, g)
		}
	}
	for _, rt := range md.ResponseTypes {
		if rt != "code" {
			return nil, fmt.Errorf("%w: response type %q is not served (only code)", errBadMetadata, rt)
		}
	}
	if md.Scope != "" {
		for _, s := range strings.Fields(md.Scope) {
			if !slices.Contains(Scopes, s) {
				return nil, fmt.Errorf("%w: scope %q does not exist; a connector can only read and propose", errBadMetadata, s)
			}
		}
	}
	method := md.TokenEndpointAuthMethod
	switch {
	case method == "":
		method = "none"
		if !public {
			method = "client_secret_basic"
		}
	case method == "none":
	case !public && (method == "client_secret_basic" || method == "client_secret_post"):
	default:
		return nil, fmt.Errorf("%w: token_endpoint_auth_method %q is not served", errBadMetadata, method)
	}
	name := cleanName(md.ClientName)
	if name == "" {
		name = "unnamed client"
	}
	uri := ""
	if u, err := url.Parse(md.ClientURI); err == nil && u.Scheme == "https" && u.Host != "" {
		uri = u.String()
	}
	return &client{
		fosite: &fosite.DefaultOpenIDConnectClient{
			DefaultClient: &fosite.DefaultClient{
				RedirectURIs:  slices.Clone(md.RedirectURIs),
				GrantTypes:    []string{"authorization_code", "refresh_token"},
				ResponseTypes: []string{"code"},
				Scopes:        slices.Clone(Scopes),
				Public:        method == "none",
			},
			TokenEndpointAuthMethod: method,
		},
		name: name, uri: uri, createdAt: time.Now(),
	}, nil
}

// checkRedirect accepts an absolute https URI, or http on a loopback
// address, with no fragment and no user info.
func checkRedirect(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if u.Fragment != "" || strings.Contains(raw, "#") || u.User != nil || u.Host == "" {
		return errors.New("give an absolute URI without a fragment or user info")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopbackHost(u.Hostname()) {
			return nil
		}
	}
	return errors.New("give https, or http on 127.0.0.1, [::1] or localhost")
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.IsLoopback()
}

// cleanName keeps a client's name short and printable: it is shown to the
// person and names the connector's proposals.
func cleanName(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 64 {
		s = string(r[:64])
	}
	return s
}

// isMetadataURL says whether a client ID names a client ID metadata
// document: an https (or http) URL with a path.
func isMetadataURL(id string) bool {
	u, err := url.Parse(id)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.Path != "" && u.Path != "/"
}

// maxMetadataBytes bounds a client ID metadata document.
const maxMetadataBytes = 64 << 10

// metadataFetcher loads client ID metadata documents. A document must be
// https on a public address: the authorization server faces the internet,
// and a client ID naming an address inside the person's network would make
// it fetch from there for anyone (SSRF). allowLoopback lets a client on the
// person's own machine serve one on http://127.0.0.1 (the tests; a local
// client), and nothing else.
type metadataFetcher struct {
	http          *http.Client
	allowLoopback bool
}

func newMetadataFetcher(allowLoopback bool) *metadataFetcher {
	d := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return err
		}
		ip = ip.Unmap()
		if ip.IsLoopback() && allowLoopback {
			return nil
		}
		if !ip.IsGlobalUnicast() || ip.IsPrivate() || ip.IsLoopback() {
			return fmt.Errorf("client metadata on a non-public address %s is refused", ip)
		}
		return nil
	}}
	return &metadataFetcher{allowLoopback: allowLoopback, http: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{DialContext: d.DialContext, Proxy: nil, TLSHandshakeTimeout: 5 * time.Second, ResponseHeaderTimeout: 5 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("a client ID metadata document is not followed through redirects")
		},
	}}
}

func (f *metadataFetcher) fetch(ctx context.Context, id string) (*client, error) {
	u, err := url.Parse(id)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && f.allowLoopback && isLoopbackHost(u.Hostname())) {
		return nil, errors.New("a client ID metadata document must be https")
	}
	if u.Fragment != "" || u.User != nil {
		return nil, errors.New("a client ID URL has no fragment or user info")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch client metadata: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch client metadata: %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch client metadata: %w", err)
	}
	if len(body) > maxMetadataBytes {
		return nil, errors.New("client metadata document too large")
	}
	var md clientMetadata
	if err := json.Unmarshal(body, &md); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadMetadata, err)
	}
	// The document must name itself: otherwise anyone's document could be
	// passed off under another URL.
	if md.ClientID != id {
		return nil, fmt.Errorf("%w: client_id %q in the document is not its URL", errBadMetadata, md.ClientID)
	}
	c, err := md.check(true)
	if err != nil {
		return nil, err
	}
	c.fosite.ID = id
	c.fosite.Audience = nil
	c.kind = KindMetadata
	return c, nil
}
