//go:build !windows

package presence

import (
	"errors"
	"syscall"
)

// processAlive reports whether pid runs and, when start is known, is still
// the process that wrote the file (not a later one given the same pid).
func processAlive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if start != 0 {
		if now := procStart(pid); now != 0 && now != start {
			return false
		}
	}
	return true
}
