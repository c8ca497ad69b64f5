package workspace

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
)

// Proxy is the allowlisting egress proxy of granted runs. It speaks plain
// HTTP proxying (absolute-URI requests) and CONNECT tunnels, and lets a
// request through only when its exact host and port are in the grant of
// the run that sent it. The run is identified by the credentials in its
// proxy URL (http://<workspace>:<token>@host:port), which are random per
// run and stop working when the run ends. Everything else is answered 403
// (407 without valid credentials) and reported to OnDeny.
type Proxy struct {
	// OnDeny is told of every refused request.
	OnDeny func(Denial)
	// DialTimeout bounds connecting to an allowed host.
	DialTimeout time.Duration

	mu     sync.Mutex
	grants map[string]*proxyGrant // token → grant

	rp *httputil.ReverseProxy
}

// Denial is one refused egress request.
type Denial struct {
	Time        time.Time `json:"time"`
	WorkspaceID string    `json:"workspaceId,omitempty"`
	RunID       string    `json:"runId,omitempty"`
	Method      string    `json:"method"`
	// Host is host:port as requested.
	Host   string `json:"host"`
	Reason string `json:"reason"`
}

type proxyGrant struct {
	workspace, run string
	allow          map[string]bool // canonical host:port
	mu             sync.Mutex
	denials        []Denial
	conns          map[net.Conn]struct{}
	closed         bool
}

const maxDenialsPerRun = 100

// NewProxy returns a proxy with no grants.
func NewProxy(onDeny func(Denial)) *Proxy {
	p := &Proxy{OnDeny: onDeny, DialTimeout: 10 * time.Second, grants: map[string]*proxyGrant{}}
	tr := &http.Transport{
		Proxy:                 nil, // never chain to the host's proxy settings
		DialContext:           p.dial,
		ForceAttemptHTTP2:     false,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = pr.In.URL
			pr.Out.Host = pr.In.URL.Host
			pr.Out.Header.Del("Proxy-Authorization")
		},
		Transport: tr,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "sluice egress proxy: the upstream host could not be reached", http.StatusBadGateway)
		},
	}
	return p
}

func (p *Proxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: p.DialTimeout}
	return d.DialContext(ctx, network, addr)
}

// ProxyGrant is one run's registration with the proxy.
type ProxyGrant struct {
	p     *Proxy
	g     *proxyGrant
	token string
}

// Register grants allow (host or host:port entries) to one run. The run
// must present the grant's credentials in its proxy URL.
func (p *Proxy) Register(workspaceID, runID string, allow []string) (*ProxyGrant, error) {
	g := &proxyGrant{workspace: workspaceID, run: runID, allow: map[string]bool{}, conns: map[net.Conn]struct{}{}}
	for _, a := range allow {
		hps, err := allowEntries(a)
		if err != nil {
			return nil, err
		}
		for _, hp := range hps {
			g.allow[hp] = true
		}
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot make a proxy token")
	}
	token := hex.EncodeToString(b[:])
	p.mu.Lock()
	p.grants[token] = g
	p.mu.Unlock()
	return &ProxyGrant{p: p, g: g, token: token}, nil
}

// Credentials are the user and password of the run's proxy URL.
func (pg *ProxyGrant) Credentials() (user, password string) { return pg.g.workspace, pg.token }

// Denials are the requests of this run that the proxy refused.
func (pg *ProxyGrant) Denials() []Denial {
	pg.g.mu.Lock()
	defer pg.g.mu.Unlock()
	return append([]Denial(nil), pg.g.denials...)
}

// Revoke ends the grant: its credentials stop working and its open
// tunnels are cut.
func (pg *ProxyGrant) Revoke() {
	pg.p.mu.Lock()
	delete(pg.p.grants, pg.token)
	pg.p.mu.Unlock()
	pg.g.mu.Lock()
	pg.g.closed = true
	for c := range pg.g.conns {
		c.Close()
	}
	pg.g.mu.Unlock()
}

