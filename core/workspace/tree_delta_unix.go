//go:build linux

package workspace

import (
	"archive/tar"
	"errors"
	"io"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sluicehq/sluice/core/errcode"
)

// ErrTreeDisagrees is in the Err chain of SyncTreeDelta's Conflict: the
// archive says a path did not change since prev, and the tree does not
// hold it as prev said (missing, of another type, size or mode), or prev
// does not list it so. The host tree and the runtime's disagree; nothing
// was changed, and a full SyncTree sets it right.
var ErrTreeDisagrees = errors.New("the tree and its manifest disagree")

func treeDisagrees(rel, what string) error {
	return &errcode.Error{
		Code: errcode.Conflict,
		Msg:  "the workspace tree and the runtime's manifest disagree, nothing was changed: " + quoteEntry(rel) + " " + what,
		Err:  ErrTreeDisagrees,
	}
}

// SyncTreeDelta makes treePath hold the tree an untrusted delta archive
// describes, in place like SyncTree, given prev, the manifest of the
// previous delta applied to treePath (nil: none). The archive is what
// `sluice-sidecar pod-tree` writes: first the manifest of the whole tree
// (TreeManifestName; see ParseTreeManifest), then an entry for every path
// that changed since prev; every path the manifest does not list is
// removed (never the top-level .git). It returns the new manifest, which
// the caller passes as prev next time once this call succeeded (and
// forgets on any error).
//
// Everything is checked before treePath is touched: the manifest's names
// by the archive rules, every entry by ReplaceTree's defended extractor
// (into a staging sibling), each entry against the manifest (listed, of
// the listed type, once), and every path the archive leaves out against
// prev and treePath. A refusal (ErrArchiveUnsafe, ErrArchiveLimit,
// ErrArchiveTruncated) or a disagreement (errcode Conflict,
// ErrTreeDisagrees) changes nothing. The mirroring is SyncTree's: each
// file renamed over its old one, directories and symlinks made, what is
// gone removed, modes set, every step through descriptors that follow no
// symlink; a crash leaves a mix of old and new, which the next
// SyncTreeDelta from the same prev, or a SyncTree, completes.
func SyncTreeDelta(r io.Reader, treePath string, prev []byte, opt ReplaceOptions) ([]byte, SyncStats, error) {
	var stats SyncStats
	lim := opt.Limits.withDefaults()
	var prevMan *TreeManifest
	var prevIdx map[string]TreeRecord
	if len(prev) > 0 {
		var err error
		if prevMan, err = ParseTreeManifest(prev, lim.MaxEntries); err != nil {
			return nil, stats, errcode.Wrap(errcode.Internal, err, "the previous tree manifest cannot be read")
		}
		prevIdx = prevMan.Index()
	}
	if err := CleanTreeLeftovers(treePath); err != nil {
		return nil, stats, err
	}
	parent, err := openDirPath(filepath.Dir(treePath))
	if err != nil {
		return nil, stats, errcode.Wrap(errcode.Internal, err, "cannot open the workspace directory")
	}
	defer closeFD(parent)
	base := filepath.Base(treePath)
	tree, err := openChild(parent, base, true)
	if err != nil {
		return nil, stats, errcode.Wrap(errcode.Internal, err, "cannot open the workspace tree")
	}
	defer closeFD(tree)
	stage := base + stageSuffix + randomSuffix()
	if err := mkdirAt(parent, stage, 0o700); err != nil {
		return nil, stats, errcode.Wrap(errcode.Internal, err, "cannot create the staging directory")
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
		return nil, stats, errcode.Wrap(errcode.Internal, err, "cannot open the staging directory")
	}
	x := &extractor{
		stage: sfd, lim: lim, uid: opt.UID, gid: opt.GID,
		chown: opt.UID >= 0 || opt.GID >= 0, seen: map[string]*archNode{}, cacheFD: -1,
	}
	defer x.close()
	d := &delta{x: x, tree: tree, stats: &stats, prev: prevMan, prevIdx: prevIdx, sent: map[string]bool{}}
	data, err := d.extract(r)
	stats.Archive = x.stats
	if err != nil {
		return nil, stats, err
	}
	if x.cacheFD >= 0 {
		closeFD(x.cacheFD)
		x.cacheFD = -1
	}
	if err := d.check(); err != nil {
		return nil, stats, err
	}
	if err := unix.Syncfs(x.stage); err != nil {
		return nil, stats, errcode.Wrap(errcode.Internal, err, "cannot make the new workspace tree durable")
	}
	err = d.apply()
	if errors.Is(err, errSimulatedCrash) {
		crashed = true
	}
	if err != nil {
		return nil, stats, err
	}
	return data, stats, nil
}

