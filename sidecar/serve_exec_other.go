//go:build !linux

package sidecar

import (
	"io"
	"os"
)

// execServing does nothing but on Linux: there the exec runs the very file
// it checked, through /proc/self/fd, and the memory it saves is Linux's
// (see serve_exec_linux.go); elsewhere sluice-sidecar serves in process.
func execServing() { os.Unsetenv(handoffEnv) }

// acceptHandoff: nothing hands off to the serving binary but on Linux, so
// started by hand it serves.
func acceptHandoff(io.Writer) bool {
	os.Unsetenv(handoffEnv)
	return true
}
