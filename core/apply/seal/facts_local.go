package seal

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// The file list of a small change is read in this process, without the
// three git processes of changesByRule (diff-tree, then cat-file beside
// check-attr): for a commit of a few files they cost more than the rest
// of the seal after git add and git write-tree. The answer must be git's
// exactly, so the objects are read as they are stored (loose, or from a
// pack with go-git's pack reader; no replace ref or graft applies, as for
// every git Sluice runs), and the list is made here only where git's
// cannot differ from it:
//
//   - the comparison: the change does not both add and delete files (git's
//     -M pairs only those, so no rename can be found), no changed entry is
//     a gitlink (diff.ignoreSubmodules and submodule.<name>.ignore could
//     hide one), every mode is one git writes, and there is no
//     diff.orderFile;
//   - the attributes: no attribute file that git check-attr would read for
//     a listed path exists: no info/attributes, no core.attributesFile nor
//     the default global file, no system file, no .gitattributes in the
//     working tree in any directory above a listed path, and none in the
//     person's index (which check-attr reads where the working tree has
//     none). Every path's diff and filter attribute is then unspecified.
//
// Anything else, a list longer than maxLocalChanges, or any object or file
// this process cannot read is left to git, whose answer is the rule (see
// facts.go). TestChanges_LocalSameAsGit holds both to the same answer.

// maxLocalChanges is the longest file list read in this process; a longer
// one goes to git, whose processes cost little beside its reading.
const maxLocalChanges = 100

// changesLocal is changesByRule read in this process; ok is false when
// git must answer (see above).
func (w *Work) changesLocal(a, b string) (out []proposal.FileChange, ok bool) {
	if len(w.env) > 0 || !sha1ID(a) || !sha1ID(b) {
		return nil, false
	}
	if f := w.git.Repo.ObjectFormat; f != "" && f != "sha1" {
		return nil, false
	}
	if _, set := w.git.Repo.Config("diff.orderfile"); set {
		return nil, false
	}
	objs := gitx.NewObjects(w.git.Repo.CommonDir)
	defer objs.Close()
	d := &treeDiff{objs: objs, fresh: w.fresh}
	if err := d.walk(plumbing.NewHash(a), plumbing.NewHash(b), ""); err != nil || d.adds > 0 && d.dels > 0 {
		return nil, false
	}
	var paths []string
	for _, r := range d.recs {
		paths = append(paths, r.Path)
	}
	if !w.noAttributes(paths) {
		return nil, false
	}
	filters := map[string]string{}
	out = make([]proposal.FileChange, 0, len(d.recs))
	for _, r := range d.recs {
		c := fileChangeOf(r)
		blob := c.Blob
		if blob == "" {
			blob = c.OldBlob
		}
		f, err := localBlobFact(d.object, blob)
		if err != nil {
			return nil, false
		}
		c.Size, c.Binary = f.size, f.binary
		filters[c.Path] = "unspecified"
		out = append(out, c)
	}
	w.rememberFilters(filters)
	return out, true
}

func sha1ID(s string) bool { return len(s) == 40 && gitrun.ObjectID.MatchString(s) }

// errGitDecides stops a local reading that git must answer.
var errGitDecides = gitx.ErrNotLocal

// treeDiff compares two trees as git diff-tree -r does, in git's order,
// for the changes changesLocal may read itself.
type treeDiff struct {
	objs *gitx.Objects
	// fresh are objects this sealing wrote, as it wrote them (see
	// Work.fresh): read from memory instead of from the disk again.
	fresh      map[[20]byte]freshObject
	recs       []gitx.RawChange
	adds, dels int
}

// entry is a tree entry with the name git sorts it by (a tree's with a
// slash after it).
type entry struct {
	name, key string
	mode      filemode.FileMode
	hash      plumbing.Hash
}

// object is the object h of type t, from the objects this sealing wrote
// or from the repository.
func (d *treeDiff) object(h plumbing.Hash, t plumbing.ObjectType) (plumbing.EncodedObject, error) {
	if f, ok := d.fresh[h]; ok && f.kind == t {
		obj := &plumbing.MemoryObject{}
		obj.SetType(t)
		if _, err := obj.Write(f.content); err != nil {
			return nil, err
		}
		return obj, nil
	}
	return d.objs.Object(h, t)
}

