package oauth

import (
	"context"
	"sync"
	"time"

	"github.com/ory/fosite"
)

// store is fosite's storage: clients, authorization codes, PKCE sessions,
// access and refresh tokens, all in memory behind one lock. fosite's own
// MemoryStore is an example that writes a map under the wrong lock when it
// revokes a refresh token, so Sluice keeps its own.
type store struct {
	mu sync.Mutex

	clients map[string]*client
	// codes are authorization codes by signature; used ones stay (marked)
	// so that a second use is recognised and its tokens revoked.
	codes   map[string]*codeSession
	pkce    map[string]fosite.Requester
	access  map[string]fosite.Requester
	refresh map[string]*refreshSession
	// accessByReq and refreshByReq are the current token of each grant
	// (fosite's request ID, which stays the same across refreshes: the
	// token family).
	accessByReq  map[string]string
	refreshByReq map[string]string
	jtis         map[string]time.Time

	// fetch loads a client ID metadata document (nil: none accepted).
	fetch func(ctx context.Context, id string) (*client, error)
}

type codeSession struct {
	used bool
	req  fosite.Requester
}

type refreshSession struct {
	active bool
	req    fosite.Requester
}

func newStore() *store {
	return &store{
		clients: map[string]*client{}, codes: map[string]*codeSession{}, pkce: map[string]fosite.Requester{},
		access: map[string]fosite.Requester{}, refresh: map[string]*refreshSession{},
		accessByReq: map[string]string{}, refreshByReq: map[string]string{}, jtis: map[string]time.Time{},
	}
}

// GetClient is a registered client, or a client ID metadata document's
// client fetched now (and kept, so that the consent and the token request
// see the same document). A revoked client is still known: it holds no
// token, and it may ask the person again.
func (s *store) GetClient(ctx context.Context, id string) (fosite.Client, error) {
	s.mu.Lock()
	c := s.clients[id]
	s.mu.Unlock()
	if c != nil {
		return c.fosite, nil
	}
	if !isMetadataURL(id) || s.fetch == nil {
		return nil, fosite.ErrNotFound
	}
	c, err := s.fetch(ctx, id)
	if err != nil {
		return nil, fosite.ErrInvalidClient.WithHint(err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.clients[id]; old != nil {
		return old.fosite, nil
	}
	s.dropUnusedLocked()
	s.clients[id] = c
	return c.fosite, nil
}

func (s *store) ClientAssertionJWTValid(_ context.Context, jti string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if exp, ok := s.jtis[jti]; ok && exp.After(time.Now()) {
		return fosite.ErrJTIKnown
	}
	return nil
}

func (s *store) SetClientAssertionJWT(_ context.Context, jti string, exp time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.jtis {
		if e.Before(time.Now()) {
			delete(s.jtis, k)
		}
	}
	if _, ok := s.jtis[jti]; ok {
		return fosite.ErrJTIKnown
	}
	s.jtis[jti] = exp
	return nil
}

func (s *store) CreateAuthorizeCodeSession(_ context.Context, code string, req fosite.Requester) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = &codeSession{req: req}
	return nil
}

// GetAuthorizeCodeSession returns a used code's request with
// ErrInvalidatedAuthorizeCode, on which fosite revokes every token that
// code gave (RFC 6749 §4.1.2: a code used twice).
func (s *store) GetAuthorizeCodeSession(_ context.Context, code string, _ fosite.Session) (fosite.Requester, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, ok := s.codes[code]
	if !ok {
		return nil, fosite.ErrNotFound
	}
	if cs.used {
		return cs.req, fosite.ErrInvalidatedAuthorizeCode
	}
	return cs.req, nil
}

func (s *store) InvalidateAuthorizeCodeSession(_ context.Context, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs, ok := s.codes[code]; ok {
		cs.used = true
	}
	return nil
}

func (s *store) CreatePKCERequestSession(_ context.Context, sig string, req fosite.Requester) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pkce[sig] = req
	return nil
}

