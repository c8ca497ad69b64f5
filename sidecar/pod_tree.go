//go:build linux

package sidecar

import (
	"archive/tar"
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicehq/sluice/core/workspace"
)

// runPodTree is the pod's end of reading a session's tree back (see
// workspace.SyncTreeDelta): it reads on stdin the manifest the previous
// read wrote (empty: none, everything is sent), walks --root without
// following a symlink and without the top-level .git, and writes to
// stdout a tar stream: first the new manifest (workspace.TreeManifestName),
// then every directory, file and symlink that is new or whose lstat
// differs from the previous manifest's record (with --manifest-only, the
// manifest alone: the baseline a session's HOME is read back against,
// taken before the agent starts). With --max-bytes N, a tree whose files
// to send hold more than N bytes (their sizes as stat'ed: a sparse file
// counts its apparent size) fails before the file that passes N is sent,
// rather than send what the host would refuse. Exit 0 with a complete
// archive; 1 on any failure (the archive is then cut short, which the
// host refuses as truncated); 2 on a usage error.
//
// Change is told by ctime (with type, mode, size, inode and mtime): the
// agent can set a file's mtime (touch -d) but not its ctime, which the
// kernel stamps on every change of content or metadata and which only a
// clock change could forge (the pod has no CAP_SYS_TIME). Each path is
// lstat'ed before its content is read, so a write during the read shows
// as a new ctime next time.
func runPodTree(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pod-tree", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", "", "the tree to read (its top-level .git is left out)")
	prevSize := fs.Int64("prev-size", -1, "read exactly this many bytes of previous manifest from stdin instead of reading to its end (for a transport that cannot close stdin)")
	manifestOnly := fs.Bool("manifest-only", false, "write only the new manifest, no entry (a baseline for the next read)")
	maxBytes := fs.Int64("max-bytes", 0, "fail rather than send files holding more than this many bytes in all (0: no bound)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *root == "" || fs.NArg() > 0 || *prevSize > workspace.MaxTreeManifestBytes || *maxBytes < 0 {
		fmt.Fprintln(stderr, "usage: sluice-sidecar pod-tree --root DIR [--prev-size N] [--manifest-only] [--max-bytes N] < PREVIOUS-MANIFEST > ARCHIVE")
		return 2
	}
	var in io.Reader = os.Stdin
	if *prevSize >= 0 {
		in = &exactReader{r: os.Stdin, n: *prevSize}
	}
	if err := podTree(in, stdout, *root, *manifestOnly, *maxBytes); err != nil {
		fmt.Fprintln(stderr, "sluice-sidecar pod-tree:", err)
		return 1
	}
	return 0
}

// exactReader reads exactly n bytes of r, then reports EOF without
// waiting for r's end; fewer is an error.
type exactReader struct {
	r io.Reader
	n int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.n {
		p = p[:e.n]
	}
	n, err := e.r.Read(p)
	e.n -= int64(n)
	if err == io.EOF && e.n > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// podTree does runPodTree's work; manifestOnly leaves every entry out,
// maxBytes (0: none) bounds the bytes of the files sent.
func podTree(stdin io.Reader, stdout io.Writer, root string, manifestOnly bool, maxBytes int64) error {
	prevData, err := io.ReadAll(io.LimitReader(stdin, workspace.MaxTreeManifestBytes+1))
	if err != nil {
		return fmt.Errorf("cannot read the previous manifest: %w", err)
	}
	if len(prevData) > workspace.MaxTreeManifestBytes {
		return fmt.Errorf("the previous manifest is larger than %d bytes", workspace.MaxTreeManifestBytes)
	}
	var prev *workspace.TreeManifest
	var prevIdx map[string]workspace.TreeRecord
	if len(prevData) > 0 {
		if prev, err = workspace.ParseTreeManifest(prevData, 0); err != nil {
			return err
		}
		prevIdx = prev.Index()
	}
	rootFD, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot open %s: %w", root, err)
	}
	defer unix.Close(rootFD)
	w := &treeWalker{man: &workspace.TreeManifest{StartNs: time.Now().UnixNano()}}
	if err := w.dir(rootFD, "", 0); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(stdout, 256<<10)
	tw := tar.NewWriter(bw)
	data := w.man.Marshal()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: workspace.TreeManifestName, Mode: 0o600, Size: int64(len(data)), ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	s := &treeSender{tw: tw, root: rootFD, parentFD: -1, left: maxBytes}
	if maxBytes == 0 {
		s.left = -1
	}
	defer s.close()
	for _, r := range w.man.Records {
		if manifestOnly || !workspace.ChangedSince(prev, prevIdx, r) {
			continue
		}
		if err := s.send(r); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// maxPodTreeDepth bounds the walk as the host bounds an archive's names.
const maxPodTreeDepth = 256

// treeWalker lists a tree's paths in walk order, lstat'ing each.
type treeWalker struct {
	man *workspace.TreeManifest
}

func (w *treeWalker) dir(fd int, rel string, depth int) error {
	if depth > maxPodTreeDepth {
		return fmt.Errorf("%s is nested deeper than %d levels", rel, maxPodTreeDepth)
	}
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot list %q: %w", rel, err)
	}
	f := os.NewFile(uintptr(dup), rel)
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("cannot list %q: %w", rel, err)
	}
	sort.Strings(names)
	for _, name := range names {
		if rel == "" && name == ".git" {
			continue
		}
		p := path.Join(rel, name)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed since the listing
			}
			return fmt.Errorf("cannot stat %q: %w", p, err)
		}
		r := workspace.TreeRecord{
			Path: p, Mode: st.Mode & 0o7777, Size: st.Size, Ino: int64(st.Ino),
			CtimeNs: st.Ctim.Nano(), MtimeNs: st.Mtim.Nano(),
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			r.Type = 'f'
		case unix.S_IFLNK:
			r.Type, r.Size = 'l', 0
		case unix.S_IFDIR:
			r.Type, r.Size = 'd', 0
		default:
			continue // a FIFO, socket or device: a workspace tree holds none
		}
		w.man.Records = append(w.man.Records, r)
		if r.Type != 'd' {
			continue
		}
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("cannot open %q: %w", p, err)
		}
		err = w.dir(sub, p, depth+1)
		unix.Close(sub)
		if err != nil {
			return err
		}
	}
	return nil
}

