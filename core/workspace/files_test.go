//go:build unix

package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
)

func freshWS(t *testing.T, m *Manager) *Workspace {
	t.Helper()
	w, err := m.Create(context.Background(), CreateRequest{Source: Source{Kind: SourceFresh}})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return w
}

func TestFiles_WriteReadEditListGlobGrep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, false)
	w := freshWS(t, m)

	res, err := m.WriteFile(ctx, w.ID, "pkg/deep/a.go", []byte("package deep\n\nfunc A() int { return 1 }\n"), 0)
	if err != nil || !res.Created {
		t.Fatalf("WriteFile: %+v %v", res, err)
	}
	if _, err := m.WriteFile(ctx, w.ID, "pkg/run.sh", []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := m.WriteFile(ctx, w.ID, "README.md", []byte("Read me: A() returns 1\n"), 0); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(m.treeDir(w.ID), "pkg", "run.sh"))
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("mode of run.sh: %v %v", st.Mode(), err)
	}
	if m.own.chown {
		if uid := fileUID(t, filepath.Join(m.treeDir(w.ID), "pkg", "deep", "a.go")); uid != m.own.uid {
			t.Fatalf("written file owned by %d, want the container user %d", uid, m.own.uid)
		}
	}

	fc, err := m.ReadFile(ctx, w.ID, "pkg/deep/a.go", ReadOptions{})
	if err != nil || !strings.Contains(fc.Content, "return 1") || fc.Truncated || fc.Binary {
		t.Fatalf("ReadFile: %+v %v", fc, err)
	}
	part, err := m.ReadFile(ctx, w.ID, "pkg/deep/a.go", ReadOptions{Offset: 8, Limit: 4})
	if err != nil || part.Content != "deep" || !part.Truncated || part.Size != int64(len("package deep\n\nfunc A() int { return 1 }\n")) {
		t.Fatalf("bounded read: %+v %v", part, err)
	}

	er, err := m.EditFile(ctx, w.ID, EditRequest{Path: "pkg/deep/a.go", Old: "return 1", New: "return 2"})
	if err != nil || er.Replaced != 1 {
		t.Fatalf("EditFile: %+v %v", er, err)
	}
	// A count that does not match changes nothing.
	_, err = m.EditFile(ctx, w.ID, EditRequest{Path: "pkg/deep/a.go", Old: "e", New: "E", Count: 1})
	if !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Fatalf("ambiguous edit: %v", err)
	}
	fc, _ = m.ReadFile(ctx, w.ID, "pkg/deep/a.go", ReadOptions{})
	if !strings.Contains(fc.Content, "return 2") || strings.Contains(fc.Content, "E") {
		t.Fatalf("after edits: %q", fc.Content)
	}
	if _, err := m.EditFile(ctx, w.ID, EditRequest{Path: "pkg/run.sh", Old: "hi", New: "ho"}); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(m.treeDir(w.ID), "pkg", "run.sh")); st.Mode().Perm() != 0o755 {
		t.Fatalf("edit lost the mode: %v", st.Mode())
	}

	ls, err := m.ListFiles(ctx, w.ID, "", ListOptions{})
	if err != nil || entryPaths(ls) != "README.md,pkg" {
		t.Fatalf("ListFiles: %v %v", entryPaths(ls), err)
	}
	ls, err = m.ListFiles(ctx, w.ID, "pkg", ListOptions{Recursive: true})
	if err != nil || entryPaths(ls) != "pkg/deep,pkg/deep/a.go,pkg/run.sh" {
		t.Fatalf("recursive ListFiles: %v %v", entryPaths(ls), err)
	}
	ls, err = m.ListFiles(ctx, w.ID, "", ListOptions{Recursive: true, Max: 2})
	if err != nil || len(ls.Entries) != 2 || !ls.Truncated {
		t.Fatalf("bounded ListFiles: %+v %v", ls, err)
	}

	gl, err := m.Glob(ctx, w.ID, "**/*.go", 0)
	if err != nil || entryPaths(gl) != "pkg/deep/a.go" {
		t.Fatalf("Glob **/*.go: %v %v", entryPaths(gl), err)
	}
	gl, err = m.Glob(ctx, w.ID, "pkg/*", 0)
	if err != nil || entryPaths(gl) != "pkg/deep,pkg/run.sh" {
		t.Fatalf("Glob pkg/*: %v %v", entryPaths(gl), err)
	}

	gr, err := m.Grep(ctx, w.ID, GrepRequest{Pattern: `A\(\)`})
	if err != nil || len(gr.Matches) != 2 {
		t.Fatalf("Grep: %+v %v", gr, err)
	}
	gr, err = m.Grep(ctx, w.ID, GrepRequest{Pattern: `return`, Glob: "**/*.go"})
	if err != nil || len(gr.Matches) != 1 || gr.Matches[0].Path != "pkg/deep/a.go" || gr.Matches[0].Line != 3 {
		t.Fatalf("Grep with glob: %+v %v", gr, err)
	}
	gr, err = m.Grep(ctx, w.ID, GrepRequest{Pattern: `.`, MaxMatches: 1})
	if err != nil || len(gr.Matches) != 1 || !gr.Truncated {
		t.Fatalf("bounded Grep: %+v %v", gr, err)
	}
}

