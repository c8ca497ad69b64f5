package workspace

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/core/errcode"
)

// Tree archives carry a workspace's files to and from a runtime that cannot
// bind-mount host paths (a Kubernetes pod): PackTree streams the tree (and
// the repository, under .git/) into the runtime before a run; ReplaceTree
// takes the runtime's tar of /workspace back afterwards. That archive is
// written inside the untrusted container, so ReplaceTree reads it the way
// the file tools read an agent's path: every name checked lexically, then
// every create made relative to a directory descriptor with no symlink
// followed, so a hole in one check is closed by the other.

// Defaults of ArchiveLimits. They are above DefaultSnapshotMaxFiles and
// DefaultSnapshotMaxBytes because a tree after a run also holds what the
// run built (dependencies, build outputs), and below what would let one
// archive fill a disk unnoticed.
const (
	DefaultArchiveMaxBytes   int64 = 4 << 30
	DefaultArchiveMaxEntries int64 = 500_000
)

// ArchiveLimits bound what ReplaceTree accepts. Zero means the default
// (DefaultArchiveMaxBytes, DefaultArchiveMaxEntries). MaxBytes counts the
// content of regular files, hard-link copies included; MaxEntries counts
// every header, .git ones included.
type ArchiveLimits struct {
	MaxBytes   int64
	MaxEntries int64
}

func (l ArchiveLimits) withDefaults() ArchiveLimits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultArchiveMaxBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultArchiveMaxEntries
	}
	return l
}

// ArchiveStats counts what PackTree wrote or ReplaceTree extracted. Bytes
// is the content of regular files. Skipped counts what was left out:
// PackTree's FIFOs, sockets and devices; ReplaceTree's ".git" entries and
// global PAX headers.
type ArchiveStats struct {
	Files, Dirs, Symlinks int64
	Bytes                 int64
	Skipped               int64
}

// ReplaceOptions tell ReplaceTree who owns what it extracts and how much
// it accepts. UID and GID are what every extracted entry is chowned to
// when Sluice runs as root (the container user); -1 leaves that id as the
// calling process's. The zero value chowns to root: callers say -1.
type ReplaceOptions struct {
	UID, GID int
	Limits   ArchiveLimits
}

// Sentinels in the Err chain of ReplaceTree's refusals (errors.Is). Each
// refusal is an *errcode.Error naming the entry; nothing was changed.
var (
	// ErrArchiveUnsafe: an entry is absolute, has a ".." component or a
	// NUL byte, lies below a symlink or a file of the same archive, names
	// a path another entry already took, is a device or FIFO, or is a hard
	// link to something that is not a regular file extracted before it.
	ErrArchiveUnsafe = errors.New("unsafe archive entry")
	// ErrArchiveLimit: the archive holds more bytes or entries than
	// ArchiveLimits allow, or nests deeper than a tree may.
	ErrArchiveLimit = errors.New("archive over its limits")
	// ErrArchiveTruncated: the archive is malformed or ends before its
	// end-of-archive marker (a tar killed mid-stream).
	ErrArchiveTruncated = errors.New("truncated or malformed archive")
)

// refuseEntry is the error for one unsafe entry. The name comes from the
// container: it is quoted and cut so that it cannot forge a message.
func refuseEntry(name, format string, a ...any) error {
	return &errcode.Error{
		Code: errcode.InvalidArgument,
		Msg:  fmt.Sprintf("the workspace archive was refused, nothing was changed: entry %s ", quoteEntry(name)) + fmt.Sprintf(format, a...),
		Err:  ErrArchiveUnsafe,
	}
}

func quoteEntry(name string) string {
	const maxShown = 200
	if len(name) > maxShown {
		return fmt.Sprintf("%q…", name[:maxShown])
	}
	return fmt.Sprintf("%q", name)
}

// archiveLimitErr is the refusal of an archive over a limit: key names
// the limit in LimitData, what says in words what there was too much of.
func archiveLimitErr(key, what string, maxVal int64) error {
	return &errcode.Error{
		Code: errcode.InvalidArgument,
		Msg:  "the workspace archive was refused, nothing was changed: it holds more " + what + " than allowed",
		Data: LimitData{Limit: key, Max: maxVal},
		Err:  ErrArchiveLimit,
	}
}

func archiveTruncatedErr(err error) error {
	return &errcode.Error{
		Code: errcode.InvalidArgument,
		Msg:  "the workspace archive was refused, nothing was changed: it is truncated or malformed",
		Err:  errors.Join(ErrArchiveTruncated, err),
	}
}