// NormalizeEgress validates grant entries and returns them in canonical
// form (lower-case host, optional port). Entries are exact: no wildcards,
// no schemes, no paths.
func NormalizeEgress(entries []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, e := range entries {
		e = strings.ToLower(strings.TrimSpace(e))
		if _, err := allowEntries(e); err != nil {
			return nil, err
		}
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out, nil
}

// allowEntries expands one grant entry: host:port is exact; a bare host
// allows its ports 80 and 443.
func allowEntries(e string) ([]string, error) {
	e = strings.ToLower(strings.TrimSpace(e))
	bad := errcode.New(errcode.InvalidArgument, "egress entry %q must be host or host:port (exact; no scheme, path or wildcard)", e)
	if e == "" || len(e) > 260 || strings.ContainsAny(e, "/*@?# \t") {
		return nil, bad
	}
	host, port, err := net.SplitHostPort(e)
	if err != nil {
		host, port = strings.Trim(e, "[]"), ""
	}
	if !validHost(host) {
		return nil, bad
	}
	if port == "" {
		return []string{net.JoinHostPort(host, "80"), net.JoinHostPort(host, "443")}, nil
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, bad
	}
	return []string{net.JoinHostPort(host, port)}, nil
}

func validHost(h string) bool {
	if h == "" {
		return false
	}
	if net.ParseIP(h) != nil {
		return true
	}
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g := p.authenticate(r)
	if g == nil {
		target, _ := requestTarget(r)
		p.deny(nil, r.Method, target, "no valid proxy credentials (the run ended, or this is not a granted run)")
		w.Header().Set("Proxy-Authenticate", `Basic realm="sluice-egress"`)
		http.Error(w, "sluice egress proxy: proxy authentication required", http.StatusProxyAuthRequired)
		return
	}
	p.serve(w, r, g)
}

// ServeGrant serves the proxy on ln for one grant alone: every request
// that arrives there is the grant's, with no credentials. A confined
// session's listener is a Unix socket that only its sandbox has, so the
// socket is the credential. It returns when ln is closed.
func (p *Proxy) ServeGrant(ln net.Listener, pg *ProxyGrant) error {
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { p.serve(w, r, pg.g) }),
		ReadHeaderTimeout: 30 * time.Second,
	}
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// serve passes or refuses one request of grant g.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request, g *proxyGrant) {
	target, ok := requestTarget(r)
	if !ok {
		p.deny(g, r.Method, r.Host, "not a proxy request (absolute URI or CONNECT expected)")
		http.Error(w, "sluice egress proxy: egress_denied: only proxy requests are served", http.StatusForbidden)
		return
	}
	if !g.allow[target] {
		p.deny(g, r.Method, target, "host is not in the workspace's egress grant")
		http.Error(w, "sluice egress proxy: egress_denied: "+target+" is not granted to this workspace", http.StatusForbidden)
		return
	}
	if r.Method == http.MethodConnect {
		p.tunnel(w, r, g, target)
		return
	}
	p.rp.ServeHTTP(w, r)
}

// requestTarget returns the canonical host:port a proxy request is for.
func requestTarget(r *http.Request) (string, bool) {
	if r.Method == http.MethodConnect {
		host, port, err := net.SplitHostPort(r.Host)
		if err != nil || host == "" || port == "" {
			return r.Host, false
		}
		return net.JoinHostPort(strings.ToLower(host), port), true
	}
	if r.URL == nil || !r.URL.IsAbs() || r.URL.Host == "" || r.URL.Scheme != "http" {
		return r.Host, false
	}
	host, port := r.URL.Hostname(), r.URL.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(strings.ToLower(host), port), true
}

func (p *Proxy) authenticate(r *http.Request) *proxyGrant {
	h := r.Header.Get("Proxy-Authorization")
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return nil
	}
	user, token, ok := strings.Cut(string(raw), ":")
	if !ok {
		return nil
	}
	p.mu.Lock()
	g := p.grants[token]
	p.mu.Unlock()
	if g == nil || subtle.ConstantTimeCompare([]byte(user), []byte(g.workspace)) != 1 {
		return nil
	}
	return g
}

func (p *Proxy) deny(g *proxyGrant, method, host, reason string) {
	d := Denial{Time: time.Now().UTC(), Method: method, Host: host, Reason: reason}
	if g != nil {
		d.WorkspaceID, d.RunID = g.workspace, g.run
		g.mu.Lock()
		if len(g.denials) < maxDenialsPerRun {
			g.denials = append(g.denials, d)
		}
		g.mu.Unlock()
	}
	if p.OnDeny != nil {
		p.OnDeny(d)
	}
}

func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request, g *proxyGrant, target string) {
	ctx, cancel := context.WithTimeout(r.Context(), p.DialTimeout)
	up, err := p.dial(ctx, "tcp", target)
	cancel()
	if err != nil {
		http.Error(w, "sluice egress proxy: "+target+" could not be reached", http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "sluice egress proxy: tunnelling is not supported here", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !g.track(up, down) {
		up.Close()
		down.Close()
		return
	}
	defer g.untrack(up, down)
	if _, err := down.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() {
		// Bytes the client sent after the CONNECT line are in buf.
		if n := buf.Reader.Buffered(); n > 0 {
			b, _ := buf.Reader.Peek(n)
			up.Write(b)
		}
		io.Copy(up, down)
		closeWrite(up)
		done <- struct{}{}
	}()
	go func() {
		io.Copy(down, up)
		closeWrite(down)
		done <- struct{}{}
	}()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

func (g *proxyGrant) track(cs ...net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	for _, c := range cs {
		g.conns[c] = struct{}{}
	}
	return true
}

func (g *proxyGrant) untrack(cs ...net.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range cs {
		delete(g.conns, c)
		c.Close()
	}
}
