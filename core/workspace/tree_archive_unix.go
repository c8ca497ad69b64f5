//go:build linux

package workspace

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicehq/sluice/core/errcode"
)

// PackTree writes to w a tar archive of treePath's contents and, when
// gitDirPath is not "", of gitDirPath's contents under ".git/". Names are
// relative ("src/a.go", ".git/HEAD"). The tree's own top-level .git (the
// repository's mount point) is never archived: the repository comes from
// gitDirPath or not at all.
//
// It reads defended, like the snapshot import: every entry is opened
// relative to its parent directory's descriptor with O_NOFOLLOW and its
// type checked again on the open descriptor, so a symlink is archived as a
// symlink and never followed, and nothing outside the two roots is read.
// Only regular files, directories and symlinks are archived; anything else
// is skipped and counted. Headers carry the 0777 mode bits only, uid and
// gid 0, no names and a zero mtime, and entries come in sorted order, so
// the same tree always gives the same bytes.
func PackTree(w io.Writer, treePath, gitDirPath string) (ArchiveStats, error) {
	p := &packer{tw: tar.NewWriter(w)}
	root, err := openDirPath(treePath)
	if err != nil {
		return p.stats, errcode.Wrap(errcode.Internal, err, "cannot open the workspace tree")
	}
	defer closeFD(root)
	if err := p.dir(root, "", 0); err != nil {
		return p.stats, err
	}
	if gitDirPath != "" {
		g, err := openDirPath(gitDirPath)
		if err != nil {
			return p.stats, errcode.Wrap(errcode.Internal, err, "cannot open the workspace repository")
		}
		defer closeFD(g)
		st, err := fstatFD(g)
		if err != nil {
			return p.stats, errcode.Wrap(errcode.Internal, err, "cannot stat the workspace repository")
		}
		if err := p.header(".git/", tar.TypeDir, st.mode, 0, ""); err != nil {
			return p.stats, err
		}
		p.stats.Dirs++
		if err := p.dir(g, ".git", 1); err != nil {
			return p.stats, err
		}
	}
	if err := p.tw.Close(); err != nil {
		return p.stats, errcode.Wrap(errcode.Internal, err, "cannot write the workspace archive")
	}
	return p.stats, nil
}

type packer struct {
	tw    *tar.Writer
	stats ArchiveStats
}

// epoch is every entry's mtime: the archive says nothing about when.
var epoch = time.Unix(0, 0)

func (p *packer) header(name string, typ byte, mode os.FileMode, size int64, link string) error {
	err := p.tw.WriteHeader(&tar.Header{
		Typeflag: typ,
		Name:     name,
		Linkname: link,
		Size:     size,
		Mode:     int64(mode.Perm()),
		ModTime:  epoch,
	})
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot write the workspace archive")
	}
	return nil
}

func (p *packer) dir(fd int, rel string, depth int) error {
	if depth > maxDepth {
		return errcode.New(errcode.InvalidArgument, "the workspace tree is nested deeper than %d levels", maxDepth)
	}
	names, err := readDirNames(fd)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot list %s", displayRel(rel))
	}
	for _, name := range names {
		if rel == "" && name == ".git" {
			continue
		}
		r := path.Join(rel, name)
		st, err := lstatAt(fd, name)
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "cannot stat %s", r)
		}
		switch {
		case st.isDir():
			if err := p.subdir(fd, name, r, depth); err != nil {
				return err
			}
		case st.isSymlink():
			target, err := readlinkAt(fd, name)
			if err != nil {
				return errcode.Wrap(errcode.Internal, err, "cannot read the symlink %s", r)
			}
			if err := p.header(r, tar.TypeSymlink, 0o777, 0, target); err != nil {
				return err
			}
			p.stats.Symlinks++
		case st.isRegular():
			if err := p.file(fd, name, r); err != nil {
				return err
			}
		default:
			p.stats.Skipped++
		}
	}
	return nil
}

