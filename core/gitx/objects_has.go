package gitx

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Has reports whether object h is in the object directory, in a pack
// (the newest first) or loose, where git's object lookup finds it. An
// object elsewhere (an alternate object directory) is not found; the
// error is ErrNotLocal when the packs' indexes are more than this process
// reads (see Objects).
func (o *Objects) Has(h plumbing.Hash) (bool, error) {
	if _, err := o.packOf(h); err == nil {
		return true, nil
	} else if !errors.Is(err, plumbing.ErrObjectNotFound) {
		return false, err
	}
	id := h.String()
	if _, err := os.Lstat(filepath.Join(o.dir, id[:2], id[2:])); err == nil {
		return true, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	return false, nil
}

// Freshen marks object h, which Has found, as just written, as git does
// when it would write an object it already has (so that a gc running
// meanwhile does not take it for an old unreachable one): the pack that
// holds it, else its loose file, gets the time now.
func (o *Objects) Freshen(h plumbing.Hash) error {
	now := time.Now()
	if p, err := o.packOf(h); err == nil {
		return os.Chtimes(filepath.Join(o.dir, "pack", p.name+".pack"), now, now)
	} else if !errors.Is(err, plumbing.ErrObjectNotFound) {
		return err
	}
	id := h.String()
	return os.Chtimes(filepath.Join(o.dir, id[:2], id[2:]), now, now)
}

// packOf is the pack whose index lists h, the newest first.
func (o *Objects) packOf(h plumbing.Hash) (*localPack, error) {
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
		if ok, _ := p.idx.Contains(h); ok {
			return p, nil
		}
	}
	return nil, plumbing.ErrObjectNotFound
}
