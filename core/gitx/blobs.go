package gitx

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
)

// blob is an object read with cat-file: its size and, when it was small
// enough, its content.
type blob struct {
	oid     string
	missing bool
	size    int64
	data    []byte // nil when larger than the fetch limit
}

// readBlobs reads objects named by specs (an oid, or "<rev>:<path>"),
// without filters or textconv: cat-file --batch reads the object as
// stored. Objects larger than maxFetch are sized but not read.
func (repo *Repo) readBlobs(ctx context.Context, specs []string, maxFetch int64) ([]blob, error) {
	out := make([]blob, len(specs))
	if len(specs) == 0 {
		return out, nil
	}
	var in strings.Builder
	for _, s := range specs {
		if strings.ContainsAny(s, "\n\x00") {
			return nil, errcode.New(errcode.InvalidArgument, "an object name contains a newline")
		}
		in.WriteString(s)
		in.WriteByte('\n')
	}
	check, err := repo.git(ctx, &cmd{sub: []string{"cat-file"}, opts: []string{"--batch-check=%(objectname) %(objecttype) %(objectsize)"}, stdin: strings.NewReader(in.String()), limit: 1 << 20})
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(check.Stdout), "\n"), "\n")
	var fetch strings.Builder
	var fetchIdx []int
	for i := range specs {
		if i >= len(lines) {
			out[i].missing = true
			continue
		}
		f := strings.Fields(lines[i])
		if len(f) != 3 || f[1] != "blob" {
			out[i].missing = true
			continue
		}
		out[i].oid = f[0]
		out[i].size, _ = strconv.ParseInt(f[2], 10, 64)
		if out[i].size <= maxFetch {
			fetch.WriteString(f[0])
			fetch.WriteByte('\n')
			fetchIdx = append(fetchIdx, i)
		}
	}
	if len(fetchIdx) == 0 {
		return out, nil
	}
	data, err := repo.git(ctx, &cmd{sub: []string{"cat-file"}, opts: []string{"--batch"}, stdin: strings.NewReader(fetch.String()), limit: DefaultMaxOutput})
	if err != nil {
		return nil, err
	}
	r := bufio.NewReader(bytes.NewReader(data.Stdout))
	for _, i := range fetchIdx {
		header, err := r.ReadString('\n')
		if err != nil {
			return nil, &errcode.Error{Code: errcode.GitFailed, Msg: "unexpected output from git cat-file"}
		}
		f := strings.Fields(header)
		if len(f) != 3 {
			out[i].missing = true
			continue
		}
		n, _ := strconv.ParseInt(f[2], 10, 64)
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, &errcode.Error{Code: errcode.GitFailed, Msg: "unexpected output from git cat-file"}
		}
		_, _ = r.ReadByte() // the newline after the content
		out[i].data = buf
	}
	return out, nil
}

// isBinary follows git's own rule: a NUL in the first 8000 bytes.
func isBinary(b []byte) bool {
	if len(b) > 8000 {
		b = b[:8000]
	}
	return bytes.IndexByte(b, 0) >= 0
}

// errWorktreeFile is returned for working-tree files that cannot be read
// safely (symlinks, non-regular files, paths escaping the root).
var errWorktreeFile = errors.New("not a regular file inside the working tree")

// readWorktreeFile reads a tracked path from the working tree through an
// os.Root, so that neither "..", nor a symlink in any component, nor one
// swapped in meanwhile, can lead outside the repository. A symlink as the
// file itself is not followed.
func (repo *Repo) readWorktreeFile(p string, max int64) (data []byte, size int64, err error) {
	root, err := os.OpenRoot(repo.Root)
	if err != nil {
		return nil, 0, err
	}
	defer root.Close()
	rel := filepath.FromSlash(p)
	st, err := root.Lstat(rel)
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, st.Size(), errWorktreeFile
	}
	f, err := root.Open(rel)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fst, err := f.Stat()
	if err != nil || !fst.Mode().IsRegular() {
		return nil, 0, errWorktreeFile
	}
	if fst.Size() > max {
		return nil, fst.Size(), nil
	}
	data, err = io.ReadAll(io.LimitReader(f, max+1))
	return data, int64(len(data)), err
}

// lstatIn reports whether p inside root is a symlink, without following
// any symlink on the way.
func lstatIn(root, p string) (bool, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return false, err
	}
	defer r.Close()
	st, err := r.Lstat(filepath.FromSlash(p))
	if err != nil {
		return false, err
	}
	return st.Mode()&os.ModeSymlink != 0, nil
}
