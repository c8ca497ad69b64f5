// Package apply owns execution: one compare-and-swap executor per proposal
// operation, the restore point taken before each one, and reconciliation of
// executions interrupted by a crash.
//
// It is the only code in Sluice that writes to a person's repository, and it
// runs only proposals whose digest matches the human decision.
package apply
