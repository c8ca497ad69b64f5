package seal

import (
	"bytes"
	"compress/zlib"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/sluicehq/sluice/core/gitx"
)

// The tree of a temporary index is written in this process, without a
// git write-tree, where git's answer is certain: for a small commit the
// process costs more than the rest of the seal after git add. The trees
// are made the way git's write-tree makes them (cache-tree.c,
// update_one): a subtree the index's cache-tree extension (TREE) records
// as valid, whose tree object exists, is taken as it is with the entries
// it covers; every other tree is written from the index's entries, in the
// index's order, after checking that each entry's object exists. A tree
// object that exists loose is freshened, not written again; any other (a
// new one, or one only in a pack) is written loose (zlib, a temporary
// file linked into place, read-only), as git writes it. The index is read whole and checked (its checksum, its order);
// git answers instead when anything is unusual:
//
//   - the repository: objects not SHA-1, core.sharedRepository (the
//     permissions git gives new files), core.fsync or
//     core.fsyncObjectFiles (git would sync the objects), or the sealing
//     writes to a scratch object directory;
//   - the index: a version other than 2, 3 or 4, a checksum that does not
//     match, an extension git requires that is not the cache-tree (a split
//     or sparse index), an entry in conflict, intent-to-add or
//     skip-worktree, a directory entry, a path both a file and a
//     directory, entries out of order, or a cache-tree that does not
//     cover its entries;
//   - the objects: an entry's object that is not found here (git looks in
//     alternates too, and says which object is missing).
//
// TestWriteTreeLocal_SameAsGit holds both to the same tree.

// errTreeByGit says that git write-tree must answer.
var errTreeByGit = errors.New("seal: git writes this tree")

// writeTreeLocal writes the tree of the temporary index of env in this
// process; ok is false, and nothing but unreferenced tree objects may
// have been written, when git must answer.
func (w *Work) writeTreeLocal(env []string) (tree string, ok bool) {
	if len(w.env) > 0 {
		return "", false
	}
	repo := w.git.Repo
	if f := repo.ObjectFormat; f != "" && f != "sha1" {
		return "", false
	}
	for _, k := range []string{"core.sharedrepository", "core.fsync", "core.fsyncobjectfiles"} {
		if _, set := repo.Config(k); set {
			return "", false
		}
	}
	var index string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_INDEX_FILE="); ok {
			index = v
		}
	}
	if index == "" {
		return "", false
	}
	raw, err := os.ReadFile(index)
	if err != nil {
		return "", false
	}
	idx, err := readIndex(raw)
	if err != nil {
		return "", false
	}
	tw := &treeWriter{objs: gitx.NewPresence(repo.CommonDir), dir: filepath.Join(repo.CommonDir, "objects")}
	root := idx.cache
	if root == nil {
		root = &cacheTree{count: -1}
	}
	n, err := tw.update(root, idx.entries, "")
	if err != nil || n != len(idx.entries) {
		return "", false
	}
	return hex.EncodeToString(root.oid[:]), true
}

// indexEntry is one entry of an index: its path, mode and object.
type indexEntry struct {
	name string
	mode uint32
	oid  [20]byte
	// assumed: the entry is marked assume-unchanged (which write-tree
	// ignores, and git's add does not).
	assumed bool
}

// cacheTree is a node of the index's cache-tree extension: the tree of
// the count entries under its path (count < 0: not known), and its
// subtrees by name.
type cacheTree struct {
	count int
	oid   [20]byte
	down  map[string]*cacheTree
	// used is how many entries update found under this subtree.
	used int
}

type parsedIndex struct {
	entries []indexEntry
	cache   *cacheTree
	// untracked: the index holds an untracked cache (UNTR), which git's
	// add may read instead of the working tree.
	untracked bool
}