func (p *packer) subdir(fd int, name, rel string, depth int) error {
	sub, err := openChild(fd, name, true)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot open %s", rel)
	}
	defer closeFD(sub)
	st, err := fstatFD(sub)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot stat %s", rel)
	}
	if err := p.header(rel+"/", tar.TypeDir, st.mode, 0, ""); err != nil {
		return err
	}
	p.stats.Dirs++
	return p.dir(sub, rel, depth+1)
}

func (p *packer) file(fd int, name, rel string) error {
	in, err := openChild(fd, name, false)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot open %s", rel)
	}
	f := os.NewFile(uintptr(in), name)
	defer f.Close()
	st, err := fstatFD(in)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot stat %s", rel)
	}
	if !st.isRegular() {
		p.stats.Skipped++ // swapped for something else since the listing
		return nil
	}
	if err := p.header(rel, tar.TypeReg, st.mode, st.size, ""); err != nil {
		return err
	}
	n, err := io.CopyN(p.tw, f, st.size)
	if err != nil {
		if n < st.size && (err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF)) {
			return errcode.New(errcode.Internal, "%s shrank while it was archived", rel)
		}
		return errcode.Wrap(errcode.Internal, err, "cannot archive %s", rel)
	}
	p.stats.Files++
	p.stats.Bytes += n
	return nil
}

// replaceHook, when a test sets it, is called at each step of ReplaceTree
// (replaceStep*); true stops ReplaceTree there as a crash would, without
// any cleanup.
var replaceHook func(step string) bool

const (
	replaceStepExtracted      = "extracted-entry" // after each entry is written to the staging directory
	replaceStepBeforeExchange = "before-exchange"
	replaceStepAfterExchange  = "after-exchange"
)

var errSimulatedCrash = errors.New("simulated crash")

func crashAt(step string) bool { return replaceHook != nil && replaceHook(step) }

