package gitx

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// ErrNotLocal says that what was asked is not read in this process: git
// answers it.
var ErrNotLocal = errors.New("gitx: git answers this")

// firstFewBytes is how much of a blob Objects reads: what git looks at
// for a NUL byte (FIRST_FEW_BYTES in git's xdiff-interface.c).
const firstFewBytes = 8000

// NewObjects reads the objects of the repository whose common git
// directory is commonDir.
func NewObjects(commonDir string) *Objects { return &Objects{dir: filepath.Join(commonDir, "objects")} }

// Objects reads objects of one object directory as git stores them:
// a loose object, else from a pack, the newest first (where the objects
// an add just wrote in bulk are). A pack's index is read whole, once,
// when a pack is first searched; objects elsewhere (an alternate object
// directory) are not found, and git answers instead.
type Objects struct {
	dir   string       // the object directory
	packs []*localPack // nil until a pack is searched
	// idxBytes is how much pack index there is: a repository with more
	// than maxLocalIndex of it is left to git, which maps its indexes
	// instead of reading them, before any is read.
	idxBytes int64
	// bases and baseBytes are the objects readPacked keeps (pack_local.go).
	bases     map[baseKey]packedObject
	baseBytes int64
}

// maxLocalIndex bounds the pack indexes one Objects reads.
const maxLocalIndex = 8 << 20

type localPack struct {
	name string // pack-<id>, without extension
	idx  *idxfile.MemoryIndex
	pf   *packfile.Packfile
	raw  *os.File // the pack as readPacked reads it
}

// Object reads object h of type t: the whole of a small one, a large one
// as it is read; of a loose blob, only its first 8,000 bytes (and its
// size). An object that is not of type t is ErrNotLocal.
func (o *Objects) Object(h plumbing.Hash, t plumbing.ObjectType) (plumbing.EncodedObject, error) {
	obj, err := o.loose(h)
	if errors.Is(err, os.ErrNotExist) {
		obj, err = o.packed(h)
	}
	if err != nil {
		return nil, err
	}
	if obj.Type() != t {
		return nil, ErrNotLocal
	}
	return obj, nil
}

// largeObject is the size above which an object is not read into memory
// whole.
const largeObject = 64 << 10

func (o *Objects) loose(h plumbing.Hash) (plumbing.EncodedObject, error) {
	id := h.String()
	f, err := os.Open(filepath.Join(o.dir, id[:2], id[2:]))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := objfile.NewReader(f)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	t, size, err := r.Header()
	if err != nil {
		return nil, err
	}
	obj := &plumbing.MemoryObject{}
	obj.SetType(t)
	obj.SetSize(size)
	// Only the first bytes of a large blob are looked at.
	want := size
	if t == plumbing.BlobObject {
		want = min(size, firstFewBytes)
	}
	if _, err := io.CopyN(obj, r, want); err != nil {
		return nil, err
	}
	obj.SetSize(size)
	return obj, nil
}

func (o *Objects) packed(h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o.packs == nil {
		if err := o.listPacks(); err != nil {
			return nil, err
		}
	}
	if o.idxBytes > maxLocalIndex {
		return nil, ErrNotLocal
	}
	for _, p := range o.packs {
		if p.idx == nil {
			if err := o.loadIndex(p); err != nil {
				return nil, err
			}
		}
		if ok, _ := p.idx.Contains(h); !ok {
			continue
		}
		if p.pf == nil {
			fs := osfs.New(filepath.Join(o.dir, "pack"))
			f, err := fs.Open(p.name + ".pack")
			if err != nil {
				return nil, err
			}
			p.pf = packfile.NewPackfile(p.idx, fs, f, largeObject)
		}
		return p.pf.Get(h)
	}
	return nil, plumbing.ErrObjectNotFound
}

// listPacks lists the packs, the newest first.
func (o *Objects) listPacks() error {
	ents, err := os.ReadDir(filepath.Join(o.dir, "pack"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	type dated struct {
		p    *localPack
		when int64
	}
	var ps []dated
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".idx")
		if !ok || !strings.HasPrefix(name, "pack-") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		ps = append(ps, dated{&localPack{name: name}, info.ModTime().UnixNano()})
		o.idxBytes += info.Size()
	}
	slices.SortStableFunc(ps, func(a, b dated) int { return cmp.Compare(b.when, a.when) })
	o.packs = make([]*localPack, 0, len(ps))
	for _, p := range ps {
		o.packs = append(o.packs, p.p)
	}
	return nil
}

func (o *Objects) loadIndex(p *localPack) error {
	b, err := os.ReadFile(filepath.Join(o.dir, "pack", p.name+".idx"))
	if err != nil {
		return err
	}
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bytes.NewReader(b)).Decode(idx); err != nil {
		return err
	}
	p.idx = idx
	return nil
}

// Close closes the packs read.
func (o *Objects) Close() {
	for _, p := range o.packs {
		if p.pf != nil {
			p.pf.Close()
		}
		if p.raw != nil {
			p.raw.Close()
		}
	}
}
