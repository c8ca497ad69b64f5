package apply

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// restoreFilesAlone says whether restoreSame may write the files alone
// when no index entry at the paths changes (restoreAlone); tests turn it
// off to compare with git's own restore.
var restoreFilesAlone = true

// restoreAlone is restoreSame without the rewrite of the person's index,
// where that leaves exactly what `git restore --source --staged
// --worktree` of the paths leaves but the stat data of the entries whose
// files it writes (git then finds them stale and compares by content;
// plumbing that does not refresh, diff-files or diff-index, lists them as
// modified until something refreshes the index),
// and the index file's own bytes (git's restore writes it whole,
// extensions and all). It reports false, having changed nothing, where it
// cannot know that, and git's restore runs as before.
//
// It works as git's restore does, under the person's index lock, created
// as git creates it (index.lock, exclusively): a git of the person's that
// would write the index meanwhile fails on the lock with git's own
// message, as beside git's restore. Under the lock it reads the index
// (what git's restore reads: the undo point's read, taken earlier, may be
// out of date) and goes on only when the entries at the paths are already
// the recorded ones (files), so that git's restore would keep each entry,
// flags and stat data included, and check its file out. The same checkout
// (`git checkout-index -f`) then writes them from a temporary index that
// holds, byte for byte, the person's entries at the paths, with the index
// file's time, so that it rewrites exactly the files git's restore would
// (a file whose stat data matches its entry is left as it is), and the
// person's .gitattributes entries of every directory above the paths, so
// that attributes are read as git's restore reads them (see
// attributesAbove). The lock is then removed, the index unwritten.
//
// What stands in the way of that sameness sends it to git's restore:
//
//   - an entry at a path other than the recorded one, or any at a
//     leading directory of a path or under a path (git's restore would
//     replace them); an entry not at stage 0; an entry of the empty blob
//     (an intent-to-add entry is one); a gitlink; a .gitattributes among
//     the paths, written or removed (see aloneConfig), or one above them
//     in conflict;
//   - an index that is not version 2 (3 and 4 can hold skip-worktree and
//     intent-to-add flags, 4 compresses names), one split or sparse, or
//     one that cannot be read;
//   - a conversion on checkout, so that a file read back might not hash
//     to its entry: core.autocrlf on, or a text, eol, crlf, ident, filter
//     or working-tree-encoding attribute specified for a path, as
//     check-attr reads them from the same temporary index;
//   - a symbolic link where core.symlinks is off; core.ignorecase,
//     core.ignoreStat (git's restore marks the entries it writes
//     assume-unchanged), a sparse checkout, a split index or an
//     fsmonitor configured;
//   - an index lock that is there already (git's restore then fails on
//     it, as it should).
//
// A kill while the lock is held leaves it, as a git restore killed
// midway leaves its own: the person's git and Sluice's next restore
// refuse to write the index until it is removed, and the index is as it
// was; a restore run again then completes the paths as the first would
// have.
func (g *gitEnv) restoreAlone(ctx context.Context, wt worktree, want WorktreeState, files map[string]string) (bool, error) {
	if !restoreFilesAlone || len(files) == 0 || wt.gitDir == "" || !g.aloneConfig(want.Paths, files) {
		return false, nil
	}
	checkout := make([]string, 0, len(files))
	var gone []string
	for _, p := range want.Paths {
		if _, ok := files[p]; ok {
			checkout = append(checkout, p)
		} else {
			gone = append(gone, p)
		}
	}
	if len(checkout) != len(files) {
		return false, nil
	}
	lock, ok := lockIndex(wt.gitDir)
	if !ok {
		return false, nil
	}
	defer lock.release()
	indexPath := filepath.Join(wt.gitDir, "index")
	st, err := os.Stat(indexPath)
	if err != nil {
		return false, nil
	}
	data, err := os.ReadFile(indexPath)
	if err != nil {
		return false, nil
	}
	hashLen := g.hashLen()
	ix, ok := parseIndexV2(data, hashLen)
	if !ok {
		return false, nil
	}
	keep, ok := ix.sameAt(want.Paths, files)
	if !ok {
		return false, nil
	}
	attrs, ok := ix.attributesAbove(want.Paths)
	if !ok {
		return false, nil
	}
	keep = append(keep, attrs...)
	slices.SortFunc(keep, func(a, b int) int { return ix.compare(a, b) })
	tmp, err := os.MkdirTemp("", "sluice-restore-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	tmpIndex := filepath.Join(tmp, "index")
	if err := os.WriteFile(tmpIndex, ix.subset(keep, hashLen), 0o600); err != nil {
		return false, err
	}
	// The time racy entries are judged by (an entry whose file changed
	// in the index's own second is compared by content).
	if err := os.Chtimes(tmpIndex, st.ModTime(), st.ModTime()); err != nil {
		return false, err
	}
	env := []string{"GIT_INDEX_FILE=" + tmpIndex}
	res, err := g.run(ctx, call{dir: wt.path, args: []string{"check-attr", "--stdin", "-z", "text", "eol", "crlf", "ident", "filter", "working-tree-encoding"},
		stdin: nulList(checkout), env: env})
	if err != nil {
		return false, err
	}
	f := strings.Split(string(res.out), "\x00")
	for i := 0; i+2 < len(f); i += 3 {
		if f[i+2] != "unspecified" {
			return false, nil
		}
	}
	if g.step != nil {
		g.step("restore-files-locked")
	}
	for _, p := range gone {
		if err := removeFile(wt.path, p); err != nil {
			return false, err
		}
	}
	if _, err := g.run(ctx, call{dir: wt.path, args: []string{"checkout-index", "-f", "-z", "--stdin"}, stdin: nulList(checkout), env: env}); err != nil {
		return false, err
	}
	return true, nil
}

// listEntries is what `git ls-files -s -z` of paths lists that
// restorepoint.IndexEntries keeps (each entry at the paths themselves,
// every stage, in the index's order, as "mode object stage<TAB>path"),
// read from the index file of gitDir in process, as ls-files reads it
// (it reads the whole index to answer, which is what grows with the
// repository). False where git must answer: an index that is not a
// whole version 2 one, split or sparse (see parseIndexV2), or
// core.ignorecase set, under which git matches paths otherwise.
func (g *gitEnv) listEntries(gitDir string, paths []string) ([]byte, bool) {
	if v, set := g.repo.Config("core.ignorecase"); set && !isFalse(v) {
		return nil, false
	}
	data, err := os.ReadFile(filepath.Join(gitDir, "index"))
	if err != nil {
		return nil, false
	}
	ix, ok := parseIndexV2(data, g.hashLen())
	if !ok {
		return nil, false
	}
	var at []int
	for _, p := range slices.Compact(slices.Sorted(slices.Values(paths))) {
		for i := ix.find(p); i < ix.len() && string(ix.name(i)) == p; i++ {
			at = append(at, i)
		}
	}
	var b bytes.Buffer
	for _, i := range at {
		off := ix.at[i]
		fmt.Fprintf(&b, "%06o %s %d\t%s\x00", binary.BigEndian.Uint32(ix.data[off+24:]),
			hex.EncodeToString(ix.data[off+ceStatLen:off+ceStatLen+ix.hashLen]), ix.stage(i), ix.name(i))
	}
	return b.Bytes(), true
}

func (g *gitEnv) hashLen() int {
	if g.repo.ObjectFormat == "sha256" {
		return 32
	}
	return 20
}

func isFalse(v string) bool {
	switch strings.ToLower(v) {
	case "false", "no", "off", "0":
		return true
	}
	return false
}

// aloneConfig reports whether the repository's configuration lets a
// checkout of files write them as git's restore would with no conversion
// and no entry flag only git's restore sets, and whether paths (the files
// and those the restore removes) hold no .gitattributes: one the restore
// writes or removes changes, midway, the attributes the checkout reads,
// and check-attr, run before, would not see them as the checkout does.
func (g *gitEnv) aloneConfig(paths []string, files map[string]string) bool {
	empty := emptyBlobs[g.repo.ObjectFormat]
	if empty == "" {
		return false
	}
	for _, p := range paths {
		if path.Base(p) == ".gitattributes" {
			return false
		}
	}
	symlinks := false
	for p, e := range files {
		mode, sha, _ := strings.Cut(e, " ")
		switch {
		case sha == empty, path.Base(p) == ".gitattributes":
			return false
		case mode == "120000":
			symlinks = true
		case mode != "100644" && mode != "100755":
			return false
		}
	}
	// core.ignorestat: git's restore marks each entry whose file it
	// writes assume-unchanged (fill_stat_cache_info), which only a write
	// of the index records.
	for _, key := range []string{"core.autocrlf", "core.sparsecheckout", "core.splitindex", "core.fsmonitor", "core.ignorecase", "core.ignorestat"} {
		if v, set := g.repo.Config(key); set && !isFalse(v) {
			return false
		}
	}
	if v, set := g.repo.Config("core.symlinks"); symlinks && set && isFalse(v) {
		return false
	}
	return true
}

var emptyBlobs = map[string]string{
	"":       "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
	"sha1":   "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
	"sha256": "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813",
}

// indexLock is the person's index lock, held as git holds it.
type indexLock struct {
	path string
	f    *os.File
}

// lockIndex creates gitDir/index.lock as git does (exclusively, so
// that it fails when the file is there), and reports false when it
// cannot.
func lockIndex(gitDir string) (*indexLock, bool) {
	p := filepath.Join(gitDir, "index.lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return nil, false
	}
	return &indexLock{path: p, f: f}, true
}

// release removes the lock, unwritten, as git's rollback does; a lock
// that is another file now (someone removed this one and a git took the
// index since) is that git's, and stays.
func (l *indexLock) release() {
	mine, err := l.f.Stat()
	l.f.Close()
	if err != nil {
		return
	}
	if now, err := os.Lstat(l.path); err == nil && os.SameFile(mine, now) {
		_ = os.Remove(l.path)
	}
}

// index is a version 2 index file read as far as restoreAlone needs:
// where each entry lies in the file, in the file's order (by name, then
// stage).
type index struct {
	data    []byte
	hashLen int
	// at[i] is the offset of entry i, at[len] the end of the last.
	at []int
}

const (
	ceStatLen    = 40 // ctime, mtime, dev, ino, mode, uid, gid, size
	ceExtended   = 0x4000
	ceStageMask  = 0x3000
	ceNameMask   = 0x0fff
	ceStageShift = 12
)

// parseIndexV2 reads the entries of a version 2 index; false for any
// other version, a split index (link extension), a sparse one (sdir),
// an extended flag, or a file that is not a whole index.
func parseIndexV2(data []byte, hashLen int) (*index, bool) {
	if len(data) < 12+hashLen || string(data[:4]) != "DIRC" || binary.BigEndian.Uint32(data[4:]) != 2 {
		return nil, false
	}
	n := int(binary.BigEndian.Uint32(data[8:]))
	ix := &index{data: data, hashLen: hashLen, at: make([]int, 0, n+1)}
	fixed := ceStatLen + hashLen + 2
	end := len(data) - hashLen
	off := 12
	for range n {
		if off+fixed > end {
			return nil, false
		}
		flags := binary.BigEndian.Uint16(data[off+fixed-2:])
		if flags&ceExtended != 0 {
			return nil, false
		}
		nameLen := int(flags & ceNameMask)
		if nameLen == ceNameMask {
			i := bytes.IndexByte(data[off+fixed:end], 0)
			if i < 0 {
				return nil, false
			}
			nameLen = i
		}
		size := (fixed + nameLen + 8) &^ 7
		if off+size > end {
			return nil, false
		}
		ix.at = append(ix.at, off)
		off += size
	}
	ix.at = append(ix.at, off)
	for off+8 <= end {
		sig := string(data[off : off+4])
		if sig == "link" || sig == "sdir" {
			return nil, false
		}
		off += 8 + int(binary.BigEndian.Uint32(data[off+4:]))
	}
	return ix, off == end
}

func (ix *index) len() int { return len(ix.at) - 1 }

func (ix *index) flags(i int) uint16 {
	return binary.BigEndian.Uint16(ix.data[ix.at[i]+ceStatLen+ix.hashLen:])
}

func (ix *index) name(i int) []byte {
	start := ix.at[i] + ceStatLen + ix.hashLen + 2
	n := int(ix.flags(i) & ceNameMask)
	if n == ceNameMask {
		n = bytes.IndexByte(ix.data[start:ix.at[i+1]], 0)
	}
	return ix.data[start : start+n]
}

func (ix *index) stage(i int) int { return int(ix.flags(i)&ceStageMask) >> ceStageShift }

// entry is entry i as TreeEntries gives it: "mode sha".
func (ix *index) entry(i int) string {
	off := ix.at[i]
	mode := binary.BigEndian.Uint32(ix.data[off+24:])
	return strconv.FormatUint(uint64(mode), 8) + " " + hex.EncodeToString(ix.data[off+ceStatLen:off+ceStatLen+ix.hashLen])
}

// compare orders entries i and j as git's index does.
func (ix *index) compare(i, j int) int {
	if c := bytes.Compare(ix.name(i), ix.name(j)); c != 0 {
		return c
	}
	return ix.stage(i) - ix.stage(j)
}

// find is the first entry whose name is not before name.
func (ix *index) find(name string) int {
	return sort.Search(ix.len(), func(i int) bool { return string(ix.name(i)) >= name })
}

// only0 is the stage 0 entry of name, the only one it has; -1 when it has
// none, -2 when it has another.
func (ix *index) only0(name string) int {
	i := ix.find(name)
	if i == ix.len() || string(ix.name(i)) != name {
		return -1
	}
	if ix.stage(i) != 0 || (i+1 < ix.len() && string(ix.name(i+1)) == name) {
		return -2
	}
	return i
}

// sameAt returns the entries at paths when they are exactly files: a
// stage 0 entry of the recorded mode and object at each path files
// holds, none at any other, none at a leading directory of a path and
// none under one.
func (ix *index) sameAt(paths []string, files map[string]string) ([]int, bool) {
	var keep []int
	for _, p := range paths {
		i := ix.only0(p)
		want, in := files[p]
		switch {
		case i == -2:
			return nil, false
		case in && (i < 0 || ix.entry(i) != want):
			return nil, false
		case !in && i >= 0:
			return nil, false
		}
		if i >= 0 {
			keep = append(keep, i)
		}
		if j := ix.find(p + "/"); j < ix.len() && bytes.HasPrefix(ix.name(j), []byte(p+"/")) {
			return nil, false
		}
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if ix.only0(d) != -1 {
				return nil, false
			}
		}
	}
	return keep, true
}

