package app

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/oauth"
	"github.com/sluicehq/sluice/sidecar"
)

// remoteOptions configure the internet-facing listener for remote
// connectors (ChatGPT's developer mode, Claude.ai).
type remoteOptions struct {
	// PublicURL is the origin a tunnel publishes ("https://x.trycloudflare.com");
	// the MCP endpoint is PublicURL + "/mcp".
	PublicURL string
	// Addr is where the tunnel connects to: loopback unless AllowRemote.
	Addr        string
	AllowRemote bool
	// TrustedProxies are the addresses whose X-Forwarded-For is believed
	// (the tunnel's connector); everyone else's is dropped.
	TrustedProxies []netip.Prefix
	// allowLoopbackClientIDs lets tests serve client ID metadata documents
	// on 127.0.0.1; no flag reaches it.
	allowLoopbackClientIDs bool
	// accessTokenLifespan is the tests' way to an expired token.
	accessTokenLifespan time.Duration
	// metadataTLS lets tests trust the certificate of the https client ID
	// metadata documents they serve.
	metadataTLS *tls.Config
}

// Remote is the running internet-facing listener: only the MCP endpoint,
// its protected resource metadata and the authorization server's
// endpoints. The UI, its API, the consent page and the gateway are never
// on it: the consent page is the local web UI's, in the person's browser
// on this machine.
type Remote struct {
	OAuth *oauth.Server
	mcp   *sidecar.HTTPServer
	url   string
}

// URL is what the person pastes into ChatGPT or Claude.ai.
func (r *Remote) URL() string { return r.url }

// Addr is the bound address.
func (r *Remote) Addr() string { return r.mcp.Addr() }

// Serve serves until Shutdown.
func (r *Remote) Serve() error { return r.mcp.Serve() }

// Shutdown stops the listener.
func (r *Remote) Shutdown(ctx context.Context) error { return r.mcp.Shutdown(ctx) }

// checkPublicURL accepts an https origin, or http on a loopback address
// (a test, or a client on this machine).
func checkPublicURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("--public-url %q: give the tunnel's origin, like https://name.example.com", raw)
	}
	if u.Scheme == "https" {
		return u, nil
	}
	if ip, err := netip.ParseAddr(u.Hostname()); u.Scheme == "http" && err == nil && ip.IsLoopback() {
		return u, nil
	}
	return nil, fmt.Errorf("--public-url %q: must be https (a tunnel gives one)", raw)
}

// StartRemote binds the remote listener for a (whose web UI web holds the
// consent page) and wires Sluice's authorization server to it.
func StartRemote(a *App, web *Web, o remoteOptions) (*Remote, error) {
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", o.Addr, err)
	}
	if o.PublicURL == "" {
		// Tests: the listener's own address is the public one.
		o.PublicURL = "http://" + ln.Addr().String()
	}
	pub, err := checkPublicURL(o.PublicURL)
	if err != nil {
		ln.Close()
		return nil, err
	}
	issuer := pub.Scheme + "://" + pub.Host
	resource := issuer + "/mcp"
	srv, err := oauth.New(oauth.Options{
		Issuer: issuer, Resource: resource,
		ConsentURL: func(id string) string {
			return "http://" + web.Addr() + "/#/consent/" + url.PathEscape(id)
		},
		AllowLoopbackClientIDs: o.allowLoopbackClientIDs,
		AccessTokenLifespan:    o.accessTokenLifespan,
		MetadataTLS:            o.metadataTLS,
		OnEvent:                a.auditOAuth,
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	var hosts, origins []string
	if _, err := netip.ParseAddr(pub.Hostname()); err != nil {
		hosts = []string{pub.Hostname()}
	}
	origins = []string{issuer}
	h, err := sidecar.ListenHTTP(sidecar.HTTPOptions{
		Config: a.cfg, Live: a.live, Addr: ln.Addr().String(), Listener: ln, AllowRemote: o.AllowRemote,
		AllowHosts: hosts, AllowOrigins: origins, Ledger: a.ledger, Logger: a.log,
		OAuth: &sidecar.OAuthResource{
			Resource: resource, Issuer: issuer, Server: forwardedFrom(o.TrustedProxies, srv.Handler()), Paths: oauth.Paths,
			Verify: func(ctx context.Context, token string) (sidecar.OAuthGrant, error) {
				g, err := srv.Verify(ctx, token)
				if err != nil {
					return sidecar.OAuthGrant{}, err
				}
				return sidecar.OAuthGrant{Identity: connectorIdentity(g), Scopes: g.Scopes, Expires: g.Expires}, nil
			},
		},
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	a.oauth.Store(srv)
	return &Remote{OAuth: srv, mcp: h, url: resource}, nil
}

// connectorIdentity names a connector's proposals and ledger entries by
// its client and its grant: "ChatGPT:connector-granted-5-Dec".
func connectorIdentity(g oauth.Grant) string {
	name := sidecar.SanitizeAgentName(g.ClientName)
	if name == "" {
		name = "connector"
	}
	if len(name) > 64 {
		name = name[:64]
	}
	return name + ":connector-granted-" + g.GrantedAt.Format("2-Jan")
}

// forwardedFrom drops X-Forwarded-* and Forwarded headers unless the
// request comes from a trusted proxy, whose X-Forwarded-For then names the
// client in logs. Nothing else is taken from them: every URL Sluice
// answers with comes from --public-url, never from a header.
func forwardedFrom(trusted []netip.Prefix, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer, _, _ := net.SplitHostPort(r.RemoteAddr)
		ip, err := netip.ParseAddr(peer)
		ok := false
		for _, p := range trusted {
			if err == nil && p.Contains(ip.Unmap()) {
				ok = true
			}
		}
		if !ok {
			for k := range r.Header {
				if strings.HasPrefix(k, "X-Forwarded-") || k == "Forwarded" {
					r.Header.Del(k)
				}
			}
		} else if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
			parts := strings.Split(xff, ",")
			if c, err := netip.ParseAddr(strings.TrimSpace(parts[len(parts)-1])); err == nil {
				r.RemoteAddr = netip.AddrPortFrom(c, 0).String()
			}
		}
		next.ServeHTTP(w, r)
	})
}

