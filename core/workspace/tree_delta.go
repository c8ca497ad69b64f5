//go:build linux

package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
)

// A tree manifest lists every path of a runtime's tree with what its
// lstat said, so that the next read of the tree carries only what changed
// since (SyncTreeDelta; `sluice-sidecar pod-tree` writes it in the pod).
// It is text, one record a line after a versioned first line:
//
//	sluice-tree-manifest 1 <scan start, unix ns>
//	<type f|d|l> <mode bits, octal> <size> <inode> <ctime ns> <mtime ns> <path, Go-quoted>
//
// Paths are relative, slash-separated, without the tree's top-level .git,
// in walk order (a directory before what is below it).
const (
	// TreeManifestName is the name of the first entry of a delta archive:
	// the manifest of the whole tree. Only the first entry is the
	// manifest; a tree file of that name comes later like any other.
	TreeManifestName = ".sluice-manifest"
	// MaxTreeManifestBytes bounds a manifest, read by either side: room for
	// DefaultArchiveMaxEntries records and maxArchiveNameBytes of names.
	MaxTreeManifestBytes = 192 << 20

	treeManifestMagic   = "sluice-tree-manifest"
	treeManifestVersion = 1
)

// TreeRecord is one path of a tree manifest.
type TreeRecord struct {
	Path string
	// Type is 'f' (regular file), 'd' (directory) or 'l' (symlink).
	Type byte
	// Mode is st_mode's permission, set-id and sticky bits.
	Mode             uint32
	Size, Ino        int64
	CtimeNs, MtimeNs int64
}

// Same reports whether two records say the same of a path.
func (r TreeRecord) Same(o TreeRecord) bool {
	return r.Type == o.Type && r.Mode == o.Mode && r.Size == o.Size && r.Ino == o.Ino &&
		r.CtimeNs == o.CtimeNs && r.MtimeNs == o.MtimeNs
}

// TreeManifest is a parsed manifest. StartNs is when the walk that made it
// began (the walker's clock); a record whose ctime is that close to it may
// have changed again within the same clock tick and counts as changed next
// time.
type TreeManifest struct {
	StartNs int64
	Records []TreeRecord
}

// AppendHeader appends the manifest's first line.
func (m *TreeManifest) AppendHeader(b []byte) []byte {
	return fmt.Appendf(b, "%s %d %d\n", treeManifestMagic, treeManifestVersion, m.StartNs)
}

// AppendTreeRecord appends one record's line.
func AppendTreeRecord(b []byte, r TreeRecord) []byte {
	b = append(b, r.Type, ' ')
	b = strconv.AppendUint(b, uint64(r.Mode), 8)
	for _, v := range []int64{r.Size, r.Ino, r.CtimeNs, r.MtimeNs} {
		b = append(b, ' ')
		b = strconv.AppendInt(b, v, 10)
	}
	b = append(b, ' ')
	b = strconv.AppendQuote(b, r.Path)
	return append(b, '\n')
}

// Marshal returns the manifest's text.
func (m *TreeManifest) Marshal() []byte {
	b := m.AppendHeader(nil)
	for _, r := range m.Records {
		b = AppendTreeRecord(b, r)
	}
	return b
}

// ErrTreeManifest is in the Err chain of a manifest that cannot be read.
var ErrTreeManifest = errors.New("malformed tree manifest")

func manifestErr(line int, format string, a ...any) error {
	return &errcode.Error{
		Code: errcode.InvalidArgument,
		Msg:  fmt.Sprintf("the tree manifest was refused, nothing was changed: line %d: ", line) + fmt.Sprintf(format, a...),
		Err:  errors.Join(ErrTreeManifest, ErrArchiveUnsafe),
	}
}

