package gitx

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
)

// commit_details of one commit is, in git, a process whose start costs
// more than the reading it does: a commit, two trees per changed
// directory and the changed blobs. commitDetailsLocal reads them in this
// process where git's answer (the diff-tree of CommitDetails, under the
// read profile) is certain, and leaves every other case to git
// (ErrNotLocal):
//
//   - the revision is HEAD, a ref name ResolveLocal reads, or a full
//     SHA-1 id, naming a commit (not a tag); the refs are files (no
//     reftable) and no shallow file hides parents (replace refs and
//     grafts are ignored by every git Sluice runs, see onlyObjects);
//   - the commit's header is tree, parents, author and committer, in
//     that order, with well-formed identities and dates and no encoding
//     header; the commit holds no NUL;
//   - against its first parent (or nothing, for a root commit) it only
//     adds or only deletes or modifies files (no addition beside a
//     deletion: -M could pair them as a rename), and every path changed
//     is a regular file;
//   - no attributes can apply (git reads the diff attribute to tell
//     binary files): a working tree, no .gitattributes in any directory
//     of a changed path, no info/attributes, no core.attributesFile or
//     attr.tree and no per-user attributes file; no core.bigFileThreshold;
//   - every blob is at most maxLocalBlob bytes, and the line counts of a
//     modified text file do not depend on how a diff pairs lines: after
//     the lines both versions begin and end with, what is left on one
//     side has no line in common with what is left on the other. Any
//     diff then keeps exactly those common lines, so git's counts are the
//     lines left on each side.
//
// TestCommitDetails_LocalSameAsGit holds the answers to git's.

// maxLocalBlob bounds the blobs commitDetailsLocal reads, and
// maxLocalFiles the files.
const (
	maxLocalBlob  = 1 << 20
	maxLocalFiles = 1000
)

// objectsCache keeps, per common git directory, an Objects whose pack
// indexes are read once, while the pack directory keeps its stamp. Pack
// contents never change under a name; a pack written since is found
// when the directory's stamp moves, and an object not found is left to
// git.
type objectsCache struct {
	mu sync.Mutex
	m  map[string]*sharedObjects
}

// sharedObjects is one cached Objects; mu serialises its readers (the
// pack readers are not safe for concurrent use).
type sharedObjects struct {
	mu    sync.Mutex
	objs  *Objects
	stamp refStamp
	used  time.Time // under objectsCache.mu
}

// maxCachedObjects is how many repositories' objects a runner keeps: a
// session reads a few repositories again and again, and each keeps up to
// maxLocalIndex of pack index and a few MiB of objects.
const maxCachedObjects = 8

// DropObjects forgets the objects read in process (pack indexes and the
// inflaters kept for them), to give their memory back when the runner's
// process goes idle; the next read reads them again. A read under way
// keeps what it holds until it ends.
func (r *Runner) DropObjects() {
	r.objects.mu.Lock()
	defer r.objects.mu.Unlock()
	for _, so := range r.objects.m {
		// One no read holds is closed now (its open packs and buffers);
		// one in use is left to be collected.
		if so.mu.TryLock() {
			so.objs.Close()
			so.mu.Unlock()
		}
	}
	r.objects.m = nil
}

// objects returns the cached Objects of repo, locked; the caller unlocks.
func (repo *Repo) objects() *sharedObjects {
	packDir := filepath.Join(repo.CommonDir, "objects", "pack")
	stamp := refStamp{path: packDir}
	if st, err := os.Stat(packDir); err == nil {
		stamp.size, stamp.mtime, stamp.id = st.Size(), st.ModTime(), fileID(st)
	}
	c := &repo.r.objects
	c.mu.Lock()
	defer c.mu.Unlock()
	so := c.m[repo.CommonDir]
	// A directory stamped within the racy window is read again next time.
	fresh := so != nil && sameRefStamps([]refStamp{so.stamp}, []refStamp{stamp}) && stamp.mtime.Before(time.Now().Add(-refCacheRacy))
	if !fresh {
		so = &sharedObjects{objs: NewObjects(repo.CommonDir), stamp: stamp}
		if c.m == nil {
			c.m = map[string]*sharedObjects{}
		}
		// The Objects replaced is not closed: a call may still read it;
		// its packs are closed when it is collected.
		c.m[repo.CommonDir] = so
		if len(c.m) > maxCachedObjects {
			oldest := ""
			for dir, e := range c.m {
				if dir != repo.CommonDir && (oldest == "" || e.used.Before(c.m[oldest].used)) {
					oldest = dir
				}
			}
			delete(c.m, oldest)
		}
	}
	so.used = time.Now()
	so.mu.Lock()
	return so
}

