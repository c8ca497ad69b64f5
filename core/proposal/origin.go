package proposal

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Origin says how the agent that made a proposal was running. The app sets
// it when the proposal arrives, from the credential the proposal came with
// (a confined session's token, minted when Sluice started that session),
// never from anything the agent says; the digest covers it, so the card,
// the decision and the ledger agree on it. A proposal without an Origin
// came from an agent Sluice did not start: it runs as the person's own
// account and could have written to the repository without asking.
type Origin struct {
	// Session is the confined session's id.
	Session string `json:"session"`
	// Runtime is the sandbox the session ran in: bubblewrap, runsc or docker.
	Runtime string `json:"runtime"`
	// Network lists the hosts the session could reach (host or host:port),
	// the model provider's first.
	Network []string `json:"network,omitempty"`
	// Leftover marks the proposal Sluice made itself, when the session
	// ended, of the changes its agent left in its copy and never proposed.
	Leftover bool `json:"leftover,omitempty"`
}

// Origin limits.
const (
	MaxOriginHosts = 64
	maxHostBytes   = 260
)

var (
	sessionIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })
	runtimePattern   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9_-]{1,32}$`) })
	hostPattern      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9.:\[\]-]{1,260}$`) })
)

// ValidSessionID reports whether id may name a confined session.
func ValidSessionID(id string) bool { return sessionIDPattern().MatchString(id) }

func (o *Origin) validate() error {
	if o == nil {
		return nil
	}
	if !ValidSessionID(o.Session) {
		return invalid("origin.session", "must match ^[A-Za-z0-9_-]{1,64}$")
	}
	if !runtimePattern().MatchString(o.Runtime) {
		return invalid("origin.runtime", "is not a runtime name")
	}
	if len(o.Network) > MaxOriginHosts {
		return invalid("origin.network", "more than %d hosts", MaxOriginHosts)
	}
	for _, h := range o.Network {
		if len(h) > maxHostBytes || !hostPattern().MatchString(h) {
			return invalid("origin.network", "%q is not a host or host:port", h)
		}
	}
	return nil
}

// Confined reports whether p came from an agent that Sluice started in a
// confined session.
func (p Proposal) Confined() bool { return p.Origin != nil }

// Describe is the line a card, History and notifications show about how
// the proposing agent ran.
func (o *Origin) Describe() string {
	if o == nil {
		return Unconfined
	}
	net := "none"
	if len(o.Network) > 0 {
		net = strings.Join(o.Network, ", ")
	}
	id := o.Session
	if len(id) > 8 {
		id = id[:8]
	}
	s := fmt.Sprintf("confined session (%s; network: %s), session %s", o.Runtime, net, id)
	if o.Leftover {
		s += ": changes it left and never proposed"
	}
	return s
}

// Unconfined is what a card says about an agent Sluice did not start.
const Unconfined = "runs as your account: it could write to the repository without asking"

// How Sluice knows who made a proposal: the kinds of identity a proposal's
// Agent can be, from the most to the least verified. Trust rules record
// which kind they trust, so a rule made for a verified identity never
// approves a program that merely calls itself by the same name.
const (
	// IdentitySession is a confined session Sluice started: the proposal
	// came with the token Sluice minted for it (Origin is set).
	IdentitySession = "session"
	// IdentityToken is an HTTP token's (or a connector's) name, which the
	// sidecar authenticated (AgentToken is set).
	IdentityToken = "token"
	// IdentityDeclared is only the name the program declared about itself
	// (an MCP client's clientInfo.name over stdio): any program can give
	// any name.
	IdentityDeclared = "declared"
)

// Identity is the kind of identity p's Agent is: IdentitySession,
// IdentityToken or IdentityDeclared.
func (p Proposal) Identity() string {
	switch {
	case p.Origin != nil:
		return IdentitySession
	case p.AgentToken:
		return IdentityToken
	}
	return IdentityDeclared
}

// SessionID is the confined session o names ("" for none).
func (o *Origin) SessionID() string {
	if o == nil {
		return ""
	}
	return o.Session
}
