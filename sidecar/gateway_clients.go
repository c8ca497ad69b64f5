package sidecar

import (
	"fmt"
	"sync"

	"github.com/sluicehq/sluice/core/gateway"
)

// gatewayClients keeps the client for the app's address and token as
// gateway.json names them, so that an agent's calls reuse its keep-alive
// connection to the app instead of dialling the app for each one (and
// leaving the last connection idle on both sides). The file is read again
// for every call, since a restarted app listens elsewhere with another
// token: a new address or token makes a new client.
type gatewayClients struct {
	mu          sync.Mutex
	addr, token string
	c           *gateway.Client
}

// client is the client for the endpoint in the file at path, presenting
// token ("": the file's).
func (g *gatewayClients) client(path, token string) (*gateway.Client, error) {
	ep, err := gateway.ReadEndpoint(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", gateway.ErrUnavailable, err)
	}
	if token == "" {
		token = ep.Token
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.c != nil && g.addr == ep.Addr && g.token == token {
		return g.c, nil
	}
	c, err := gateway.NewClient(ep.Addr, token)
	if err != nil {
		return nil, err
	}
	g.addr, g.token, g.c = ep.Addr, token, c
	return c, nil
}
