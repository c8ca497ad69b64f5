// Package gateway owns the loopback HTTP API between sidecars and the app:
// the server that runs inside the app, the client that sidecars use, and the
// gateway.json file (address and bearer token) through which a sidecar finds
// the app.
//
// The server listens on a loopback IP literal only, checks the bearer token,
// the Host header (against DNS rebinding) and refuses any browser Origin. The
// client only dials loopback IP literals, follows no redirects and ignores
// proxy variables. No route reachable with the sidecar token decides a
// proposal.
//
// The server hands every proposal request to a Backend; what the app does
// with a proposal (checking, sealing, the policy, storing) is core/intake's,
// so this package knows neither the journal nor the policy.
package gateway
