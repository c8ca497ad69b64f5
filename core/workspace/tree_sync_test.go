//go:build linux

package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
)

// tsTar archives dir the way the pod does (tar -c .: names "./a/b").
func tsTar(t testing.TB, dir string) []byte {
	t.Helper()
	out, err := exec.Command("tar", "-c", "-C", dir, ".").Output()
	if err != nil {
		t.Fatalf("tar: %v", err)
	}
	return out
}

// tsWithoutGit is a tree's state without its top-level .git.
func tsWithoutGit(st map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range st {
		if k != "." && k != ".git" && !strings.HasPrefix(k, ".git/") {
			out[k] = v
		}
	}
	return out
}

func tsGitOnly(st map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range st {
		if k == ".git" || strings.HasPrefix(k, ".git/") {
			out[k] = v
		}
	}
	return out
}

func tsSymlink(t testing.TB, target, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// tsScenario is a tree and the archive it is synced to, covering every
// kind of change.
func tsScenario(t *testing.T) (f taFixture, want string) {
	t.Helper()
	f = newTAFixture(t) // tree: old.txt, keep/same.txt, .git/
	tr := func(p string) string { return filepath.Join(f.tree, p) }
	taWrite(t, tr(".git/HEAD"), "ref: refs/heads/main\n", 0o644) // the repository mount: never touched
	taWrite(t, tr("changed.txt"), "old content\n", 0o644)
	taWrite(t, tr("samesize.txt"), "aaaa", 0o644)
	taWrite(t, tr("mode.sh"), "#!/bin/sh\n", 0o644)
	taWrite(t, tr("gone/deep/x.txt"), "x", 0o644)
	taWrite(t, tr("file-to-dir"), "was a file", 0o644)
	taWrite(t, tr("dir-to-file/inner.txt"), "was in a dir", 0o644)
	tsSymlink(t, "old.txt", tr("relink"))
	tsSymlink(t, f.outside, tr("out-link"))                             // becomes a directory: never written through
	tsSymlink(t, filepath.Join(f.outside, "secret"), tr("secret-link")) // becomes a file
	taWrite(t, tr("ro/inside.txt"), "before", 0o644)
	if err := os.Chmod(tr("ro"), 0o555); err != nil {
		t.Fatal(err)
	}

	want = filepath.Join(t.TempDir(), "want")
	w := func(p string) string { return filepath.Join(want, p) }
	taWrite(t, w("keep/same.txt"), "same\n", 0o644)
	taWrite(t, w("changed.txt"), "new content, longer\n", 0o644)
	taWrite(t, w("samesize.txt"), "bbbb", 0o644)
	taWrite(t, w("mode.sh"), "#!/bin/sh\n", 0o755)
	taWrite(t, w("added/sub/new.txt"), "new", 0o600)
	taWrite(t, w("file-to-dir/now.txt"), "a dir now", 0o644)
	taWrite(t, w("dir-to-file"), "a file now", 0o644)
	tsSymlink(t, "keep/same.txt", w("relink"))
	tsSymlink(t, "changed.txt", w("added/link"))
	taWrite(t, w("out-link/planted"), "in the tree, not outside", 0o644)
	taWrite(t, w("secret-link"), "not the secret", 0o644)
	taWrite(t, w("ro/inside.txt"), "after!", 0o644)
	if err := os.MkdirAll(w("empty"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(w("ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	// Same size, same mtime, other content: only the content tells.
	mt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, p := range []string{tr("samesize.txt"), w("samesize.txt")} {
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	// An archive's .git entries are ignored.
	taWrite(t, w(".git/HEAD"), "ref: refs/heads/evil\n", 0o644)
	taWrite(t, w(".git/hooks/post-checkout"), "#!/bin/sh\nevil\n", 0o755)
	return f, want
}

func TestSyncTree_MirrorsArchiveInPlace(t *testing.T) {
	f, want := tsScenario(t)
	inode := taInode(t, f.tree)
	gitBefore := tsGitOnly(taState(t, f.tree))
	outside := taState(t, f.outside)
	sameInode := taInode(t, filepath.Join(f.tree, "keep/same.txt"))
	archive := tsTar(t, want)

	st, err := SyncTree(bytes.NewReader(archive), f.tree, taKeepOwner)
	if err != nil {
		t.Fatalf("SyncTree: %v", err)
	}
	if got := taInode(t, f.tree); got != inode {
		t.Fatalf("the tree is another directory (inode %d, was %d)", got, inode)
	}
	taSameState(t, "the tree", tsWithoutGit(taState(t, f.tree)), tsWithoutGit(taState(t, want)))
	taSameState(t, "the tree's .git", tsGitOnly(taState(t, f.tree)), gitBefore)
	taSameState(t, "the folder outside", taState(t, f.outside), outside)
	taNoLeftovers(t, f)
	if got := taInode(t, filepath.Join(f.tree, "keep/same.txt")); got != sameInode {
		t.Fatal("an unchanged file was rewritten")
	}
	// Written: changed, samesize, mode.sh (mode only), added, added/sub,
	// added/sub/new.txt, added/link, file-to-dir (dir), file-to-dir/now.txt,
	// dir-to-file, relink, out-link (dir), out-link/planted, secret-link,
	// ro/inside.txt, empty = 16. Removed: old.txt, gone, file-to-dir,
	// dir-to-file, out-link = 5. Unchanged: keep/same.txt.
	if st.Written != 16 || st.Removed != 5 || st.Unchanged != 1 {
		t.Fatalf("stats %+v, want 16 written, 5 removed, 1 unchanged", st)
	}

	// The same archive again changes nothing.
	st, err = SyncTree(bytes.NewReader(archive), f.tree, taKeepOwner)
	if err != nil {
		t.Fatalf("second SyncTree: %v", err)
	}
	if st.Written != 0 || st.Removed != 0 || st.Unchanged != 12 {
		t.Fatalf("second sync: stats %+v, want 0 written, 0 removed, 12 unchanged", st)
	}
	taSameState(t, "the tree after the second sync", tsWithoutGit(taState(t, f.tree)), tsWithoutGit(taState(t, want)))
}

func TestSyncTree_RefusesUnsafeArchivesWhole(t *testing.T) {
	for _, c := range taRefusals() {
		t.Run(c.name, func(t *testing.T) {
			f := newTAFixture(t)
			before, outside, gitBefore := taState(t, f.tree), taState(t, f.outside), taState(t, f.git)
			inode := taInode(t, f.tree)
			_, err := SyncTree(bytes.NewReader(c.archive(t, f)), f.tree, ReplaceOptions{UID: -1, GID: -1, Limits: c.opt})
			if err == nil {
				t.Fatalf("the archive was accepted; tree now %v", taState(t, f.tree))
			}
			if !errcode.IsCode(err, errcode.InvalidArgument) || !errors.Is(err, c.is) {
				t.Fatalf("err = %v (code %s), want invalid_argument wrapping %v", err, errcode.Of(err), c.is)
			}
			if got := taInode(t, f.tree); got != inode {
				t.Fatalf("the tree is another directory (inode %d, was %d)", got, inode)
			}
			taSameState(t, "the tree", taState(t, f.tree), before)
			taSameState(t, "the folder outside", taState(t, f.outside), outside)
			taSameState(t, "the repository", taState(t, f.git), gitBefore)
			taNoLeftovers(t, f)
		})
	}
}

// TestSyncTree_CrashMidMirror: a sync stopped after any step leaves every
// file wholly old or wholly new, and the next sync removes the staging
// leftover and completes the tree.
func TestSyncTree_CrashMidMirror(t *testing.T) {
	for stop := 1; stop <= 20; stop += 3 {
		t.Run(fmt.Sprint(stop), func(t *testing.T) {
			f, want := tsScenario(t)
			old := taState(t, f.tree)
			archive := tsTar(t, want)
			n := 0
			syncHook = func() bool { n++; return n == stop }
			_, err := SyncTree(bytes.NewReader(archive), f.tree, taKeepOwner)
			syncHook = nil
			if !errors.Is(err, errSimulatedCrash) {
				t.Fatalf("err = %v, want the simulated crash", err)
			}
			newState := taState(t, want)
			for p, v := range taState(t, f.tree) {
				// Directories may be mid-way (made, or opened up, before
				// their mode is set); files and symlinks are old or new.
				if !strings.HasPrefix(v, "dir ") && v != old[p] && v != newState[p] {
					t.Errorf("%s is %s: neither old (%s) nor new (%s)", p, v, old[p], newState[p])
				}
			}
			if len(taSiblings(t, f.ws)) != 3 {
				t.Fatalf("want the staging leftover beside the tree, have %v", taSiblings(t, f.ws))
			}
			if _, err := SyncTree(bytes.NewReader(archive), f.tree, taKeepOwner); err != nil {
				t.Fatalf("SyncTree after the crash: %v", err)
			}
			taSameState(t, "the tree", tsWithoutGit(taState(t, f.tree)), tsWithoutGit(newState))
			taNoLeftovers(t, f)
		})
	}
}

// BenchmarkSyncTree: one sync of a tree where 10 files changed (an
// iteration flips between two archives that differ in those 10 files),
// beside ReplaceTree of the same archive and GNU tar extracting it into an
// empty directory, on the same machine.
func BenchmarkSyncTree(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		src := filepath.Join(b.TempDir(), "src")
		body := strings.Repeat("x", 2048)
		for i := range n {
			taWrite(b, filepath.Join(src, fmt.Sprintf("d%03d", i%100), fmt.Sprintf("f%05d.txt", i)), body, 0o644)
		}
		a := tsTar(b, src)
		for i := range 10 {
			taWrite(b, filepath.Join(src, fmt.Sprintf("d%03d", i%100), fmt.Sprintf("f%05d.txt", i)), strings.Repeat("y", 2048), 0o644)
		}
		bArchive := tsTar(b, src)
		b.Run(fmt.Sprintf("files=%d/SyncTree", n), func(b *testing.B) {
			f := newTAFixture(b)
			if _, err := SyncTree(bytes.NewReader(a), f.tree, taKeepOwner); err != nil {
				b.Fatal(err)
			}
			for i := 0; b.Loop(); i++ {
				next := bArchive
				if i%2 == 1 {
					next = a
				}
				st, err := SyncTree(bytes.NewReader(next), f.tree, taKeepOwner)
				if err != nil {
					b.Fatal(err)
				}
				if st.Written != 10 || st.Removed != 0 {
					b.Fatalf("stats %+v, want 10 written", st)
				}
			}
		})
		b.Run(fmt.Sprintf("files=%d/ReplaceTree", n), func(b *testing.B) {
			f := newTAFixture(b)
			for b.Loop() {
				if _, err := ReplaceTree(bytes.NewReader(bArchive), f.tree, taKeepOwner); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("files=%d/gnu-tar-x", n), func(b *testing.B) {
			dir := b.TempDir()
			for i := 0; b.Loop(); i++ {
				dst := filepath.Join(dir, fmt.Sprint(i))
				if err := os.Mkdir(dst, 0o755); err != nil {
					b.Fatal(err)
				}
				cmd := exec.Command("tar", "-x", "-C", dst)
				cmd.Stdin = bytes.NewReader(bArchive)
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
