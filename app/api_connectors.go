package app

import (
	"context"
	"errors"
	"slices"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/oauth"
)

// ConsentView is a remote connector's authorization request as the consent
// page shows it: who asks (name, metadata URL or registration, redirect
// host), for what (scopes) and over which repositories (the allowed
// roots).
type ConsentView struct {
	oauth.ConsentRequest
	AllowedRoots []string `json:"allowedRoots"`
}

// ConnectorDecided says where the browser goes next: back to the
// connector, with a code or with access_denied.
type ConnectorDecided struct {
	Redirect string `json:"redirect"`
}

// ConnectorsView lists the connectors the person allowed.
type ConnectorsView struct {
	// Serving is false when no `sluice remote` listener runs.
	Serving    bool           `json:"serving"`
	Connectors []oauth.Client `json:"connectors"`
}

// ConnectorRevoke names the connector to revoke.
type ConnectorRevoke struct {
	ID string `json:"id"`
}

func (api *API) authServer() (*oauth.Server, error) {
	s := api.app.oauth.Load()
	if s == nil {
		return nil, &errcode.Error{Code: errcode.NotFound, Msg: "no remote listener runs: start one with `sluice remote --public-url https://…`"}
	}
	return s, nil
}

func consentError(err error) error {
	if errors.Is(err, oauth.ErrNoSuchRequest) || errors.Is(err, oauth.ErrNoSuchClient) {
		return &errcode.Error{Code: errcode.NotFound, Msg: err.Error()}
	}
	return err
}

// ConnectorConsent is the pending authorization request id.
func (api *API) ConnectorConsent(id string) (ConsentView, error) {
	s, err := api.authServer()
	if err != nil {
		return ConsentView{}, err
	}
	req, err := s.Pending(id)
	if err != nil {
		return ConsentView{}, consentError(err)
	}
	return ConsentView{ConsentRequest: req, AllowedRoots: slices.Clone(api.app.current().AllowedRoots)}, nil
}

// DecideConnector allows or denies the pending request id; both are
// audited.
func (api *API) DecideConnector(id string, allow bool) (ConnectorDecided, error) {
	s, err := api.authServer()
	if err != nil {
		return ConnectorDecided{}, err
	}
	to, err := s.Decide(context.Background(), id, allow, api.kind)
	if err != nil {
		return ConnectorDecided{}, consentError(err)
	}
	return ConnectorDecided{Redirect: to}, nil
}

// Connectors are the remote connectors the person allowed, with their
// scopes and last use.
func (api *API) Connectors() (ConnectorsView, error) {
	s := api.app.oauth.Load()
	if s == nil {
		return ConnectorsView{Connectors: []oauth.Client{}}, nil
	}
	list := s.Clients()
	if list == nil {
		list = []oauth.Client{}
	}
	return ConnectorsView{Serving: true, Connectors: list}, nil
}

// RevokeConnector ends every token of a connector at once; it must ask
// the person again to come back.
func (api *API) RevokeConnector(r ConnectorRevoke) (ConnectorsView, error) {
	s, err := api.authServer()
	if err != nil {
		return ConnectorsView{}, err
	}
	if err := s.RevokeClient(r.ID, api.kind); err != nil {
		return ConnectorsView{}, consentError(err)
	}
	return api.Connectors()
}
