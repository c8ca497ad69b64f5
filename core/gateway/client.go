package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// Errors the client returns; callers branch on them.
var (
	// ErrUnavailable means the app could not be reached: not running, wrong
	// port, or a network error. Never treated as success.
	ErrUnavailable = errors.New("gateway unavailable")
	// ErrAnswerLost means the request may have reached the app but no
	// answer came back: the connection broke or timed out after it was
	// opened (the app stopped or restarted mid-request). It always comes
	// wrapped with ErrUnavailable. For a submit it means the proposal may
	// have been stored: only a retry under the same idempotency key, or a
	// look at the proposal by its id, can tell.
	ErrAnswerLost = errors.New("the request may have reached the app, but no answer came")
	// ErrBadAddr means an address is not a loopback IP literal with a port.
	ErrBadAddr = errors.New("gateway address must be a loopback IP literal with a port")
)

// APIError is a non-2xx answer from the gateway.
type APIError struct {
	Status int
	Detail ErrorDetail
}

func (e *APIError) Error() string {
	return fmt.Sprintf("gateway: %d %s: %s", e.Status, e.Detail.Code, e.Detail.Message)
}

// Unwrap is the answer's error with its code and data: errcode.Of and
// errcode.As read them through an *APIError.
func (e *APIError) Unwrap() error {
	return &errcode.Error{Code: e.Detail.Code, Msg: e.Detail.Message, Data: e.Detail.Data}
}

// ParseLoopbackAddr accepts "127.0.0.1:PORT" or "[::1]:PORT" (any
// 127.0.0.0/8 address) with a port in 1..65535, and nothing else: no
// scheme, no path, no host names (not even "localhost", which a resolver
// could answer with anything).
func ParseLoopbackAddr(addr string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().IsLoopback() || ap.Port() == 0 || ap.Addr().Zone() != "" {
		return netip.AddrPort{}, fmt.Errorf("%w: %q", ErrBadAddr, addr)
	}
	return ap, nil
}

// parseLoopbackListenAddr is ParseLoopbackAddr but allows port 0.
func parseLoopbackListenAddr(addr string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: %q", ErrBadAddr, addr)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() || ip.Zone() != "" {
		return netip.AddrPort{}, fmt.Errorf("%w: %q", ErrBadAddr, addr)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: %q", ErrBadAddr, addr)
	}
	return netip.AddrPortFrom(ip, uint16(p)), nil
}

// Client is the sidecar side of the gateway.
type Client struct {
	base  string // "http://127.0.0.1:PORT"
	host  string
	token string
	hc    *http.Client
	// tokenIdentity marks the agent names this client sends as an
	// authenticated HTTP token's (IdentityHeader).
	tokenIdentity bool
	// SubmitTimeout bounds how long a submit waits for the app's answer
	// (zero: 15 s). A seal that takes longer goes on in the app; the
	// proposal's status then says so (StatusSealing).
	SubmitTimeout time.Duration
}

// WithTokenIdentity is a copy of c whose requests say that the agent's
// name is the name of the HTTP token the sidecar authenticated.
func (c *Client) WithTokenIdentity() *Client {
	cc := *c
	cc.tokenIdentity = true
	return &cc
}

// NewClient validates addr and builds a client that dials only that
// address, uses no proxy and follows no redirect.
func NewClient(addr, token string) (*Client, error) {
	ap, err := ParseLoopbackAddr(addr)
	if err != nil {
		return nil, err
	}
	if token == "" {
		return nil, errors.New("gateway: empty token")
	}
	dialer := &net.Dialer{Timeout: 2 * time.Second}
	target := ap.String()
	tr := &http.Transport{
		// Proxy variables are ignored on purpose: a proxy would see the
		// bearer token and could answer in the app's name.
		Proxy: nil,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "tcp", target)
		},
		MaxIdleConns:          4,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 0, // per request, via context: long-polls wait up to 50 s
		DisableCompression:    true,
	}
	return &Client{
		base:  "http://" + target,
		host:  target,
		token: token,
		hc: &http.Client{
			Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return errors.New("gateway: redirects are not followed")
			},
		},
	}, nil
}

// NewClientFromEndpoint reads gateway.json and builds a client.
func NewClientFromEndpoint(path string) (*Client, error) {
	ep, err := ReadEndpoint(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return NewClient(ep.Addr, ep.Token)
}

// NewClientFromEndpointToken reads where the app listens from
// gateway.json and builds a client that presents token instead of the
// file's: a confined session's sidecar speaks with its session's token.
func NewClientFromEndpointToken(path, token string) (*Client, error) {
	ep, err := ReadEndpoint(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return NewClient(ep.Addr, token)
}

// Addr is the gateway address this client talks to.
func (c *Client) Addr() string { return c.host }

// Do sends a JSON request to path (which must start with "/v1/") and
// decodes a 2xx answer into out. Non-2xx answers are *APIError; transport
// failures wrap ErrUnavailable.
func (c *Client) Do(ctx context.Context, method, path string, body io.Reader, out any) error {
	return c.do(ctx, "", method, path, body, out)
}

// newRequest is a request to the app with the token, and the agent it is
// made for when one is named.
func (c *Client) newRequest(ctx context.Context, agent, method, path string, body io.Reader) (*http.Request, error) {
	if !strings.HasPrefix(path, "/v1/") {
		return nil, fmt.Errorf("gateway: bad path %q", path)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if agent != "" {
		req.Header.Set(AgentHeader, agent)
		if c.tokenIdentity {
			req.Header.Set(IdentityHeader, proposal.IdentityToken)
		}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// readAPIError is a non-2xx answer as an *APIError.
func readAPIError(resp *http.Response) error {
	var eb ErrorBody
	if err := json.NewDecoder(io.LimitReader(resp.Body, MaxBodyBytes)).Decode(&eb); err != nil || eb.Error.Code == "" {
		eb.Error = ErrorDetail{Code: errcode.Internal, Message: http.StatusText(resp.StatusCode)}
	}
	return &APIError{Status: resp.StatusCode, Detail: eb.Error}
}

func (c *Client) do(ctx context.Context, agent, method, path string, body io.Reader, out any) error {
	req, err := c.newRequest(ctx, agent, method, path, body)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		// Only a failed dial proves the app never saw the request.
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		return fmt.Errorf("%w: %w: %w", ErrUnavailable, ErrAnswerLost, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return readAPIError(resp)
	}
	lr := io.LimitReader(resp.Body, MaxBodyBytes)
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(lr).Decode(out); err != nil {
		// A 2xx whose body broke off is an answer lost too: the app did
		// what was asked.
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: %w: %v", ErrUnavailable, ErrAnswerLost, err)
		}
		return fmt.Errorf("gateway: decode answer: %w", err)
	}
	return nil
}

// Health asks the app whether it is up.
func (c *Client) Health(ctx context.Context) (Health, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var h Health
	err := c.Do(ctx, http.MethodGet, "/v1/health", nil, &h)
	return h, err
}
