// Package restorepoint reads the restore points the executor (core/apply)
// takes before it changes a repository, and the safety timeline that
// merges them with the reflogs: what a restore point recorded, how the
// repository differs from what the operation left behind, and which
// commits only a reflog still knows.
//
// Nothing here writes to a repository, which is why the sidecar's read
// tools can use it without linking the executor: taking, ending and
// restoring a restore point stay in core/apply, which reads through this
// package too.
package restorepoint
