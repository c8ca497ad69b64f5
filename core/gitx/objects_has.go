package gitx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Presence answers whether objects exist in one object directory, as
// git's own check of an object's existence finds them (a loose object's
// file is there, or a pack's index lists it; nothing is read or
// verified). Of a pack index it reads only the sorted list of object ids,
// without decoding the rest. "No" is no proof that an object is missing:
// an object elsewhere (an alternate object directory, a pack made after
// the list of packs was read) is not found, and git answers then.
type Presence struct {
	dir    string // the object directory
	packs  [][]byte
	listed bool
	bytes  int64
}

// NewPresence answers for the objects of the repository whose common git
// directory is commonDir.
func NewPresence(commonDir string) *Presence {
	return &Presence{dir: filepath.Join(commonDir, "objects")}
}

// maxPresenceIndex bounds the object ids one Presence reads from pack
// indexes; a repository with more is ErrNotLocal.
const maxPresenceIndex = 64 << 20

// Has reports whether the object with the binary id id is in the object
// directory. A pack index this does not read (not version 2) is
// ErrNotLocal.
func (p *Presence) Has(id [20]byte) (bool, error) {
	hexID := hexOf(id)
	if _, err := os.Lstat(filepath.Join(p.dir, hexID[:2], hexID[2:])); err == nil {
		return true, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	if !p.listed {
		if err := p.list(); err != nil {
			return false, err
		}
	}
	for _, names := range p.packs {
		if inNames(names, id) {
			return true, nil
		}
	}
	return false, nil
}

// list reads the object ids of every pack's index: the fan-out table and
// the sorted ids of a version 2 index.
func (p *Presence) list() error {
	p.listed = true
	ents, err := os.ReadDir(filepath.Join(p.dir, "pack"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "pack-") || !strings.HasSuffix(e.Name(), ".idx") {
			continue
		}
		// An index whose pack is gone lists nothing git can read: git
		// removes a pack before its index (repack -d, gc), and a crash
		// between the two leaves the index behind; git skips it
		// (add_packed_git), and so does this.
		if st, err := os.Stat(filepath.Join(p.dir, "pack", strings.TrimSuffix(e.Name(), ".idx")+".pack")); err != nil || !st.Mode().IsRegular() {
			continue
		}
		names, err := p.readIndex(filepath.Join(p.dir, "pack", e.Name()))
		if err != nil {
			return err
		}
		p.packs = append(p.packs, names)
	}
	return nil
}

func (p *Presence) readIndex(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	const head = 8 + 256*4
	var h [head]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return nil, ErrNotLocal
	}
	if !bytes.Equal(h[:8], []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}) {
		return nil, ErrNotLocal
	}
	// The fan-out table counts the ids up to each first byte: it never
	// decreases, and its last entry is the number of ids.
	for b := 1; b < 256; b++ {
		if binary.BigEndian.Uint32(h[8+4*b:]) < binary.BigEndian.Uint32(h[8+4*(b-1):]) {
			return nil, ErrNotLocal
		}
	}
	n := int64(binary.BigEndian.Uint32(h[head-4:]))
	p.bytes += n * 20
	if p.bytes > maxPresenceIndex {
		return nil, ErrNotLocal
	}
	buf := make([]byte, head+n*20)
	copy(buf, h[:])
	if _, err := io.ReadFull(f, buf[head:]); err != nil {
		return nil, ErrNotLocal
	}
	return buf, nil
}

// inNames looks id up in a version 2 pack index's fan-out table and
// sorted ids.
func inNames(idx []byte, id [20]byte) bool {
	const ids = 8 + 256*4
	fan := func(b int) int {
		if b < 0 {
			return 0
		}
		return int(binary.BigEndian.Uint32(idx[8+4*b:]))
	}
	lo, hi := fan(int(id[0])-1), fan(int(id[0]))
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := bytes.Compare(idx[ids+20*m:ids+20*m+20], id[:]); {
		case c == 0:
			return true
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return false
}

func hexOf(id [20]byte) string {
	const digits = "0123456789abcdef"
	var b [40]byte
	for i, c := range id {
		b[2*i], b[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(b[:])
}
