package workspace

import (
	"bytes"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/sluicehq/sluice/core/errcode"
)

// Limits of the file tools. A call may ask for less, never for more.
const (
	DefaultReadBytes  = 256 << 10
	MaxReadBytes      = 4 << 20
	MaxWriteBytes     = 8 << 20
	DefaultListMax    = 500
	MaxListEntries    = 5000
	DefaultGrepMax    = 200
	MaxGrepMatches    = 2000
	maxGrepFileBytes  = 4 << 20
	maxGrepTotalBytes = 256 << 20
	maxGrepLineBytes  = 512
	maxWalkEntries    = 500_000
)

// ReadOptions bound a read.
type ReadOptions struct {
	Offset int64 // byte offset to start at
	Limit  int64 // bytes to return (DefaultReadBytes when zero)
}

// FileContent is what ReadFile returns.
type FileContent struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Offset  int64  `json:"offset"`
	Size    int64  `json:"size"`
	// Truncated is set when the file goes on past Offset+len(Content).
	Truncated bool `json:"truncated"`
	// Binary is set when the content is not valid UTF-8 or holds NULs.
	Binary bool `json:"binary"`
}

func isBinary(b []byte) bool {
	return bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(trimPartialRune(b))
}

// trimPartialRune drops a multi-byte character cut by a read limit, so
// that a text file read in pieces is not called binary.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= 3 && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

// WriteResult is what WriteFile and EditFile return.
type WriteResult struct {
	Path     string `json:"path"`
	Bytes    int    `json:"bytes"`
	Created  bool   `json:"created"`
	Replaced int    `json:"replaced,omitempty"`
}

// EditRequest replaces exact text in one file.
type EditRequest struct {
	Path string
	Old  string
	New  string
	// Count is how many occurrences of Old the file must hold (1 when
	// zero); every one of them is replaced. A different count changes
	// nothing, so an edit never lands somewhere unintended.
	Count int
}

// Entry is one file system entry.
type Entry struct {
	Path string `json:"path"`
	// Type is file, dir, symlink or other.
	Type string `json:"type"`
	Size int64  `json:"size,omitempty"`
	// Mode is the permission bits in octal, e.g. "0755".
	Mode string `json:"mode,omitempty"`
	// Target is a symlink's target, as stored.
	Target string `json:"target,omitempty"`
}

// Listing is a bounded list of entries.
type Listing struct {
	Entries   []Entry `json:"entries"`
	Truncated bool    `json:"truncated"`
}

// ListOptions shape a listing.
type ListOptions struct {
	Recursive bool
	// Max entries (DefaultListMax when zero, at most MaxListEntries).
	Max int
}

// GrepRequest searches file contents.
type GrepRequest struct {
	// Pattern is an RE2 regular expression (linear time: no pattern can
	// stall the search).
	Pattern    string
	IgnoreCase bool
	// Path limits the search to a file or directory ("" is the root).
	Path string
	// Glob, when set, limits the search to matching paths.
	Glob string
	// MaxMatches (DefaultGrepMax when zero, at most MaxGrepMatches).
	MaxMatches int
}

// GrepMatch is one matching line.
type GrepMatch struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// GrepResult is a bounded search result.
type GrepResult struct {
	Matches      []GrepMatch `json:"matches"`
	FilesScanned int         `json:"filesScanned"`
	// Truncated is set when a cap stopped the search early.
	Truncated bool `json:"truncated"`
}

func boundedCount(v, def, hard int, what string) (int, error) {
	switch {
	case v < 0:
		return 0, errcode.New(errcode.InvalidArgument, "the maximum number of %s must not be negative", what)
	case v == 0:
		return def, nil
	case v > hard:
		return 0, &errcode.Error{Code: errcode.InvalidArgument, Msg: "the maximum number of " + what + " is larger than allowed", Data: LimitData{Limit: what, Max: int64(hard)}}
	}
	return v, nil
}

// splitPattern validates a glob pattern and splits it into segments.
func splitPattern(p string) ([]string, error) {
	if p == "" || len(p) > maxPathLen || strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
		return nil, errcode.New(errcode.InvalidArgument, "the glob pattern must be a non-empty relative pattern")
	}
	var segs []string
	for _, s := range strings.Split(p, "/") {
		if s == "" || s == "." {
			continue
		}
		if s == ".." {
			return nil, ErrPathOutside
		}
		if _, err := path.Match(s, ""); err != nil {
			return nil, errcode.New(errcode.InvalidArgument, "the glob pattern is malformed")
		}
		segs = append(segs, s)
	}
	if len(segs) == 0 {
		return nil, errcode.New(errcode.InvalidArgument, "the glob pattern must be a non-empty relative pattern")
	}
	return segs, nil
}

// globMatch matches path components against pattern segments; "**"
// matches zero or more components.
func globMatch(segs, parts []string) bool {
	for len(segs) > 0 {
		if segs[0] == "**" {
			for i := 0; i <= len(parts); i++ {
				if globMatch(segs[1:], parts[i:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 {
			return false
		}
		if ok, _ := path.Match(segs[0], parts[0]); !ok {
			return false
		}
		segs, parts = segs[1:], parts[1:]
	}
	return len(parts) == 0
}

// globCanDescend reports whether something below the directory parts could
// still match.
func globCanDescend(segs, parts []string) bool {
	for len(parts) > 0 {
		if len(segs) == 0 {
			return false
		}
		if segs[0] == "**" {
			return true
		}
		if ok, _ := path.Match(segs[0], parts[0]); !ok {
			return false
		}
		segs, parts = segs[1:], parts[1:]
	}
	return len(segs) > 0
}
