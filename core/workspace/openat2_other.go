//go:build unix && !linux

package workspace

import "sync/atomic"

// noOpenat2: only Linux has openat2; elsewhere resolution always walks one
// component at a time and follows no symlink.
var noOpenat2 atomic.Bool

func init() { noOpenat2.Store(true) }

func openat2Beneath(root int, rel string, wantDir bool) (fd int, ok bool, err error) {
	return -1, false, nil
}
