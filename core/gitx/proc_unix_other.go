//go:build unix && !linux

package gitx

import "syscall"

// dieWithParent has no portable equivalent outside Linux: a git started
// by a Sluice that was killed runs to its end there.
func dieWithParent(*syscall.SysProcAttr) {}
