// Package tokens keeps the bearer tokens that remote agents present to the
// sidecar's HTTP transport. Each token has a name, and the name is the
// agent's identity in proposals and in the ledger.
//
// Only a SHA-256 hash of each token is stored, in tokens.json (0600) inside
// the private config directory; the token itself is shown once, when it is
// created. Tokens are 256 random bits, so a fast hash is enough: there is
// nothing to brute-force. Verification compares against every stored hash
// in constant time, and the file is re-read when it changes, so a token
// revoked from the command line stops working in a running server at once.
package tokens
