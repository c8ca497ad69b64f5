//go:build !linux

package workspace

import "io"

// Tree archives need Linux: the exchange is renameat2(RENAME_EXCHANGE) and
// the defended opens use openat2.

// PackTree is not supported on this operating system.
func PackTree(w io.Writer, treePath, gitDirPath string) (ArchiveStats, error) {
	return ArchiveStats{}, ErrUnsupportedOS
}

// ReplaceTree is not supported on this operating system.
func ReplaceTree(r io.Reader, treePath string, opt ReplaceOptions) (ArchiveStats, error) {
	return ArchiveStats{}, ErrUnsupportedOS
}

// CleanTreeLeftovers has nothing to do here: ReplaceTree never runs, so
// it leaves nothing behind.
func CleanTreeLeftovers(treePath string) error { return nil }
