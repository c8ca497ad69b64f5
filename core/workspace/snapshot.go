//go:build unix

package workspace

import (
	"errors"
	"io"
	"os"
	"path"
	"sort"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitpath"
)

// maxDepth bounds directory nesting in a snapshot (and any tree walk).
const maxDepth = 256

// copySnapshot copies the directory src into tree, defending against what
// a directory can hold: symlinks that leave it are skipped and reported,
// FIFOs, sockets and devices refuse the whole import, and the number of
// files and bytes is capped. Every entry is opened relative to its parent
// without following symlinks, and its type is checked again on the open
// descriptor, so swapping an entry while the copy runs cannot pull in a
// file from elsewhere.
func (m *Manager) copySnapshot(src, tree string) (files, size int64, skipped []Skipped, err error) {
	sfd, err := openDirPath(src)
	if err != nil {
		return 0, 0, nil, errcode.New(errcode.InvalidArgument, "the snapshot directory cannot be opened")
	}
	defer closeFD(sfd)
	dfd, err := openDirPath(tree)
	if err != nil {
		return 0, 0, nil, errcode.Wrap(errcode.Internal, err, "cannot open the workspace tree")
	}
	defer closeFD(dfd)
	c := &snapshotCopy{m: m, maxFiles: m.opts.SnapshotMaxFiles, maxBytes: m.opts.SnapshotMaxBytes}
	if err := c.dir(sfd, dfd, "", 0); err != nil {
		return 0, 0, nil, err
	}
	return c.files, c.bytes, c.skipped, nil
}

type snapshotCopy struct {
	m                  *Manager
	maxFiles, maxBytes int64
	files, bytes       int64
	skipped            []Skipped
}

func (c *snapshotCopy) dir(sfd, dfd int, rel string, depth int) error {
	if depth > maxDepth {
		return errcode.New(errcode.InvalidArgument, "the snapshot directory is nested deeper than %d levels", maxDepth)
	}
	names, err := readDirNames(sfd)
	if err != nil {
		return errcode.New(errcode.InvalidArgument, "cannot read %s in the snapshot directory", displayRel(rel))
	}
	for _, name := range names {
		r := path.Join(rel, name)
		if gitpath.IsGitName(name) {
			c.skipped = append(c.skipped, Skipped{Path: r, Reason: "repository metadata is not copied"})
			continue
		}
		st, err := lstatAt(sfd, name)
		if err != nil {
			if errors.Is(err, errNotExist) {
				continue // removed while we were copying
			}
			return errcode.New(errcode.InvalidArgument, "cannot read %s in the snapshot directory", r)
		}
		c.files++
		if c.files > c.maxFiles {
			return &errcode.Error{Code: errcode.InvalidArgument, Msg: "the snapshot directory holds more files than allowed", Data: LimitData{Limit: "files", Max: c.maxFiles}}
		}
		switch {
		case st.isDir():
			if err := c.subdir(sfd, dfd, name, r, depth); err != nil {
				return err
			}
		case st.isSymlink():
			if err := c.symlink(sfd, dfd, name, r); err != nil {
				return err
			}
		case st.isRegular():
			if err := c.file(sfd, dfd, name, r); err != nil {
				return err
			}
		default:
			return errcode.New(errcode.InvalidArgument, "%s is a %s; snapshots refuse FIFOs, sockets and devices", r, specialKind(st.mode))
		}
	}
	return nil
}

func (c *snapshotCopy) subdir(sfd, dfd int, name, rel string, depth int) error {
	sub, err := openChild(sfd, name, true)
	if err != nil {
		return errcode.New(errcode.InvalidArgument, "cannot open %s in the snapshot directory", rel)
	}
	defer closeFD(sub)
	if err := mkdirAt(dfd, name, 0o755); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot create %s", rel)
	}
	dsub, err := openChild(dfd, name, true)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot open %s", rel)
	}
	defer closeFD(dsub)
	if err := c.m.own.apply(dsub); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot hand %s to the container user", rel)
	}
	return c.dir(sub, dsub, rel, depth+1)
}

func (c *snapshotCopy) symlink(sfd, dfd int, name, rel string) error {
	target, err := readlinkAt(sfd, name)
	if err != nil {
		return errcode.New(errcode.InvalidArgument, "cannot read the symlink %s", rel)
	}
	if reason := symlinkEscapes(rel, target); reason != "" {
		c.skipped = append(c.skipped, Skipped{Path: rel, Reason: reason})
		return nil
	}
	if err := symlinkAt(target, dfd, name); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot create the symlink %s", rel)
	}
	if c.m.own.chown {
		if err := lchownAt(dfd, name, c.m.own.uid, c.m.own.gid); err != nil {
			return errcode.Wrap(errcode.Internal, err, "cannot hand %s to the container user", rel)
		}
	}
	return nil
}

func (c *snapshotCopy) file(sfd, dfd int, name, rel string) error {
	in, err := openChild(sfd, name, false)
	if err != nil {
		if errors.Is(err, errLoop) {
			return errcode.New(errcode.InvalidArgument, "%s changed into a symlink during the snapshot", rel)
		}
		return errcode.New(errcode.InvalidArgument, "cannot open %s in the snapshot directory", rel)
	}
	inf := os.NewFile(uintptr(in), name)
	defer inf.Close()
	st, err := fstatFD(in)
	if err != nil || !st.isRegular() {
		return errcode.New(errcode.InvalidArgument, "%s is not a regular file any more", rel)
	}
	// Set-id and sticky bits are dropped; the execute bits are kept.
	perm := uint32(st.mode.Perm())
	out, err := createExcl(dfd, name, perm)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot create %s", rel)
	}
	outf := os.NewFile(uintptr(out), name)
	defer outf.Close()
	room := c.maxBytes - c.bytes
	n, err := io.Copy(outf, io.LimitReader(inf, room+1))
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot copy %s", rel)
	}
	c.bytes += n
	if c.bytes > c.maxBytes {
		return &errcode.Error{Code: errcode.InvalidArgument, Msg: "the snapshot directory is larger than allowed", Data: LimitData{Limit: "bytes", Max: c.maxBytes}}
	}
	if err := fchmodFD(out, perm); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot set the mode of %s", rel)
	}
	if err := c.m.own.apply(out); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot hand %s to the container user", rel)
	}
	return nil
}

// readDirNames lists a directory fd, sorted, without closing it.
func readDirNames(fd int) ([]string, error) {
	// A duplicate descriptor keeps the caller's fd (and its offset) intact.
	dup, err := openChildDot(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), ".")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}
