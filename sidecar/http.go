package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/presence"
	"github.com/sluicehq/sluice/core/tokens"
)

// HTTPOptions configure the streamable HTTP transport.
type HTTPOptions struct {
	Config *config.Config
	// Live is config.json as it is now, shared by every session (see
	// Options.Live); nil means Config as it is.
	Live *config.Live
	// Addr to listen on, "127.0.0.1:8765". A non-loopback address needs
	// AllowRemote.
	Addr        string
	AllowRemote bool
	// AllowHosts are host names (no port) accepted in the Host header
	// besides IP literals: the public name of a tunnel, for example.
	AllowHosts []string
	// AllowOrigins are browser origins ("https://example.com") accepted
	// besides the server's own.
	AllowOrigins []string
	// AllowPathToken also accepts the token as the last path segment,
	// /mcp/<token>, for clients that cannot send a header (ChatGPT's
	// connector form). Off by default: URLs end up in logs.
	AllowPathToken bool
	Toolsets       []string
	Tokens         *tokens.Store
	Ledger         *audit.Ledger
	Presence       *presence.File
	Logger         *slog.Logger
	// OAuth, when set, makes /mcp an OAuth 2.1 protected resource of
	// Sluice's authorization server (`sluice remote`) instead of a holder
	// of the token store's bearer tokens.
	OAuth *OAuthResource
	// Listener, when set, is served instead of a socket bound to Addr.
	Listener net.Listener

	// insecureNoAuthForTests serves without tokens. It is unexported and set
	// only by the conformance test, whose client cannot send a header; no
	// flag or option reaches it.
	insecureNoAuthForTests bool
	// onSidecar lets tests add fixture tools to each identity's server.
	onSidecar func(*Sidecar)
}

// Errors of the HTTP transport that the CLI reports.
var (
	ErrRemoteNotAllowed = errors.New("refusing to listen on a non-loopback address without --allow-remote")
	ErrNoTokens         = errors.New("no HTTP tokens exist; create one with: sluice-sidecar token create --name NAME")
)

// HTTPServer is a running streamable HTTP transport.
type HTTPServer struct {
	opts    HTTPOptions
	ln      net.Listener
	srv     *http.Server
	handler http.Handler
	log     *slog.Logger
	port    string

	// versions answers the SDK's protocol-version check on requests of an
	// existing session; no session is ever connected to it.
	versions *mcp.Server

	mu sync.Mutex
	// ws is what the workspace tools of one token share across its
	// sessions (one workspace Manager), by token name.
	ws map[string]*wsTools
	// stateless serves MCP 2026-07-28 (see http_protocol.go).
	stateless statelessServers
}