// ReplaceTree reads an untrusted tar archive and makes treePath hold
// exactly its entries. A ".git" entry at the top, and everything below it,
// is ignored: the repository is read-only to runs and never comes back;
// the tree's own .git directory (the repository's mount point) is kept, as
// an empty directory with its mode and owner. The tree's root keeps its
// mode and owner too; everything below gets the archive's 0777 mode bits
// (set-id and sticky bits are dropped) and is owned per opt.
//
// It extracts into a new sibling staging directory, swaps that with
// treePath in one renameat2(RENAME_EXCHANGE), and removes the old tree.
// On any error treePath is unchanged and the staging directory removed. A
// crash leaves treePath wholly old or wholly new, plus at most one sibling
// named <tree>.sluice-replace-<hex> that CleanTreeLeftovers removes. The
// caller holds the workspace's lock, so that nothing else writes the tree
// meanwhile. Reading stops at the archive's end-of-archive marker; the
// caller drains the stream's rest (GNU tar pads it with zeros). To stop a
// replace, the caller closes what r reads from: the read fails and the
// tree stays as it was.
//
// Every refusal (see ErrArchiveUnsafe, ErrArchiveLimit,
// ErrArchiveTruncated) refuses the whole archive. The checks on names are
// lexical and come first; every create is then made relative to the
// staging directory's descriptor, with O_NOFOLLOW|O_EXCL for the entry and
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS (or a component-wise O_NOFOLLOW
// walk) for its parents, so nothing lands outside the staging directory
// even if a lexical check had a hole.
func ReplaceTree(r io.Reader, treePath string, opt ReplaceOptions) (ArchiveStats, error) {
	parent, err := openDirPath(filepath.Dir(treePath))
	if err != nil {
		return ArchiveStats{}, errcode.Wrap(errcode.Internal, err, "cannot open the workspace directory")
	}
	defer closeFD(parent)
	base := filepath.Base(treePath)
	var old unix.Stat_t
	if err := unix.Fstatat(parent, base, &old, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return ArchiveStats{}, errcode.Wrap(errcode.Internal, err, "cannot stat the workspace tree")
	}
	if old.Mode&unix.S_IFMT != unix.S_IFDIR {
		return ArchiveStats{}, errcode.New(errcode.Internal, "the workspace tree is not a directory")
	}
	stage := base + stageSuffix + randomSuffix()
	if err := mkdirAt(parent, stage, 0o700); err != nil {
		return ArchiveStats{}, errcode.Wrap(errcode.Internal, err, "cannot create the staging directory")
	}
	crashed, exchanged := false, false
	defer func() {
		if !crashed && !exchanged {
			_ = removeAllAt(parent, stage)
		}
	}()
	sfd, err := openChild(parent, stage, true)
	if err != nil {
		return ArchiveStats{}, errcode.Wrap(errcode.Internal, err, "cannot open the staging directory")
	}
	x := &extractor{
		stage: sfd, lim: opt.Limits.withDefaults(), uid: opt.UID, gid: opt.GID,
		chown: opt.UID >= 0 || opt.GID >= 0, seen: map[string]*archNode{}, cacheFD: -1,
	}
	defer x.close()
	if err := x.extract(r); err != nil {
		crashed = errors.Is(err, errSimulatedCrash)
		return x.stats, err
	}
	if err := x.finish(parent, base, &old); err != nil {
		return x.stats, err
	}
	if crashAt(replaceStepBeforeExchange) {
		crashed = true
		return x.stats, errSimulatedCrash
	}
	if err := unix.Renameat2(parent, stage, parent, base, unix.RENAME_EXCHANGE); err != nil {
		return x.stats, errcode.Wrap(errcode.Internal, err, "cannot swap the new workspace tree in")
	}
	// From here on the tree is the new one and no error may say otherwise;
	// the staging name holds the old tree, for removal.
	exchanged = true
	_ = fsyncFD(parent)
	if crashAt(replaceStepAfterExchange) {
		return x.stats, errSimulatedCrash
	}
	x.close()
	// A failure here leaves only a sibling for CleanTreeLeftovers: the
	// tree itself is already the new one.
	_ = removeAllAt(parent, stage)
	_ = fsyncFD(parent)
	return x.stats, nil
}

// CleanTreeLeftovers removes the siblings of treePath that a crash during
// ReplaceTree left behind (a staging directory, or an old tree after the
// exchange). Like ReplaceTree, it wants the workspace's lock held.
func CleanTreeLeftovers(treePath string) error {
	parent, err := openDirPath(filepath.Dir(treePath))
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return errcode.Wrap(errcode.Internal, err, "cannot open the workspace directory")
	}
	defer closeFD(parent)
	names, err := readDirNames(parent)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot list the workspace directory")
	}
	base := filepath.Base(treePath)
	var first error
	for _, name := range names {
		if !isStageName(base, name) {
			continue
		}
		if err := removeAllAt(parent, name); err != nil && first == nil {
			first = errcode.Wrap(errcode.Internal, err, "cannot remove a leftover of the workspace tree")
		}
	}
	_ = fsyncFD(parent)
	return first
}

type nodeKind uint8

const (
	kindImplicitDir nodeKind = iota + 1 // a parent the archive did not list
	kindDir
	kindFile
	kindSymlink
)

func (k nodeKind) String() string {
	switch k {
	case kindFile:
		return "file"
	case kindSymlink:
		return "symlink"
	}
	return "directory"
}

type archNode struct {
	kind nodeKind
	mode uint32 // directories: the mode set once everything below is written
}

// extractor writes one archive into the staging directory.
type extractor struct {
	stage    int
	lim      ArchiveLimits
	uid, gid int
	chown    bool
	// seen is every path made so far, implicit parents included; it is
	// what the lexical checks consult (a name below a symlink or a file,
	// a path taken twice, a hard link's target).
	seen    map[string]*archNode
	dirs    []string // every directory made, for the final modes
	stats   ArchiveStats
	entries int64
	drained int64 // data read and thrown away (.git entries)
	names   int64 // bytes of the paths in seen
	// The last parent directory opened: tar lists a directory's entries
	// together, so most entries reuse it.
	cacheRel string
	cacheFD  int
}

