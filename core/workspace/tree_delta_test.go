//go:build linux

package workspace

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
)

var podTreeBin struct {
	once sync.Once
	path string
	err  error
}

// tdBinary is sluice-sidecar built from this checkout, once per test
// binary: the pod's end of the delta is the real command.
func tdBinary(t testing.TB) string {
	t.Helper()
	podTreeBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-pod-tree-")
		if err != nil {
			podTreeBin.err = err
			return
		}
		podTreeBin.path = filepath.Join(dir, "sluice-sidecar")
		cmd := exec.Command("go", "build", "-o", podTreeBin.path, "github.com/sluicehq/sluice/sidecar/cmd/sluice-sidecar")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			podTreeBin.err = errors.New(string(out))
		}
	})
	if podTreeBin.err != nil {
		t.Fatal(podTreeBin.err)
	}
	return podTreeBin.path
}

// tdPodTree runs `sluice-sidecar pod-tree --root root` with prev on stdin
// and returns its archive.
func tdPodTree(t testing.TB, root string, prev []byte) []byte {
	t.Helper()
	cmd := exec.Command(tdBinary(t), "pod-tree", "--root", root)
	cmd.Stdin = bytes.NewReader(prev)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pod-tree: %v: %s", err, errb.String())
	}
	return out
}

// tdEntries lists an archive's entry names after its manifest.
func tdEntries(t testing.TB, archive []byte) []string {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(archive))
	var names []string
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if h.Name != TreeManifestName {
				t.Fatalf("the first entry is %q, not the manifest", h.Name)
			}
			continue
		}
		names = append(names, h.Name)
	}
	sort.Strings(names)
	return names
}

// tdSettle waits until every ctime below root is older than the racy
// margin: an entry changed within it is sent again on the next read by
// design, which would make the entry counts below vary.
func tdSettle(t testing.TB, root string) {
	t.Helper()
	var latest int64
	_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil {
			if c := info.Sys().(*syscall.Stat_t).Ctim.Nano(); c > latest {
				latest = c
			}
		}
		return nil
	})
	for time.Now().UnixNano() <= latest+racyNs {
		time.Sleep(time.Duration(latest + racyNs + 1e6 - time.Now().UnixNano()))
	}
}