func (d *treeDiff) entries(h plumbing.Hash) ([]entry, error) {
	if h.IsZero() {
		return nil, nil
	}
	obj, err := d.object(h, plumbing.TreeObject)
	if err != nil {
		return nil, err
	}
	var t object.Tree
	if err := t.Decode(obj); err != nil {
		return nil, err
	}
	out := make([]entry, 0, len(t.Entries))
	for _, e := range t.Entries {
		switch e.Mode {
		case filemode.Dir:
			out = append(out, entry{name: e.Name, key: e.Name + "/", mode: e.Mode, hash: e.Hash})
		case filemode.Regular, filemode.Executable, filemode.Symlink, filemode.Submodule:
			out = append(out, entry{name: e.Name, key: e.Name, mode: e.Mode, hash: e.Hash})
		default:
			// A mode git would write otherwise (see above).
			return nil, errGitDecides
		}
		if n := len(out); n > 1 && out[n-2].key >= out[n-1].key {
			// Not in git's order: git's own walk would read it otherwise.
			return nil, errGitDecides
		}
	}
	return out, nil
}

// walk lists the changes from tree a to tree b under prefix (a zero hash
// is a tree that is not there).
func (d *treeDiff) walk(a, b plumbing.Hash, prefix string) error {
	ea, err := d.entries(a)
	if err != nil {
		return err
	}
	eb, err := d.entries(b)
	if err != nil {
		return err
	}
	for len(ea) > 0 || len(eb) > 0 {
		switch {
		case len(eb) == 0 || len(ea) > 0 && ea[0].key < eb[0].key:
			if err := d.change(&ea[0], nil, prefix); err != nil {
				return err
			}
			ea = ea[1:]
		case len(ea) == 0 || eb[0].key < ea[0].key:
			if err := d.change(nil, &eb[0], prefix); err != nil {
				return err
			}
			eb = eb[1:]
		default:
			if ea[0].hash != eb[0].hash || ea[0].mode != eb[0].mode {
				if err := d.change(&ea[0], &eb[0], prefix); err != nil {
					return err
				}
			}
			ea, eb = ea[1:], eb[1:]
		}
	}
	return nil
}

// change records one entry that differs (x or y nil where that side has
// none); trees are compared entry by entry.
func (d *treeDiff) change(x, y *entry, prefix string) error {
	var e *entry
	if x != nil {
		e = x
	} else {
		e = y
	}
	if e.mode == filemode.Dir {
		var ha, hb plumbing.Hash
		if x != nil {
			ha = x.hash
		}
		if y != nil {
			hb = y.hash
		}
		return d.walk(ha, hb, prefix+e.name+"/")
	}
	if len(d.recs) >= maxLocalChanges || x != nil && x.mode == filemode.Submodule || y != nil && y.mode == filemode.Submodule {
		return errGitDecides
	}
	zero := strings.Repeat("0", 40)
	r := gitx.RawChange{Path: prefix + e.name, OldMode: "000000", Mode: "000000", OldBlob: zero, Blob: zero}
	if x != nil {
		r.OldMode, r.OldBlob = modeText(x.mode), x.hash.String()
	}
	if y != nil {
		r.Mode, r.Blob = modeText(y.mode), y.hash.String()
	}
	switch {
	case x == nil:
		r.Status = 'A'
		d.adds++
	case y == nil:
		r.Status = 'D'
		d.dels++
	case (x.mode == filemode.Symlink) != (y.mode == filemode.Symlink):
		r.Status = 'T'
	default:
		r.Status = 'M'
	}
	d.recs = append(d.recs, r)
	return nil
}

// modeText is a mode as git's raw diff prints it.
func modeText(m filemode.FileMode) string {
	switch m {
	case filemode.Executable:
		return "100755"
	case filemode.Symlink:
		return "120000"
	}
	return "100644"
}

