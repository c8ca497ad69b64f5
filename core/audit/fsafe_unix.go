//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

const (
	oNoFollow = syscall.O_NOFOLLOW
	oNonBlock = syscall.O_NONBLOCK
)

func isSymlinkErr(err error) bool {
	// Linux reports ELOOP for O_NOFOLLOW on a symlink; the BSDs report
	// EMLINK or EFTYPE, which Go does not name on every platform.
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)
}

func linkCount(_ *os.File, fi fs.FileInfo) (uint64, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, errors.New("audit: cannot read the link count")
	}
	return uint64(st.Nlink), nil
}

func ownedByUs(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// lockFile blocks until this open file description holds an exclusive flock.
// flock rather than fcntl locks, because fcntl locks are per process and are
// dropped when any descriptor of the file is closed.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

func unlockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// syncDir makes a create, rename or remove in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