// treeSender writes the entries of changed paths, reopening each one's
// directory (the last one is kept: a walk lists a directory's entries
// together).
type treeSender struct {
	tw        *tar.Writer
	root      int
	parentRel string
	parentFD  int
	// left is how many bytes of files may still be sent (-1: no bound).
	left int64
}

func (s *treeSender) close() {
	if s.parentFD >= 0 {
		unix.Close(s.parentFD)
		s.parentFD = -1
	}
}

// parent opens rel's directory one component at a time, never following
// a symlink.
func (s *treeSender) parent(rel string) (int, error) {
	dir := path.Dir(rel)
	if dir == "." {
		return s.root, nil
	}
	if s.parentFD >= 0 && s.parentRel == dir {
		return s.parentFD, nil
	}
	s.close()
	cur := s.root
	for _, c := range strings.Split(dir, "/") {
		fd, err := unix.Openat(cur, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if cur != s.root {
			unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		cur = fd
	}
	s.parentRel, s.parentFD = dir, cur
	return cur, nil
}

func (s *treeSender) send(r workspace.TreeRecord) error {
	dir, err := s.parent(r.Path)
	if err != nil {
		return fmt.Errorf("the tree changed while it was read (%q: %w)", r.Path, err)
	}
	name := path.Base(r.Path)
	h := &tar.Header{Name: r.Path, Mode: int64(r.Mode & 0o777), ModTime: time.Unix(0, 0)}
	switch r.Type {
	case 'd':
		h.Typeflag, h.Name = tar.TypeDir, r.Path+"/"
		return s.tw.WriteHeader(h)
	case 'l':
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(dir, name, buf)
		if err != nil || n == len(buf) {
			return fmt.Errorf("the tree changed while it was read (symlink %q: %v)", r.Path, err)
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, string(buf[:n])
		return s.tw.WriteHeader(h)
	}
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("the tree changed while it was read (%q: %w)", r.Path, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("the tree changed while it was read (%q is no longer a regular file)", r.Path)
	}
	if s.left >= 0 {
		if st.Size > s.left {
			return fmt.Errorf("the files to send hold more bytes than the bound (%q has %d bytes)", r.Path, st.Size)
		}
		s.left -= st.Size
	}
	// The size is what the file has now; the manifest keeps what lstat
	// said, so a file written since differs next time and is sent again.
	h.Typeflag, h.Size = tar.TypeReg, st.Size
	if err := s.tw.WriteHeader(h); err != nil {
		return err
	}
	n, err := io.CopyN(s.tw, f, st.Size)
	if err != nil && n < st.Size && (err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF)) {
		// It shrank while it was read: the stream stays well-formed, and
		// its new ctime sends it again next time.
		_, err = io.CopyN(s.tw, zeroReader{}, st.Size-n)
	}
	return err
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