func (x *extractor) close() {
	if x.cacheFD >= 0 {
		closeFD(x.cacheFD)
		x.cacheFD = -1
	}
	if x.stage >= 0 {
		closeFD(x.stage)
		x.stage = -1
	}
}

func (x *extractor) extract(r io.Reader) error {
	er := &endReader{r: r}
	tr := tar.NewReader(er)
	for {
		er.mark()
		hdr, err := tr.Next()
		if err == io.EOF {
			if !er.sawEndMarker() {
				return archiveTruncatedErr(io.ErrUnexpectedEOF)
			}
			return nil
		}
		if errors.Is(err, tar.ErrInsecurePath) && hdr != nil {
			return refuseEntry(hdr.Name, "is not a local path")
		}
		if err != nil {
			return archiveTruncatedErr(err)
		}
		if x.entries++; x.entries > x.lim.MaxEntries {
			return archiveLimitErr("archiveEntries", "entries", x.lim.MaxEntries)
		}
		if err := x.entry(tr, hdr); err != nil {
			return err
		}
		// Whatever of the entry's data was not read is read now, so that
		// the end marker check sees only what follows the entry.
		if err := x.drain(tr); err != nil {
			return err
		}
		if crashAt(replaceStepExtracted) {
			return errSimulatedCrash
		}
	}
}

// drain reads what is left of an entry's data (only regular file types
// carry data; a skipped .git file's is all of it), counted against
// MaxBytes.
func (x *extractor) drain(tr *tar.Reader) error {
	n, err := io.Copy(io.Discard, io.LimitReader(tr, x.room()+1))
	if err != nil {
		return archiveTruncatedErr(err)
	}
	if x.drained += n; x.room() < 0 {
		return archiveLimitErr("archiveBytes", "bytes", x.lim.MaxBytes)
	}
	return nil
}

// room is how many more data bytes MaxBytes allows.
func (x *extractor) room() int64 { return x.lim.MaxBytes - x.stats.Bytes - x.drained }

func (x *extractor) entry(tr *tar.Reader, hdr *tar.Header) error {
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		x.stats.Skipped++
		return nil
	}
	comps, err := archiveComps(hdr.Name)
	if err != nil {
		return err
	}
	if len(comps) == 0 {
		if hdr.Typeflag == tar.TypeDir {
			return nil // the root keeps its own mode and owner
		}
		return refuseEntry(hdr.Name, "names the tree's root but is not a directory")
	}
	if comps[0] == ".git" {
		x.stats.Skipped++
		return nil
	}
	rel := strings.Join(comps, "/")
	for i := 1; i < len(comps); i++ {
		p := strings.Join(comps[:i], "/")
		if n, ok := x.seen[p]; ok && n.kind != kindDir && n.kind != kindImplicitDir {
			return refuseEntry(hdr.Name, "lies below %s, which this archive made a %s", quoteEntry(p), n.kind)
		}
	}
	if n, ok := x.seen[rel]; ok {
		if hdr.Typeflag != tar.TypeDir || (n.kind != kindDir && n.kind != kindImplicitDir) {
			return refuseEntry(hdr.Name, "names a path an earlier entry already made a %s", n.kind)
		}
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.mkdir(comps, rel, hdr)
	case tar.TypeReg, tar.TypeGNUSparse, tar.TypeCont:
		return x.file(comps, rel, hdr, tr)
	case tar.TypeSymlink:
		return x.symlink(comps, rel, hdr)
	case tar.TypeLink:
		return x.link(comps, rel, hdr)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		return refuseEntry(hdr.Name, "is a device or FIFO, which a workspace tree cannot hold")
	}
	return refuseEntry(hdr.Name, "has an entry type (%q) a workspace tree cannot hold", hdr.Typeflag)
}

