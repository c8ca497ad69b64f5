package sidecar

import (
	"context"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP 2026-07-28 has no sessions: a client opens with server/discover
// instead of initialize, and every request carries its protocol version,
// client info and capabilities in _meta (and the version in the
// MCP-Protocol-Version header). go-sdk serves that protocol only from a
// stateless streamable handler; its stateful handler, which 2025-11-25 and
// earlier need for their sessions (toolset_enable per session,
// server-to-client elicitation, resumable streams), answers it with
// -32022. So the HTTP transport has both handlers and sends each request
// to the one its protocol needs (byProtocol), over the same tool
// definitions: both build their servers with New.
//
// What a session held is, for a 2026-07-28 request:
//   - the caller's identity: the bearer token, checked on every request
//     as before;
//   - the client's name (attribution, presence): the request's _meta,
//     which go-sdk's ClientInfo and InitializeParams read;
//   - the toolsets toolset_enable added: kept by the token, in one server
//     that serves all of that token's 2026-07-28 requests (a stateless
//     protocol has nothing smaller to keep them by), whose tool list
//     changes reach the token's subscriptions/listen streams;
//   - presence and the allowed roots: per process and config.json, as for
//     every session.
//
// Sluice offers no resources, so there are no resource subscriptions to
// carry; server-to-client requests (elicitation, sampling) are not made by
// any Sluice tool.

// statelessProtocol is the first MCP version that has no sessions.
const statelessProtocol = "2026-07-28"

// statelessRequestKey marks a request routed to the stateless handler.
type statelessRequestKey struct{}

// usesStatelessProtocol reports whether a request follows MCP 2026-07-28
// or later: it names such a version in MCP-Protocol-Version and belongs to
// no session. (Dates in ISO form compare as strings.)
func usesStatelessProtocol(r *http.Request) bool {
	v := strings.TrimSpace(r.Header.Get("Mcp-Protocol-Version"))
	return v >= statelessProtocol && r.Header.Get("Mcp-Session-Id") == ""
}

// isStatelessRequest reports whether byProtocol sent r to the stateless
// handler.
func isStatelessRequest(r *http.Request) bool {
	v, _ := r.Context().Value(statelessRequestKey{}).(bool)
	return v
}

// byProtocol sends 2026-07-28 requests to stateless and every other
// request (2025-11-25 and earlier, their sessions' GET and DELETE) to
// stateful.
func byProtocol(stateful, stateless http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if usesStatelessProtocol(r) {
			stateless.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), statelessRequestKey{}, true)))
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// statelessServers are the servers of 2026-07-28 requests, one per
// identity and grant.
type statelessServers struct {
	mu sync.Mutex
	m  map[string]*mcp.Server
}

// statelessServer returns the server that serves every 2026-07-28 request
// of one identity (and, for an OAuth connector, one grant's toolsets),
// building it on the first. It is built by newSession like a 2025-11-25
// session's, so both protocols see the same tools.
func (h *HTTPServer) statelessServer(identity string, allowed, start []string) *mcp.Server {
	key := identity + "\x00" + strings.Join(allowed, ",") + "\x00" + strings.Join(start, ",")
	h.stateless.mu.Lock()
	defer h.stateless.mu.Unlock()
	if s := h.stateless.m[key]; s != nil {
		return s
	}
	s := h.newSession(identity, allowed, start)
	if s == nil {
		return nil
	}
	if h.stateless.m == nil {
		h.stateless.m = map[string]*mcp.Server{}
	}
	h.stateless.m[key] = s
	return s
}
