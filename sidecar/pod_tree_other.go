//go:build !linux

package sidecar

import (
	"fmt"
	"io"
)

// runPodTree runs in a Linux pod only.
func runPodTree(_ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "sluice-sidecar pod-tree: only on Linux")
	return 1
}
