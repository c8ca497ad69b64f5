// Package proposal owns what an agent may ask for: the proposal type, its
// operations and their arguments, validation, the digest that binds a human
// decision to exactly one immutable request, and the lifecycle state machine
// (pending → approved → executing → completed | failed, and the side exits
// rejected, cancelled, expired, needs_reconciliation).
//
// It performs no I/O: storing proposals is the journal's job and running
// them is apply's.
package proposal
