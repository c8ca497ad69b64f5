package gitx

import (
	"io"
	"os"
	"syscall"

	"github.com/sluicehq/sluice/core/errcode"
)

// CopyIndex copies an index file to dst (which must not exist), keeping its modification time: git
// trusts the stat data of an entry only when the file is older than the
// index, so a copy with a newer time would take a file changed within
// the index's last second (same size, same second) for unchanged.
//
// Only a regular file is copied (Unsupported otherwise): a fifo's opening
// would wait for a writer, and a device such as /dev/zero would be copied
// until the disk is full. Git reads neither as an index.
func CopyIndex(src, dst string) error {
	if st, err := os.Stat(src); err != nil {
		return err
	} else if !st.Mode().IsRegular() {
		return notRegularIndex(src)
	}
	// Not waiting should a fifo have been put there since.
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return notRegularIndex(src)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chtimes(dst, st.ModTime(), st.ModTime())
}

func notRegularIndex(src string) error {
	return errcode.New(errcode.Unsupported, "the index %s is not a regular file", src)
}
