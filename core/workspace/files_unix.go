//go:build unix

package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
)

// ReadFile reads a bounded part of one file.
func (m *Manager) ReadFile(ctx context.Context, id, p string, opt ReadOptions) (*FileContent, error) {
	comps, err := splitRel(p)
	if err != nil {
		return nil, err
	}
	if opt.Offset < 0 || opt.Limit < 0 {
		return nil, errcode.New(errcode.InvalidArgument, "offset and limit must not be negative")
	}
	limit := opt.Limit
	if limit == 0 {
		limit = DefaultReadBytes
	}
	if limit > MaxReadBytes {
		return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: "limit is larger than allowed", Data: LimitData{Limit: "readBytes", Max: MaxReadBytes}}
	}
	_, done, err := m.openForUse(id, false, false)
	if err != nil {
		return nil, err
	}
	defer done()
	fd, err := m.openInTree(id, comps)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "file")
	defer f.Close()
	st, err := fstatFD(fd)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot stat %s", joinRel(comps))
	}
	if st.isDir() {
		return nil, errcode.New(errcode.InvalidArgument, "%s is a directory; use workspace_file_list", joinRel(comps))
	}
	if !st.isRegular() {
		return nil, errcode.New(errcode.InvalidArgument, "%s is not a regular file", joinRel(comps))
	}
	buf := make([]byte, min(limit, max(st.size-opt.Offset, 0))+1)
	n, err := f.ReadAt(buf, opt.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot read %s", joinRel(comps))
	}
	truncated := int64(n) > limit
	if truncated {
		n = int(limit)
	}
	data := buf[:n]
	return &FileContent{
		Path:      joinRel(comps),
		Content:   string(data),
		Offset:    opt.Offset,
		Size:      st.size,
		Truncated: truncated || opt.Offset+int64(n) < st.size,
		Binary:    isBinary(data),
	}, nil
}

// WriteFile replaces (or creates) one file atomically, creating missing
// parent directories. perm 0 keeps an existing file's mode (0644 for a new
// one); only permission bits are honoured.
func (m *Manager) WriteFile(ctx context.Context, id, p string, content []byte, perm os.FileMode) (*WriteResult, error) {
	comps, err := splitRel(p)
	if err != nil {
		return nil, err
	}
	if len(content) > MaxWriteBytes {
		return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: "the content is larger than allowed", Data: LimitData{Limit: "writeBytes", Max: MaxWriteBytes}}
	}
	dir, base, done, err := m.openParentForWrite(id, comps, true)
	if err != nil {
		return nil, err
	}
	defer done()
	created, err := writeAtomicAt(dir, base, content, perm.Perm(), m.own, joinRel(comps))
	if err != nil {
		return nil, err
	}
	return &WriteResult{Path: joinRel(comps), Bytes: len(content), Created: created}, nil
}

// openParentForWrite takes the workspace's exclusive lock and opens, inside
// its tree, the directory that holds comps' last element (creating missing
// directories when mkdirs), for WriteFile and EditFile. done releases all
// of it and records the use.
func (m *Manager) openParentForWrite(id string, comps []string, mkdirs bool) (dir int, base string, done func(), err error) {
	_, release, err := m.openForUse(id, true, true)
	if err != nil {
		return 0, "", nil, err
	}
	root, err := openDirPath(m.treeDir(id))
	if err != nil {
		release()
		return 0, "", nil, errcode.Wrap(errcode.Internal, err, "cannot open the workspace tree")
	}
	dir, base, err = openParent(root, comps, mkdirs, m.own)
	closeFD(root)
	if err != nil {
		release()
		return 0, "", nil, err
	}
	return dir, base, func() {
		closeFD(dir)
		release()
	}, nil
}

