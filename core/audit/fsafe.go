package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/core/config"
)

// File-safety sentinels. Open, Append and the key loaders wrap these, so a
// caller can tell with errors.Is why a file was refused.
var (
	// ErrSymlink: the ledger, its lock file or a private key is a symbolic
	// link. Following one would let whoever planted it redirect writes or
	// substitute a key.
	ErrSymlink = errors.New("audit: refusing a symbolic link")

	// ErrHardLink: the file has more than one hard link, so its contents
	// could be read or replaced through a name this package does not check.
	ErrHardLink = errors.New("audit: refusing a file with more than one hard link")

	// ErrNotRegular: the path names a directory, device, socket or FIFO.
	ErrNotRegular = errors.New("audit: not a regular file")

	// ErrPermissions: a file or directory grants access to group or others
	// (mode & 077 != 0). The ledger lives in a 0700 directory in 0600 files.
	ErrPermissions = errors.New("audit: permissions grant access to group or others")

	// ErrOwner: the file or directory belongs to another user.
	ErrOwner = errors.New("audit: owned by another user")
)

// openSafe opens path without following a symlink and checks that what was
// opened is a private regular file with one link, owned by us, and still the
// file at path.
func openSafe(path string, flag int, perm fs.FileMode) (*os.File, error) {
	if li, err := os.Lstat(path); err == nil {
		if li.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s: %w", path, ErrSymlink)
		}
		if !li.Mode().IsRegular() {
			// Checked before opening: opening a FIFO can block.
			return nil, fmt.Errorf("%s: %w", path, ErrNotRegular)
		}
	}
	f, err := os.OpenFile(path, flag|oNoFollow, perm)
	if err != nil {
		if isSymlinkErr(err) {
			return nil, fmt.Errorf("%s: %w", path, ErrSymlink)
		}
		return nil, err
	}
	if err := checkOpened(path, f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func checkOpened(path string, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %w", path, ErrNotRegular)
	}
	n, err := linkCount(f, fi)
	if err != nil {
		return err
	}
	if n > 1 {
		return fmt.Errorf("%s: %w", path, ErrHardLink)
	}
	if config.PrivateModeEnforced && fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s: mode %#o: %w", path, fi.Mode().Perm(), ErrPermissions)
	}
	if !ownedByUs(fi) {
		return fmt.Errorf("%s: %w", path, ErrOwner)
	}
	li, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if li.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s: %w", path, ErrSymlink)
	}
	if !os.SameFile(fi, li) {
		return fmt.Errorf("audit: %s was replaced while being opened", path)
	}
	return nil
}

// openRegular opens path for reading and refuses anything but a regular
// file, whose size it returns from the same check. The open itself does not
// block: a FIFO planted under a ledger name would otherwise hang the reader,
// and a writer with it while holding the lock.
func openRegular(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNonBlock, 0)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w", path, ErrNotRegular)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// ensureDir creates dir 0700 when it is missing and otherwise refuses one
// that group or others can enter, or that another user owns.
func ensureDir(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if err := syncDir(filepath.Dir(dir)); err != nil {
			return err
		}
		fi, err = os.Stat(dir)
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("audit: %s is not a directory", dir)
	}
	if config.PrivateModeEnforced && fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s: mode %#o: %w", dir, fi.Mode().Perm(), ErrPermissions)
	}
	if !ownedByUs(fi) {
		return fmt.Errorf("%s: %w", dir, ErrOwner)
	}
	return nil
}