// Full reads the whole of object h of type t, refusing (ErrNotLocal) one
// larger than max.
func (o *Objects) Full(h plumbing.Hash, t plumbing.ObjectType, max int64) ([]byte, error) {
	// An id names one content wherever it is stored: the packs, whose
	// indexes are read already, are searched before the file system.
	obj, err := o.readPacked(h, max)
	if err == nil {
		if obj.typ != t {
			return nil, ErrNotLocal
		}
		return obj.data, nil
	}
	if !errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, ErrNotLocal
	}
	id := h.String()
	f, err := os.Open(filepath.Join(o.dir, id[:2], id[2:]))
	if err == nil {
		defer f.Close()
		r, err := objfile.NewReader(f)
		if err != nil {
			return nil, ErrNotLocal
		}
		defer r.Close()
		typ, size, err := r.Header()
		if err != nil || typ != t || size > max {
			return nil, ErrNotLocal
		}
		b := make([]byte, size)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, ErrNotLocal
		}
		return b, nil
	}
	return nil, ErrNotLocal
}

// commitDetailsLocal is CommitDetails' diff-tree of rev, read in this
// process (see the top of this file): the details without refs, and the
// changed files.
func (repo *Repo) commitDetailsLocal(rev string) (*CommitDetails, []FileChange, error) {
	if f := repo.ObjectFormat; (f != "" && f != "sha1") || repo.Bare {
		return nil, nil, ErrNotLocal
	}
	if _, ok := repo.Config("extensions.refstorage"); ok {
		return nil, nil, ErrNotLocal
	}
	for _, key := range []string{"core.attributesfile", "attr.tree", "core.bigfilethreshold"} {
		if _, ok := repo.Config(key); ok {
			return nil, nil, ErrNotLocal
		}
	}
	for _, p := range []string{filepath.Join(repo.CommonDir, "reftable"), filepath.Join(repo.CommonDir, "shallow"),
		filepath.Join(repo.CommonDir, "info", "attributes"), filepath.Join(repo.GitDir, "info", "attributes"), repo.r.userAttributes()} {
		if p == "" || !absent(p) {
			return nil, nil, ErrNotLocal
		}
	}
	so := repo.objects()
	defer so.mu.Unlock()
	objs := so.objs
	var id string
	if len(rev) == 40 && objectID.MatchString(rev) {
		id = rev
	} else {
		refs := &refFiles{gitDir: repo.GitDir, commonDir: repo.CommonDir, objs: objs}
		var err error
		if id, _, err = refs.dwim(rev); err != nil {
			return nil, nil, ErrNotLocal
		}
	}
	raw, err := objs.Full(plumbing.NewHash(id), plumbing.CommitObject, maxLocalBlob)
	if err != nil {
		return nil, nil, ErrNotLocal
	}
	c, ok := parseLocalCommit(raw, repo.r.version)
	if !ok {
		return nil, nil, ErrNotLocal
	}
	parentTree := ""
	if len(c.parents) > 0 {
		praw, err := objs.Full(plumbing.NewHash(c.parents[0]), plumbing.CommitObject, maxLocalBlob)
		if err != nil {
			return nil, nil, ErrNotLocal
		}
		// Only the tree of the parent is read; its header is git's to
		// judge in any case it would refuse.
		t, ok := bytes.CutPrefix(praw, []byte("tree "))
		if !ok || len(t) < 41 || t[40] != '\n' || !objectID.MatchString(string(t[:40])) {
			return nil, nil, ErrNotLocal
		}
		parentTree = string(t[:40])
	}
	d := &diffLocal{objs: objs}
	if err := d.trees(parentTree, c.tree, ""); err != nil {
		return nil, nil, err
	}
	// A commit of many files is read faster by git.
	if d.added && d.deleted || len(d.changes) > maxLocalFiles {
		return nil, nil, ErrNotLocal
	}
	// The header as the diff-tree's format gives it, read as its answer
	// is read.
	var hdr bytes.Buffer
	for _, f := range []string{id, strings.Join(c.parents, " "), c.author.name, c.author.email, c.author.date,
		c.committer.name, c.committer.email, c.committer.date, "", c.message} {
		hdr.WriteString(f)
		hdr.WriteByte(0)
	}
	details, _, ok := parseCommitDetails(hdr.Bytes())
	if !ok {
		return nil, nil, ErrNotLocal
	}
	changes := make([]FileChange, 0, len(d.changes))
	for _, ch := range d.changes {
		fc, err := d.numstat(ch)
		if err != nil {
			return nil, nil, err
		}
		changes = append(changes, fc)
	}
	if !repo.noAttributes(changes) {
		return nil, nil, ErrNotLocal
	}
	return details, changes, nil
}