// EditFile applies an exact-string replacement atomically.
func (m *Manager) EditFile(ctx context.Context, id string, req EditRequest) (*WriteResult, error) {
	comps, err := splitRel(req.Path)
	if err != nil {
		return nil, err
	}
	if req.Old == "" {
		return nil, errcode.New(errcode.InvalidArgument, "old must not be empty")
	}
	want := req.Count
	if want == 0 {
		want = 1
	}
	if want < 0 {
		return nil, errcode.New(errcode.InvalidArgument, "count must be positive")
	}
	dir, base, done, err := m.openParentForWrite(id, comps, false)
	if err != nil {
		return nil, err
	}
	defer done()
	fd, err := openChild(dir, base, false)
	if err != nil {
		return nil, mapResolveErr(err, comps)
	}
	f := os.NewFile(uintptr(fd), base)
	st, err := fstatFD(fd)
	if err != nil || !st.isRegular() {
		f.Close()
		return nil, errcode.New(errcode.InvalidArgument, "%s is not a regular file", joinRel(comps))
	}
	if st.size > MaxWriteBytes {
		f.Close()
		return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: "the file is larger than the edit tool allows", Data: LimitData{Limit: "writeBytes", Max: MaxWriteBytes}}
	}
	old, err := io.ReadAll(io.LimitReader(f, MaxWriteBytes+1))
	f.Close()
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot read %s", joinRel(comps))
	}
	found := strings.Count(string(old), req.Old)
	if found != want {
		return nil, &errcode.Error{
			Code: errcode.InvalidArgument,
			Msg:  "old text occurs a different number of times than expected; nothing was changed",
			Data: map[string]int{"expected": want, "found": found},
		}
	}
	updated := strings.ReplaceAll(string(old), req.Old, req.New)
	if len(updated) > MaxWriteBytes {
		return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: "the edited file would be larger than allowed", Data: LimitData{Limit: "writeBytes", Max: MaxWriteBytes}}
	}
	if _, err := writeAtomicAt(dir, base, []byte(updated), st.mode.Perm(), m.own, joinRel(comps)); err != nil {
		return nil, err
	}
	return &WriteResult{Path: joinRel(comps), Bytes: len(updated), Replaced: found}, nil
}

// ListFiles lists a directory, optionally recursively. Symlinked
// directories are listed as symlinks and never entered.
func (m *Manager) ListFiles(ctx context.Context, id, dir string, opt ListOptions) (*Listing, error) {
	comps, err := splitRel(dir)
	if err != nil {
		return nil, err
	}
	next := walkContinue
	if !opt.Recursive {
		next = walkSkipDir
	}
	return m.list(ctx, id, comps, opt.Max, func(walkEntry) (bool, walkAction) { return true, next })
}

// Glob lists the entries whose path (relative to the workspace root)
// matches pattern: path.Match syntax per segment, plus "**" for any number
// of directories.
func (m *Manager) Glob(ctx context.Context, id, pattern string, maxEntries int) (*Listing, error) {
	segs, err := splitPattern(pattern)
	if err != nil {
		return nil, err
	}
	return m.list(ctx, id, nil, maxEntries, func(e walkEntry) (bool, walkAction) {
		parts := strings.Split(e.rel, "/")
		next := walkContinue
		if e.info.isDir() && !globCanDescend(segs, parts) {
			next = walkSkipDir
		}
		return globMatch(segs, parts), next
	})
}

