//go:build unix

package workspace

import (
	"errors"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// The file tools work on directory file descriptors, never on joined path
// strings: every component below the workspace root is opened relative to
// its parent, so a symlink swapped in after a check cannot redirect an open
// (see resolve.go).

const sysSupported = true

// fileInfo is the part of a stat result the file tools use.
type fileInfo struct {
	mode os.FileMode
	size int64
	uid  int
}

func (fi fileInfo) isDir() bool     { return fi.mode.IsDir() }
func (fi fileInfo) isRegular() bool { return fi.mode.IsRegular() }
func (fi fileInfo) isSymlink() bool { return fi.mode&os.ModeSymlink != 0 }

func statToInfo(st *unix.Stat_t) fileInfo {
	m := os.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= os.ModeDir
	case unix.S_IFLNK:
		m |= os.ModeSymlink
	case unix.S_IFIFO:
		m |= os.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= os.ModeSocket
	case unix.S_IFCHR:
		m |= os.ModeDevice | os.ModeCharDevice
	case unix.S_IFBLK:
		m |= os.ModeDevice
	}
	if st.Mode&unix.S_ISUID != 0 {
		m |= os.ModeSetuid
	}
	if st.Mode&unix.S_ISGID != 0 {
		m |= os.ModeSetgid
	}
	if st.Mode&unix.S_ISVTX != 0 {
		m |= os.ModeSticky
	}
	return fileInfo{mode: m, size: st.Size, uid: int(st.Uid)}
}

// openDirPath opens an absolute directory path that Sluice itself chose
// (a workspace tree, a snapshot source). The last component must not be a
// symlink.
func openDirPath(path string) (int, error) {
	return retryEINTR(func() (int, error) {
		return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
}

// openChild opens one name (no slash) in dir without following a symlink.
// Regular files are opened non-blocking so that a FIFO cannot hang the
// caller before its type is checked.
func openChild(dir int, name string, wantDir bool) (int, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return -1, unix.EINVAL
	}
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if wantDir {
		flags |= unix.O_DIRECTORY
	} else {
		flags |= unix.O_NONBLOCK
	}
	return retryEINTR(func() (int, error) { return unix.Openat(dir, name, flags, 0) })
}

// createExcl creates a new file name in dir; it fails if anything (a
// symlink included) already has that name.
func createExcl(dir int, name string, perm uint32) (int, error) {
	return retryEINTR(func() (int, error) {
		return unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	})
}

func retryEINTR(f func() (int, error)) (int, error) {
	for {
		fd, err := f()
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

func mkdirAt(dir int, name string, perm uint32) error { return unix.Mkdirat(dir, name, perm) }

func renameAt(fromDir int, from string, toDir int, to string) error {
	return unix.Renameat(fromDir, from, toDir, to)
}

func unlinkAt(dir int, name string, isDir bool) error {
	flags := 0
	if isDir {
		flags = unix.AT_REMOVEDIR
	}
	return unix.Unlinkat(dir, name, flags)
}

func symlinkAt(target string, dir int, name string) error { return unix.Symlinkat(target, dir, name) }

func readlinkAt(dir int, name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", err
	}
	if n == len(buf) {
		return "", unix.ENAMETOOLONG
	}
	return string(buf[:n]), nil
}

func lstatAt(dir int, name string) (fileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fileInfo{}, err
	}
	return statToInfo(&st), nil
}

func fstatFD(fd int) (fileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fileInfo{}, err
	}
	return statToInfo(&st), nil
}

func fchownFD(fd, uid, gid int) error { return unix.Fchown(fd, uid, gid) }

func lchownAt(dir int, name string, uid, gid int) error {
	return unix.Fchownat(dir, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
}

func fchmodFD(fd int, perm uint32) error { return unix.Fchmod(fd, perm) }

func closeFD(fd int) { _ = unix.Close(fd) }

// tryLock takes a non-blocking flock on fd; errWouldBlock means another
// holder has it.
func tryLock(fd int, exclusive bool) error {
	how := unix.LOCK_SH | unix.LOCK_NB
	if exclusive {
		how = unix.LOCK_EX | unix.LOCK_NB
	}
	for {
		err := unix.Flock(fd, how)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EWOULDBLOCK) {
			return errWouldBlock
		}
		return err
	}
}

func unlockFD(fd int) { _ = unix.Flock(fd, unix.LOCK_UN) }

var errWouldBlock = errors.New("would block")

// Errno values the snapshot copy branches on.
var (
	errLoop     = unix.ELOOP
	errNotExist = unix.ENOENT
)

func fsyncFD(fd int) error { return unix.Fsync(fd) }

const noFollowFlag = unix.O_NOFOLLOW

// openChildDot duplicates a directory fd as a fresh open file description
// (own offset), for listing it without disturbing the original.
func openChildDot(dir int) (int, error) {
	return retryEINTR(func() (int, error) {
		return unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
}