// ListenHTTP validates the options and binds the socket. Each MCP session
// gets its own Sidecar (its own MCP server, so toolset_enable widens only
// that session's tools), whose identity is the token's name.
func ListenHTTP(opts HTTPOptions) (*HTTPServer, error) {
	if opts.Config == nil {
		return nil, errors.New("http: nil config")
	}
	host, _, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("--addr %q: %w", opts.Addr, err)
	}
	ip, err := netip.ParseAddr(host)
	loopback := err == nil && ip.IsLoopback()
	if !loopback && !opts.AllowRemote {
		return nil, fmt.Errorf("%w (got %s)", ErrRemoteNotAllowed, opts.Addr)
	}
	if !opts.insecureNoAuthForTests && opts.OAuth == nil {
		if opts.Tokens == nil {
			return nil, ErrNoTokens
		}
		list, err := opts.Tokens.List()
		if err != nil {
			return nil, err
		}
		if len(list) == 0 {
			return nil, ErrNoTokens
		}
	}
	for _, h := range opts.AllowHosts {
		if h == "" || strings.ContainsAny(h, ":/ ") {
			return nil, fmt.Errorf("--allow-host %q: give a host name without scheme or port", h)
		}
	}
	for _, o := range opts.AllowOrigins {
		if u, err := url.Parse(o); err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" {
			return nil, fmt.Errorf("--allow-origin %q: give an origin like https://example.com", o)
		}
	}
	if opts.Toolsets == nil {
		opts.Toolsets = opts.Config.Toolsets
	}
	// Fail now, not on the first request, if the toolsets are wrong.
	if err := checkToolsets(opts.Toolsets); err != nil {
		return nil, err
	}
	opts.Toolsets = fitToolsets(opts.Config, opts.Toolsets)
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	ln := opts.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", opts.Addr); err != nil {
			return nil, fmt.Errorf("listen %s: %w", opts.Addr, err)
		}
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	h := &HTTPServer{opts: opts, ln: ln, log: log, port: port, ws: map[string]*wsTools{},
		versions: mcp.NewServer(&mcp.Implementation{Name: "sluice", Version: config.Version}, nil)}
	mcpHandler := mcp.NewStreamableHTTPHandler(h.serverFor, &mcp.StreamableHTTPOptions{
		Logger: log,
		// Our own Host check below is stricter than the SDK's; the SDK's
		// would refuse a tunnel's host name, so it is turned off only
		// when such names are configured.
		DisableLocalhostProtection: len(opts.AllowHosts) > 0,
		SessionTimeout:             30 * time.Minute,
		// Streams can be resumed after a dropped connection (a tunnel's
		// hiccup during a proposal_wait), from a bounded in-memory log.
		EventStore: mcp.NewMemoryEventStore(nil),
	})
	// MCP 2026-07-28 has no sessions, and go-sdk serves it only
	// statelessly: its requests go to a stateless handler (byProtocol).
	statelessHandler := mcp.NewStreamableHTTPHandler(h.serverFor, &mcp.StreamableHTTPOptions{
		Logger:                       log,
		Stateless:                    true,
		DisableLocalhostProtection:   len(opts.AllowHosts) > 0,
		PropagateRequestCancellation: true,
	})
	var inner http.Handler = refuseDuplicateKeysHTTP(perRequest(byProtocol(mcpHandler, statelessHandler)))
	if opts.OAuth != nil {
		inner = h.requireOAuth(inner)
	} else if !opts.insecureNoAuthForTests {
		inner = h.authenticate(auth.RequireBearerToken(h.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(inner))
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", inner)
	if opts.AllowPathToken && opts.OAuth == nil {
		mux.Handle("/mcp/", h.pathToken(inner))
	}
	if opts.OAuth != nil {
		md := opts.OAuth.metadataHandler()
		mux.Handle(metadataPath, md)
		mux.Handle(metadataPath+"/mcp", md)
		for _, p := range opts.OAuth.Paths {
			mux.Handle(p, opts.OAuth.Server)
		}
	}
	h.handler = h.guard(mux)
	h.srv = &http.Server{
		Handler:           h.handler,
		ReadHeaderTimeout: 10 * time.Second,
		// No WriteTimeout: responses are event streams, and proposal_wait
		// holds one open for up to 50 s.
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 32 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return h, nil
}

// Addr is the bound address.
func (h *HTTPServer) Addr() string { return h.ln.Addr().String() }

// URL is the MCP endpoint.
func (h *HTTPServer) URL() string { return "http://" + h.Addr() + "/mcp" }

// Handler is the whole HTTP handler, checks included.
func (h *HTTPServer) Handler() http.Handler { return h.handler }

// Serve serves until Shutdown.
func (h *HTTPServer) Serve() error {
	err := h.srv.Serve(h.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting and waits for in-flight requests up to ctx.
func (h *HTTPServer) Shutdown(ctx context.Context) error { return h.srv.Shutdown(ctx) }

// requestServer holds the server built for one request, so that the SDK,
// which asks for the server more than once while it opens a session, gets
// the same one each time.
type requestServer struct {
	once sync.Once
	s    *mcp.Server
}

// requestServerKey is the context key of a request's *requestServer.
type requestServerKey struct{}

// perRequest gives each request a place for the server serverFor builds.
func perRequest(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestServerKey{}, &requestServer{})))
	})
}

// serverFor returns the MCP server for a request. A request that opens a
// session (a POST with no Mcp-Session-Id) gets a new server of its own, so
// what toolset_enable adds stays in that session: another session of the
// same token, perhaps another agent given the same token, sees only its
// own toolsets. A request of an existing session is served by that
// session's server; the SDK asks here only to check the protocol version,
// which every server of this sidecar negotiates alike. A 2026-07-28
// request, which has no session, is served by its token's stateless
// server (statelessServer).
func (h *HTTPServer) serverFor(r *http.Request) *mcp.Server {
	identity := ""
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		identity = ti.UserID
	}
	if identity == "" && !h.opts.insecureNoAuthForTests {
		return nil
	}
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
		// Only a POST without a session opens one.
		return h.versions
	}
	rs, _ := r.Context().Value(requestServerKey{}).(*requestServer)
	if rs == nil {
		rs = &requestServer{}
	}
	var allowed, start []string
	if h.opts.OAuth != nil {
		var err error
		if allowed, start, err = oauthSessionToolsets(r); err != nil {
			return nil
		}
	}
	if isStatelessRequest(r) {
		return h.statelessServer(identity, allowed, start)
	}
	rs.once.Do(func() { rs.s = h.newSession(identity, allowed, start) })
	return rs.s
}

