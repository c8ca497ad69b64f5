// Package audit owns the tamper-evident ledger (format v1): canonical JSON,
// the hash chain, Ed25519 signatures, rotation into segments with signed
// checkpoints, torn-tail recovery, and the streaming verifier behind
// verify-audit.
//
// Appends are fail closed: a caller that needs a record of what it is about
// to do asks for the append first and does nothing if it fails.
package audit
