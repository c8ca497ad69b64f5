package workspace

import (
	"errors"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 turns out to be unavailable (kernels before
// 5.6, or a seccomp profile that refuses it); resolution then walks one
// component at a time and follows no symlink at all.
var noOpenat2 atomic.Bool

// openat2Beneath opens rel below root with the kernel refusing any escape
// (RESOLVE_BENEATH: no absolute symlinks, no ".." above root, no magic
// links), atomically with the open itself. ok is false when openat2 is not
// available.
func openat2Beneath(root int, rel string, wantDir bool) (fd int, ok bool, err error) {
	if noOpenat2.Load() {
		return -1, false, nil
	}
	flags := uint64(unix.O_RDONLY | unix.O_CLOEXEC)
	if wantDir {
		flags |= unix.O_DIRECTORY
	} else {
		flags |= unix.O_NONBLOCK
	}
	how := &unix.OpenHow{Flags: flags, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	for attempt := 0; ; attempt++ {
		fd, err = unix.Openat2(root, rel, how)
		switch {
		case err == nil:
			return fd, true, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN) && attempt < 32:
			// A concurrent rename made the kernel abort the lookup;
			// it asks to be retried.
			continue
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM) && attempt == 0 && probeOpenat2Missing():
			noOpenat2.Store(true)
			return -1, false, nil
		}
		return -1, true, err
	}
}

// probeOpenat2Missing tells an EPERM from a seccomp filter (openat2 refused
// outright) from an EPERM of the file itself, by asking for "." of a
// directory that is always there.
func probeOpenat2Missing() bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: uint64(unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC)})
	if err == nil {
		unix.Close(fd)
		return false
	}
	return errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM)
}