// newSession builds the Sidecar of one new session, or nil (the SDK then
// answers 400) when it cannot be built. allowed, when set, are the only
// toolsets the session may have (an OAuth grant's), and start those it
// begins with.
func (h *HTTPServer) newSession(identity string, allowed, start []string) *mcp.Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	sets := h.opts.Toolsets
	if allowed != nil {
		sets = start
	}
	s, err := New(Options{
		Config: h.opts.Config, Live: h.opts.Live, Toolsets: sets, Logger: h.log,
		Identity: identity, Ledger: h.opts.Ledger, Presence: h.opts.Presence,
		ws: h.ws[identity],
	})
	if err != nil {
		h.log.Error("cannot build the MCP server", "err", err)
		return nil
	}
	s.allowedToolsets = allowed
	if h.opts.onSidecar != nil {
		h.opts.onSidecar(s)
	}
	// The workspace tools of one token share one Manager, made by the
	// first session that needs them; what they hold of the Sidecar (the
	// configuration, roots and logger) is the same for every session.
	h.ws[identity] = s.workspaceTools()
	return s.Server()
}

// verifiedToken is the context key of the token authenticate verified.
type verifiedToken struct{}

// verify maps a bearer token to its identity, as authenticate verified it
// for this request. The token's name is the user ID, so the SDK refuses a
// session used with another token.
func (h *HTTPServer) verify(_ context.Context, secret string, r *http.Request) (*auth.TokenInfo, error) {
	t, ok := r.Context().Value(verifiedToken{}).(tokens.Token)
	if !ok {
		var err error
		if t, err = h.check(secret); err != nil {
			return nil, err
		}
	}
	return &auth.TokenInfo{UserID: t.Name}, nil
}

// check verifies a bearer token against the store.
func (h *HTTPServer) check(secret string) (tokens.Token, error) {
	t, err := h.opts.Tokens.Verify(secret)
	if err != nil {
		if errors.Is(err, tokens.ErrInvalid) {
			return t, auth.ErrInvalidToken
		}
		h.log.Error("token store unreadable; refusing every request", "err", err)
		return t, fmt.Errorf("%w: token store unavailable", auth.ErrInvalidToken)
	}
	return t, nil
}

// authenticate answers a missing or bad token with 401 and a
// WWW-Authenticate challenge before the request reaches the SDK, and hands
// the verified token on, so that the SDK's check does not verify again.
func (h *HTTPServer) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secret, ok := bearer(r.Header.Get("Authorization"))
		var t tokens.Token
		if ok {
			var err error
			t, err = h.check(secret)
			ok = err == nil
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sluice"`)
			httpError(w, http.StatusUnauthorized, "missing, unknown or revoked bearer token")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), verifiedToken{}, t)))
	})
}

func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// pathToken turns /mcp/<token> into /mcp with that bearer token.
func (h *HTTPServer) pathToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.URL.Path, "/mcp/")
		if tok == "" || strings.Contains(tok, "/") {
			http.NotFound(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath = "/mcp", ""
		r2.RequestURI = "/mcp"
		r2.Header.Set("Authorization", "Bearer "+tok)
		next.ServeHTTP(w, r2)
	})
}

