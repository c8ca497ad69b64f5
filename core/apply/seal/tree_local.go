package seal

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"

	"github.com/sluicehq/sluice/core/gitx"
)

// A sealing's git write-tree is a process of its own after git add, and
// it writes the temporary index back besides the trees: for a commit of a
// few files that is a fifth of the seal. writeTreeLocal writes the trees
// of a temporary index in this process instead, where the answer is git
// write-tree's without doubt:
//
//   - the index is one go-git reads (versions 2 to 4; no split index, no
//     sparse directory entries, no extension git requires that go-git
//     does not know), every entry is merged (stage 0), none is only
//     intended to be added, and every mode is one git writes into a tree;
//   - every object an entry names is in the repository's own object
//     directory (git write-tree refuses an index naming a missing one;
//     here git then answers), objects are SHA-1, and nothing asks for
//     objects to be synced (core.fsync, core.fsyncObjectFiles) or shared
//     (core.sharedRepository), nor for a scratch object directory.
//
// Each tree is hashed as git hashes it and written as a loose object as
// git writes one (a temporary file in its fan-out directory, linked into
// place; one that exists is freshened instead); its id is the same
// whatever the compression. TestWriteTreeLocal_SameAsGit holds the trees
// to git's.

// writeTreeLocal writes the tree of the temporary index of env; ok is
// false when git must (see above): nothing refers to what it wrote by
// then.
func (w *Work) writeTreeLocal(env []string) (string, bool) {
	if len(w.env) > 0 {
		return "", false
	}
	repo := w.git.Repo
	if f := repo.ObjectFormat; f != "" && f != "sha1" {
		return "", false
	}
	for _, k := range []string{"core.fsync", "core.fsyncobjectfiles", "core.sharedrepository"} {
		if _, set := repo.Config(k); set {
			return "", false
		}
	}
	var path string
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "GIT_INDEX_FILE="); ok {
			path = p
		}
	}
	if path == "" {
		return "", false
	}
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	idx := &index.Index{}
	if err := index.NewDecoder(bufio.NewReaderSize(f, 64<<10)).Decode(idx); err != nil {
		return "", false
	}
	objs := gitx.NewObjects(repo.CommonDir)
	defer objs.Close()
	t := &treeWriter{objs: objs, dir: filepath.Join(repo.CommonDir, "objects")}
	for _, e := range idx.Entries {
		if e.Stage != 0 || e.IntentToAdd || e.Hash.IsZero() {
			return "", false
		}
		switch e.Mode {
		case filemode.Regular, filemode.Executable, filemode.Symlink:
			if has, err := objs.Has(e.Hash); err != nil || !has {
				return "", false
			}
		case filemode.Submodule:
			// git names a gitlink's commit without having it.
		default:
			return "", false
		}
	}
	id, err := t.tree(idx.Entries, "")
	if err != nil {
		return "", false
	}
	return id.String(), true
}

// treeWriter writes the trees of an index's entries.
type treeWriter struct {
	objs *gitx.Objects
	dir  string // the object directory
}

// tree writes the tree of entries, every one of which is under prefix
// (a directory and its slash, or "" for the root), in the index's order,
// and returns its id.
func (t *treeWriter) tree(entries []*index.Entry, prefix string) (plumbing.Hash, error) {
	var buf bytes.Buffer
	last := ""
	for i := 0; i < len(entries); {
		name := entries[i].Name[len(prefix):]
		mode, id := entries[i].Mode, entries[i].Hash
		if dir, _, ok := strings.Cut(name, "/"); ok {
			// The directory's entries follow one another in the index.
			sub := prefix + dir + "/"
			j := i + 1
			for j < len(entries) && strings.HasPrefix(entries[j].Name, sub) {
				j++
			}
			var err error
			if id, err = t.tree(entries[i:j], sub); err != nil {
				return plumbing.ZeroHash, err
			}
			name, mode, i = dir, filemode.Dir, j
		} else {
			i++
		}
		// git's order: names compared with a tree's followed by a slash.
		key := name
		if mode == filemode.Dir {
			key += "/"
		}
		if name == "" || key <= last {
			return plumbing.ZeroHash, errGitDecides
		}
		last = key
		buf.WriteString(strconv.FormatUint(uint64(mode), 8))
		buf.WriteByte(' ')
		buf.WriteString(name)
		buf.WriteByte(0)
		buf.Write(id[:])
	}
	return t.write(buf.Bytes())
}

// write stores a tree of content as a loose object unless the object
// directory has it, and returns its id.
func (t *treeWriter) write(content []byte) (plumbing.Hash, error) {
	head := "tree " + strconv.Itoa(len(content)) + "\x00"
	h := sha1.New()
	h.Write([]byte(head))
	h.Write(content)
	var id plumbing.Hash
	copy(id[:], h.Sum(nil))
	if has, err := t.objs.Has(id); err != nil {
		return id, err
	} else if has {
		return id, t.objs.Freshen(id)
	}
	hex := id.String()
	fan := filepath.Join(t.dir, hex[:2])
	if err := os.MkdirAll(fan, 0o777); err != nil {
		return id, err
	}
	tmp, err := os.CreateTemp(fan, "tmp_obj_")
	if err != nil {
		return id, err
	}
	defer os.Remove(tmp.Name())
	z, _ := zlib.NewWriterLevel(tmp, zlib.BestSpeed)
	z.Write([]byte(head))
	z.Write(content)
	werr := z.Close()
	if err := tmp.Chmod(0o444); werr == nil {
		werr = err
	}
	if err := tmp.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		return id, werr
	}
	// As git: linked into place (another writer's same object is as
	// good), the temporary name removed.
	if err := os.Link(tmp.Name(), filepath.Join(fan, hex[2:])); err != nil && !errors.Is(err, os.ErrExist) {
		return id, err
	}
	return id, nil
}