// absent reports whether nothing is at p.
func absent(p string) bool {
	_, err := os.Lstat(p)
	return errors.Is(err, os.ErrNotExist)
}

// userAttributes is the per-user attributes file git reads when
// core.attributesFile is not set: $XDG_CONFIG_HOME/git/attributes, else
// $HOME/.config/git/attributes, in the environment the read profile
// gives git; "" when it cannot be told.
func (r *Runner) userAttributes() string {
	var home, xdg string
	for _, kv := range r.env {
		if v, ok := strings.CutPrefix(kv, "XDG_CONFIG_HOME="); ok {
			xdg = v
		} else if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	switch {
	case xdg != "":
		return filepath.Join(xdg, "git", "attributes")
	case home != "":
		return filepath.Join(home, ".config", "git", "attributes")
	}
	return ""
}

// noAttributes reports that no .gitattributes file is in the working
// tree's root or in any directory of a changed path. It looks through an
// os.Root: a directory that is a symbolic link out of the working tree
// is not followed (git answers then).
func (repo *Repo) noAttributes(changes []FileChange) bool {
	root, err := os.OpenRoot(repo.Root)
	if err != nil {
		return false
	}
	defer root.Close()
	seen := map[string]bool{}
	for _, c := range changes {
		dir := c.Path
		for {
			i := strings.LastIndexByte(dir, '/')
			if i < 0 {
				dir = ""
			} else {
				dir = dir[:i]
			}
			if seen[dir] {
				break
			}
			seen[dir] = true
			if _, err := root.Lstat(filepath.Join(filepath.FromSlash(dir), ".gitattributes")); !errors.Is(err, os.ErrNotExist) {
				return false
			}
			if dir == "" {
				break
			}
		}
	}
	return true
}

// localCommit is a commit's header and message as commitDetailsLocal
// reads them.
type localCommit struct {
	tree              string
	parents           []string
	author, committer localIdent
	message           string
}

// localIdent is an identity with its date as %aI gives it, and the
// date's seconds.
type localIdent struct {
	name, email, date string
	secs              int64
}

// parseLocalCommit reads a commit object whose every part git would give
// the same way; ok is false for anything else.
func parseLocalCommit(raw []byte, v Version) (localCommit, bool) {
	var c localCommit
	if bytes.IndexByte(raw, 0) >= 0 {
		return c, false
	}
	header, message, ok := bytes.Cut(raw, []byte("\n\n"))
	if !ok {
		return c, false
	}
	c.message = string(message)
	lines := strings.Split(string(header), "\n")
	tree, ok := strings.CutPrefix(lines[0], "tree ")
	if !ok || len(tree) != 40 || !objectID.MatchString(tree) {
		return c, false
	}
	c.tree = tree
	i := 1
	for ; i < len(lines); i++ {
		p, ok := strings.CutPrefix(lines[i], "parent ")
		if !ok {
			break
		}
		if len(p) != 40 || !objectID.MatchString(p) {
			return c, false
		}
		c.parents = append(c.parents, p)
	}
	if i+1 >= len(lines) {
		return c, false
	}
	a, ok1 := strings.CutPrefix(lines[i], "author ")
	m, ok2 := strings.CutPrefix(lines[i+1], "committer ")
	if !ok1 || !ok2 {
		return c, false
	}
	if c.author, ok = parseLocalIdent(a, v); !ok {
		return c, false
	}
	if c.committer, ok = parseLocalIdent(m, v); !ok {
		return c, false
	}
	for _, l := range lines[i+2:] {
		// Other headers (a signature and its continuation lines, a merged
		// tag) are not read; an encoding would have git re-encode.
		if strings.HasPrefix(l, "encoding ") || strings.HasPrefix(l, "author ") || strings.HasPrefix(l, "committer ") {
			return c, false
		}
	}
	return c, true
}

// utcZ is the first git version that may write a zero offset as "Z" in
// %aI; before it, every version writes "+00:00".
var utcZ = Version{2, 45, 0}

// parseLocalIdent reads "Name <email> 1234567890 +0100" where git reads
// the same name, email and date from it.
func parseLocalIdent(s string, v Version) (localIdent, bool) {
	lt := strings.IndexByte(s, '<')
	gt := strings.IndexByte(s, '>')
	if lt < 2 || gt < lt || s[lt-1] != ' ' {
		return localIdent{}, false
	}
	name, email, rest := s[:lt-1], s[lt+1:gt], s[gt+1:]
	if strings.ContainsAny(email, "<") || strings.TrimRight(name, " \t\n\r\v\f") != name {
		return localIdent{}, false
	}
	for _, b := range []byte(name + email) {
		if b < 0x20 {
			return localIdent{}, false
		}
	}
	ts, tz, ok := strings.Cut(strings.TrimPrefix(rest, " "), " ")
	if !ok || !strings.HasPrefix(rest, " ") || len(ts) == 0 || len(ts) > 11 || len(tz) != 5 || (tz[0] != '+' && tz[0] != '-') {
		return localIdent{}, false
	}
	for _, b := range []byte(ts + tz[1:]) {
		if b < '0' || b > '9' {
			return localIdent{}, false
		}
	}
	secs, _ := strconv.ParseInt(ts, 10, 64)
	off, _ := strconv.Atoi(tz[1:])
	if off == 0 && v.AtLeast(utcZ) {
		return localIdent{}, false
	}
	minutes := (off/100)*60 + off%100
	sign := byte('+')
	if tz[0] == '-' && off != 0 {
		sign, minutes = '-', -minutes
	}
	local := secs + int64(minutes)*60
	t := time.Unix(local, 0).UTC()
	// git refuses a date that its offset takes before 1970.
	if local < 0 || t.Year() > 9999 {
		return localIdent{}, false
	}
	date := fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d%c%02d:%02d", t.Year(), int(t.Month()), t.Day(), t.Hour(), t.Minute(), t.Second(), sign, off/100, off%100)
	return localIdent{name: name, email: email, date: date, secs: secs}, true
}

// diffLocal compares two trees as diff-tree -r does, in its order.
type diffLocal struct {
	objs           *Objects
	changes        []localChange
	added, deleted bool
}

// localChange is one file diff-tree -r reports: its status (A, D or M),
// path and blobs (an added file has no old blob).
type localChange struct {
	status        byte
	path          string
	oldBlob, blob string
}

// treeEntry is one entry of a tree object.
type treeEntry struct {
	mode string
	name string
	id   string
}

func (e treeEntry) isTree() bool { return e.mode == "40000" }

// tree reads a tree object's entries; "" is the empty tree.
func (d *diffLocal) tree(id string) ([]treeEntry, error) {
	if id == "" {
		return nil, nil
	}
	raw, err := d.objs.Full(plumbing.NewHash(id), plumbing.TreeObject, 64<<20)
	if err != nil {
		return nil, ErrNotLocal
	}
	var es []treeEntry
	for len(raw) > 0 {
		sp := bytes.IndexByte(raw, ' ')
		nul := bytes.IndexByte(raw, 0)
		if sp < 0 || nul < sp || len(raw) < nul+21 {
			return nil, ErrNotLocal
		}
		e := treeEntry{mode: string(raw[:sp]), name: string(raw[sp+1 : nul]), id: plumbing.Hash(raw[nul+1 : nul+21]).String()}
		switch e.mode {
		case "40000", "100644", "100755", "120000", "160000":
		default:
			// A mode git would read its own way.
			return nil, ErrNotLocal
		}
		if e.name == "" || e.name == "." || e.name == ".." || strings.ContainsRune(e.name, '/') {
			return nil, ErrNotLocal
		}
		// A tree out of order (or with a name twice) is git's to read.
		if len(es) > 0 && treeOrder(es[len(es)-1], e) >= 0 {
			return nil, ErrNotLocal
		}
		es = append(es, e)
		raw = raw[nul+21:]
	}
	return es, nil
}

// treeOrder compares two entries as git orders a tree: by name, a tree's
// name as if it ended with '/'.
func treeOrder(a, b treeEntry) int {
	n := min(len(a.name), len(b.name))
	if c := strings.Compare(a.name[:n], b.name[:n]); c != 0 {
		return c
	}
	end := func(e treeEntry) byte {
		if len(e.name) > n {
			return e.name[n]
		}
		if e.isTree() {
			return '/'
		}
		return 0
	}
	return cmp.Compare(end(a), end(b))
}

// trees compares old and new, both trees ("" for none), under prefix.
func (d *diffLocal) trees(oldID, newID, prefix string) error {
	olds, err := d.tree(oldID)
	if err != nil {
		return err
	}
	news, err := d.tree(newID)
	if err != nil {
		return err
	}
	for i, j := 0, 0; i < len(olds) || j < len(news); {
		var c int
		switch {
		case i == len(olds):
			c = 1
		case j == len(news):
			c = -1
		default:
			c = treeOrder(olds[i], news[j])
		}
		switch {
		case c < 0:
			if err := d.one(olds[i], prefix, 'D'); err != nil {
				return err
			}
			i++
		case c > 0:
			if err := d.one(news[j], prefix, 'A'); err != nil {
				return err
			}
			j++
		default:
			o, n := olds[i], news[j]
			i++
			j++
			if o.id == n.id && o.mode == n.mode {
				continue
			}
			if o.isTree() {
				if err := d.trees(o.id, n.id, prefix+o.name+"/"); err != nil {
					return err
				}
				continue
			}
			if !regular(o.mode) || !regular(n.mode) {
				return ErrNotLocal
			}
			d.changes = append(d.changes, localChange{status: 'M', path: prefix + n.name, oldBlob: o.id, blob: n.id})
		}
	}
	return nil
}

func regular(mode string) bool { return mode == "100644" || mode == "100755" }

// one reports e, and under a tree every file in it, as added or deleted.
func (d *diffLocal) one(e treeEntry, prefix string, status byte) error {
	if e.isTree() {
		if status == 'A' {
			return d.trees("", e.id, prefix+e.name+"/")
		}
		return d.trees(e.id, "", prefix+e.name+"/")
	}
	if !regular(e.mode) {
		return ErrNotLocal
	}
	ch := localChange{status: status, path: prefix + e.name}
	if status == 'A' {
		ch.blob, d.added = e.id, true
	} else {
		ch.oldBlob, d.deleted = e.id, true
	}
	d.changes = append(d.changes, ch)
	return nil
}

// numstat is one change as diff-tree --raw --numstat reports it, read
// back as CommitDetails reads it.
func (d *diffLocal) numstat(ch localChange) (FileChange, error) {
	fc := FileChange{Status: rawStatus[ch.status], Path: ch.path}
	var old, cur []byte
	for _, side := range []struct {
		id  string
		dst *[]byte
	}{{ch.oldBlob, &old}, {ch.blob, &cur}} {
		if side.id == "" {
			continue
		}
		b, err := d.objs.Full(plumbing.NewHash(side.id), plumbing.BlobObject, maxLocalBlob)
		if err != nil {
			return fc, ErrNotLocal
		}
		*side.dst = b
	}
	// git's test for a binary file: a NUL in its first 8,000 bytes.
	if bytes.IndexByte(old[:min(len(old), firstFewBytes)], 0) >= 0 || bytes.IndexByte(cur[:min(len(cur), firstFewBytes)], 0) >= 0 {
		fc.Binary = true
		return fc, nil
	}
	a, b := splitLines(old), splitLines(cur)
	// The lines both begin with, then those both end with, as xdiff trims
	// them before it compares.
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	am, bm := a[p:len(a)-s], b[p:len(b)-s]
	if len(am) > 0 && len(bm) > 0 {
		seen := make(map[string]bool, len(am))
		for _, l := range am {
			seen[l] = true
		}
		for _, l := range bm {
			if seen[l] {
				// How the rest pairs up is xdiff's to say.
				return fc, ErrNotLocal
			}
		}
	}
	fc.Insertions, fc.Deletions = len(bm), len(am)
	return fc, nil
}

// splitLines splits b into lines as xdiff reads them, each with its
// newline; the last may have none.
func splitLines(b []byte) []string {
	var lines []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			lines = append(lines, string(b))
			break
		}
		lines = append(lines, string(b[:i+1]))
		b = b[i+1:]
	}
	return lines
}