func (x *extractor) perm(hdr *tar.Header) uint32 { return uint32(hdr.Mode) & 0o777 }

// own hands the entry name in dir to the configured owner, never
// following a symlink.
func (x *extractor) own(dir int, name, rel string) error {
	if !x.chown {
		return nil
	}
	if err := lchownAt(dir, name, x.uid, x.gid); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot hand %s to the container user", rel)
	}
	return nil
}

// parent returns the directory that holds comps' last element, creating
// the missing ones. The descriptor belongs to x (do not close it).
func (x *extractor) parent(comps []string) (int, error) {
	dirs := comps[:len(comps)-1]
	if len(dirs) == 0 {
		return x.stage, nil
	}
	rel := strings.Join(dirs, "/")
	if x.cacheFD >= 0 && x.cacheRel == rel {
		return x.cacheFD, nil
	}
	if x.cacheFD >= 0 {
		closeFD(x.cacheFD)
		x.cacheFD = -1
	}
	// The longest prefix already made is opened in one call; the rest is
	// made one directory at a time below it.
	k := len(dirs)
	for k > 0 && x.seen[strings.Join(dirs[:k], "/")] == nil {
		k--
	}
	fd := x.stage
	if k > 0 {
		var err error
		if fd, err = openNoSymlinks(x.stage, dirs[:k], true); err != nil {
			return -1, x.fsErr(rel, err)
		}
	}
	for i := k; i < len(dirs); i++ {
		sub := strings.Join(dirs[:i+1], "/")
		next, err := x.makeDir(fd, dirs[i], sub, kindImplicitDir, 0o755)
		if fd != x.stage {
			closeFD(fd)
		}
		if err != nil {
			return -1, err
		}
		fd = next
	}
	x.cacheRel, x.cacheFD = rel, fd
	return fd, nil
}

// makeDir creates name in dir (0700 until finish sets its mode), records
// it and returns it opened.
func (x *extractor) makeDir(dir int, name, rel string, kind nodeKind, mode uint32) (int, error) {
	if err := mkdirAt(dir, name, 0o700); err != nil {
		return -1, x.fsErr(rel, err)
	}
	if err := x.own(dir, name, rel); err != nil {
		return -1, err
	}
	if err := x.remember(rel, &archNode{kind: kind, mode: mode}); err != nil {
		return -1, err
	}
	x.dirs = append(x.dirs, rel)
	x.stats.Dirs++
	fd, err := openChild(dir, name, true)
	if err != nil {
		return -1, x.fsErr(rel, err)
	}
	return fd, nil
}

// maxArchiveNameBytes bounds the names ReplaceTree keeps in memory while
// it extracts (seen): without it, 500,000 entries of 4 KiB names would
// hold 2 GiB of Sluice's memory. Real trees stay far below (a
// node_modules of 500,000 files averages about 100 bytes a path). A
// variable so that a test can lower it.
var maxArchiveNameBytes int64 = 128 << 20

// remember records a path made in the staging directory. A directory the
// archive did not list counts as an entry too: one deep name can imply
// hundreds of them.
func (x *extractor) remember(rel string, n *archNode) error {
	if n.kind == kindImplicitDir {
		if x.entries++; x.entries > x.lim.MaxEntries {
			return archiveLimitErr("archiveEntries", "entries", x.lim.MaxEntries)
		}
	}
	if x.names += int64(len(rel)); x.names > maxArchiveNameBytes {
		return archiveLimitErr("archiveNameBytes", "bytes of names", maxArchiveNameBytes)
	}
	x.seen[rel] = n
	return nil
}

// fsErr maps a failed create in the staging directory. EEXIST, ELOOP and
// EXDEV mean that the lexical checks missed something the kernel did not:
// the archive is refused as unsafe.
func (x *extractor) fsErr(rel string, err error) error {
	switch {
	case errors.Is(err, unix.EEXIST), errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV), errors.Is(err, unix.ENOTDIR):
		return refuseEntry(rel, "would be written through or over another entry")
	case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EDQUOT):
		return errcode.Wrap(errcode.Internal, err, "no space left for the workspace tree")
	}
	return errcode.Wrap(errcode.Internal, err, "cannot create %s in the workspace tree", rel)
}

