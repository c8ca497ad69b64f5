//go:build linux

package workspace

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/sluicehq/sluice/core/errcode"
)

// syncHook, when a test sets it, is called after each entry SyncTree
// writes or removes in the tree; true stops SyncTree there as a crash
// would, without any cleanup.
var syncHook func() bool

// SyncTree makes treePath hold exactly the entries of an untrusted tar
// archive, like ReplaceTree, but in place: treePath stays the same
// directory (the same inode, so a bind mount of it into another sandbox
// sees the new content), and its top-level .git is never read, written or
// removed. Entries under .git in the archive are ignored.
//
// The whole archive is first extracted into a sibling staging directory
// by ReplaceTree's defended extractor, so a refused archive (see
// ErrArchiveUnsafe, ErrArchiveLimit, ErrArchiveTruncated) refuses it all
// and leaves treePath unchanged. Then staging is mirrored into treePath: a
// regular file whose type, mode bits, size or content (compared byte for
// byte when the sizes agree; mtimes are never trusted) differs is replaced
// by renaming the staged file over it, atomic per file; a file that
// differs in its mode bits alone gets them set; missing directories and
// symlinks are made; what treePath has and the archive has not is
// removed; directories get the archive's mode bits once what is below
// them is done. Owners are per opt, as ReplaceTree's. Every step works on
// descriptors opened without following a symlink: a symlink in treePath
// is replaced or removed, never followed.
//
// A crash (or an error) while mirroring leaves treePath a mix of old and
// new entries, never a file half-written, and a staging sibling; the next
// SyncTree (or CleanTreeLeftovers) removes that sibling, and the next
// SyncTree completes the tree. As for ReplaceTree, the caller holds the
// workspace's lock so that nothing else writes treePath meanwhile.
func SyncTree(r io.Reader, treePath string, opt ReplaceOptions) (SyncStats, error) {
	var stats SyncStats
	if err := CleanTreeLeftovers(treePath); err != nil {
		return stats, err
	}
	parent, err := openDirPath(filepath.Dir(treePath))
	if err != nil {
		return stats, errcode.Wrap(errcode.Internal, err, "cannot open the workspace directory")
	}
	defer closeFD(parent)
	base := filepath.Base(treePath)
	tree, err := openChild(parent, base, true)
	if err != nil {
		return stats, errcode.Wrap(errcode.Internal, err, "cannot open the workspace tree")
	}
	defer closeFD(tree)
	stage := base + stageSuffix + randomSuffix()
	if err := mkdirAt(parent, stage, 0o700); err != nil {
		return stats, errcode.Wrap(errcode.Internal, err, "cannot create the staging directory")
	}
	crashed := false
	defer func() {
		if !crashed {
			_ = removeAllAt(parent, stage)
			_ = fsyncFD(parent)
		}
	}()
	sfd, err := openChild(parent, stage, true)
	if err != nil {
		return stats, errcode.Wrap(errcode.Internal, err, "cannot open the staging directory")
	}
	x := &extractor{
		stage: sfd, lim: opt.Limits.withDefaults(), uid: opt.UID, gid: opt.GID,
		chown: opt.UID >= 0 || opt.GID >= 0, seen: map[string]*archNode{}, cacheFD: -1,
	}
	defer x.close()
	err = x.extract(r)
	stats.Archive = x.stats
	if err != nil {
		return stats, err
	}
	if x.cacheFD >= 0 {
		closeFD(x.cacheFD)
		x.cacheFD = -1
	}
	// Staged files are durable before any is renamed into the tree: a
	// crash after a rename must not leave an empty file there.
	if err := unix.Syncfs(x.stage); err != nil {
		return stats, errcode.Wrap(errcode.Internal, err, "cannot make the new workspace tree durable")
	}
	m := &mirror{x: x, stats: &stats}
	err = m.dir(x.stage, tree, "")
	if errors.Is(err, errSimulatedCrash) {
		crashed = true
	}
	return stats, err
}

// mirror makes a tree directory match its staged counterpart.
type mirror struct {
	x     *extractor
	stats *SyncStats
}

func (m *mirror) step() error {
	if syncHook != nil && syncHook() {
		return errSimulatedCrash
	}
	return nil
}

