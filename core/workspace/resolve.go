//go:build unix

package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sluicehq/sluice/core/errcode"
)

// openBeneath opens comps below root: atomically with openat2 where the
// kernel has it (symlinks inside the tree are followed, nothing may leave
// it), else one component at a time with O_NOFOLLOW (no symlink is
// followed at all).
func openBeneath(root int, comps []string, wantDir bool) (int, error) {
	if len(comps) == 0 {
		return retryEINTR(func() (int, error) {
			return unix.Openat(root, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		})
	}
	if fd, ok, err := openat2Beneath(root, joinRel(comps), wantDir); ok {
		return fd, mapResolveErr(err, comps)
	}
	cur := root
	for i, c := range comps {
		last := i == len(comps)-1
		fd, err := openChild(cur, c, !last || wantDir)
		if err != nil && errors.Is(err, unix.ENOTDIR) {
			// O_DIRECTORY on a symlink reports ENOTDIR on some systems.
			if st, serr := lstatAt(cur, c); serr == nil && st.isSymlink() {
				err = unix.ELOOP
			}
		}
		if cur != root {
			closeFD(cur)
		}
		if err != nil {
			return -1, mapResolveErr(err, comps)
		}
		cur = fd
	}
	return cur, nil
}

func mapResolveErr(err error, comps []string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EXDEV), errors.Is(err, unix.ELOOP):
		return ErrPathOutside
	case errors.Is(err, unix.ENOENT):
		return &errcode.Error{Code: errcode.InvalidArgument, Msg: "no such file or directory: " + joinRel(comps), Err: err}
	case errors.Is(err, unix.ENOTDIR):
		return &errcode.Error{Code: errcode.InvalidArgument, Msg: "not a directory: " + joinRel(comps), Err: err}
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return &errcode.Error{Code: errcode.InvalidArgument, Msg: "permission denied: " + joinRel(comps), Err: err}
	}
	return errcode.Wrap(errcode.Internal, err, "cannot open %s", joinRel(comps))
}

func (o owner) apply(fd int) error {
	if !o.chown {
		return nil
	}
	return fchownFD(fd, o.uid, o.gid)
}

// openParent resolves the directory that holds the last component of
// comps, creating missing directories when create is set. It returns that
// directory's fd and the last component.
func openParent(root int, comps []string, create bool, own owner) (int, string, error) {
	if len(comps) == 0 {
		return -1, "", errcode.New(errcode.InvalidArgument, "the path names the workspace root, not a file")
	}
	dirs, base := comps[:len(comps)-1], comps[len(comps)-1]
	if !create {
		fd, err := openBeneath(root, dirs, true)
		return fd, base, err
	}
	prev, err := openBeneath(root, nil, true)
	if err != nil {
		return -1, "", err
	}
	for i := range dirs {
		fd, err := openBeneath(root, dirs[:i+1], true)
		if err != nil && errors.Is(err, unix.ENOENT) {
			if merr := mkdirAt(prev, dirs[i], 0o755); merr != nil && !errors.Is(merr, unix.EEXIST) {
				closeFD(prev)
				return -1, "", mapResolveErr(merr, dirs[:i+1])
			}
			fd, err = openBeneath(root, dirs[:i+1], true)
			if err == nil {
				if cerr := own.apply(fd); cerr != nil {
					closeFD(fd)
					closeFD(prev)
					return -1, "", errcode.Wrap(errcode.Internal, cerr, "cannot hand %s to the container user", joinRel(dirs[:i+1]))
				}
			}
		}
		closeFD(prev)
		if err != nil {
			return -1, "", err
		}
		prev = fd
	}
	return prev, base, nil
}

func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeAtomicAt writes data as name in dir through a temporary file and a
// rename, so a reader (or the container) sees the old or the new content,
// never a mix. A symlink or directory at name is refused rather than
// replaced or followed. perm 0 keeps an existing file's mode (0644 for a
// new file).
func writeAtomicAt(dir int, name string, data []byte, perm os.FileMode, own owner, rel string) (created bool, err error) {
	st, err := lstatAt(dir, name)
	switch {
	case err == nil:
		if st.isSymlink() {
			return false, errcode.New(errcode.InvalidArgument, "%s is a symlink; write to the file it points to instead", rel)
		}
		if st.isDir() {
			return false, errcode.New(errcode.InvalidArgument, "%s is a directory", rel)
		}
		if !st.isRegular() {
			return false, errcode.New(errcode.InvalidArgument, "%s is not a regular file", rel)
		}
		if perm == 0 {
			perm = st.mode.Perm()
		}
	case errors.Is(err, unix.ENOENT):
		created = true
	default:
		return false, mapResolveErr(err, strings.Split(rel, "/"))
	}
	if perm == 0 {
		perm = 0o644
	}
	tmp := ".sluice-tmp-" + randomSuffix()
	fd, err := createExcl(dir, tmp, uint32(perm.Perm()))
	if err != nil {
		return false, mapResolveErr(err, strings.Split(rel, "/"))
	}
	f := os.NewFile(uintptr(fd), tmp)
	ok := false
	defer func() {
		if !ok {
			f.Close()
			_ = unlinkAt(dir, tmp, false)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return false, errcode.Wrap(errcode.Internal, err, "cannot write %s", rel)
	}
	// The mode given to open is filtered by the umask; set it exactly.
	if err := fchmodFD(fd, uint32(perm.Perm())); err != nil {
		return false, errcode.Wrap(errcode.Internal, err, "cannot set the mode of %s", rel)
	}
	if err := own.apply(fd); err != nil {
		return false, errcode.Wrap(errcode.Internal, err, "cannot hand %s to the container user", rel)
	}
	if err := f.Sync(); err != nil {
		return false, errcode.Wrap(errcode.Internal, err, "cannot write %s", rel)
	}
	if err := f.Close(); err != nil {
		return false, errcode.Wrap(errcode.Internal, err, "cannot write %s", rel)
	}
	ok = true
	if err := renameAt(dir, tmp, dir, name); err != nil {
		_ = unlinkAt(dir, tmp, false)
		return false, mapResolveErr(err, strings.Split(rel, "/"))
	}
	_ = fsyncFD(dir)
	return created, nil
}