// list walks the workspace from comps and lists the entries visit picks,
// at most maxEntries of them (DefaultListMax when zero); visit also says
// where the walk goes next. ListFiles and Glob differ only in visit.
func (m *Manager) list(ctx context.Context, id string, comps []string, maxEntries int, visit func(walkEntry) (pick bool, next walkAction)) (*Listing, error) {
	limit, err := boundedCount(maxEntries, DefaultListMax, MaxListEntries, "entries")
	if err != nil {
		return nil, err
	}
	_, done, err := m.openForUse(id, false, false)
	if err != nil {
		return nil, err
	}
	defer done()
	out := &Listing{Entries: []Entry{}}
	err = m.walk(ctx, id, comps, func(e walkEntry) (walkAction, error) {
		pick, next := visit(e)
		if pick {
			if len(out.Entries) >= limit {
				out.Truncated = true
				return walkStop, nil
			}
			out.Entries = append(out.Entries, e.entry())
		}
		return next, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Grep searches text files. Binary files and files over 4 MiB are
// skipped; lines are cut at 512 bytes.
func (m *Manager) Grep(ctx context.Context, id string, req GrepRequest) (*GrepResult, error) {
	if req.Pattern == "" {
		return nil, errcode.New(errcode.InvalidArgument, "pattern must not be empty")
	}
	expr := req.Pattern
	if req.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, errcode.New(errcode.InvalidArgument, "pattern is not a valid regular expression: %v", err)
	}
	var segs []string
	if req.Glob != "" {
		if segs, err = splitPattern(req.Glob); err != nil {
			return nil, err
		}
	}
	comps, err := splitRel(req.Path)
	if err != nil {
		return nil, err
	}
	limit, err := boundedCount(req.MaxMatches, DefaultGrepMax, MaxGrepMatches, "matches")
	if err != nil {
		return nil, err
	}
	_, done, err := m.openForUse(id, false, false)
	if err != nil {
		return nil, err
	}
	defer done()
	out := &GrepResult{Matches: []GrepMatch{}}
	var scanned int64
	err = m.walk(ctx, id, comps, func(e walkEntry) (walkAction, error) {
		if !e.info.isRegular() || e.info.size > maxGrepFileBytes {
			return walkContinue, nil
		}
		if segs != nil && !globMatch(segs, strings.Split(e.rel, "/")) {
			return walkContinue, nil
		}
		if scanned += e.info.size; scanned > maxGrepTotalBytes {
			out.Truncated = true
			return walkStop, nil
		}
		fd, err := openChild(e.dir, e.name, false)
		if err != nil {
			return walkContinue, nil // replaced or removed meanwhile
		}
		f := os.NewFile(uintptr(fd), e.name)
		defer f.Close()
		if st, err := fstatFD(fd); err != nil || !st.isRegular() {
			return walkContinue, nil
		}
		out.FilesScanned++
		full, err := grepFile(f, e.rel, re, limit-len(out.Matches), &out.Matches)
		if err != nil {
			return walkContinue, nil
		}
		if full {
			out.Truncated = true
			return walkStop, nil
		}
		return walkContinue, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// grepFile appends up to room matches of re in f; full reports that room
// ran out while the file still had matches.
func grepFile(f *os.File, rel string, re *regexp.Regexp, room int, out *[]GrepMatch) (full bool, err error) {
	r := bufio.NewReaderSize(io.LimitReader(f, maxGrepFileBytes), 64<<10)
	head, _ := r.Peek(8 << 10)
	if bytes.IndexByte(head, 0) >= 0 {
		return false, nil
	}
	line := 0
	for {
		text, err := readLine(r)
		if len(text) > 0 || err == nil {
			line++
			if re.Match(text) {
				if room <= 0 {
					return true, nil
				}
				if len(text) > maxGrepLineBytes {
					text = trimPartialRune(text[:maxGrepLineBytes])
				}
				*out = append(*out, GrepMatch{Path: rel, Line: line, Text: strings.ToValidUTF8(string(text), "\uFFFD")})
				room--
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return false, nil
			}
			return false, err
		}
	}
}

// readLine returns one line without its newline. A line longer than the
// reader's buffer is cut there and its rest skipped.
func readLine(r *bufio.Reader) ([]byte, error) {
	b, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		line := append([]byte(nil), b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = r.ReadSlice('\n')
		}
		return line, err
	}
	return bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r")), err
}

// walk visits the entries below start in sorted order, depth first,
// entering directories through O_NOFOLLOW opens of their parent's fd:
// symlinked directories are reported, never entered. The top-level .git
// (the repository's mount point) is skipped.
func (m *Manager) walk(ctx context.Context, id string, start []string, visit func(walkEntry) (walkAction, error)) error {
	root, err := openDirPath(m.treeDir(id))
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot open the workspace tree")
	}
	defer closeFD(root)
	fd, err := openBeneath(root, start, false)
	if err != nil {
		return err
	}
	st, err := fstatFD(fd)
	if err != nil {
		closeFD(fd)
		return errcode.Wrap(errcode.Internal, err, "cannot stat %s", joinRel(start))
	}
	if !st.isDir() {
		// A single file: visit it alone, through its parent.
		closeFD(fd)
		if len(start) == 0 {
			return errcode.New(errcode.InvalidArgument, "the workspace root is not a directory")
		}
		dir, base, err := openParent(root, start, false, m.own)
		if err != nil {
			return err
		}
		defer closeFD(dir)
		info, err := lstatAt(dir, base)
		if err != nil {
			return mapResolveErr(err, start)
		}
		_, err = visit(walkEntry{rel: joinRel(start), name: base, dir: dir, info: info})
		return err
	}
	defer closeFD(fd)
	seen := 0
	err = walkDir(ctx, fd, strings.Join(start, "/"), 0, &seen, visit)
	if errors.Is(err, errWalkStop) {
		return nil
	}
	return err
}

func walkDir(ctx context.Context, dir int, rel string, depth int, seen *int, visit func(walkEntry) (walkAction, error)) error {
	if depth > maxDepth {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return &errcode.Error{Code: errcode.Timeout, Msg: "the operation was cancelled", Err: err}
	}
	names, err := readDirNames(dir)
	if err != nil {
		return nil // vanished or unreadable: nothing to report from it
	}
	for _, name := range names {
		if rel == "" && name == ".git" {
			continue
		}
		if *seen++; *seen > maxWalkEntries {
			return errWalkStop
		}
		info, err := lstatAt(dir, name)
		if err != nil {
			continue
		}
		e := walkEntry{rel: path.Join(rel, name), name: name, dir: dir, info: info}
		if info.isSymlink() {
			e.target, _ = readlinkAt(dir, name)
		}
		act, err := visit(e)
		if err != nil {
			return err
		}
		switch act {
		case walkStop:
			return errWalkStop
		case walkSkipDir:
			continue
		}
		if !info.isDir() {
			continue
		}
		sub, err := openChild(dir, name, true)
		if err != nil {
			continue // swapped for a symlink or removed: not entered
		}
		err = walkDir(ctx, sub, e.rel, depth+1, seen, visit)
		closeFD(sub)
		if err != nil {
			return err
		}
	}
	return nil
}

type walkAction int

const (
	walkContinue walkAction = iota
	walkSkipDir
	walkStop
)

type walkEntry struct {
	rel  string // relative to the workspace root
	name string
	dir  int // fd of the directory holding the entry
	info fileInfo
	// target is set for symlinks.
	target string
}

func (e walkEntry) entry() Entry {
	out := Entry{Path: e.rel, Mode: fmt.Sprintf("%04o", uint32(e.info.mode.Perm()))}
	switch {
	case e.info.isDir():
		out.Type = "dir"
	case e.info.isSymlink():
		out.Type, out.Target, out.Mode = "symlink", e.target, ""
	case e.info.isRegular():
		out.Type, out.Size = "file", e.info.size
	default:
		out.Type = "other"
	}
	return out
}

var errWalkStop = errors.New("walk stopped")

// openInTree opens comps beneath the workspace tree as openBeneath does;
// the tree's own descriptor is closed again before it returns.
func (m *Manager) openInTree(id string, comps []string) (int, error) {
	root, err := openDirPath(m.treeDir(id))
	if err != nil {
		return -1, errcode.Wrap(errcode.Internal, err, "cannot open the workspace tree")
	}
	defer closeFD(root)
	return openBeneath(root, comps, false)
}

func (m *Manager) readReport(id string, comps []string) ([]byte, error) {
	fd, err := m.openInTree(id, comps)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "report")
	defer f.Close()
	if st, err := fstatFD(fd); err != nil || !st.isRegular() {
		return nil, errcode.New(errcode.InvalidArgument, "the report is not a regular file")
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(f, maxReportBytes+1)); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot read the report")
	}
	if b.Len() > maxReportBytes {
		return nil, &errcode.Error{Code: errcode.OutputLimit, Msg: "the report is larger than allowed", Data: LimitData{Limit: "reportBytes", Max: maxReportBytes}}
	}
	return b.Bytes(), nil
}