// guard applies the checks every request passes first, in an order that
// leaks nothing: Host (DNS rebinding: a hostile page's name resolved to
// us), then Origin (a browser page talking to us), then the path.
func (h *HTTPServer) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.hostAllowed(r.Host) {
			h.refuseHost(w, r.Host)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !h.originAllowed(o) {
			httpError(w, http.StatusForbidden, "origin not allowed")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed accepts an IP literal with our port (a rebinding attack
// needs a DNS name, so an IP literal cannot be one) when it is loopback or
// remote access is allowed, "localhost" with our port, and the configured
// names. localhost is the one name accepted unasked: it is how people and
// clients write a loopback URL, and a hostile page cannot have a browser
// send it for the page's own name, which is what rebinding needs.
func (h *HTTPServer) hostAllowed(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return port == h.port && (ip.IsLoopback() || h.opts.AllowRemote)
	}
	if host == "localhost" {
		return port == h.port
	}
	for _, name := range h.opts.AllowHosts {
		if strings.EqualFold(host, name) {
			return true
		}
	}
	return false
}

func (h *HTTPServer) originAllowed(origin string) bool {
	for _, o := range h.opts.AllowOrigins {
		if strings.EqualFold(origin, o) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return h.hostAllowed(u.Host)
}

// refuseHost answers a request whose Host this server does not answer to
// with 421 Misdirected Request (RFC 9110: the request reached a server
// that will not answer for its host) and a message naming the host and
// how to allow it. Not 401 or 403: clients report those as a bad token.
func (h *HTTPServer) refuseHost(w http.ResponseWriter, hostport string) {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	msg := fmt.Sprintf("this server does not answer to the host %q: it accepts 127.0.0.1, [::1] and localhost on port %s", hostport, h.port)
	if h.opts.OAuth != nil {
		msg += ", and the host of its public URL"
	} else if host != "" && !strings.ContainsAny(host, "[]:") {
		msg += fmt.Sprintf(", and other names only when started with --allow-host %s (sluice-sidecar http --allow-host %s)", host, host)
	}
	h.log.Warn("refused a request for a host this server does not answer to", "host", hostport)
	writeHTTPError(w, http.StatusMisdirectedRequest, "host_not_allowed", msg)
}

func httpError(w http.ResponseWriter, status int, msg string) {
	writeHTTPError(w, status, strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "_")), msg)
}

// writeHTTPError writes the JSON error body of a refusal that happens
// before MCP: {"error": {"code", "message"}}.
func writeHTTPError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	// JSON, not Go quoting: the message may quote a request's Host.
	b, _ := json.Marshal(map[string]map[string]string{"error": {"code": code, "message": msg}})
	w.Write(append(b, '\n'))
}

func runHTTP(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("http", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8765", "address to listen on; a non-loopback one needs --allow-remote")
	allowRemote := fs.Bool("allow-remote", false, "allow a non-loopback listen address (tokens are still required)")
	hosts := fs.String("allow-host", "", "comma-separated host names to accept in the Host header (a tunnel's public name)")
	origins := fs.String("allow-origin", "", "comma-separated browser origins to accept (https://example.com)")
	pathToken := fs.Bool("allow-path-token", false, "also accept the token in the URL, /mcp/<token>, for clients that cannot send headers (ChatGPT)")
	toolsets := fs.String("toolsets", "", "comma-separated toolsets to enable (default from config)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	env, ok := openServing(stderr, presence.ClientInfo{Name: "sluice-http", Version: config.Version})
	if !ok {
		return 1
	}
	defer env.close()
	log, cfg, ledger, pres := env.log, env.cfg, env.ledger, env.presence
	opts := HTTPOptions{
		Config: cfg, Live: env.live, Addr: *addr, AllowRemote: *allowRemote, AllowHosts: splitComma(*hosts),
		AllowOrigins: splitComma(*origins), AllowPathToken: *pathToken,
		Tokens: tokens.Open(tokens.DefaultPath(cfg)), Ledger: ledger, Presence: pres, Logger: log,
	}
	if *toolsets != "" {
		opts.Toolsets = splitComma(*toolsets)
	}
	srv, err := ListenHTTP(opts)
	if err != nil {
		fmt.Fprintln(stderr, "sluice-sidecar:", err)
		if errors.Is(err, ErrRemoteNotAllowed) {
			return 2
		}
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	fmt.Fprintf(stdout, "sluice-sidecar: serving MCP at %s\n", srv.URL())
	select {
	case err := <-done:
		if err != nil {
			log.Error("http server stopped", "err", err)
			return 1
		}
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}
	return 0
}

// openPresence opens this process's presence file. Presence is
// informational, so a failure (a symlinked or shared directory) is logged
// and the sidecar serves without it.
func openPresence(cfg *config.Config, log *slog.Logger, client presence.ClientInfo) *presence.File {
	f, err := presence.Open(cfg.PresenceDir(), os.Getpid(), client)
	if err != nil {
		log.Warn("no presence file; other agents will not see this session", "err", err)
		return nil
	}
	return f
}
