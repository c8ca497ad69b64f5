//go:build linux

package workspace

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sluicehq/sluice/core/errcode"
)

// taFixture is a workspace directory as the store lays it out: tree/ with
// its .git mount point, git/ beside it, and a folder outside the
// workspace that no archive may reach.
type taFixture struct {
	dir, ws, tree, git, outside string
}

func newTAFixture(t testing.TB) taFixture {
	t.Helper()
	dir := t.TempDir()
	f := taFixture{dir: dir, ws: filepath.Join(dir, "ws"), outside: filepath.Join(dir, "outside")}
	f.tree, f.git = filepath.Join(f.ws, "tree"), filepath.Join(f.ws, "git")
	for _, d := range []string{f.tree, filepath.Join(f.tree, ".git"), filepath.Join(f.git, "refs"), f.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	taWrite(t, filepath.Join(f.git, "HEAD"), "ref: refs/heads/main\n", 0o644)
	taWrite(t, filepath.Join(f.outside, "secret"), "host secret\n", 0o600)
	taWrite(t, filepath.Join(f.tree, "old.txt"), "old tree\n", 0o644)
	taWrite(t, filepath.Join(f.tree, "keep", "same.txt"), "same\n", 0o644)
	return f
}

func taWrite(t testing.TB, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// taState is everything below root that a tree is compared on: per path,
// its type, permission bits and content (a symlink: its target).
func taState(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		mode := info.Mode()
		switch {
		case mode.IsDir():
			out[rel] = fmt.Sprintf("dir %04o", mode.Perm())
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "symlink " + target
		case mode.IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file %04o %q", mode.Perm(), b)
		default:
			out[rel] = "other " + mode.String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func taSameState(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	var diffs []string
	for k, v := range want {
		if got[k] != v {
			diffs = append(diffs, fmt.Sprintf("%s: got %q, want %q", k, got[k], v))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: unexpected %q", k, v))
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		t.Fatalf("%s differs:\n%s", what, strings.Join(diffs, "\n"))
	}
}

// taSiblings lists the workspace directory: only tree and git may be there
// once ReplaceTree has returned (or CleanTreeLeftovers has run).
func taSiblings(t testing.TB, ws string) []string {
	t.Helper()
	ents, err := os.ReadDir(ws)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func taNoLeftovers(t testing.TB, f taFixture) {
	t.Helper()
	if got := taSiblings(t, f.ws); strings.Join(got, ",") != "git,tree" {
		t.Fatalf("the workspace directory holds %v, want only git and tree", got)
	}
}

func taInode(t testing.TB, p string) uint64 {
	t.Helper()
	info, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Ino
}

type taEntry struct {
	name string
	typ  byte
	mode int64
	body string
	link string
}

func taTar(t testing.TB, entries ...taEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if e.typ == tar.TypeChar || e.typ == tar.TypeBlock {
			h.Devmajor, h.Devminor = 1, 3
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatalf("header %q: %v", e.name, err)
		}
		if e.typ == tar.TypeReg {
			if _, err := io.WriteString(tw, e.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func taPack(t testing.TB, tree, gitDir string) ([]byte, ArchiveStats) {
	t.Helper()
	var b bytes.Buffer
	st, err := PackTree(&b, tree, gitDir)
	if err != nil {
		t.Fatalf("PackTree: %v", err)
	}
	return b.Bytes(), st
}

var taKeepOwner = ReplaceOptions{UID: -1, GID: -1}

// taSource builds a tree with every kind of entry an archive carries.
func taSource(t testing.TB) (root, gitDir string) {
	t.Helper()
	f := newTAFixture(t)
	if err := os.Remove(filepath.Join(f.tree, "old.txt")); err != nil {
		t.Fatal(err)
	}
	taWrite(t, filepath.Join(f.tree, "a.txt"), "alpha\n", 0o644)
	taWrite(t, filepath.Join(f.tree, "src", "main.go"), "package main\n", 0o755)
	taWrite(t, filepath.Join(f.tree, "private", "key"), "k", 0o600)
	taWrite(t, filepath.Join(f.tree, "ro", "inside.txt"), "under a read-only dir", 0o444)
	taWrite(t, filepath.Join(f.tree, "deep", "a", "b", "c", "d.txt"), strings.Repeat("d", 70000), 0o640)
	long := strings.Repeat("n", 120) + "/" + strings.Repeat("m", 150) + ".txt"
	taWrite(t, filepath.Join(f.tree, long), "long name", 0o644)
	for _, d := range []string{"empty", "ro"} {
		if err := os.MkdirAll(filepath.Join(f.tree, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(f.tree, "private"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(f.tree, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/hostname", filepath.Join(f.tree, "abs-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src", filepath.Join(f.tree, "dir-link")); err != nil {
		t.Fatal(err)
	}
	// Set last: below a 0555 directory nothing more can be created.
	if err := os.Chmod(filepath.Join(f.tree, "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	return f.tree, f.git
}

func TestPackTree_RoundTripReplacesTree(t *testing.T) {
	src, srcGit := taSource(t)
	archive, pst := taPack(t, src, srcGit)
	if pst.Files != 7+1 || pst.Symlinks != 3 || pst.Skipped != 0 {
		t.Fatalf("PackTree stats = %+v, want 7 tree files + .git/HEAD and 3 symlinks", pst)
	}
	again, _ := taPack(t, src, srcGit)
	if !bytes.Equal(archive, again) {
		t.Fatal("packing the same tree twice gave different bytes")
	}

	f := newTAFixture(t)
	gitBefore := taState(t, f.git)
	st, err := ReplaceTree(bytes.NewReader(archive), f.tree, taKeepOwner)
	if err != nil {
		t.Fatalf("ReplaceTree: %v", err)
	}
	want := taState(t, src)
	taSameState(t, "the replaced tree", taState(t, f.tree), want)
	if _, err := os.Lstat(filepath.Join(f.tree, "old.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("old.txt, absent from the archive, is still in the tree: %v", err)
	}
	// The archive's .git/HEAD never reaches the tree or the repository.
	if ents, err := os.ReadDir(filepath.Join(f.tree, ".git")); err != nil || len(ents) != 0 {
		t.Fatalf("the tree's .git mount point = %v, %v; want an empty directory", ents, err)
	}
	taSameState(t, "the workspace repository", taState(t, f.git), gitBefore)
	if st.Files != 7 || st.Symlinks != 3 || st.Skipped != 3 || st.Bytes != pst.Bytes-int64(len("ref: refs/heads/main\n")) {
		t.Fatalf("ReplaceTree stats = %+v (packed %+v)", st, pst)
	}
	taNoLeftovers(t, f)
}

func TestPackTree_ReadsDefended(t *testing.T) {
	f := newTAFixture(t)
	if err := os.Symlink(f.outside, filepath.Join(f.tree, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(f.tree, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	taWrite(t, filepath.Join(f.tree, "suid"), "x", 0o755)
	if err := unix.Chmod(filepath.Join(f.tree, "suid"), 0o4755); err != nil {
		t.Fatal(err)
	}
	archive, st := taPack(t, f.tree, "")
	if st.Skipped != 1 {
		t.Fatalf("stats = %+v, want the FIFO skipped and counted", st)
	}
	tr := tar.NewReader(bytes.NewReader(archive))
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.ModTime.Unix() != 0 || h.Mode&^0o777 != 0 {
			t.Errorf("%s: uid %d gid %d uname %q mtime %v mode %o; want zeros and 0777 bits only", h.Name, h.Uid, h.Gid, h.Uname, h.ModTime, h.Mode)
		}
		if h.Name == "escape" && (h.Typeflag != tar.TypeSymlink || h.Linkname != f.outside) {
			t.Errorf("escape archived as type %q -> %q, want the symlink itself", h.Typeflag, h.Linkname)
		}
	}
	got := strings.Join(names, ",")
	if want := "escape,keep/,keep/same.txt,old.txt,suid"; got != want {
		t.Fatalf("archived %s, want %s (no .git, nothing through the symlink, no FIFO)", got, want)
	}
}

// taRefusal is an archive ReplaceTree must refuse whole.
type taRefusal struct {
	name    string
	archive func(t testing.TB, f taFixture) []byte
	is      error
	opt     ArchiveLimits
}

func taRefusals() []taRefusal {
	reg := func(name, body string) taEntry { return taEntry{name: name, typ: tar.TypeReg, body: body} }
	of := func(e ...taEntry) func(testing.TB, taFixture) []byte {
		return func(t testing.TB, _ taFixture) []byte { return taTar(t, e...) }
	}
	return []taRefusal{
		{name: "absolute name", archive: of(reg("new.txt", "n"), reg("/etc/sluice-test", "x")), is: ErrArchiveUnsafe},
		{name: "dotdot", archive: of(reg("../escape", "x")), is: ErrArchiveUnsafe},
		{name: "dotdot after a directory", archive: of(reg("a/../../escape", "x")), is: ErrArchiveUnsafe},
		{name: "dotdot that would clean inside", archive: of(reg("a/../b", "x")), is: ErrArchiveUnsafe},
		{name: "file below an absolute symlink", archive: func(t testing.TB, f taFixture) []byte {
			return taTar(t, taEntry{name: "a", typ: tar.TypeSymlink, link: f.outside}, reg("a/planted", "x"))
		}, is: ErrArchiveUnsafe},
		{name: "file below a relative symlink", archive: of(taEntry{name: "a", typ: tar.TypeSymlink, link: "../../outside"}, reg("a/planted", "x")), is: ErrArchiveUnsafe},
		{name: "directory below a symlink", archive: of(taEntry{name: "a", typ: tar.TypeSymlink, link: "../../outside"}, taEntry{name: "a/sub/", typ: tar.TypeDir, mode: 0o755}), is: ErrArchiveUnsafe},
		{name: "file below a file", archive: of(reg("f", "x"), reg("f/x", "y")), is: ErrArchiveUnsafe},
		{name: "same file twice", archive: of(reg("x", "1"), reg("x", "2")), is: ErrArchiveUnsafe},
		{name: "file then directory", archive: of(reg("x", "1"), taEntry{name: "x/", typ: tar.TypeDir, mode: 0o755}), is: ErrArchiveUnsafe},
		{name: "directory then file", archive: of(taEntry{name: "x/", typ: tar.TypeDir, mode: 0o755}, reg("x", "1")), is: ErrArchiveUnsafe},
		{name: "implicit directory then symlink", archive: of(reg("d/x", "1"), taEntry{name: "d", typ: tar.TypeSymlink, link: "/"}), is: ErrArchiveUnsafe},
		{name: "symlink then file of the same name", archive: of(taEntry{name: "s", typ: tar.TypeSymlink, link: "../../outside/secret"}, reg("s", "overwrite")), is: ErrArchiveUnsafe},
		{name: "character device", archive: of(taEntry{name: "null", typ: tar.TypeChar}), is: ErrArchiveUnsafe},
		{name: "block device", archive: of(taEntry{name: "sda", typ: tar.TypeBlock}), is: ErrArchiveUnsafe},
		{name: "fifo", archive: of(taEntry{name: "pipe", typ: tar.TypeFifo}), is: ErrArchiveUnsafe},
		{name: "root as a file", archive: of(reg(".", "x")), is: ErrArchiveUnsafe},
		{name: "symlink with an empty target", archive: of(taEntry{name: "s", typ: tar.TypeSymlink}), is: ErrArchiveUnsafe},
		{name: "hard link outside", archive: of(taEntry{name: "h", typ: tar.TypeLink, link: "../../outside/secret"}), is: ErrArchiveUnsafe},
		{name: "hard link absolute", archive: func(t testing.TB, f taFixture) []byte {
			return taTar(t, taEntry{name: "h", typ: tar.TypeLink, link: filepath.Join(f.outside, "secret")})
		}, is: ErrArchiveUnsafe},
		{name: "hard link to the old tree", archive: of(taEntry{name: "h", typ: tar.TypeLink, link: "old.txt"}), is: ErrArchiveUnsafe},
		{name: "hard link before its target", archive: of(taEntry{name: "h", typ: tar.TypeLink, link: "later"}, reg("later", "x")), is: ErrArchiveUnsafe},
		{name: "hard link to a symlink", archive: of(taEntry{name: "s", typ: tar.TypeSymlink, link: "../../outside/secret"}, taEntry{name: "h", typ: tar.TypeLink, link: "s"}), is: ErrArchiveUnsafe},
		{name: "hard link to a directory", archive: of(taEntry{name: "d/", typ: tar.TypeDir, mode: 0o755}, taEntry{name: "h", typ: tar.TypeLink, link: "d"}), is: ErrArchiveUnsafe},
		{name: "hard link into .git", archive: of(reg(".git/config", "x"), taEntry{name: "h", typ: tar.TypeLink, link: ".git/config"}), is: ErrArchiveUnsafe},
		{name: "NUL in a PAX name", archive: func(t testing.TB, _ taFixture) []byte {
			b := taTar(t, reg(strings.Repeat("p", 150)+"Zname", "x"))
			i := bytes.Index(b, []byte("Zname"))
			if i < 0 {
				t.Fatal("no PAX path record")
			}
			b[i] = 0
			return b
		}, is: ErrArchiveTruncated},
		{name: "more bytes than allowed", archive: of(reg("a", "12345"), reg("b", "123456")), opt: ArchiveLimits{MaxBytes: 10}, is: ErrArchiveLimit},
		{name: "more bytes than allowed in .git", archive: of(reg(".git/a", "12345"), reg(".git/b", "123456")), opt: ArchiveLimits{MaxBytes: 10}, is: ErrArchiveLimit},
		{name: "hard link copies over the byte limit", archive: of(reg("a", "123456"), taEntry{name: "h", typ: tar.TypeLink, link: "a"}), opt: ArchiveLimits{MaxBytes: 10}, is: ErrArchiveLimit},
		{name: "more entries than allowed", archive: of(reg("a", "1"), reg("b", "2"), reg("c", "3")), opt: ArchiveLimits{MaxEntries: 2}, is: ErrArchiveLimit},
		{name: "implied directories count as entries", archive: of(reg("a/b/c/d/f", "x")), opt: ArchiveLimits{MaxEntries: 3}, is: ErrArchiveLimit},
		{name: "nested too deep", archive: of(reg(strings.Repeat("d/", maxDepth+1)+"f", "x")), is: ErrArchiveLimit},
		{name: "truncated inside a file", archive: func(t testing.TB, _ taFixture) []byte {
			b := taTar(t, reg("a", strings.Repeat("a", 2000)))
			return b[:512+1000]
		}, is: ErrArchiveTruncated},
		{name: "truncated at an entry's end", archive: func(t testing.TB, _ taFixture) []byte {
			b := taTar(t, reg("a", "1"), reg("b", "2"))
			return b[:512+512] // a's header and data; no b, no end marker
		}, is: ErrArchiveTruncated},
		{name: "truncated inside the padding", archive: func(t testing.TB, _ taFixture) []byte {
			b := taTar(t, reg("a", "1"))
			return b[:512+100]
		}, is: ErrArchiveTruncated},
		{name: "empty stream", archive: func(testing.TB, taFixture) []byte { return nil }, is: ErrArchiveTruncated},
		{name: "garbage", archive: func(testing.TB, taFixture) []byte { return bytes.Repeat([]byte("not a tar "), 100) }, is: ErrArchiveTruncated},
	}
}

func TestReplaceTree_RefusesUnsafeArchives(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		for _, c := range taRefusals() {
			t.Run(fmt.Sprintf("%s/openat2=%v", c.name, !fallback), func(t *testing.T) {
				if fallback {
					prev := noOpenat2.Load()
					noOpenat2.Store(true)
					t.Cleanup(func() { noOpenat2.Store(prev) })
				}
				f := newTAFixture(t)
				before, outside, gitBefore := taState(t, f.tree), taState(t, f.outside), taState(t, f.git)
				inode := taInode(t, f.tree)
				_, err := ReplaceTree(bytes.NewReader(c.archive(t, f)), f.tree, ReplaceOptions{UID: -1, GID: -1, Limits: c.opt})
				if got := taInode(t, f.tree); got != inode {
					t.Fatalf("the tree is another directory (inode %d, was %d)", got, inode)
				}
				if err == nil {
					t.Fatalf("the archive was accepted; tree now %v", taState(t, f.tree))
				}
				if !errcode.IsCode(err, errcode.InvalidArgument) || !errors.Is(err, c.is) {
					t.Fatalf("err = %v (code %s), want invalid_argument wrapping %v", err, errcode.Of(err), c.is)
				}
				taSameState(t, "the tree", taState(t, f.tree), before)
				taSameState(t, "the folder outside", taState(t, f.outside), outside)
				taSameState(t, "the repository", taState(t, f.git), gitBefore)
				taNoLeftovers(t, f)
				if _, err := os.Lstat("/etc/sluice-test"); err == nil {
					t.Fatal("/etc/sluice-test was written")
				}
			})
		}
	}
}

// TestReplaceTree_EmptyArchiveEmptiesTree: two zero blocks (what a pod
// writes for an empty /workspace, tar refusing to write an empty archive)
// and a lone end marker are complete archives of nothing.
func TestReplaceTree_EmptyArchiveEmptiesTree(t *testing.T) {
	for _, n := range []int{512, 1024, 10240} {
		f := newTAFixture(t)
		if _, err := ReplaceTree(bytes.NewReader(make([]byte, n)), f.tree, taKeepOwner); err != nil {
			t.Fatalf("%d zero bytes: %v", n, err)
		}
		got := taState(t, f.tree)
		if len(got) != 2 || got[".git"] != "dir 0755" {
			t.Fatalf("%d zero bytes left %v, want the root and its .git mount point", n, got)
		}
		taNoLeftovers(t, f)
	}
}

func TestReplaceTree_BoundsNamesInMemory(t *testing.T) {
	prev := maxArchiveNameBytes
	maxArchiveNameBytes = 100
	t.Cleanup(func() { maxArchiveNameBytes = prev })
	f := newTAFixture(t)
	before := taState(t, f.tree)
	var entries []taEntry
	for i := range 5 {
		entries = append(entries, taEntry{name: fmt.Sprintf("%030d", i), typ: tar.TypeReg, body: "x"})
	}
	_, err := ReplaceTree(bytes.NewReader(taTar(t, entries...)), f.tree, taKeepOwner)
	if !errors.Is(err, ErrArchiveLimit) {
		t.Fatalf("err = %v, want the names over their limit", err)
	}
	var e *errcode.Error
	if !errors.As(err, &e) || e.Data != (LimitData{Limit: "archiveNameBytes", Max: 100}) {
		t.Fatalf("err data = %#v", e)
	}
	taSameState(t, "the tree", taState(t, f.tree), before)
	taNoLeftovers(t, f)
}

func TestReplaceTree_AcceptsWhatTarWrites(t *testing.T) {
	f := newTAFixture(t)
	archive := taTar(t,
		taEntry{name: "./", typ: tar.TypeDir, mode: 0o700},
		taEntry{name: "x/y/z.txt", typ: tar.TypeReg, body: "implicit parents", mode: 0o644},
		taEntry{name: "x/", typ: tar.TypeDir, mode: 0o750}, // listed after its child
		taEntry{name: "x/", typ: tar.TypeDir, mode: 0o751}, // and again: the last mode wins
		taEntry{name: "suid", typ: tar.TypeReg, body: "s", mode: 0o4755},
		taEntry{name: "sticky/", typ: tar.TypeDir, mode: 0o1777},
		taEntry{name: "copy", typ: tar.TypeLink, link: "./suid"},
		taEntry{name: ".git", typ: tar.TypeSymlink, link: "/etc"},
		taEntry{name: ".git/config", typ: tar.TypeReg, body: "[core]\n\tfsmonitor = evil\n"},
		taEntry{name: "sub/.git/HEAD", typ: tar.TypeReg, body: "nested repositories come back; the seal judges them\n"},
	)
	// A global PAX header is skipped, not refused.
	var g bytes.Buffer
	gw := tar.NewWriter(&g)
	if err := gw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "global", PAXRecords: map[string]string{"comment": "x"}}); err != nil {
		t.Fatal(err)
	}
	if err := gw.Flush(); err != nil {
		t.Fatal(err)
	}
	archive = append(g.Bytes(), archive...)
	rootBefore, err := os.Stat(f.tree)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ReplaceTree(bytes.NewReader(archive), f.tree, taKeepOwner)
	if err != nil {
		t.Fatalf("ReplaceTree: %v", err)
	}
	taSameState(t, "the tree", taState(t, f.tree), map[string]string{
		".":             fmt.Sprintf("dir %04o", rootBefore.Mode().Perm()),
		".git":          "dir 0755",
		"x":             "dir 0751",
		"x/y":           "dir 0755",
		"x/y/z.txt":     `file 0644 "implicit parents"`,
		"suid":          `file 0755 "s"`,
		"sticky":        "dir 0777",
		"copy":          `file 0755 "s"`,
		"sub":           "dir 0755",
		"sub/.git":      "dir 0755",
		"sub/.git/HEAD": `file 0644 "nested repositories come back; the seal judges them\n"`,
	})
	for _, p := range []string{"suid", "sticky"} {
		var s unix.Stat_t
		if err := unix.Lstat(filepath.Join(f.tree, p), &s); err != nil {
			t.Fatal(err)
		}
		if s.Mode&(unix.S_ISUID|unix.S_ISGID|unix.S_ISVTX) != 0 {
			t.Errorf("%s kept its set-id or sticky bits: %o", p, s.Mode)
		}
	}
	var a, b unix.Stat_t
	if unix.Stat(filepath.Join(f.tree, "suid"), &a) != nil || unix.Stat(filepath.Join(f.tree, "copy"), &b) != nil || a.Ino == b.Ino {
		t.Fatal("the hard link shares an inode with its target; want a copy")
	}
	if st.Files != 4 || st.Dirs != 5 || st.Symlinks != 0 || st.Skipped != 3 {
		t.Fatalf("stats = %+v", st)
	}
	taNoLeftovers(t, f)
}

// TestReplaceTree_RealTar takes archives written by GNU tar and BusyBox
// tar the way a pod writes them, and checks that PackTree's archives
// extract with both.
func TestReplaceTree_RealTar(t *testing.T) {
	src, _ := taSource(t)
	// A hard-linked pair: tar writes the second as a link entry.
	if err := os.Link(filepath.Join(src, "a.txt"), filepath.Join(src, "a-hardlink.txt")); err != nil {
		t.Fatal(err)
	}
	want := taState(t, src)
	// BusyBox tar has no --exclude: its archive carries the tree's .git
	// too, which ReplaceTree ignores.
	type tool struct {
		name            string
		create, extract []string
	}
	for _, tl := range []tool{
		{"gnu", []string{"tar", "-c", "-C", src, "--exclude=./.git", "."}, []string{"tar", "-x", "--no-same-owner", "-C"}},
		{"busybox", []string{"busybox", "tar", "-c", "-C", src, "."}, []string{"busybox", "tar", "-x", "-C"}},
	} {
		name, argv := tl.name, tl.create
		t.Run(name, func(t *testing.T) {
			if _, err := exec.LookPath(argv[0]); err != nil {
				t.Skipf("%s is not installed", argv[0])
			}
			out, err := exec.Command(argv[0], argv[1:]...).Output()
			if err != nil {
				t.Fatalf("%v: %v", argv, err)
			}
			f := newTAFixture(t)
			if _, err := ReplaceTree(bytes.NewReader(out), f.tree, taKeepOwner); err != nil {
				t.Fatalf("ReplaceTree of %s tar's archive: %v", name, err)
			}
			taSameState(t, "the replaced tree", taState(t, f.tree), want)
			taNoLeftovers(t, f)

			// And the other way: what a pod extracts from PackTree.
			archive, _ := taPack(t, src, "")
			dst := t.TempDir()
			x := append(append([]string(nil), tl.extract...), dst)
			cmd := exec.Command(x[0], x[1:]...)
			cmd.Stdin = bytes.NewReader(archive)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", x, err, out)
			}
			got := taState(t, dst)
			exp := taState(t, src)
			delete(exp, ".git")
			got["."], exp["."] = "", ""
			// PackTree copies each name; a hard link arrives as two files.
			taSameState(t, name+" tar's extraction of PackTree's archive", got, exp)
		})
	}
}

func TestReplaceTree_CrashLeavesOldOrNew(t *testing.T) {
	src, _ := taSource(t)
	archive, _ := taPack(t, src, "")
	newState := taState(t, src)
	cases := []struct {
		step    string
		nth     int
		wantNew bool
	}{
		{replaceStepExtracted, 3, false},
		{replaceStepBeforeExchange, 1, false},
		{replaceStepAfterExchange, 1, true},
	}
	for _, c := range cases {
		t.Run(c.step, func(t *testing.T) {
			f := newTAFixture(t)
			// A read-only directory in the old tree: removing a leftover
			// must cope with one.
			taWrite(t, filepath.Join(f.tree, "locked", "f"), "x", 0o444)
			if err := os.Chmod(filepath.Join(f.tree, "locked"), 0o555); err != nil {
				t.Fatal(err)
			}
			oldState := taState(t, f.tree)
			seen := 0
			replaceHook = func(step string) bool {
				if step == c.step {
					seen++
				}
				return step == c.step && seen == c.nth
			}
			t.Cleanup(func() { replaceHook = nil })
			if _, err := ReplaceTree(bytes.NewReader(archive), f.tree, taKeepOwner); !errors.Is(err, errSimulatedCrash) {
				t.Fatalf("err = %v, want the simulated crash", err)
			}
			replaceHook = nil
			want := oldState
			if c.wantNew {
				want = newState
			}
			taSameState(t, "the tree after the crash", taState(t, f.tree), want)
			if got := taSiblings(t, f.ws); len(got) != 3 {
				t.Fatalf("after the crash the workspace directory holds %v, want tree, git and one leftover", got)
			}
			if err := CleanTreeLeftovers(f.tree); err != nil {
				t.Fatalf("CleanTreeLeftovers: %v", err)
			}
			taNoLeftovers(t, f)
			taSameState(t, "the tree after the cleanup", taState(t, f.tree), want)
		})
	}
}

func TestCleanTreeLeftovers_RemovesOnlyItsOwnNames(t *testing.T) {
	f := newTAFixture(t)
	keep := []string{"tree.sluice-replace-nothex!!!!!!!!", "tree.sluice-replace-0123", "other.sluice-replace-0123456789abcdef", "meta.json"}
	for _, n := range keep {
		taWrite(t, filepath.Join(f.ws, n), "x", 0o644)
	}
	taWrite(t, filepath.Join(f.ws, "tree.sluice-replace-0123456789abcdef", "x", "y"), "x", 0o644)
	if err := os.Symlink(f.outside, filepath.Join(f.ws, "tree.sluice-replace-fedcba9876543210")); err != nil {
		t.Fatal(err)
	}
	outside := taState(t, f.outside)
	if err := CleanTreeLeftovers(f.tree); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(taSiblings(t, f.ws), ",")
	if want := "git,meta.json,other.sluice-replace-0123456789abcdef,tree,tree.sluice-replace-0123,tree.sluice-replace-nothex!!!!!!!!"; got != want {
		t.Fatalf("left %s, want %s", got, want)
	}
	taSameState(t, "the folder a leftover symlink pointed to", taState(t, f.outside), outside)
}

func TestReplaceTree_OwnsEntriesAsAsked(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("handing files to another user needs root")
	}
	f := newTAFixture(t)
	if err := os.Lchown(f.tree, 4321, 4321); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(filepath.Join(f.tree, ".git"), 4321, 4321); err != nil {
		t.Fatal(err)
	}
	archive := taTar(t,
		taEntry{name: "d/f", typ: tar.TypeReg, body: "x"},
		taEntry{name: "e/", typ: tar.TypeDir, mode: 0o755},
		taEntry{name: "s", typ: tar.TypeSymlink, link: "d/f"},
		taEntry{name: "h", typ: tar.TypeLink, link: "d/f"},
	)
	if _, err := ReplaceTree(bytes.NewReader(archive), f.tree, ReplaceOptions{UID: 1234, GID: 2345}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{".": "4321:4321", ".git": "4321:4321", "d": "1234:2345", "d/f": "1234:2345", "e": "1234:2345", "s": "1234:2345", "h": "1234:2345"}
	for p, w := range want {
		info, err := os.Lstat(filepath.Join(f.tree, p))
		if err != nil {
			t.Fatal(err)
		}
		s := info.Sys().(*syscall.Stat_t)
		if got := fmt.Sprintf("%d:%d", s.Uid, s.Gid); got != w {
			t.Errorf("%s is owned by %s, want %s", p, got, w)
		}
	}
}

// taModel is what an accepted archive must leave in the tree, computed
// apart from ReplaceTree: each entry in order, parents implied as 0755
// directories, ".git" at the top ignored, hard links as copies.
func taModel(archive []byte, rootMode, gitMode string) (map[string]string, bool) {
	out := map[string]string{".": rootMode}
	if gitMode != "" {
		out[".git"] = gitMode
	}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, true
		}
		if err != nil {
			return nil, false
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		name := strings.TrimSuffix(path.Clean(h.Name), "/")
		if name == "." {
			continue
		}
		if name == ".git" || strings.HasPrefix(name, ".git/") {
			continue
		}
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if _, ok := out[d]; !ok {
				out[d] = "dir 0755"
			}
		}
		perm := h.Mode & 0o777
		switch h.Typeflag {
		case tar.TypeDir:
			out[name] = fmt.Sprintf("dir %04o", perm)
		case tar.TypeReg, tar.TypeGNUSparse, tar.TypeCont:
			b, err := io.ReadAll(tr)
			if err != nil {
				return nil, false
			}
			out[name] = fmt.Sprintf("file %04o %q", perm, b)
		case tar.TypeSymlink:
			out[name] = "symlink " + h.Linkname
		case tar.TypeLink:
			out[name] = out[path.Clean(h.Linkname)]
		default:
			return nil, false
		}
	}
}

// FuzzReplaceTree feeds ReplaceTree arbitrary bytes: whatever it is given,
// nothing outside the tree changes, no staging directory is left, and the
// tree is either unchanged or exactly what the archive lists.
func FuzzReplaceTree(f *testing.F) {
	reg := func(name, body string) taEntry { return taEntry{name: name, typ: tar.TypeReg, body: body} }
	f.Add(taTar(f, reg("a.txt", "a"), taEntry{name: "d/", typ: tar.TypeDir, mode: 0o700}, reg("d/b", "b")))
	f.Add(taTar(f, taEntry{name: "l", typ: tar.TypeSymlink, link: "../../outside"}, reg("l/x", "x")))
	f.Add(taTar(f, reg("../x", "x")))
	f.Add(taTar(f, reg("a", "a"), taEntry{name: "h", typ: tar.TypeLink, link: "a"}, taEntry{name: ".git/HEAD", typ: tar.TypeReg, body: "x"}))
	f.Add(taTar(f, reg(strings.Repeat("long/", 40)+"f", "deep")))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		fx := newTAFixture(t)
		before, outside, gitBefore := taState(t, fx.tree), taState(t, fx.outside), taState(t, fx.git)
		_, err := ReplaceTree(bytes.NewReader(data), fx.tree, ReplaceOptions{UID: -1, GID: -1, Limits: ArchiveLimits{MaxBytes: 1 << 20, MaxEntries: 1000}})
		taSameState(t, "the folder outside", taState(t, fx.outside), outside)
		taSameState(t, "the repository", taState(t, fx.git), gitBefore)
		taNoLeftovers(t, fx)
		got := taState(t, fx.tree)
		if err != nil {
			taSameState(t, "the tree after a refusal", got, before)
			return
		}
		want, ok := taModel(data, before["."], before[".git"])
		if !ok {
			t.Fatalf("ReplaceTree accepted an archive the model cannot read")
		}
		taSameState(t, "the tree against the archive's listing", got, want)
	})
}

// TestArchiveComps checks the lexical layer alone: the descriptor layer
// behind it refuses most of these too, so the archive tests pass with
// either one; this one fails without the name checks.
func TestArchiveComps(t *testing.T) {
	for _, c := range []struct {
		name string
		want string // components joined by "|", or "refused"
	}{
		{"a/b.txt", "a|b.txt"},
		{"./a//b/", "a|b"},
		{"./", ""},
		{".", ""},
		{"/etc/passwd", "refused"},
		{"../x", "refused"},
		{"a/../b", "refused"},
		{"a/..", "refused"},
		{"a\x00b", "refused"},
		{strings.Repeat("n", 256), "refused"},
		{strings.Repeat("a/", 2049), "refused"},
		{strings.Repeat("d/", maxDepth+1), "refused"},
		{strings.Repeat("d/", maxDepth), strings.TrimSuffix(strings.Repeat("d|", maxDepth), "|")},
	} {
		comps, err := archiveComps(c.name)
		got := strings.Join(comps, "|")
		if err != nil {
			got = "refused"
			if !errcode.IsCode(err, errcode.InvalidArgument) {
				t.Errorf("%q: err %v is not invalid_argument", c.name, err)
			}
		}
		if got != c.want {
			t.Errorf("archiveComps(%.40q) = %.60q, want %.60q", c.name, got, c.want)
		}
	}
}

// BenchmarkTreeArchive carries a tree of 2,000 files of 4 KiB in 100
// directories out and back (PackTree, then ReplaceTree of that archive
// over a tree of the same shape), beside GNU tar doing the same (create,
// then extract into an empty directory) on the same machine.
func BenchmarkTreeArchive(b *testing.B) {
	src := filepath.Join(b.TempDir(), "src")
	body := strings.Repeat("x", 4096)
	for i := range 2000 {
		taWrite(b, filepath.Join(src, fmt.Sprintf("d%03d", i%100), fmt.Sprintf("f%04d.txt", i)), body, 0o644)
	}
	b.Run("PackTree+ReplaceTree", func(b *testing.B) {
		f := newTAFixture(b)
		for b.Loop() {
			var buf bytes.Buffer
			if _, err := PackTree(&buf, src, ""); err != nil {
				b.Fatal(err)
			}
			if _, err := ReplaceTree(&buf, f.tree, taKeepOwner); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gnu-tar", func(b *testing.B) {
		if _, err := exec.LookPath("tar"); err != nil {
			b.Skip("GNU tar is not installed")
		}
		dir := b.TempDir()
		for i := 0; b.Loop(); i++ {
			out, err := exec.Command("tar", "-c", "-C", src, ".").Output()
			if err != nil {
				b.Fatal(err)
			}
			dst := filepath.Join(dir, fmt.Sprint(i))
			if err := os.Mkdir(dst, 0o755); err != nil {
				b.Fatal(err)
			}
			cmd := exec.Command("tar", "-x", "-C", dst)
			cmd.Stdin = bytes.NewReader(out)
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestReconcile_RemovesTreeLeftovers: start-up removes what a crash inside
// ReplaceTree left beside a workspace's tree, and nothing else.
func TestReconcile_RemovesTreeLeftovers(t *testing.T) {
	m := newManager(t, false)
	w, err := m.Create(t.Context(), CreateRequest{Source: Source{Kind: SourceFresh}})
	if err != nil {
		t.Fatal(err)
	}
	tree := m.treeDir(w.ID)
	taWrite(t, filepath.Join(tree, "kept.txt"), "kept", 0o644)
	leftover := tree + stageSuffix + "0123456789abcdef"
	taWrite(t, filepath.Join(leftover, "old", "f"), "old tree", 0o644)
	before := taState(t, filepath.Dir(tree))
	if _, err := m.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(leftover); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the leftover is still there: %v", err)
	}
	for p := range before {
		if strings.HasPrefix(p, filepath.Base(leftover)) {
			delete(before, p)
		}
	}
	taSameState(t, "the workspace directory", taState(t, filepath.Dir(tree)), before)
}

// TestRemoveAllAt_UnreadableDirectory: an archive may leave a directory
// with mode 0000; its owner, not root, must still be able to remove the
// old tree. The test drops to another file-system uid on one thread
// (which also drops CAP_DAC_OVERRIDE for it), as root.
func TestRemoveAllAt_UnreadableDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching the file-system uid needs root")
	}
	const uid = 65534
	base := filepath.Join(t.TempDir(), "base")
	taWrite(t, filepath.Join(base, "old", "locked", "inner", "f"), "x", 0o644)
	if err := filepath.WalkDir(base, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(base, "old", "locked"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(base), 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := openDirPath(base)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFD(fd)
	err = taAsUID(uid, func() error {
		if _, err := unix.Openat(fd, "old/locked", unix.O_RDONLY|unix.O_DIRECTORY, 0); !errors.Is(err, unix.EACCES) {
			return fmt.Errorf("opening the 0000 directory as uid %d: %v, want EACCES (the test does not test)", uid, err)
		}
		return removeAllAt(fd, "old")
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(base, "old")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the old tree is still there: %v", err)
	}
}

// taAsUID runs fn on a thread of its own whose file-system uid and gid are
// uid: the kernel checks permissions as that user, and drops the thread's
// CAP_DAC_OVERRIDE and CAP_FOWNER, as for a Sluice that is not root. fn
// must not start goroutines. The thread is never unlocked: it ends with
// its goroutine, so no other goroutine runs with the changed ids.
func taAsUID(uid int, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		unix.Setfsgid(uid)
		unix.Setfsuid(uid)
		errc <- fn()
	}()
	return <-errc
}

// TestReplaceTree_AsItsOwner extracts as the tree's owner rather than as
// root: a read-only directory listed before its files still gets them
// (modes are set last), and a later replace still removes a tree with a
// directory its owner cannot list (mode 0100).
func TestReplaceTree_AsItsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching the file-system uid needs root")
	}
	const uid = 65534
	f := newTAFixture(t)
	for _, d := range []string{filepath.Dir(f.dir), f.dir} { // t.TempDir's, 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := filepath.WalkDir(f.ws, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	}); err != nil {
		t.Fatal(err)
	}
	first := taTar(t,
		taEntry{name: "ro/", typ: tar.TypeDir, mode: 0o555},
		taEntry{name: "ro/f", typ: tar.TypeReg, body: "in a read-only dir", mode: 0o444},
		taEntry{name: "zero/", typ: tar.TypeDir, mode: 0o100},
		taEntry{name: "zero/sub/f", typ: tar.TypeReg, body: "in a dir its owner cannot list"},
	)
	second := taTar(t, taEntry{name: "new.txt", typ: tar.TypeReg, body: "new"})
	err := taAsUID(uid, func() error {
		if _, err := ReplaceTree(bytes.NewReader(first), f.tree, taKeepOwner); err != nil {
			return fmt.Errorf("first replace: %w", err)
		}
		if fd, err := unix.Open(filepath.Join(f.tree, "zero"), unix.O_RDONLY|unix.O_DIRECTORY, 0); !errors.Is(err, unix.EACCES) {
			closeFD(fd)
			return fmt.Errorf("opening zero/ as uid %d: %v, want EACCES (the test does not test)", uid, err)
		}
		if _, err := ReplaceTree(bytes.NewReader(second), f.tree, taKeepOwner); err != nil {
			return fmt.Errorf("second replace: %w", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	taSameState(t, "the tree", taState(t, f.tree), map[string]string{".": "dir 0755", ".git": "dir 0755", "new.txt": `file 0644 "new"`})
	taNoLeftovers(t, f)
}
