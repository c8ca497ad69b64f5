//go:build windows

package audit

import (
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

const (
	oNoFollow = 0
	oNonBlock = 0
)

func isSymlinkErr(error) bool { return false }

func linkCount(f *os.File, _ fs.FileInfo) (uint64, error) {
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &info); err != nil {
		return 0, err
	}
	return uint64(info.NumberOfLinks), nil
}

func ownedByUs(fs.FileInfo) bool { return true }

func lockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, &ol)
}

func unlockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}

// Windows cannot open a directory for flushing; NTFS journals the metadata.
func syncDir(string) error { return nil }