// localBlobFact is blobFacts' answer for one blob, read in this process.
func localBlobFact(object func(plumbing.Hash, plumbing.ObjectType) (plumbing.EncodedObject, error), id string) (blobFact, error) {
	obj, err := object(plumbing.NewHash(id), plumbing.BlobObject)
	if err != nil {
		return blobFact{}, err
	}
	f := blobFact{size: obj.Size()}
	if f.size > bigFileThreshold {
		f.binary = true
		return f, nil
	}
	r, err := obj.Reader()
	if err != nil {
		return blobFact{}, err
	}
	defer r.Close()
	head := make([]byte, min(f.size, firstFewBytes))
	if _, err := io.ReadFull(r, head); err != nil {
		return blobFact{}, err
	}
	f.binary = bytes.IndexByte(head, 0) >= 0
	return f, nil
}

// noAttributes reports whether no attribute file git check-attr reads
// for paths exists (see the top of this file).
func (w *Work) noAttributes(paths []string) bool {
	repo := w.git.Repo
	if _, set := repo.Config("core.attributesfile"); set {
		return false
	}
	files := []string{
		filepath.Join(repo.CommonDir, "info", "attributes"),
		filepath.Join(repo.GitDir, "info", "attributes"),
		"/etc/gitattributes",
	}
	// A relative directory is git's from the top of the working tree.
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		if !filepath.IsAbs(x) {
			return false
		}
		files = append(files, filepath.Join(x, "git", "attributes"))
	}
	if h, set := os.LookupEnv("HOME"); set {
		if !filepath.IsAbs(h) {
			return false
		}
		files = append(files, filepath.Join(h, ".config", "git", "attributes"))
	}
	dirs := map[string]bool{}
	for _, p := range paths {
		for d := path.Dir(p); ; d = path.Dir(d) {
			if dirs[d] {
				break
			}
			dirs[d] = true
			files = append(files, filepath.Join(repo.Root, filepath.FromSlash(d), ".gitattributes"))
			if d == "." {
				break
			}
		}
	}
	for _, f := range files {
		if _, err := os.Lstat(f); !errors.Is(err, os.ErrNotExist) {
			return false
		}
	}
	// The person's index: a split one keeps its entries elsewhere.
	if m, _ := filepath.Glob(filepath.Join(repo.GitDir, "sharedindex.*")); len(m) > 0 {
		return false
	}
	idx, _, err := readRegular(filepath.Join(repo.GitDir, "index"), true, maxIndexFile, nil)
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil || len(idx) < 12 || string(idx[:4]) != "DIRC" || idx[4] != 0 || idx[5] != 0 || idx[6] != 0 {
		return false
	}
	switch idx[7] {
	case 2, 3:
		// Every path is written whole.
		return !bytes.Contains(idx, []byte(".gitattributes"))
	case 4:
		return indexV4WithoutAttributes(idx)
	}
	return false
}

// indexV4WithoutAttributes reports whether a version 4 index (SHA-1),
// whose paths are each written as what to keep of the one before and the
// rest, has no entry named .gitattributes; false when it cannot be read.
func indexV4WithoutAttributes(idx []byte) bool {
	n := int(idx[8])<<24 | int(idx[9])<<16 | int(idx[10])<<8 | int(idx[11])
	// ctime, mtime, dev, ino, mode, uid, gid, size, the object id, flags.
	const fixed = 40 + 20 + 2
	var name []byte
	at := 12
	for range n {
		if at+fixed > len(idx) {
			return false
		}
		flags := int(idx[at+60])<<8 | int(idx[at+61])
		at += fixed
		if flags&0x4000 != 0 {
			at += 2 // extended flags
		}
		// How many bytes of the previous path to drop: git's varint.
		if at >= len(idx) {
			return false
		}
		c := idx[at]
		at++
		strip := int(c & 127)
		for c&128 != 0 {
			if at >= len(idx) || strip > len(idx) {
				return false
			}
			c = idx[at]
			at++
			strip = (strip+1)<<7 | int(c&127)
		}
		end := bytes.IndexByte(idx[at:], 0)
		if strip > len(name) || end < 0 {
			return false
		}
		name = append(name[:len(name)-strip], idx[at:at+end]...)
		at += end + 1
		if string(name) == ".gitattributes" || bytes.HasSuffix(name, []byte("/.gitattributes")) {
			return false
		}
	}
	return true
}