// delta is one SyncTreeDelta.
type delta struct {
	x       *extractor
	tree    int
	stats   *SyncStats
	prev    *TreeManifest
	prevIdx map[string]TreeRecord
	man     *TreeManifest
	idx     map[string]TreeRecord
	sent    map[string]bool // paths with an entry in the archive
	// From check: what the tree has of the manifest's paths, and the
	// tree's paths the manifest does not list (removed whole).
	have   map[string]unix.Stat_t
	remove []string
}

// extract reads the manifest and extracts the entries into the staging
// directory, as the extractor's own loop does, checking each against the
// manifest. It returns the manifest's bytes.
func (d *delta) extract(r io.Reader) ([]byte, error) {
	x := d.x
	er := &endReader{r: r}
	tr := tar.NewReader(er)
	er.mark()
	hdr, err := tr.Next()
	if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
		return nil, archiveTruncatedErr(err)
	}
	if hdr == nil || hdr.Name != TreeManifestName || hdr.Typeflag != tar.TypeReg {
		return nil, refuseEntry(nameOf(hdr), "comes first, where the tree manifest should")
	}
	if hdr.Size > MaxTreeManifestBytes {
		return nil, archiveLimitErr("treeManifestBytes", "bytes of manifest", MaxTreeManifestBytes)
	}
	data, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
	if err != nil || int64(len(data)) != hdr.Size {
		return nil, archiveTruncatedErr(errors.Join(err, io.ErrUnexpectedEOF))
	}
	if d.man, err = ParseTreeManifest(data, x.lim.MaxEntries); err != nil {
		return nil, err
	}
	d.idx = d.man.Index()
	for {
		er.mark()
		hdr, err := tr.Next()
		if err == io.EOF {
			if !er.sawEndMarker() {
				return nil, archiveTruncatedErr(io.ErrUnexpectedEOF)
			}
			return data, nil
		}
		if errors.Is(err, tar.ErrInsecurePath) && hdr != nil {
			return nil, refuseEntry(hdr.Name, "is not a local path")
		}
		if err != nil {
			return nil, archiveTruncatedErr(err)
		}
		if x.entries++; x.entries > x.lim.MaxEntries {
			return nil, archiveLimitErr("archiveEntries", "entries", x.lim.MaxEntries)
		}
		if err := d.match(hdr); err != nil {
			return nil, err
		}
		if err := x.entry(tr, hdr); err != nil {
			return nil, err
		}
		if err := x.drain(tr); err != nil {
			return nil, err
		}
	}
}

func nameOf(h *tar.Header) string {
	if h == nil {
		return ""
	}
	return h.Name
}

// match refuses an entry the manifest does not list as what it is, or
// that came before.
func (d *delta) match(hdr *tar.Header) error {
	comps, err := archiveComps(hdr.Name)
	if err != nil {
		return err
	}
	rel := strings.Join(comps, "/")
	rec, ok := d.idx[rel]
	if !ok || rel == "" {
		return refuseEntry(hdr.Name, "is not in the tree manifest")
	}
	var want byte
	switch hdr.Typeflag {
	case tar.TypeReg:
		want = 'f'
	case tar.TypeDir:
		want = 'd'
	case tar.TypeSymlink:
		want = 'l'
	default:
		return refuseEntry(hdr.Name, "has an entry type (%q) a tree delta does not carry", hdr.Typeflag)
	}
	if rec.Type != want {
		return refuseEntry(hdr.Name, "is not of the type the tree manifest lists")
	}
	if d.sent[rel] {
		return refuseEntry(hdr.Name, "comes twice")
	}
	d.sent[rel] = true
	return nil
}

// check walks the tree (read-only) for what it has of the manifest and
// what it has beyond it, then checks that every path the archive left out
// is unchanged since prev and as prev said in the tree.
func (d *delta) check() error {
	d.have = make(map[string]unix.Stat_t, len(d.man.Records))
	if err := d.walk(d.tree, "", 0); err != nil {
		return err
	}
	for _, r := range d.man.Records {
		if d.sent[r.Path] {
			continue
		}
		if ChangedSince(d.prev, d.prevIdx, r) {
			return treeDisagrees(r.Path, "was left out of the archive but changed since the previous manifest")
		}
		st, ok := d.have[r.Path]
		if !ok {
			return treeDisagrees(r.Path, "is unchanged in the runtime but missing here")
		}
		if typeLetter(st.Mode) != r.Type {
			return treeDisagrees(r.Path, "is unchanged in the runtime but of another type here")
		}
		if r.Type == 'f' && (st.Size != r.Size || st.Mode&0o7777 != r.Mode&0o777) {
			return treeDisagrees(r.Path, "is unchanged in the runtime but of another size or mode here")
		}
		if r.Type == 'd' && st.Mode&0o7777 != r.Mode&0o777 {
			return treeDisagrees(r.Path, "is unchanged in the runtime but of another mode here")
		}
		if r.Type != 'd' {
			d.stats.Unchanged++
		}
	}
	return nil
}

