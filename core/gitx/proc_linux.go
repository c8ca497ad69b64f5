//go:build linux

package gitx

import "syscall"

// dieWithParent asks the kernel to kill the git process when the process
// that started it dies. A Sluice killed in the middle of an execution
// (SIGKILL, the OOM killer, a power-off of the session) must not leave
// its git running on unattended: git's locks then stay behind exactly as
// after a crash, which reconciliation can see and explain, instead of a
// git that finishes the operation long after the journal said it was
// interrupted.
//
// The signal follows the thread that forked, not the whole process; Go
// only ends a thread when a goroutine locked to it exits, which nothing in
// Sluice does while it starts git.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