// tdPod is a pod's tree with a repository beside its files.
func tdPod(t testing.TB) string {
	t.Helper()
	pod := filepath.Join(t.TempDir(), "pod")
	taWrite(t, filepath.Join(pod, ".git", "HEAD"), "ref: refs/heads/pod\n", 0o644)
	taWrite(t, filepath.Join(pod, "a.txt"), "alpha\n", 0o644)
	taWrite(t, filepath.Join(pod, "b.txt"), "bravo\n", 0o644)
	taWrite(t, filepath.Join(pod, "c.txt"), "charlie\n", 0o644)
	taWrite(t, filepath.Join(pod, "d", "one.txt"), "one", 0o600)
	taWrite(t, filepath.Join(pod, "x"), "a file, then a directory", 0o644)
	taWrite(t, filepath.Join(pod, "y", "in.txt"), "a directory, then a file", 0o644)
	taWrite(t, filepath.Join(pod, "sub", "keep.txt"), "kept", 0o644)
	taWrite(t, filepath.Join(pod, "src", "main.go"), "package main\n", 0o755)
	taWrite(t, filepath.Join(pod, "ro", "f.txt"), "in a read-only dir", 0o644)
	tsSymlink(t, "a.txt", filepath.Join(pod, "ln"))
	mt := time.Date(2020, 1, 2, 3, 4, 5, 0, time.Local)
	if err := os.Chtimes(filepath.Join(pod, "b.txt"), mt, mt); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(pod, "empty"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(pod, "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	return pod
}

// A first read from no manifest carries the whole tree, and the host
// tree ends as SyncTree leaves it from a tar of the same tree.
func TestSyncTreeDelta_FirstSyncEqualsSyncTree(t *testing.T) {
	pod := tdPod(t)
	f := newTAFixture(t) // the host tree: old.txt, keep/same.txt, .git/
	taWrite(t, filepath.Join(f.tree, ".git", "HEAD"), "ref: refs/heads/host\n", 0o644)
	g := newTAFixture(t)
	gitBefore := tsGitOnly(taState(t, f.tree))
	inode := taInode(t, f.tree)

	archive := tdPodTree(t, pod, nil)
	next, st, err := SyncTreeDelta(bytes.NewReader(archive), f.tree, nil, taKeepOwner)
	if err != nil {
		t.Fatalf("SyncTreeDelta: %v", err)
	}
	if _, err := SyncTree(bytes.NewReader(tsTar(t, pod)), g.tree, taKeepOwner); err != nil {
		t.Fatalf("SyncTree: %v", err)
	}
	taSameState(t, "the delta-synced tree", tsWithoutGit(taState(t, f.tree)), tsWithoutGit(taState(t, g.tree)))
	taSameState(t, "the delta-synced tree against the pod", tsWithoutGit(taState(t, f.tree)), tsWithoutGit(taState(t, pod)))
	taSameState(t, "the tree's .git", tsGitOnly(taState(t, f.tree)), gitBefore)
	if got := taInode(t, f.tree); got != inode {
		t.Fatalf("the tree is another directory (inode %d, was %d)", got, inode)
	}
	taNoLeftovers(t, f)
	m, err := ParseTreeManifest(next, 0)
	if err != nil {
		t.Fatalf("the returned manifest: %v", err)
	}
	if want := len(tsWithoutGit(taState(t, pod))); len(m.Records) != want {
		t.Fatalf("the manifest lists %d paths, the pod has %d", len(m.Records), want)
	}
	if st.Removed != 2 || st.Unchanged != 0 {
		t.Fatalf("stats %+v, want old.txt and keep removed, nothing unchanged", st)
	}
}

// Each kind of change travels alone: the archive holds the manifest and
// the changed entries only (a directory whose entries changed among
// them), and the host tree ends equal to the pod's.
func TestSyncTreeDelta_EachChangeTravelsAlone(t *testing.T) {
	pod := tdPod(t)
	f := newTAFixture(t)
	taWrite(t, filepath.Join(f.tree, ".git", "HEAD"), "ref: refs/heads/host\n", 0o644)
	gitBefore := tsGitOnly(taState(t, f.tree))
	p := func(rel string) string { return filepath.Join(pod, rel) }
	tdSettle(t, pod)
	next, _, err := SyncTreeDelta(bytes.NewReader(tdPodTree(t, pod, nil)), f.tree, nil, taKeepOwner)
	if err != nil {
		t.Fatalf("first SyncTreeDelta: %v", err)
	}
	run := func(t *testing.T, cmd ...string) {
		t.Helper()
		c := exec.Command(cmd[0], cmd[1:]...)
		c.Dir = pod
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", cmd, err, out)
		}
	}
	cases := []struct {
		name   string
		change func(t *testing.T)
		sent   []string
	}{
		{"unchanged", func(*testing.T) {}, nil},
		{"add", func(t *testing.T) { taWrite(t, p("d/new.txt"), "new", 0o644) }, []string{"d/", "d/new.txt"}},
		{"modify same size and mtime", func(t *testing.T) {
			run(t, "sh", "-c", "touch -r a.txt /tmp/.sluice-td-ref-$$ && printf 'ALPHA\\n' > a.txt && touch -r /tmp/.sluice-td-ref-$$ a.txt && rm /tmp/.sluice-td-ref-$$")
		}, []string{"a.txt"}},
		{"modify same size, mtime forced back by touch -d", func(t *testing.T) {
			run(t, "sh", "-c", "printf 'BRAVO\\n' > b.txt && touch -d '2020-01-02 03:04:05' b.txt")
		}, []string{"b.txt"}},
		{"remove", func(t *testing.T) { run(t, "rm", "d/new.txt") }, []string{"d/"}},
		{"file to directory", func(t *testing.T) {
			run(t, "rm", "x")
			taWrite(t, p("x/in.txt"), "now inside", 0o644)
		}, []string{"x/", "x/in.txt"}},
		{"directory to file", func(t *testing.T) {
			run(t, "rm", "-r", "y")
			taWrite(t, p("y"), "now a file", 0o644)
		}, []string{"y"}},
		{"symlink retarget", func(t *testing.T) { run(t, "ln", "-sfn", "b.txt", "ln") }, []string{"ln"}},
		{"chmod", func(t *testing.T) { run(t, "chmod", "0755", "c.txt") }, []string{"c.txt"}},
		{"rename", func(t *testing.T) { run(t, "mv", "c.txt", "sub/c2.txt") }, []string{"sub/", "sub/c2.txt"}},
		{"a file in a read-only directory", func(t *testing.T) { run(t, "sh", "-c", "printf changed > ro/f.txt") }, []string{"ro/f.txt"}},
		{"the pod's repository", func(t *testing.T) { taWrite(t, p(".git/refs/heads/x"), "0000\n", 0o644) }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.change(t)
			tdSettle(t, pod)
			archive := tdPodTree(t, pod, next)
			if got := tdEntries(t, archive); strings.Join(got, ",") != strings.Join(c.sent, ",") {
				t.Fatalf("the archive carries %q, want %q", got, c.sent)
			}
			n, st, err := SyncTreeDelta(bytes.NewReader(archive), f.tree, next, taKeepOwner)
			if err != nil {
				t.Fatalf("SyncTreeDelta: %v", err)
			}
			next = n
			taSameState(t, "the tree", tsWithoutGit(taState(t, f.tree)), tsWithoutGit(taState(t, pod)))
			taSameState(t, "the tree's .git", tsGitOnly(taState(t, f.tree)), gitBefore)
			taNoLeftovers(t, f)
			if c.sent == nil && (st.Written != 0 || st.Removed != 0) {
				t.Fatalf("nothing changed, yet stats %+v", st)
			}
		})
	}
}