func typeLetter(mode uint32) byte {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return 'f'
	case unix.S_IFDIR:
		return 'd'
	case unix.S_IFLNK:
		return 'l'
	}
	return '?'
}

func (d *delta) walk(fd int, rel string, depth int) error {
	if depth > maxDepth {
		return errcode.New(errcode.Internal, "the workspace tree is nested deeper than %d levels", maxDepth)
	}
	names, err := readDirNames(fd)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot list %s", displayRel(rel))
	}
	for _, n := range names {
		if rel == "" && n == ".git" {
			continue
		}
		p := path.Join(rel, n)
		rec, listed := d.idx[p]
		if !listed {
			d.remove = append(d.remove, p)
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return errcode.Wrap(errcode.Internal, err, "cannot stat %s", p)
		}
		d.have[p] = st
		if rec.Type != 'd' || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		sub, err := openChild(fd, n, true)
		if errors.Is(err, unix.EACCES) {
			// A directory without read permission: what is below it is
			// not known here, so it cannot be unchanged.
			if d.sent[p] {
				d.remove = append(d.remove, p)
				delete(d.have, p)
				continue
			}
			return treeDisagrees(p, "cannot be read here")
		}
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "cannot open %s", p)
		}
		err = d.walk(sub, p, depth+1)
		closeFD(sub)
		if err != nil {
			return err
		}
	}
	return nil
}

// apply mirrors the checked delta into the tree: removals, then each sent
// entry in manifest order (a directory before what is below it), then
// directory modes, deepest first.
func (d *delta) apply() error {
	t := &treeDirs{root: d.tree, fd: -1}
	defer t.close()
	var modes []string
	opened := map[string]bool{}
	// openUp lets the owner write a directory the tree has read-only
	// (unchanged in the runtime, a file below it changed); its mode is set
	// back below.
	openUp := func(rel string) error {
		st, ok := d.have[rel]
		if rel == "." || !ok || opened[rel] || st.Mode&0o700 == 0o700 || d.sent[rel] {
			return nil
		}
		t.close()
		pfd, err := t.open(path.Dir(rel))
		if err == nil {
			err = chmodDirNoFollow(pfd, path.Base(rel), 0o700)
		}
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "cannot open up %s", rel)
		}
		opened[rel] = true
		modes = append(modes, rel)
		return nil
	}
	for _, p := range d.remove {
		if err := openUp(path.Dir(p)); err != nil {
			return err
		}
		dir, err := t.open(path.Dir(p))
		if err != nil {
			return err
		}
		if err := removeAllAt(dir, path.Base(p)); err != nil {
			return errcode.Wrap(errcode.Internal, err, "cannot remove %s", p)
		}
		t.touched(path.Dir(p))
		d.stats.Removed++
		if err := d.step(); err != nil {
			return err
		}
	}
	s := &treeDirs{root: d.x.stage, fd: -1}
	defer s.close()
	for _, r := range d.man.Records {
		if !d.sent[r.Path] {
			continue
		}
		pdir := path.Dir(r.Path)
		if err := openUp(pdir); err != nil {
			return err
		}
		tdir, err := t.open(pdir)
		if err != nil {
			return err
		}
		name := path.Base(r.Path)
		st, exists := d.have[r.Path]
		if exists && (typeLetter(st.Mode) != r.Type) && (r.Type == 'd' || typeLetter(st.Mode) == 'd') {
			if err := removeAllAt(tdir, name); err != nil {
				return errcode.Wrap(errcode.Internal, err, "cannot remove %s", r.Path)
			}
			d.stats.Removed++
			t.touched(pdir)
			exists = false
			if err := d.step(); err != nil {
				return err
			}
		}
		if r.Type == 'd' {
			modes = append(modes, r.Path)
			if exists {
				if st.Mode&0o700 != 0o700 {
					if err := chmodDirNoFollow(tdir, name, 0o700); err != nil {
						return errcode.Wrap(errcode.Internal, err, "cannot open up %s", r.Path)
					}
				}
				continue
			}
			if err := mkdirAt(tdir, name, 0o700); err != nil {
				return errcode.Wrap(errcode.Internal, err, "cannot create %s", r.Path)
			}
			if err := d.x.own(tdir, name, r.Path); err != nil {
				return err
			}
			d.stats.Written++
			t.touched(pdir)
			if err := d.step(); err != nil {
				return err
			}
			continue
		}
		sdir, err := s.open(pdir)
		if err != nil {
			return err
		}
		if exists && typeLetter(st.Mode) == r.Type {
			// Sent but as the tree has it already (a whole read after a
			// disagreement, a file written back as it was): kept, as
			// SyncTree keeps it, comparing content, never times.
			kept, err := d.keep(sdir, tdir, name, r.Path, &st)
			if err != nil {
				return err
			}
			if kept {
				continue
			}
		}
		if err := renameAt(sdir, name, tdir, name); err != nil {
			return errcode.Wrap(errcode.Internal, err, "cannot write %s", r.Path)
		}
		d.stats.Written++
		t.touched(pdir)
		if err := d.step(); err != nil {
			return err
		}
	}
	// A directory's mode is set once what is below it is done: deepest
	// first, so a read-only one is closed after its children.
	sort.SliceStable(modes, func(i, j int) bool {
		return strings.Count(modes[i], "/") > strings.Count(modes[j], "/")
	})
	t.close()
	for _, rel := range modes {
		fd, err := openNoSymlinks(d.tree, strings.Split(rel, "/"), true)
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "cannot open %s", rel)
		}
		mode := d.idx[rel].Mode & 0o777
		if n := d.x.seen[rel]; n != nil && n.kind == kindDir {
			mode = n.mode
		}
		var now unix.Stat_t
		err = unix.Fstat(fd, &now)
		if err == nil && now.Mode&0o7777 != mode {
			err = fchmodFD(fd, mode)
		}
		if err == nil && d.x.chown && ((d.x.uid >= 0 && int(now.Uid) != d.x.uid) || (d.x.gid >= 0 && int(now.Gid) != d.x.gid)) {
			err = fchownFD(fd, d.x.uid, d.x.gid)
		}
		closeFD(fd)
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "cannot set the mode of %s", rel)
		}
	}
	return t.syncTouched()
}

