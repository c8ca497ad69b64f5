// Package gitx owns every git process that Sluice starts for reading: a
// hardened runner (absolute git binary, scrubbed environment, overrides that
// neutralise everything a repository can make git execute, timeouts and
// output caps) and the read-only inspections built on it (brief, status,
// history, refs, diffs, conflicts, fleets).
//
// Nothing in this package changes a repository: not refs, not the index, not
// the working tree, not config, and it takes no optional locks.
package gitx