func (x *extractor) mkdir(comps []string, rel string, hdr *tar.Header) error {
	if n := x.seen[rel]; n != nil {
		n.kind, n.mode = kindDir, x.perm(hdr) // listed after (or again after) a child made it
		return nil
	}
	dir, err := x.parent(comps)
	if err != nil {
		return err
	}
	fd, err := x.makeDir(dir, comps[len(comps)-1], rel, kindDir, x.perm(hdr))
	if err != nil {
		return err
	}
	closeFD(fd)
	return nil
}

func (x *extractor) file(comps []string, rel string, hdr *tar.Header, tr *tar.Reader) error {
	if hdr.Size > x.room() {
		return archiveLimitErr("archiveBytes", "bytes", x.lim.MaxBytes)
	}
	return x.writeFile(comps, rel, tr, x.perm(hdr))
}

// writeFile creates rel (O_EXCL|O_NOFOLLOW: nothing may be there) from src.
// A read error of src is a truncated archive; a write error is Sluice's.
func (x *extractor) writeFile(comps []string, rel string, src io.Reader, perm uint32) error {
	dir, err := x.parent(comps)
	if err != nil {
		return err
	}
	name := comps[len(comps)-1]
	fd, err := createExcl(dir, name, 0o600)
	if err != nil {
		return x.fsErr(rel, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	er := &errReader{r: src}
	n, err := io.Copy(f, er)
	if er.err != nil {
		return archiveTruncatedErr(er.err)
	}
	if err != nil {
		return x.fsErr(rel, err)
	}
	x.stats.Bytes += n
	if err := fchmodFD(fd, perm); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot set the mode of %s", rel)
	}
	if x.chown {
		if err := fchownFD(fd, x.uid, x.gid); err != nil {
			return errcode.Wrap(errcode.Internal, err, "cannot hand %s to the container user", rel)
		}
	}
	if err := x.remember(rel, &archNode{kind: kindFile}); err != nil {
		return err
	}
	x.stats.Files++
	return nil
}

func (x *extractor) symlink(comps []string, rel string, hdr *tar.Header) error {
	target := hdr.Linkname
	if target == "" || len(target) >= maxPathLen || strings.ContainsRune(target, 0) {
		return refuseEntry(hdr.Name, "is a symlink with an empty, overlong or NUL-holding target")
	}
	dir, err := x.parent(comps)
	if err != nil {
		return err
	}
	name := comps[len(comps)-1]
	if err := symlinkAt(target, dir, name); err != nil {
		return x.fsErr(rel, err)
	}
	if err := x.own(dir, name, rel); err != nil {
		return err
	}
	if err := x.remember(rel, &archNode{kind: kindSymlink}); err != nil {
		return err
	}
	x.stats.Symlinks++
	return nil
}

// link extracts a hard link as a copy of a regular file this archive
// extracted before it: no inode is ever shared, inside the staging
// directory or with anything outside it.
func (x *extractor) link(comps []string, rel string, hdr *tar.Header) error {
	tcomps, err := archiveComps(hdr.Linkname)
	if err != nil || len(tcomps) == 0 {
		return refuseEntry(hdr.Name, "is a hard link to a name outside the tree")
	}
	trel := strings.Join(tcomps, "/")
	if n := x.seen[trel]; n == nil || n.kind != kindFile {
		return refuseEntry(hdr.Name, "is a hard link to %s, which is not a regular file extracted before it", quoteEntry(hdr.Linkname))
	}
	fd, err := openNoSymlinks(x.stage, tcomps, false)
	if err != nil {
		return x.fsErr(trel, err)
	}
	f := os.NewFile(uintptr(fd), trel)
	defer f.Close()
	st, err := fstatFD(fd)
	if err != nil || !st.isRegular() {
		return refuseEntry(hdr.Name, "is a hard link to %s, which is not a regular file", quoteEntry(hdr.Linkname))
	}
	if st.size > x.room() {
		return archiveLimitErr("archiveBytes", "bytes", x.lim.MaxBytes)
	}
	return x.writeFile(comps, rel, io.LimitReader(f, st.size), uint32(st.mode.Perm()))
}

// finish gives the staging directory the old tree's root mode and owner
// and its .git mount point, sets every directory's mode (deepest first, so
// a read-only directory is set after what is below it), and syncs it all
// to disk before the exchange makes it the tree.
func (x *extractor) finish(parent int, base string, old *unix.Stat_t) error {
	if x.cacheFD >= 0 {
		closeFD(x.cacheFD)
		x.cacheFD = -1
	}
	oldFD, err := openChild(parent, base, true)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot open the workspace tree")
	}
	var g unix.Stat_t
	gerr := unix.Fstatat(oldFD, ".git", &g, unix.AT_SYMLINK_NOFOLLOW)
	closeFD(oldFD)
	if gerr == nil && g.Mode&unix.S_IFMT == unix.S_IFDIR {
		if err := x.keepMountPoint(&g); err != nil {
			return err
		}
	}
	sort.SliceStable(x.dirs, func(i, j int) bool {
		return strings.Count(x.dirs[i], "/") > strings.Count(x.dirs[j], "/")
	})
	for _, rel := range x.dirs {
		fd, err := openNoSymlinks(x.stage, strings.Split(rel, "/"), true)
		if err != nil {
			return x.fsErr(rel, err)
		}
		err = fchmodFD(fd, x.seen[rel].mode)
		closeFD(fd)
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "cannot set the mode of %s", rel)
		}
	}
	if err := setModeOwner(x.stage, old); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot give the new tree the old one's mode and owner")
	}
	if err := unix.Syncfs(x.stage); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot make the new workspace tree durable")
	}
	return nil
}

