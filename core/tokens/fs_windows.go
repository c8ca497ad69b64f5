//go:build windows

package tokens

import (
	"io/fs"
	"os"
)

func inode(fs.FileInfo) uint64 { return 0 }

// lockPath creates path exclusively as a lock; a concurrent writer fails
// rather than waits, which is acceptable for a command run by hand.
func lockPath(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	return func() { f.Close(); os.Remove(path) }, nil
}