// readIndex reads an index file as git's write-tree needs it, or fails
// where git must answer (see the top of this file).
func readIndex(b []byte) (*parsedIndex, error) {
	if len(b) < 12+sha1.Size || string(b[:4]) != "DIRC" {
		return nil, errTreeByGit
	}
	body := b[:len(b)-sha1.Size]
	if sum := sha1.Sum(body); !bytes.Equal(sum[:], b[len(body):]) {
		return nil, errTreeByGit
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version < 2 || version > 4 {
		return nil, errTreeByGit
	}
	n := int(binary.BigEndian.Uint32(b[8:12]))
	// Every entry takes at least its fixed part: a count the file cannot
	// hold is refused before anything is allocated for it.
	if n > (len(body)-12)/62 {
		return nil, errTreeByGit
	}
	out := &parsedIndex{entries: make([]indexEntry, 0, n)}
	at := 12
	var name []byte
	for range n {
		// ctime, mtime, dev, ino (24 bytes), mode, uid, gid, size, the
		// object id, flags.
		const fixed = 40 + 20 + 2
		if at+fixed > len(body) {
			return nil, errTreeByGit
		}
		start := at
		e := indexEntry{mode: binary.BigEndian.Uint32(body[at+24:])}
		copy(e.oid[:], body[at+40:at+60])
		flags := binary.BigEndian.Uint16(body[at+60:])
		e.assumed = flags&0x8000 != 0
		at += fixed
		if flags&0x3000 != 0 {
			// A conflict's stage: git refuses an unmerged index and says so.
			return nil, errTreeByGit
		}
		if flags&0x4000 != 0 {
			// Extended flags: intent-to-add and skip-worktree change what
			// git writes; any other bit is a format this does not know.
			if version < 3 || at+2 > len(body) {
				return nil, errTreeByGit
			}
			if binary.BigEndian.Uint16(body[at:]) != 0 {
				return nil, errTreeByGit
			}
			at += 2
		}
		if version == 4 {
			if at >= len(body) {
				return nil, errTreeByGit
			}
			c := body[at]
			at++
			strip := int(c & 127)
			for c&128 != 0 {
				if at >= len(body) || strip > len(body) {
					return nil, errTreeByGit
				}
				c = body[at]
				at++
				strip = (strip+1)<<7 | int(c&127)
			}
			end := bytes.IndexByte(body[at:], 0)
			if strip > len(name) || end < 0 {
				return nil, errTreeByGit
			}
			name = append(name[:len(name)-strip], body[at:at+end]...)
			at += end + 1
		} else {
			l := int(flags & 0xfff)
			if l == 0xfff {
				l = bytes.IndexByte(body[at:], 0)
			}
			if l < 0 || at+l >= len(body) || body[at+l] != 0 {
				return nil, errTreeByGit
			}
			name = append(name[:0], body[at:at+l]...)
			// The entry is padded with NULs to a multiple of eight bytes.
			at = start + (at-start+l+8)&^7
			if at > len(body) {
				return nil, errTreeByGit
			}
		}
		if len(name) == 0 || int(flags&0xfff) != min(len(name), 0xfff) {
			return nil, errTreeByGit
		}
		e.name = string(name)
		switch e.mode {
		case 0o100644, 0o100755, 0o120000, 0o160000:
		default:
			// A directory entry of a sparse index, or a mode git would
			// not write.
			return nil, errTreeByGit
		}
		if k := len(out.entries); k > 0 {
			prev := out.entries[k-1].name
			if prev >= e.name {
				return nil, errTreeByGit
			}
		}
		out.entries = append(out.entries, e)
	}
	if dirAndFile(out.entries) {
		return nil, errTreeByGit
	}
	for at < len(body) {
		if at+8 > len(body) {
			return nil, errTreeByGit
		}
		sig := body[at : at+4]
		size := int(binary.BigEndian.Uint32(body[at+4:]))
		at += 8
		if size < 0 || at+size > len(body) {
			return nil, errTreeByGit
		}
		data := body[at : at+size]
		at += size
		switch {
		case string(sig) == "TREE":
			t, rest, err := readCacheTree(data)
			if err != nil || len(rest) != 0 {
				return nil, errTreeByGit
			}
			out.cache = t
		case string(sig) == "UNTR":
			out.untracked = true
		case sig[0] < 'A' || sig[0] > 'Z':
			// An extension git must understand (a split or sparse index).
			return nil, errTreeByGit
		}
	}
	return out, nil
}

// dirAndFile reports whether a path of entries is both a file and a
// directory ("a" and "a/b"), which git's write-tree refuses.
func dirAndFile(entries []indexEntry) bool {
	files := make(map[string]bool, len(entries))
	for _, e := range entries {
		files[e.name] = true
	}
	for _, e := range entries {
		for d := e.name; ; {
			i := strings.LastIndexByte(d, '/')
			if i < 0 {
				break
			}
			d = d[:i]
			if files[d] {
				return true
			}
		}
	}
	return false
}

// readCacheTree reads one node of the TREE extension and its subtrees
// (in git's order: the node, then each subtree with its own).
func readCacheTree(b []byte) (*cacheTree, []byte, error) {
	nul := bytes.IndexByte(b, 0)
	if nul < 0 {
		return nil, nil, errTreeByGit
	}
	b = b[nul+1:]
	sp := bytes.IndexByte(b, ' ')
	nl := bytes.IndexByte(b, '\n')
	if sp < 0 || nl < sp {
		return nil, nil, errTreeByGit
	}
	count, err1 := strconv.Atoi(string(b[:sp]))
	subs, err2 := strconv.Atoi(string(b[sp+1 : nl]))
	if err1 != nil || err2 != nil || subs < 0 || count < -1 {
		return nil, nil, errTreeByGit
	}
	b = b[nl+1:]
	t := &cacheTree{count: count, down: map[string]*cacheTree{}}
	if count >= 0 {
		if len(b) < 20 {
			return nil, nil, errTreeByGit
		}
		copy(t.oid[:], b[:20])
		b = b[20:]
	}
	for range subs {
		nul := bytes.IndexByte(b, 0)
		if nul < 0 {
			return nil, nil, errTreeByGit
		}
		sub := string(b[:nul])
		st, rest, err := readCacheTree(b)
		if err != nil {
			return nil, nil, err
		}
		if _, dup := t.down[sub]; dup {
			return nil, nil, errTreeByGit
		}
		t.down[sub] = st
		b = rest
	}
	return t, b, nil
}

// treeWriter writes trees as git's write-tree does.
type treeWriter struct {
	objs *gitx.Presence
	dir  string // the object directory
	// fresh, when set, is given every object written or found, with its
	// content.
	fresh map[[20]byte]freshObject
}

// has reports whether object id exists; errTreeByGit when it is not found
// here (git looks further, or says it is missing).
func (tw *treeWriter) has(id [20]byte) error {
	ok, err := tw.objs.Has(id)
	if err != nil || !ok {
		return errTreeByGit
	}
	return nil
}

// update is git's update_one: it makes t the tree of the entries under
// base (the first of entries is the first of them), reusing a valid
// subtree as git does, and returns how many entries t covers.
func (tw *treeWriter) update(t *cacheTree, entries []indexEntry, base string) (int, error) {
	if t.count >= 0 {
		// git takes a recorded tree that exists and its count as they are.
		// One not found here (git may find it elsewhere), or a count that
		// does not cover exactly the entries under base, is left to git.
		if err := tw.has(t.oid); err != nil {
			return 0, err
		}
		if t.count > len(entries) || t.count == 0 && base != "" {
			return 0, errTreeByGit
		}
		for _, e := range entries[:t.count] {
			if !strings.HasPrefix(e.name, base) {
				return 0, errTreeByGit
			}
		}
		if t.count < len(entries) && strings.HasPrefix(entries[t.count].name, base) {
			return 0, errTreeByGit
		}
		return t.count, nil
	}
	if t.down == nil {
		t.down = map[string]*cacheTree{}
	}
	// The subtrees first.
	i := 0
	for i < len(entries) {
		name := entries[i].name
		if len(name) <= len(base) || !strings.HasPrefix(name, base) {
			break
		}
		rest := name[len(base):]
		slash := strings.IndexByte(rest, '/')
		if slash < 0 {
			i++
			continue
		}
		sub := rest[:slash]
		st := t.down[sub]
		if st == nil {
			st = &cacheTree{count: -1}
			t.down[sub] = st
		}
		n, err := tw.update(st, entries[i:], base+sub+"/")
		if err != nil {
			return 0, err
		}
		if n == 0 {
			return 0, errTreeByGit
		}
		st.used = n
		i += n
	}
	// Then this level's tree.
	var buf bytes.Buffer
	for j := 0; j < i; {
		e := entries[j]
		rest := e.name[len(base):]
		var (
			entName string
			mode    uint32
			oid     [20]byte
		)
		if slash := strings.IndexByte(rest, '/'); slash >= 0 {
			entName = rest[:slash]
			st := t.down[entName]
			j += st.used
			mode, oid = 0o40000, st.oid
		} else {
			entName, mode, oid = rest, e.mode, e.oid
			j++
		}
		// Trees are hashed with crypto/sha1, not git's collision-detecting
		// sha1dc: a crafted pair of colliding trees would be written here
		// where git refuses it. The card and the landing both read the
		// one object stored under the id, so they still agree.
		if oid == ([20]byte{}) {
			return 0, errTreeByGit
		}
		// A subtree was just found or written; git checks every other
		// entry's object but a gitlink's commit.
		if mode != 0o160000 && mode != 0o40000 {
			if err := tw.has(oid); err != nil {
				return 0, err
			}
		}
		buf.WriteString(strconv.FormatUint(uint64(mode), 8))
		buf.WriteByte(' ')
		buf.WriteString(entName)
		buf.WriteByte(0)
		buf.Write(oid[:])
	}
	oid, err := tw.write(buf.Bytes(), base == "")
	if err != nil {
		return 0, err
	}
	t.oid, t.count = oid, i
	return i, nil
}

// zlibWriters are compressors at git's level for loose objects (the
// fastest): one is large to set up, compared with a tree.
var zlibWriters = sync.Pool{New: func() any {
	zw, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	return zw
}}

// write writes a tree object with content unless it exists loose (then
// it is freshened, as git does, so that a prune spares it), and returns
// its id. A root found only in a pack is written loose all the same: git
// would freshen the pack (or, for a cruft pack, write it loose), and a
// card's tree, which no ref holds, must not go with a gc of an old pack.
// A subtree found in a pack is not: git's gc keeps what a recent loose
// object reaches, and an index without a cache-tree would otherwise
// have every packed directory of the repository written loose again.
func (tw *treeWriter) write(content []byte, root bool) ([20]byte, error) {
	return tw.writeObject("tree", content, root)
}

// writeObject writes an object of kind with content loose unless it
// exists loose (then it is freshened) or, unless loose is set, in a
// pack, as git's write_object_file does; it returns the object's id.
func (tw *treeWriter) writeObject(kind string, content []byte, loose bool) ([20]byte, error) {
	hdr := kind + " " + strconv.Itoa(len(content)) + "\x00"
	id := objectID(kind, content)
	if tw.fresh != nil && len(content) <= maxFresh {
		t, err := plumbing.ParseObjectType(kind)
		if err != nil {
			return id, err
		}
		tw.fresh[id] = freshObject{kind: t, content: content}
	}
	hexID := hex.EncodeToString(id[:])
	final := filepath.Join(tw.dir, hexID[:2], hexID[2:])
	if _, err := os.Lstat(final); err == nil {
		now := time.Now()
		_ = os.Chtimes(final, now, now)
		return id, nil
	}
	if !loose {
		if ok, err := tw.objs.Has(id); err == nil && ok {
			return id, nil
		}
	}
	var z bytes.Buffer
	zw := zlibWriters.Get().(*zlib.Writer)
	zw.Reset(&z)
	zw.Write([]byte(hdr))
	zw.Write(content)
	err := zw.Close()
	zlibWriters.Put(zw)
	if err != nil {
		return id, err
	}
	dir := filepath.Dir(final)
	if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, os.ErrExist) {
		return id, errTreeByGit
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(dir, "tmp_obj_"+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return id, errTreeByGit
	}
	_, werr := f.Write(z.Bytes())
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(tmp)
		return id, errTreeByGit
	}
	err = os.Link(tmp, final)
	os.Remove(tmp)
	if err != nil && !errors.Is(err, os.ErrExist) {
		return id, errTreeByGit
	}
	return id, nil
}