func (s *store) GetPKCERequestSession(_ context.Context, sig string, _ fosite.Session) (fosite.Requester, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.pkce[sig]
	if !ok {
		return nil, fosite.ErrNotFound
	}
	return r, nil
}

func (s *store) DeletePKCERequestSession(_ context.Context, sig string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pkce, sig)
	return nil
}

func (s *store) CreateAccessTokenSession(_ context.Context, sig string, req fosite.Requester) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.access[sig] = req
	s.accessByReq[req.GetID()] = sig
	return nil
}

func (s *store) GetAccessTokenSession(_ context.Context, sig string, _ fosite.Session) (fosite.Requester, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.access[sig]
	if !ok {
		return nil, fosite.ErrNotFound
	}
	return r, nil
}

func (s *store) DeleteAccessTokenSession(_ context.Context, sig string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.access, sig)
	return nil
}

func (s *store) CreateRefreshTokenSession(_ context.Context, sig, _ string, req fosite.Requester) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refresh[sig] = &refreshSession{active: true, req: req}
	s.refreshByReq[req.GetID()] = sig
	return nil
}

// GetRefreshTokenSession returns a rotated (inactive) token's request with
// ErrInactiveToken, on which fosite revokes the token's whole family.
func (s *store) GetRefreshTokenSession(_ context.Context, sig string, _ fosite.Session) (fosite.Requester, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs, ok := s.refresh[sig]
	if !ok {
		return nil, fosite.ErrNotFound
	}
	if !rs.active {
		return rs.req, fosite.ErrInactiveToken
	}
	return rs.req, nil
}

func (s *store) DeleteRefreshTokenSession(_ context.Context, sig string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.refresh, sig)
	return nil
}

// RotateRefreshToken retires the grant's current refresh and access
// tokens when a refresh token is used: the used one stays, inactive, so
// that a second use of it is recognised as reuse.
func (s *store) RotateRefreshToken(ctx context.Context, requestID string, _ string) error {
	if err := s.RevokeRefreshToken(ctx, requestID); err != nil {
		return err
	}
	return s.RevokeAccessToken(ctx, requestID)
}

func (s *store) RevokeRefreshToken(_ context.Context, requestID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sig, ok := s.refreshByReq[requestID]; ok {
		if rs := s.refresh[sig]; rs != nil {
			rs.active = false
		}
	}
	return nil
}

func (s *store) RevokeAccessToken(_ context.Context, requestID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sig, ok := s.accessByReq[requestID]; ok {
		delete(s.access, sig)
	}
	return nil
}

// revokeClient ends every token and code of a client at once.
func (s *store) revokeClient(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[id]
	if c == nil || c.revoked {
		return false
	}
	c.revoked = true
	for sig, r := range s.access {
		if r.GetClient().GetID() == id {
			delete(s.access, sig)
		}
	}
	for sig, rs := range s.refresh {
		if rs.req.GetClient().GetID() == id {
			delete(s.refresh, sig)
		}
	}
	for sig, cs := range s.codes {
		if cs.req.GetClient().GetID() == id {
			delete(s.codes, sig)
		}
	}
	for sig, r := range s.pkce {
		if r.GetClient().GetID() == id {
			delete(s.pkce, sig)
		}
	}
	return true
}

// sweep drops what has expired, so that memory does not grow with time.
func (s *store) sweep(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sig, r := range s.access {
		if exp := r.GetSession().GetExpiresAt(fosite.AccessToken); !exp.IsZero() && exp.Before(now) {
			delete(s.access, sig)
		}
	}
	for sig, rs := range s.refresh {
		if exp := rs.req.GetSession().GetExpiresAt(fosite.RefreshToken); !exp.IsZero() && exp.Before(now) {
			delete(s.refresh, sig)
		}
	}
	for sig, cs := range s.codes {
		// A used code is kept for its lifetime and one more, so that a
		// replay within it is still seen as one.
		if exp := cs.req.GetSession().GetExpiresAt(fosite.AuthorizeCode); !exp.IsZero() && exp.Add(10*time.Minute).Before(now) {
			delete(s.codes, sig)
		}
	}
}