// tdManifest is a manifest's text from records given as lines.
func tdManifest(lines ...string) string {
	return "sluice-tree-manifest 1 1000\n" + strings.Join(lines, "")
}

func tdRec(typ byte, mode uint32, size int64, path string) string {
	return string(AppendTreeRecord(nil, TreeRecord{Path: path, Type: typ, Mode: mode, Size: size, Ino: 7, CtimeNs: 5e9, MtimeNs: 5e9}))
}

// A hostile manifest or entry refuses the whole archive: the tree, its
// .git and what lies outside are as they were, and nothing is left
// beside the tree.
func TestSyncTreeDelta_RefusesHostileArchivesWhole(t *testing.T) {
	man := func(body string) taEntry { return taEntry{name: TreeManifestName, typ: tar.TypeReg, body: body} }
	good := man(tdManifest(tdRec('f', 0o644, 1, "a"), tdRec('d', 0o755, 0, "d"), tdRec('l', 0o777, 0, "d/l")))
	cases := []struct {
		name    string
		entries []taEntry
		is      error
		opt     ArchiveLimits
	}{
		{"no manifest first", []taEntry{{name: "a", typ: tar.TypeReg, body: "x"}}, ErrArchiveUnsafe, ArchiveLimits{}},
		{"manifest not a file", []taEntry{{name: TreeManifestName, typ: tar.TypeSymlink, link: "/etc/passwd"}}, ErrArchiveUnsafe, ArchiveLimits{}},
		{"manifest of another version", []taEntry{man("sluice-tree-manifest 2 0\n")}, ErrArchiveUnsafe, ArchiveLimits{}},
		{"manifest with ..", []taEntry{man(tdManifest(tdRec('f', 0o644, 1, "../escape")))}, ErrArchiveUnsafe, ArchiveLimits{}},
		{"manifest with an absolute path", []taEntry{man(tdManifest(tdRec('f', 0o644, 1, "/etc/passwd")))}, ErrArchiveUnsafe, ArchiveLimits{}},
		{"manifest with an unclean path", []taEntry{man(tdManifest(tdRec('f', 0o644, 1, "./a//b")))}, ErrArchiveUnsafe, ArchiveLimits{}},
		{"manifest naming .git", []taEntry{man(tdManifest(tdRec('d', 0o755, 0, ".git"), tdRec('f', 0o755, 1, ".git/config")))}, ErrArchiveUnsafe, ArchiveLimits{}},
		{"manifest naming a path twice", []taEntry{man(tdManifest(tdRec('f', 0o644, 1, "a"), tdRec('f', 0o644, 1, "a")))}, ErrArchiveUnsafe, ArchiveLimits{}},
		{"manifest with a path below a symlink", []taEntry{man(tdManifest(tdRec('l', 0o777, 0, "l"), tdRec('f', 0o644, 1, "l/x")))}, ErrArchiveUnsafe, ArchiveLimits{}},
		{"manifest with a NUL", []taEntry{man(tdManifest(tdRec('f', 0o644, 1, "a\x00b")))}, ErrArchiveUnsafe, ArchiveLimits{}},
		{"manifest with a bad record", []taEntry{man(tdManifest("f 644 1 2 3 \"a\"\n"))}, ErrArchiveUnsafe, ArchiveLimits{}},
		{"manifest over the entry limit", []taEntry{man(tdManifest(tdRec('f', 0o644, 1, "a"), tdRec('f', 0o644, 1, "b"), tdRec('f', 0o644, 1, "c")))}, ErrArchiveLimit, ArchiveLimits{MaxEntries: 2}},
		{"entry not in the manifest", []taEntry{good, {name: "a", typ: tar.TypeReg, body: "x"}, {name: "planted", typ: tar.TypeReg, body: "x"}}, ErrArchiveUnsafe, ArchiveLimits{}},
		{"entry under .git", []taEntry{good, {name: ".git/hooks/post-checkout", typ: tar.TypeReg, body: "evil", mode: 0o755}}, ErrArchiveUnsafe, ArchiveLimits{}},
		{"entry of another type", []taEntry{good, {name: "a", typ: tar.TypeSymlink, link: "/etc/passwd"}}, ErrArchiveUnsafe, ArchiveLimits{}},
		{"entry twice", []taEntry{good, {name: "a", typ: tar.TypeReg, body: "x"}, {name: "./a", typ: tar.TypeReg, body: "y"}}, ErrArchiveUnsafe, ArchiveLimits{}},
		{"hard link entry", []taEntry{good, {name: "a", typ: tar.TypeLink, link: "keep/same.txt"}}, ErrArchiveUnsafe, ArchiveLimits{}},
		{"entry over the byte limit", []taEntry{good, {name: "a", typ: tar.TypeReg, body: "0123456789"}}, ErrArchiveLimit, ArchiveLimits{MaxBytes: 5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newTAFixture(t)
			before, outside := taState(t, f.tree), taState(t, f.outside)
			_, _, err := SyncTreeDelta(bytes.NewReader(taTar(t, c.entries...)), f.tree, nil, ReplaceOptions{UID: -1, GID: -1, Limits: c.opt})
			if !errcode.IsCode(err, errcode.InvalidArgument) || !errors.Is(err, c.is) {
				t.Fatalf("err = %v (code %s), want invalid_argument wrapping %v", err, errcode.Of(err), c.is)
			}
			taSameState(t, "the tree", taState(t, f.tree), before)
			taSameState(t, "the folder outside", taState(t, f.outside), outside)
			taNoLeftovers(t, f)
		})
	}
	t.Run("truncated", func(t *testing.T) {
		f := newTAFixture(t)
		before := taState(t, f.tree)
		archive := taTar(t, good, taEntry{name: "a", typ: tar.TypeReg, body: "x"})
		_, _, err := SyncTreeDelta(bytes.NewReader(archive[:len(archive)-1024]), f.tree, nil, taKeepOwner)
		if !errors.Is(err, ErrArchiveTruncated) {
			t.Fatalf("err = %v, want a truncated archive", err)
		}
		taSameState(t, "the tree", taState(t, f.tree), before)
		taNoLeftovers(t, f)
	})
}

