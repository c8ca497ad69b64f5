// Package journal owns the durable lifecycle of proposals in a bbolt file.
//
// Durability contract: every state transition is exactly one bbolt read-write
// transaction, committed (and therefore fsynced) before the caller is told it
// happened, and paired with one audit entry written through the fail-closed
// append; if the audit entry cannot be written the transition does not
// happen. Only the app opens the journal; sidecars reach it through the
// gateway.
package journal