// auditOAuth records what the person and connectors did with the
// authorization server.
func (a *App) auditOAuth(e oauth.Event) {
	approval := ""
	if e.By != "" {
		approval = "owner:" + e.By
	}
	data := map[string]any{"client": e.Client.Name, "clientKind": e.Client.Kind, "scopes": strings.Join(e.Scopes, " ")}
	if e.Client.Kind == oauth.KindMetadata {
		data["clientId"] = e.Client.ID
	}
	if len(e.Client.RedirectURIs) > 0 {
		if u, err := url.Parse(e.Client.RedirectURIs[0]); err == nil {
			data["redirectHost"] = u.Host
		}
	}
	summary := map[string]string{
		"oauth_consent_allowed": "Connector allowed: ",
		"oauth_consent_denied":  "Connector denied: ",
		"oauth_client_revoked":  "Connector revoked: ",
	}[e.Type] + e.Client.Name
	if _, err := a.ledger.Append(audit.Entry{EventType: e.Type, Approval: approval, Result: "ok", Summary: summary, Data: data}); err != nil {
		a.log.Error("audit append failed", "event", e.Type, "err", err)
	}
}

func runRemote(args []string, assets fs.FS, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("remote", flag.ContinueOnError)
	fs.SetOutput(stderr)
	public := fs.String("public-url", "", "the https origin your tunnel publishes (required)")
	addr := fs.String("addr", "127.0.0.1:8766", "where the tunnel connects to; a non-loopback address needs --allow-remote")
	allowRemote := fs.Bool("allow-remote", false, "allow a non-loopback listen address")
	proxies := fs.String("trusted-proxy", "", "comma-separated addresses or CIDRs whose X-Forwarded-For is believed (default: none)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *public == "" {
		fmt.Fprintln(stderr, "sluice remote: --public-url is required (the https address your tunnel gives you)")
		return 2
	}
	if _, err := checkPublicURL(*public); err != nil {
		fmt.Fprintln(stderr, "sluice remote:", err)
		return 2
	}
	var trusted []netip.Prefix
	for _, p := range strings.Split(*proxies, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		pre, err := netip.ParsePrefix(p)
		if err != nil {
			ip, ierr := netip.ParseAddr(p)
			if ierr != nil {
				fmt.Fprintf(stderr, "sluice remote: --trusted-proxy %q: give an address or a CIDR\n", p)
				return 2
			}
			pre = netip.PrefixFrom(ip, ip.BitLen())
		}
		trusted = append(trusted, pre)
	}
	if host, _, err := net.SplitHostPort(*addr); err != nil {
		fmt.Fprintln(stderr, "sluice remote: --addr:", err)
		return 2
	} else if ip, err := netip.ParseAddr(host); (err != nil || !ip.IsLoopback()) && !*allowRemote {
		fmt.Fprintln(stderr, "sluice remote: refusing a non-loopback --addr without --allow-remote (a tunnel connects on loopback)")
		return 2
	}
	log := newLogger(stderr)
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	a, code := startFor(cfg, log, stderr)
	if a == nil {
		return code
	}
	defer a.Close()
	web, token, err := NewWeb(a, assets, cfg.WebAddr)
	if err != nil {
		web, token, err = NewWeb(a, assets, "127.0.0.1:0")
	}
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	if err := web.Publish(UIEndpointFile(cfg)); err != nil {
		fmt.Fprintln(stderr, "sluice: publish web.json:", err)
		return 1
	}
	defer web.Withdraw(UIEndpointFile(cfg))
	rem, err := StartRemote(a, web, remoteOptions{PublicURL: *public, Addr: *addr, AllowRemote: *allowRemote, TrustedProxies: trusted})
	if err != nil {
		fmt.Fprintln(stderr, "sluice remote:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 2)
	go func() { errc <- web.Serve() }()
	go func() { errc <- rem.Serve() }()
	fmt.Fprintf(stdout, "Sluice %s serves remote connectors.\n  Paste into ChatGPT or Claude.ai: %s\n  Your tunnel forwards to:        http://%s\n"+
		"The person allows each connector on a page of the UI on this machine: http://%s\nLogin: %s\n",
		config.Version, rem.URL(), rem.Addr(), web.Addr(), web.LoginURL(token))
	select {
	case <-ctx.Done():
	case err := <-errc:
		if err != nil {
			fmt.Fprintln(stderr, "sluice:", err)
			return 1
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rem.Shutdown(sctx)
	web.Shutdown(sctx)
	return 0
}