func (x *extractor) keepMountPoint(g *unix.Stat_t) error {
	if err := mkdirAt(x.stage, ".git", 0o700); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot keep the repository mount point")
	}
	fd, err := openChild(x.stage, ".git", true)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot keep the repository mount point")
	}
	defer closeFD(fd)
	if err := setModeOwner(fd, g); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot keep the repository mount point")
	}
	return nil
}

// setModeOwner gives fd the permission bits and, where they differ, the
// owner recorded in want.
func setModeOwner(fd int, want *unix.Stat_t) error {
	if err := fchmodFD(fd, want.Mode&0o7777); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Uid != want.Uid || st.Gid != want.Gid {
		return fchownFD(fd, int(want.Uid), int(want.Gid))
	}
	return nil
}

// openNoSymlinks opens comps below root refusing every symlink on the way
// (RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS where openat2 exists, else one
// O_NOFOLLOW component at a time).
func openNoSymlinks(root int, comps []string, wantDir bool) (int, error) {
	if !noOpenat2.Load() {
		flags := uint64(unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW)
		if wantDir {
			flags |= unix.O_DIRECTORY
		} else {
			flags |= unix.O_NONBLOCK
		}
		how := &unix.OpenHow{Flags: flags, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		for attempt := 0; ; attempt++ {
			fd, err := unix.Openat2(root, strings.Join(comps, "/"), how)
			switch {
			case err == nil:
				return fd, nil
			case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN) && attempt < 32:
				continue
			case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM) && attempt == 0 && probeOpenat2Missing():
				noOpenat2.Store(true)
			default:
				return -1, err
			}
			break
		}
	}
	cur := root
	for i, c := range comps {
		fd, err := openChild(cur, c, i < len(comps)-1 || wantDir)
		if cur != root {
			closeFD(cur)
		}
		if err != nil {
			return -1, err
		}
		cur = fd
	}
	return cur, nil
}