// When the archive says a path is unchanged and the host tree does not
// hold it as the previous manifest said, SyncTreeDelta changes nothing
// and says Conflict; a full SyncTree then sets the tree right.
func TestSyncTreeDelta_DisagreementIsConflict(t *testing.T) {
	cases := []struct {
		name string
		host func(t *testing.T, tree string)
		prev func(prev []byte) []byte
	}{
		{"missing here", func(t *testing.T, tree string) { os.Remove(filepath.Join(tree, "b.txt")) }, nil},
		{"another type here", func(t *testing.T, tree string) {
			os.Remove(filepath.Join(tree, "b.txt"))
			taWrite(t, filepath.Join(tree, "b.txt", "inner"), "x", 0o644)
		}, nil},
		{"another size here", func(t *testing.T, tree string) { taWrite(t, filepath.Join(tree, "b.txt"), "longer than it was", 0o644) }, nil},
		{"a directory a symlink here", func(t *testing.T, tree string) {
			outside := t.TempDir()
			os.RemoveAll(filepath.Join(tree, "sub"))
			tsSymlink(t, outside, filepath.Join(tree, "sub"))
		}, nil},
		{"no previous manifest", nil, func([]byte) []byte { return nil }},
		{"another previous manifest", nil, func(prev []byte) []byte {
			m, err := ParseTreeManifest(prev, 0)
			if err != nil {
				panic(err)
			}
			for i := range m.Records {
				if m.Records[i].Path == "b.txt" {
					m.Records[i].Ino++
				}
			}
			return m.Marshal()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := tdPod(t)
			f := newTAFixture(t)
			tdSettle(t, pod)
			prev, _, err := SyncTreeDelta(bytes.NewReader(tdPodTree(t, pod, nil)), f.tree, nil, taKeepOwner)
			if err != nil {
				t.Fatalf("first SyncTreeDelta: %v", err)
			}
			// A change in the pod that must not land, and a disagreement.
			taWrite(t, filepath.Join(pod, "d", "pending.txt"), "pending", 0o644)
			taWrite(t, filepath.Join(pod, "sub", "new.txt"), "new", 0o644)
			if c.host != nil {
				c.host(t, f.tree)
			}
			tdSettle(t, pod)
			archive := tdPodTree(t, pod, prev)
			if c.prev != nil {
				prev = c.prev(prev)
			}
			before := taState(t, f.tree)
			next, _, err := SyncTreeDelta(bytes.NewReader(archive), f.tree, prev, taKeepOwner)
			if !errcode.IsCode(err, errcode.Conflict) || !errors.Is(err, ErrTreeDisagrees) || next != nil {
				t.Fatalf("err = %v (code %s), next %d bytes; want a conflict wrapping ErrTreeDisagrees", err, errcode.Of(err), len(next))
			}
			taSameState(t, "the tree", taState(t, f.tree), before)
			taNoLeftovers(t, f)
			if _, err := SyncTree(bytes.NewReader(tsTar(t, pod)), f.tree, taKeepOwner); err != nil {
				t.Fatalf("SyncTree: %v", err)
			}
			taSameState(t, "the tree after SyncTree", tsWithoutGit(taState(t, f.tree)), tsWithoutGit(taState(t, pod)))
		})
	}
}

