// Package oauth is Sluice's own OAuth 2.1 authorization server for remote
// MCP connectors (ChatGPT's developer mode, Claude.ai), whose only resource
// is the MCP endpoint of `sluice remote`.
//
// The person is the only resource owner. A connector registers (a client
// ID metadata document, or RFC 7591 dynamic registration), sends the
// person's browser to the authorization endpoint, and the person allows or
// denies it on a page of Sluice's own UI that needs their logged-in
// session. What the connector then holds is a short-lived access token
// bound to the MCP resource (RFC 8707) with the scopes read and propose, and
// a refresh token that is rotated on every use; a refresh token used twice
// revokes its whole family. No scope decides, restores, grants a workspace
// anything or changes settings: asking for one is refused.
//
// The flows are ory/fosite's (authorization code with PKCE S256 only,
// refresh, RFC 7009 revocation, introspection); this package adds what
// fosite leaves to its user: the storage, exact redirect URI matching,
// resource indicators, the RFC 9207 iss parameter, client ID metadata
// documents, registration and the consent hand-off.
//
// Its state is the app's alone and lives in the app's memory: the sidecar
// binary never links this package, and a restart of the app ends every
// grant (connectors then ask the person again).
package oauth
