//go:build !linux

package workspace

import "io"

// SyncTree is not supported on this operating system.
func SyncTree(r io.Reader, treePath string, opt ReplaceOptions) (SyncStats, error) {
	return SyncStats{}, ErrUnsupportedOS
}
