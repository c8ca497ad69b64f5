// Package canonjson is canonical JSON: the byte form that the audit
// ledger's hashes and signatures, and a proposal's digest, are computed
// over (object keys sorted by their UTF-8 bytes at every level, no
// insignificant whitespace, strings escaped as JSON.stringify escapes them,
// integers only), and the strict parser that reads it back.
//
// It is a leaf: core/proposal and core/audit both use it, so the digest an
// agent's proposal carries and the ledger that records it are computed by
// the same code, and a proposal need not link the ledger to compute one.
package canonjson