// dir mirrors the staging directory sdir into the tree directory tdir
// (rel below the tree's root; "" is the root, whose .git is left alone).
func (m *mirror) dir(sdir, tdir int, rel string) error {
	staged, err := readDirNames(sdir)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot list the staged %s", displayRel(rel))
	}
	have, err := readDirNames(tdir)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot list %s", displayRel(rel))
	}
	inStage := make(map[string]bool, len(staged))
	for _, n := range staged {
		inStage[n] = true
	}
	changed := false
	for _, n := range have {
		if inStage[n] || (rel == "" && n == ".git") {
			continue
		}
		if err := removeAllAt(tdir, n); err != nil {
			return errcode.Wrap(errcode.Internal, err, "cannot remove %s", path.Join(rel, n))
		}
		m.stats.Removed++
		changed = true
		if err := m.step(); err != nil {
			return err
		}
	}
	for _, n := range staged {
		if rel == "" && n == ".git" {
			continue // never in an extraction; never written if it were
		}
		c, err := m.entry(sdir, tdir, n, path.Join(rel, n))
		if err != nil {
			return err
		}
		changed = changed || c
	}
	if changed {
		if err := fsyncFD(tdir); err != nil {
			return errcode.Wrap(errcode.Internal, err, "cannot make %s durable", displayRel(rel))
		}
	}
	return nil
}

// entry mirrors one staged name; it reports whether tdir's entries
// changed.
func (m *mirror) entry(sdir, tdir int, name, rel string) (bool, error) {
	var s, t unix.Stat_t
	if err := unix.Fstatat(sdir, name, &s, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return false, errcode.Wrap(errcode.Internal, err, "cannot stat the staged %s", rel)
	}
	terr := unix.Fstatat(tdir, name, &t, unix.AT_SYMLINK_NOFOLLOW)
	if terr != nil && !errors.Is(terr, unix.ENOENT) {
		return false, errcode.Wrap(errcode.Internal, terr, "cannot stat %s", rel)
	}
	exists := terr == nil
	sType, tType := s.Mode&unix.S_IFMT, t.Mode&unix.S_IFMT
	changed := false
	// Anything of another type goes first (a directory cannot be renamed
	// over, and must not be merged into).
	if exists && sType != tType && (sType == unix.S_IFDIR || tType == unix.S_IFDIR) {
		if err := removeAllAt(tdir, name); err != nil {
			return false, errcode.Wrap(errcode.Internal, err, "cannot remove %s", rel)
		}
		m.stats.Removed++
		exists, changed = false, true
		if err := m.step(); err != nil {
			return changed, err
		}
	}
	switch sType {
	case unix.S_IFDIR:
		return m.subdir(sdir, tdir, name, rel, exists, &t)
	case unix.S_IFLNK:
		if exists && tType == unix.S_IFLNK {
			a, err1 := readlinkAt(sdir, name)
			b, err2 := readlinkAt(tdir, name)
			if err1 == nil && err2 == nil && a == b && m.owned(&t) {
				m.stats.Unchanged++
				return changed, nil
			}
		}
	case unix.S_IFREG:
		if exists && tType == unix.S_IFREG && s.Size == t.Size && m.owned(&t) {
			same, err := sameContent(sdir, tdir, name, rel)
			if err != nil {
				return changed, err
			}
			if same && s.Mode&0o7777 == t.Mode&0o7777 {
				m.stats.Unchanged++
				return changed, nil
			}
			if same {
				if err := setFileMode(tdir, name, s.Mode&0o777); err != nil {
					return changed, errcode.Wrap(errcode.Internal, err, "cannot set the mode of %s", rel)
				}
				m.stats.Written++
				return changed, m.step()
			}
		}
	default:
		return changed, errcode.New(errcode.Internal, "the staged %s is neither a file, a directory nor a symlink", rel)
	}
	// A file or a symlink, new or replacing what was there (a file, a
	// symlink, anything but a directory): one rename, atomic.
	if err := renameAt(sdir, name, tdir, name); err != nil {
		return changed, errcode.Wrap(errcode.Internal, err, "cannot write %s", rel)
	}
	m.stats.Written++
	return true, m.step()
}

