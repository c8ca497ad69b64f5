// Package journal owns the durable lifecycle of proposals in a bbolt file.
//
// Durability contract: every state transition is exactly one bbolt read-write
// transaction, committed (and therefore fsynced) before the caller is told it
// happened, and paired with one audit entry written through the fail-closed
// append (a Recorder, called inside the transaction before the commit); if
// the audit entry cannot be written the transition does not happen. An audit
// entry without its transition can exist only for the one transition that
// was in flight when the process died (or whose commit failed and was
// reported). Subscribers hear of a transition only after its commit.
//
// Start-up (Recover): executions that were interrupted become
// needs_reconciliation and are never re-run blindly; pending proposals past
// their expiry become expired; approved proposals are re-validated (digest,
// and pins through a callback) before they may run. Terminal records are
// kept for the history view for a retention period (default 90 days) and
// then pruned.
//
// Only the app opens the journal (bbolt holds an exclusive file lock);
// sidecars reach it through the gateway.
package journal
