package gitx

import (
	"io"
	"os"
)

// CopyIndex copies an index file to dst (which must not exist), keeping its modification time: git
// trusts the stat data of an entry only when the file is older than the
// index, so a copy with a newer time would take a file changed within
// the index's last second (same size, same second) for unchanged.
func CopyIndex(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
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