// removeAllAt removes name in dir and everything below it, through
// descriptors and without following a symlink. Directories are made
// writable first: an archive may have left one read-only.
func removeAllAt(dir int, name string) error {
	st, err := lstatAt(dir, name)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	if !st.isDir() {
		return ignoreNotExist(unlinkAt(dir, name, false))
	}
	fd, err := openChild(dir, name, true)
	if errors.Is(err, unix.EACCES) && chmodDirNoFollow(dir, name, 0o700) == nil {
		// A directory without read permission (0000 from an archive):
		// its owner may still chmod it.
		fd, err = openChild(dir, name, true)
	}
	if err != nil {
		return ignoreNotExist(err)
	}
	_ = fchmodFD(fd, 0o700)
	names, err := readDirNames(fd)
	if err == nil {
		for _, n := range names {
			if rerr := removeAllAt(fd, n); rerr != nil && err == nil {
				err = rerr
			}
		}
	}
	closeFD(fd)
	if err != nil {
		return err
	}
	return ignoreNotExist(unlinkAt(dir, name, true))
}

// chmodDirNoFollow sets the mode of the directory name in dir, which may
// be unreadable: through an O_PATH descriptor (which needs no permission
// on the directory itself) and its /proc/self/fd link, so a symlink
// swapped in for name is never followed.
func chmodDirNoFollow(dir int, name string, mode uint32) error {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return err
	}
	defer closeFD(fd)
	return unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode)
}

func ignoreNotExist(err error) error {
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// endReader tells a complete archive from one cut off at an entry's end:
// archive/tar reports io.EOF for both. It counts the bytes read since the
// last mark (made before each header) and whether all were zero: a
// complete archive ends with at least one zero block after the last
// entry's padding.
type endReader struct {
	r       io.Reader
	since   int64
	nonZero bool
}

func (e *endReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.since += int64(n)
	if !e.nonZero {
		for _, b := range p[:n] {
			if b != 0 {
				e.nonZero = true
				break
			}
		}
	}
	return n, err
}

func (e *endReader) mark()              { e.since, e.nonZero = 0, false }
func (e *endReader) sawEndMarker() bool { return e.since >= 512 && !e.nonZero }

// errReader remembers its reader's error, so a copy can tell a read
// failure (the archive) from a write failure (the disk).
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}

// archiveComps checks an archive entry's name and returns its components
// ("./" and "" name the root: no components). It refuses, rather than
// cleans, anything a tar of a directory never writes: an absolute name, a
// ".." component anywhere, a NUL byte, a name or component over the
// limits Linux has, nesting deeper than maxDepth.
func archiveComps(name string) ([]string, error) {
	if strings.ContainsRune(name, 0) {
		return nil, refuseEntry(name, "contains a NUL byte")
	}
	if len(name) > maxPathLen {
		return nil, refuseEntry(name, "is longer than %d bytes", maxPathLen)
	}
	if strings.HasPrefix(name, "/") {
		return nil, refuseEntry(name, "is an absolute path")
	}
	var comps []string
	for _, c := range strings.Split(name, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			return nil, refuseEntry(name, "has a \"..\" component")
		}
		if len(c) > maxNameLen {
			return nil, refuseEntry(name, "has a component longer than %d bytes", maxNameLen)
		}
		comps = append(comps, c)
	}
	if len(comps) > maxDepth {
		return nil, archiveLimitErr("archiveDepth", "levels of directories", maxDepth)
	}
	return comps, nil
}

// stageSuffix marks a sibling of a tree that ReplaceTree made: the staging
// directory before the exchange, the old tree after it.
// CleanTreeLeftovers removes exactly the names <tree>+stageSuffix+<16 hex>.
const stageSuffix = ".sluice-replace-"

func isStageName(treeBase, name string) bool {
	rest, ok := strings.CutPrefix(name, treeBase+stageSuffix)
	if !ok || len(rest) != 16 {
		return false
	}
	for _, c := range rest {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}