func fileUID(t *testing.T, path string) int {
	t.Helper()
	fd, err := openDirPath(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	defer closeFD(fd)
	st, err := lstatAt(fd, filepath.Base(path))
	if err != nil {
		t.Fatal(err)
	}
	return st.uid
}

func entryPaths(l *Listing) string {
	if l == nil {
		return "<nil>"
	}
	var p []string
	for _, e := range l.Entries {
		p = append(p, e.Path)
	}
	return strings.Join(p, ",")
}

func TestFiles_PathsOutsideAreRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, false)
	w := freshWS(t, m)
	tree := m.treeDir(w.ID)
	outside := filepath.Join(t.TempDir(), "outside.txt")
	writeFile(t, outside, "OUTSIDE-SECRET\n")
	if err := os.Symlink(outside, filepath.Join(tree, "abs-link")); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(tree, outside)
	if err := os.Symlink(rel, filepath.Join(tree, "rel-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(tree, "dir-link")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tree, "inside.txt"), "inside\n")
	if err := os.Symlink("inside.txt", filepath.Join(tree, "in-link")); err != nil {
		t.Fatal(err)
	}

	for _, p := range []string{"../outside.txt", "a/../../outside.txt", "..", outside, "/etc/passwd", "abs-link", "rel-link", "dir-link/outside.txt"} {
		fc, err := m.ReadFile(ctx, w.ID, p, ReadOptions{})
		if !errors.Is(err, ErrPathOutside) {
			t.Errorf("ReadFile(%q) = %+v, %v; want ErrPathOutside", p, fc, err)
		}
		if err != nil && strings.Contains(err.Error(), filepath.Dir(outside)) {
			t.Errorf("ReadFile(%q) error names a host path: %v", p, err)
		}
	}
	for _, p := range []string{"../x", "/tmp/x", "dir-link/new.txt"} {
		if _, err := m.WriteFile(ctx, w.ID, p, []byte("x"), 0); !errors.Is(err, ErrPathOutside) {
			t.Errorf("WriteFile(%q): %v; want ErrPathOutside", p, err)
		}
	}
	// Writing to a symlink replaces neither the link nor its target.
	if _, err := m.WriteFile(ctx, w.ID, "abs-link", []byte("overwritten"), 0); err == nil {
		t.Errorf("WriteFile through a symlink succeeded")
	}
	if b, _ := os.ReadFile(outside); string(b) != "OUTSIDE-SECRET\n" {
		t.Fatalf("the outside file changed: %q", b)
	}
	if _, err := m.ListFiles(ctx, w.ID, "dir-link", ListOptions{}); !errors.Is(err, ErrPathOutside) {
		t.Errorf("ListFiles through a symlinked directory: %v", err)
	}
	if gr, err := m.Grep(ctx, w.ID, GrepRequest{Pattern: "OUTSIDE"}); err != nil {
		t.Fatal(err)
	} else if len(gr.Matches) != 0 {
		t.Errorf("Grep followed a symlink out: %+v", gr.Matches)
	}
	if _, err := m.ReadFile(ctx, w.ID, ".git/config", ReadOptions{}); !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Errorf(".git is not part of the files: %v", err)
	}
	if _, err := m.Glob(ctx, w.ID, "../*", 0); !errors.Is(err, ErrPathOutside) {
		t.Errorf("Glob ../*: %v", err)
	}
	// A symlink that stays inside is followed where the kernel can check
	// it atomically (openat2), refused otherwise.
	fc, err := m.ReadFile(ctx, w.ID, "in-link", ReadOptions{})
	if noOpenat2.Load() {
		if !errors.Is(err, ErrPathOutside) {
			t.Errorf("in-tree symlink without openat2: %v", err)
		}
	} else if err != nil || fc.Content != "inside\n" {
		t.Errorf("in-tree symlink: %+v %v", fc, err)
	}
}

