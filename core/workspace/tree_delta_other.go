//go:build !linux

package workspace

import "io"

// SyncTreeDelta is not supported on this operating system.
func SyncTreeDelta(r io.Reader, treePath string, prev []byte, opt ReplaceOptions) ([]byte, SyncStats, error) {
	return nil, SyncStats{}, ErrUnsupportedOS
}