// attributesAbove returns the index's .gitattributes entries of every
// directory above paths (the root's included): those whose attributes
// apply to the paths. Git's restore reads a directory's attributes from
// its file in the working tree, and from the index's entry where there is
// none; checkout-index and check-attr read them the same way, from the
// index they are given, so with these entries in it they read what git's
// restore reads. False for one in conflict.
func (ix *index) attributesAbove(paths []string) ([]int, bool) {
	seen := map[string]bool{}
	var keep []int
	for _, p := range paths {
		for d := path.Dir(p); ; d = path.Dir(d) {
			a := ".gitattributes"
			if d != "." {
				a = d + "/.gitattributes"
			}
			if !seen[a] {
				seen[a] = true
				switch i := ix.only0(a); {
				case i == -2:
					return nil, false
				case i >= 0:
					keep = append(keep, i)
				}
			}
			if d == "." {
				break
			}
		}
	}
	return keep, true
}

// subset is a version 2 index file of entries keep (in order), each as
// the person's index has it, byte for byte.
func (ix *index) subset(keep []int, hashLen int) []byte {
	var b bytes.Buffer
	b.WriteString("DIRC")
	_ = binary.Write(&b, binary.BigEndian, uint32(2))
	_ = binary.Write(&b, binary.BigEndian, uint32(len(keep)))
	for _, i := range keep {
		b.Write(ix.data[ix.at[i]:ix.at[i+1]])
	}
	var h hash.Hash = sha1.New()
	if hashLen == 32 {
		h = sha256.New()
	}
	h.Write(b.Bytes())
	b.Write(h.Sum(nil))
	return b.Bytes()
}

// restoreEntriesInProcess says whether a restore's check and undo point
// read the index entries at their paths in process (listEntries); tests
// turn it off to compare with git's ls-files.
var restoreEntriesInProcess = true

// executeEntriesInProcess says whether an execution's intent-to-add check
// and restore points read the index entries at their paths in process
// (listEntries); tests turn it off to compare with git's ls-files.
var executeEntriesInProcess = true