// TestFiles_SymlinkSwapRace swaps a path between an inside file and a
// symlink to an outside file as fast as it can while reads run: no read
// may ever return the outside content, with openat2 or with the
// component-by-component fallback.
func TestFiles_SymlinkSwapRace(t *testing.T) {
	for _, mode := range []string{"openat2", "fallback"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "fallback" {
				noOpenat2.Store(true)
				defer noOpenat2.Store(false)
			}
			ctx := context.Background()
			m := newManager(t, false)
			w := freshWS(t, m)
			tree := m.treeDir(w.ID)
			outsideDir := t.TempDir()
			writeFile(t, filepath.Join(outsideDir, "f"), "OUTSIDE-SECRET")
			writeFile(t, filepath.Join(tree, "real", "f"), "inside")
			// Two shapes: the file itself, and a parent directory swapped.
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				link := filepath.Join(tree, "swap.tmp")
				dirLink := filepath.Join(tree, "dswap.tmp")
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					os.Remove(link)
					os.Remove(dirLink)
					if i%2 == 0 {
						os.Symlink(filepath.Join(outsideDir, "f"), link)
						os.Symlink(outsideDir, dirLink)
					} else {
						os.Link(filepath.Join(tree, "real", "f"), link)
						os.Symlink("real", dirLink)
					}
					os.Rename(link, filepath.Join(tree, "swap"))
					os.Rename(dirLink, filepath.Join(tree, "dswap"))
				}
			}()
			var reads, insides atomic.Int64
			deadline := time.Now().Add(1500 * time.Millisecond)
			for time.Now().Before(deadline) {
				for _, p := range []string{"swap", "dswap/f"} {
					fc, err := m.ReadFile(ctx, w.ID, p, ReadOptions{})
					reads.Add(1)
					if err == nil {
						if strings.Contains(fc.Content, "OUTSIDE") {
							close(stop)
							wg.Wait()
							t.Fatalf("read of %s returned the outside file", p)
						}
						insides.Add(1)
					}
				}
			}
			close(stop)
			wg.Wait()
			if reads.Load() < 100 {
				t.Fatalf("only %d reads raced", reads.Load())
			}
			t.Logf("%d reads, %d returned the inside file, none the outside one", reads.Load(), insides.Load())
		})
	}
}

func TestFiles_LockedWhileBusy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, false)
	w := freshWS(t, m)
	unlock, err := m.lockWS(w.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.WriteFile(ctx, w.ID, "a", []byte("x"), 0); !errors.Is(err, ErrLocked) || errcode.Of(err) != errcode.WorkspaceLocked {
		t.Fatalf("write while locked: %v", err)
	}
	if _, err := m.ReadFile(ctx, w.ID, "a", ReadOptions{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("read while exclusively locked: %v", err)
	}
	unlock()
	// Reads share.
	unlock, _ = m.lockWS(w.ID, false)
	if _, err := m.ListFiles(ctx, w.ID, "", ListOptions{}); err != nil {
		t.Fatalf("read beside a read: %v", err)
	}
	if _, err := m.WriteFile(ctx, w.ID, "a", []byte("x"), 0); !errors.Is(err, ErrLocked) {
		t.Fatalf("write beside a read: %v", err)
	}
	unlock()
	if _, err := m.WriteFile(ctx, w.ID, "a", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
}

func TestStore_IDsAndMetadata(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, false)
	for _, id := range []string{"", "../x", "a/b", "a b", strings.Repeat("a", 129), ".hidden"} {
		if id == "" {
			continue // empty generates an id
		}
		if _, err := m.Create(ctx, CreateRequest{ID: id, Source: Source{Kind: SourceFresh}}); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Create id %q: %v", id, err)
		}
		if _, err := m.Get(id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Get id %q: %v", id, err)
		}
	}
	w, err := m.Create(ctx, CreateRequest{ID: "ws_1-A", Source: Source{Kind: SourceFresh}, Agent: "claude code\n<x>"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, CreateRequest{ID: "ws_1-A", Source: Source{Kind: SourceFresh}}); !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Fatalf("duplicate id: %v", err)
	}
	got, err := m.Get("ws_1-A")
	if err != nil || got.State != StateReady || got.Agent != "claudecodex" || got.ExpiresAt().IsZero() {
		t.Fatalf("Get: %+v %v", got, err)
	}
	st, err := os.Stat(m.metaPath(w.ID))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("meta.json mode: %v %v", st, err)
	}
	if _, err := m.Get("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get unknown: %v", err)
	}
}

// TestFiles_GitMetadataPathsAreRefused: the file tools refuse every path
// that core/gitpath says names git metadata, as proposals do, and write
// nothing.
func TestFiles_GitMetadataPathsAreRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, false)
	w := freshWS(t, m)
	tree := m.treeDir(w.ID)
	for _, p := range []string{".GIT/config", ".Git/hooks/pre-commit", "sub/.git/config", "a/.GIT/HEAD", ".git./config", "GIT~1/config", "x/.git::$INDEX_ALLOCATION/y"} {
		if _, err := m.WriteFile(ctx, w.ID, p, []byte("[core]\n\thooksPath = /tmp\n"), 0); !errcode.IsCode(err, errcode.InvalidArgument) {
			t.Errorf("WriteFile(%q): %v; want invalid_argument", p, err)
		}
		if _, err := m.EditFile(ctx, w.ID, EditRequest{Path: p, Old: "a", New: "b"}); !errcode.IsCode(err, errcode.InvalidArgument) {
			t.Errorf("EditFile(%q): %v; want invalid_argument", p, err)
		}
		if _, err := m.ReadFile(ctx, w.ID, p, ReadOptions{}); !errcode.IsCode(err, errcode.InvalidArgument) {
			t.Errorf("ReadFile(%q): %v; want invalid_argument", p, err)
		}
		first := strings.Split(p, "/")[0]
		if _, err := os.Lstat(filepath.Join(tree, first)); err == nil {
			t.Errorf("WriteFile(%q) left %s in the tree", p, first)
		}
	}
	if _, err := m.WriteFile(ctx, w.ID, ".github/x.yml", []byte("ok\n"), 0); err != nil {
		t.Errorf("a .github path is not git metadata: %v", err)
	}
}