// A crash at any step of the mirroring leaves files wholly old or new;
// the next SyncTreeDelta from the same previous manifest completes the
// tree.
func TestSyncTreeDelta_CrashMidApplyCompletesNextTime(t *testing.T) {
	for stop := 1; stop <= 7; stop += 2 {
		t.Run(string(rune('0'+stop)), func(t *testing.T) {
			pod := tdPod(t)
			f := newTAFixture(t)
			tdSettle(t, pod)
			prev, _, err := SyncTreeDelta(bytes.NewReader(tdPodTree(t, pod, nil)), f.tree, nil, taKeepOwner)
			if err != nil {
				t.Fatal(err)
			}
			old := taState(t, f.tree)
			os.Remove(filepath.Join(pod, "x"))
			taWrite(t, filepath.Join(pod, "x", "in.txt"), "in", 0o644)
			taWrite(t, filepath.Join(pod, "a.txt"), "changed a\n", 0o644)
			taWrite(t, filepath.Join(pod, "new", "n.txt"), "n", 0o644)
			os.RemoveAll(filepath.Join(pod, "y"))
			tdSettle(t, pod)
			archive := tdPodTree(t, pod, prev)
			n := 0
			syncHook = func() bool { n++; return n == stop }
			_, _, err = SyncTreeDelta(bytes.NewReader(archive), f.tree, prev, taKeepOwner)
			syncHook = nil
			if !errors.Is(err, errSimulatedCrash) {
				t.Fatalf("err = %v, want the simulated crash", err)
			}
			newState := tsWithoutGit(taState(t, pod))
			for p, v := range taState(t, f.tree) {
				if !strings.HasPrefix(v, "dir ") && v != old[p] && v != newState[p] {
					t.Fatalf("%s is %q: neither old (%q) nor new (%q)", p, v, old[p], newState[p])
				}
			}
			if _, _, err := SyncTreeDelta(bytes.NewReader(tdPodTree(t, pod, prev)), f.tree, prev, taKeepOwner); err != nil {
				t.Fatalf("the next SyncTreeDelta: %v", err)
			}
			taSameState(t, "the tree", tsWithoutGit(taState(t, f.tree)), newState)
			taNoLeftovers(t, f)
		})
	}
}

// A whole read (no previous manifest, as after a disagreement) of a tree
// the host already has rewrites nothing: content is compared, as SyncTree
// does, and every file keeps its inode.
func TestSyncTreeDelta_WholeReadOfSameTreeRewritesNothing(t *testing.T) {
	pod := tdPod(t)
	f := newTAFixture(t)
	if _, _, err := SyncTreeDelta(bytes.NewReader(tdPodTree(t, pod, nil)), f.tree, nil, taKeepOwner); err != nil {
		t.Fatalf("first SyncTreeDelta: %v", err)
	}
	inode := taInode(t, filepath.Join(f.tree, "a.txt"))
	if err := os.Chmod(filepath.Join(f.tree, "b.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, st, err := SyncTreeDelta(bytes.NewReader(tdPodTree(t, pod, nil)), f.tree, nil, taKeepOwner)
	if err != nil {
		t.Fatalf("second SyncTreeDelta: %v", err)
	}
	// 9 files and 1 symlink in the pod; b.txt's mode alone is set.
	if st.Written != 1 || st.Removed != 0 || st.Unchanged != 9 {
		t.Fatalf("stats %+v, want 1 written (b.txt's mode), 0 removed, 9 unchanged", st)
	}
	if got := taInode(t, filepath.Join(f.tree, "a.txt")); got != inode {
		t.Fatal("an unchanged file was rewritten")
	}
	taSameState(t, "the tree", tsWithoutGit(taState(t, f.tree)), tsWithoutGit(taState(t, pod)))
}