// keep reports whether the tree's entry t of name already is the staged
// one (a regular file of the same content, a symlink of the same target,
// with the owner opt asks for), setting a file's mode bits where they
// alone differ.
func (d *delta) keep(sdir, tdir int, name, rel string, t *unix.Stat_t) (bool, error) {
	x := d.x
	if x.chown && ((x.uid >= 0 && int(t.Uid) != x.uid) || (x.gid >= 0 && int(t.Gid) != x.gid)) {
		return false, nil
	}
	var s unix.Stat_t
	if err := unix.Fstatat(sdir, name, &s, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return false, errcode.Wrap(errcode.Internal, err, "cannot stat the staged %s", rel)
	}
	if s.Mode&unix.S_IFMT != t.Mode&unix.S_IFMT {
		return false, nil
	}
	if s.Mode&unix.S_IFMT == unix.S_IFLNK {
		a, err1 := readlinkAt(sdir, name)
		b, err2 := readlinkAt(tdir, name)
		if err1 == nil && err2 == nil && a == b {
			d.stats.Unchanged++
			return true, nil
		}
		return false, nil
	}
	if s.Size != t.Size {
		return false, nil
	}
	same, err := sameContent(sdir, tdir, name, rel)
	if err != nil || !same {
		return false, err
	}
	if s.Mode&0o7777 == t.Mode&0o7777 {
		d.stats.Unchanged++
		return true, nil
	}
	if err := setFileMode(tdir, name, s.Mode&0o777); err != nil {
		return false, errcode.Wrap(errcode.Internal, err, "cannot set the mode of %s", rel)
	}
	d.stats.Written++
	return true, d.step()
}

func (d *delta) step() error {
	if syncHook != nil && syncHook() {
		return errSimulatedCrash
	}
	return nil
}

// treeDirs opens directories below root by relative path, keeping the
// last one open, and remembers which had entries changed (for fsync).
type treeDirs struct {
	root    int
	rel     string
	fd      int
	changed map[string]bool
}

func (t *treeDirs) close() {
	if t.fd >= 0 {
		closeFD(t.fd)
		t.fd = -1
	}
}

func (t *treeDirs) open(rel string) (int, error) {
	if rel == "." || rel == "" {
		return t.root, nil
	}
	if t.fd >= 0 && t.rel == rel {
		return t.fd, nil
	}
	t.close()
	fd, err := openNoSymlinks(t.root, strings.Split(rel, "/"), true)
	if err != nil {
		return -1, errcode.Wrap(errcode.Internal, err, "cannot open %s", rel)
	}
	t.rel, t.fd = rel, fd
	return fd, nil
}

func (t *treeDirs) touched(rel string) {
	if t.changed == nil {
		t.changed = map[string]bool{}
	}
	t.changed[rel] = true
}

// syncTouched makes every directory whose entries changed durable.
func (t *treeDirs) syncTouched() error {
	for rel := range t.changed {
		fd := t.root
		if rel != "." {
			var err error
			if fd, err = openNoSymlinks(t.root, strings.Split(rel, "/"), true); err != nil {
				return errcode.Wrap(errcode.Internal, err, "cannot open %s", rel)
			}
		}
		err := fsyncFD(fd)
		if fd != t.root {
			closeFD(fd)
		}
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "cannot make %s durable", displayRel(rel))
		}
	}
	return nil
}
