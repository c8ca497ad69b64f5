package gitx

import (
	"bufio"
	"compress/zlib"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// The in-process reads of commit_details and repo_brief read packed
// objects themselves, by the offset the pack index gives, resolving
// deltas against their base's offset or id: go-git's pack reader maps
// every offset of the pack back to its object id the first time it
// resolves a delta, which at 100,000 objects cost tens of milliseconds
// and megabytes kept for as long as the Objects is.

const (
	// maxDeltaDepth bounds a chain of deltas (git writes at most 4,095,
	// 50 unless asked for more).
	maxDeltaDepth = 4096
	// maxDeltaBase bounds an object read as a delta's base, and a delta.
	maxDeltaBase = 16 << 20
	// maxBaseCache bounds the objects kept as bases between reads.
	maxBaseCache = 4 << 20
)

// packedObject is an object read from a pack: its type and content.
type packedObject struct {
	typ  plumbing.ObjectType
	data []byte
}

type baseKey struct {
	pack *localPack
	off  int64
}

// readPacked reads the whole of object h from the packs, refusing
// (ErrNotLocal) one larger than max. plumbing.ErrObjectNotFound when no
// pack holds it.
func (o *Objects) readPacked(h plumbing.Hash, max int64) (packedObject, error) {
	return o.readPackedDepth(h, max, 0)
}

func (o *Objects) readPackedDepth(h plumbing.Hash, max int64, depth int) (packedObject, error) {
	if o.packs == nil {
		if err := o.listPacks(); err != nil {
			return packedObject{}, ErrNotLocal
		}
	}
	if o.idxBytes > maxLocalIndex {
		return packedObject{}, ErrNotLocal
	}
	for _, p := range o.packs {
		if p.idx == nil {
			if err := o.loadIndex(p); err != nil {
				return packedObject{}, ErrNotLocal
			}
		}
		off, err := p.idx.FindOffset(h)
		if err != nil {
			continue
		}
		return o.readAt(p, off, max, depth)
	}
	return packedObject{}, plumbing.ErrObjectNotFound
}

// readAt reads the object at off in pack p.
func (o *Objects) readAt(p *localPack, off int64, max int64, depth int) (packedObject, error) {
	if depth > maxDeltaDepth {
		return packedObject{}, ErrNotLocal
	}
	key := baseKey{p, off}
	if obj, ok := o.bases[key]; ok {
		if int64(len(obj.data)) > max {
			return packedObject{}, ErrNotLocal
		}
		return obj, nil
	}
	if p.raw == nil {
		f, err := os.Open(filepath.Join(o.dir, "pack", p.name+".pack"))
		if err != nil {
			return packedObject{}, ErrNotLocal
		}
		p.raw = f
	}
	br := bufio.NewReaderSize(io.NewSectionReader(p.raw, off, 1<<62), 512)
	b, err := br.ReadByte()
	if err != nil {
		return packedObject{}, ErrNotLocal
	}
	typ := plumbing.ObjectType((b >> 4) & 7)
	size, shift := int64(b&15), 4
	for b&0x80 != 0 {
		if b, err = br.ReadByte(); err != nil || shift > 56 {
			return packedObject{}, ErrNotLocal
		}
		size |= int64(b&0x7f) << shift
		shift += 7
	}
	var obj packedObject
	switch typ {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
		if size > max {
			return packedObject{}, ErrNotLocal
		}
		data, err := inflateExactly(br, size)
		if err != nil {
			return packedObject{}, err
		}
		obj = packedObject{typ, data}
	case plumbing.OFSDeltaObject, plumbing.REFDeltaObject:
		var base packedObject
		var delta []byte
		if typ == plumbing.OFSDeltaObject {
			b, err := br.ReadByte()
			if err != nil {
				return packedObject{}, ErrNotLocal
			}
			rel := int64(b & 0x7f)
			for b&0x80 != 0 {
				if b, err = br.ReadByte(); err != nil || rel > 1<<48 {
					return packedObject{}, ErrNotLocal
				}
				rel = (rel+1)<<7 | int64(b&0x7f)
			}
			if rel <= 0 || rel >= off {
				return packedObject{}, ErrNotLocal
			}
			if size > maxDeltaBase {
				return packedObject{}, ErrNotLocal
			}
			if delta, err = inflateExactly(br, size); err != nil {
				return packedObject{}, err
			}
			if base, err = o.readAt(p, off-rel, maxDeltaBase, depth+1); err != nil {
				return packedObject{}, err
			}
		} else {
			var id plumbing.Hash
			if _, err := io.ReadFull(br, id[:]); err != nil || size > maxDeltaBase {
				return packedObject{}, ErrNotLocal
			}
			if delta, err = inflateExactly(br, size); err != nil {
				return packedObject{}, err
			}
			if base, err = o.readPackedDepth(id, maxDeltaBase, depth+1); err != nil {
				// A base outside the packs (a loose object) is git's.
				return packedObject{}, ErrNotLocal
			}
		}
		data, err := packfile.PatchDelta(base.data, delta)
		if err != nil || int64(len(data)) > max {
			return packedObject{}, ErrNotLocal
		}
		obj = packedObject{base.typ, data}
	default:
		return packedObject{}, ErrNotLocal
	}
	o.keepBase(key, obj)
	return obj, nil
}

// keepBase keeps obj for the reads that follow (a delta's base is often
// the base of the next one too), up to maxBaseCache in all.
func (o *Objects) keepBase(key baseKey, obj packedObject) {
	n := int64(len(obj.data))
	if n > maxBaseCache/8 {
		return
	}
	if o.bases == nil || o.baseBytes+n > maxBaseCache {
		o.bases, o.baseBytes = map[baseKey]packedObject{}, 0
	}
	o.bases[key] = obj
	o.baseBytes += n
}

// zlibReaders are inflaters to reuse: each holds tens of KiB of state.
var zlibReaders sync.Pool

// inflateExactly inflates the zlib stream at r, which must hold exactly
// size bytes.
func inflateExactly(r io.Reader, size int64) ([]byte, error) {
	var zr io.ReadCloser
	if v, ok := zlibReaders.Get().(io.ReadCloser); ok {
		if err := v.(zlib.Resetter).Reset(r, nil); err != nil {
			return nil, ErrNotLocal
		}
		zr = v
	} else {
		var err error
		if zr, err = zlib.NewReader(r); err != nil {
			return nil, ErrNotLocal
		}
	}
	defer zlibReaders.Put(zr)
	data := make([]byte, size)
	if _, err := io.ReadFull(zr, data); err != nil {
		return nil, ErrNotLocal
	}
	var one [1]byte
	if n, err := zr.Read(one[:]); n != 0 || !errors.Is(err, io.EOF) {
		return nil, ErrNotLocal
	}
	return data, nil
}