// owned reports whether the tree's entry has the owner opt asks for (any
// owner when opt keeps the caller's ids).
func (m *mirror) owned(t *unix.Stat_t) bool {
	x := m.x
	return (!x.chown || x.uid < 0 || int(t.Uid) == x.uid) && (!x.chown || x.gid < 0 || int(t.Gid) == x.gid)
}

func (m *mirror) subdir(sdir, tdir int, name, rel string, exists bool, t *unix.Stat_t) (bool, error) {
	changed := false
	if !exists {
		if err := mkdirAt(tdir, name, 0o700); err != nil {
			return false, errcode.Wrap(errcode.Internal, err, "cannot create %s", rel)
		}
		if err := m.x.own(tdir, name, rel); err != nil {
			return true, err
		}
		m.stats.Written++
		changed = true
		if err := m.step(); err != nil {
			return changed, err
		}
	} else if t.Mode&0o700 != 0o700 {
		// A directory the archive or a run left read-only: its owner opens
		// it up while its entries change; its mode is set below.
		if err := chmodDirNoFollow(tdir, name, 0o700); err != nil {
			return false, errcode.Wrap(errcode.Internal, err, "cannot open up %s", rel)
		}
	}
	s2, err := openChild(sdir, name, true)
	if err != nil {
		return changed, errcode.Wrap(errcode.Internal, err, "cannot open the staged %s", rel)
	}
	defer closeFD(s2)
	t2, err := openChild(tdir, name, true)
	if err != nil {
		return changed, errcode.Wrap(errcode.Internal, err, "cannot open %s", rel)
	}
	defer closeFD(t2)
	if err := m.dir(s2, t2, rel); err != nil {
		return changed, err
	}
	mode := uint32(0o755)
	if n := m.x.seen[rel]; n != nil && n.kind == kindDir {
		mode = n.mode
	}
	var now unix.Stat_t
	if err := unix.Fstat(t2, &now); err != nil {
		return changed, errcode.Wrap(errcode.Internal, err, "cannot stat %s", rel)
	}
	if now.Mode&0o7777 != mode {
		if err := fchmodFD(t2, mode); err != nil {
			return changed, errcode.Wrap(errcode.Internal, err, "cannot set the mode of %s", rel)
		}
	}
	if !m.owned(&now) {
		if err := fchownFD(t2, m.x.uid, m.x.gid); err != nil {
			return changed, errcode.Wrap(errcode.Internal, err, "cannot hand %s to the container user", rel)
		}
	}
	return changed, nil
}

// setFileMode sets a regular file's mode bits through a descriptor opened
// without following a symlink.
func setFileMode(dir int, name string, mode uint32) error {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return err
	}
	defer closeFD(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return unix.EINVAL
	}
	return unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), mode, 0)
}

// sameContent compares the staged and the tree's regular file of name
// byte for byte; both are opened without following a symlink.
func sameContent(sdir, tdir int, name, rel string) (bool, error) {
	a, err := openChild(sdir, name, false)
	if err != nil {
		return false, errcode.Wrap(errcode.Internal, err, "cannot open the staged %s", rel)
	}
	fa := os.NewFile(uintptr(a), name)
	defer fa.Close()
	b, err := openChild(tdir, name, false)
	if err != nil {
		return false, errcode.Wrap(errcode.Internal, err, "cannot open %s", rel)
	}
	fb := os.NewFile(uintptr(b), name)
	defer fb.Close()
	if st, err := fstatFD(b); err != nil || !st.isRegular() {
		return false, nil
	}
	bufA, bufB := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := io.ReadFull(fa, bufA)
		nb, eb := io.ReadFull(fb, bufB)
		if !bytes.Equal(bufA[:na], bufB[:nb]) {
			return false, nil
		}
		aEnd := ea == io.EOF || errors.Is(ea, io.ErrUnexpectedEOF)
		bEnd := eb == io.EOF || errors.Is(eb, io.ErrUnexpectedEOF)
		switch {
		case ea != nil && !aEnd:
			return false, errcode.Wrap(errcode.Internal, ea, "cannot read the staged %s", rel)
		case eb != nil && !bEnd:
			return false, errcode.Wrap(errcode.Internal, eb, "cannot read %s", rel)
		case aEnd || bEnd:
			return aEnd == bEnd, nil
		}
	}
}