// ParseTreeManifest reads a manifest, checking its form and every path by
// the rules of an archive entry's name (see ReplaceTree): relative, no
// "..", no NUL, no top-level .git, within the name and depth limits, each
// named once, below a directory listed before it. maxRecords bounds the
// records (0: DefaultArchiveMaxEntries).
func ParseTreeManifest(data []byte, maxRecords int64) (*TreeManifest, error) {
	if maxRecords <= 0 {
		maxRecords = DefaultArchiveMaxEntries
	}
	if len(data) > MaxTreeManifestBytes {
		return nil, archiveLimitErr("treeManifestBytes", "bytes of manifest", MaxTreeManifestBytes)
	}
	head, rest, ok := bytes.Cut(data, []byte{'\n'})
	if !ok {
		return nil, manifestErr(1, "has no header line")
	}
	f := strings.Fields(string(head))
	if len(f) != 3 || f[0] != treeManifestMagic {
		return nil, manifestErr(1, "is not a tree manifest header")
	}
	if f[1] != strconv.Itoa(treeManifestVersion) {
		return nil, manifestErr(1, "has version %.20q, not %d", f[1], treeManifestVersion)
	}
	m := &TreeManifest{}
	var err error
	if m.StartNs, err = strconv.ParseInt(f[2], 10, 64); err != nil {
		return nil, manifestErr(1, "has a malformed start time")
	}
	kinds := map[string]byte{}
	var names int64
	for line := 2; len(rest) > 0; line++ {
		var l []byte
		if l, rest, ok = bytes.Cut(rest, []byte{'\n'}); !ok {
			return nil, manifestErr(line, "does not end with a newline")
		}
		if int64(len(m.Records)) >= maxRecords {
			return nil, archiveLimitErr("archiveEntries", "entries", maxRecords)
		}
		r, err := parseTreeRecord(string(l))
		if err != nil {
			return nil, manifestErr(line, "%v", err)
		}
		comps, err := archiveComps(r.Path)
		if err != nil {
			return nil, err
		}
		if len(comps) == 0 || strings.Join(comps, "/") != r.Path {
			return nil, manifestErr(line, "names %s, which is not a clean relative path", quoteEntry(r.Path))
		}
		if comps[0] == ".git" {
			return nil, manifestErr(line, "names %s, below the repository", quoteEntry(r.Path))
		}
		if _, dup := kinds[r.Path]; dup {
			return nil, manifestErr(line, "names %s twice", quoteEntry(r.Path))
		}
		if len(comps) > 1 {
			parent := strings.Join(comps[:len(comps)-1], "/")
			if kinds[parent] != 'd' {
				return nil, manifestErr(line, "names %s before (or without) its directory", quoteEntry(r.Path))
			}
		}
		if names += int64(len(r.Path)); names > maxArchiveNameBytes {
			return nil, archiveLimitErr("archiveNameBytes", "bytes of names", maxArchiveNameBytes)
		}
		kinds[r.Path] = r.Type
		m.Records = append(m.Records, r)
	}
	return m, nil
}

func parseTreeRecord(l string) (TreeRecord, error) {
	var r TreeRecord
	f := strings.SplitN(l, " ", 7)
	if len(f) != 7 || len(f[0]) != 1 {
		return r, errors.New("is not a record")
	}
	switch r.Type = f[0][0]; r.Type {
	case 'f', 'd', 'l':
	default:
		return r, errors.New("has an unknown type")
	}
	mode, err := strconv.ParseUint(f[1], 8, 32)
	if err != nil || mode > 0o7777 {
		return r, errors.New("has malformed mode bits")
	}
	r.Mode = uint32(mode)
	for i, p := range []*int64{&r.Size, &r.Ino, &r.CtimeNs, &r.MtimeNs} {
		if *p, err = strconv.ParseInt(f[2+i], 10, 64); err != nil {
			return r, errors.New("has a malformed number")
		}
	}
	if r.Size < 0 {
		return r, errors.New("has a negative size")
	}
	if r.Path, err = strconv.Unquote(f[6]); err != nil || !strings.HasPrefix(f[6], `"`) {
		return r, errors.New("has a malformed path")
	}
	return r, nil
}

// racyNs is how close to a walk's start a ctime must be for the record to
// count as changed next time, whatever it says: the kernel stamps ctime
// from a coarse clock (one tick, up to 10 ms), so a write just after the
// walk's lstat may leave the same ctime behind.
const racyNs = int64(50e6)

// Index maps the manifest's paths to their records.
func (m *TreeManifest) Index() map[string]TreeRecord {
	idx := make(map[string]TreeRecord, len(m.Records))
	for _, r := range m.Records {
		idx[r.Path] = r
	}
	return idx
}

// ChangedSince reports whether r must be sent again given prev, the
// previous walk's manifest (nil: everything is new) and its index.
func ChangedSince(prev *TreeManifest, prevIdx map[string]TreeRecord, r TreeRecord) bool {
	if prev == nil {
		return true
	}
	p, ok := prevIdx[r.Path]
	return !ok || !p.Same(r) || p.CtimeNs >= prev.StartNs-racyNs
}
