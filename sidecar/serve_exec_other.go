//go:build !unix

package sidecar

import "io"

// ServingBinary is the name of the binary that serves MCP over stdio and
// nothing else; it is used only where execve is (serve_exec_unix.go).
const ServingBinary = "sluice-sidecar-stdio"

// execServing does nothing where there is no execve: this binary serves.
func execServing() {}

// acceptHandoff: without execve, nothing hands off to this binary.
func acceptHandoff(io.Writer) bool { return true }
