//go:build linux

package kube

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/workspace"
)

// homeFixture is a confined HOME on the host and, standing for the pod's,
// a directory it was copied into as a session's pod gets it: packed by
// packSession's packDir, extracted by tar, its baseline taken by the real
// `sluice-sidecar pod-tree --manifest-only`.
type homeFixture struct {
	host, pod string
	in        map[string]homeRecord
	base      []byte
	kept      []string
}

func newHomeFixture(t *testing.T, files map[string]string) *homeFixture {
	t.Helper()
	host := filepath.Join(t.TempDir(), "homes", "agent")
	if err := os.MkdirAll(host, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, host, files)
	return newHomeFixtureFrom(t, host)
}

func newHomeFixtureFrom(t *testing.T, host string) *homeFixture {
	t.Helper()
	f := &homeFixture{host: host, in: map[string]homeRecord{}}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := packDir(tw, f.host, "home", f.in); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	podParent := t.TempDir()
	f.pod = filepath.Join(podParent, "home")
	if err := os.Mkdir(f.pod, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("tar", "-x", "-f", "-", "-C", podParent)
	cmd.Stdin = &buf
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	d, err := readHomeArchive(bytes.NewReader(podTreeLocal(t, f.pod, nil, true)), nil, defaultHomeLimits)
	if err != nil {
		t.Fatal(err)
	}
	f.base = d.man.Marshal()
	return f
}

// podTreeLocal runs the real pod-tree on dir.
func podTreeLocal(t *testing.T, dir string, prev []byte, manifestOnly bool) []byte {
	t.Helper()
	args := []string{"pod-tree", "--root", dir}
	if manifestOnly {
		args = append(args, "--manifest-only")
	}
	cmd := exec.Command(sidecarBinary(t), args...)
	cmd.Stdin = bytes.NewReader(prev)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("pod-tree: %v %s", err, errOut.String())
	}
	return out.Bytes()
}

// back carries the pod's HOME back, from archive (nil: pod-tree's of the
// pod directory against the baseline).
func (f *homeFixture) back(t *testing.T, archive []byte, lim homeLimits) (int, int, error) {
	t.Helper()
	if archive == nil {
		archive = podTreeLocal(t, f.pod, f.base, false)
	}
	return backHome(context.Background(), f.host, f.in, f.base, lim,
		func(read func(io.Reader) error) error { return read(bytes.NewReader(archive)) },
		func(p, why string) { f.kept = append(f.kept, p) })
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustAbsent(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s is still there (%v)", p, err)
	}
}

// TestHomeBack_ThreeWay: what the agent added, changed and removed in the
// pod's HOME comes to the host's; what another session changed meanwhile
// on the host stays, where the agent changed it too.
func TestHomeBack_ThreeWay(t *testing.T) {
	f := newHomeFixture(t, map[string]string{
		"keep.txt": "keep\n", "changed.txt": "old\n", "removed.txt": "bye\n", "both.txt": "old\n",
		"removed-changed.txt": "old\n", "gone/x.txt": "x\n", ".claude/settings.json": "{}\n",
	})
	// The agent, in the pod.
	writeFiles(t, f.pod, map[string]string{
		"added.txt": "new\n", "newdir/n.txt": "n\n", "changed.txt": "agent\n", "both.txt": "agent\n",
		".claude/history.jsonl": "{\"q\":1}\n",
	})
	for _, p := range []string{"removed.txt", "removed-changed.txt"} {
		if err := os.Remove(filepath.Join(f.pod, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(filepath.Join(f.pod, "gone")); err != nil {
		t.Fatal(err)
	}
	// Another session, on the host, meanwhile.
	writeFiles(t, f.host, map[string]string{"both.txt": "other\n", "removed-changed.txt": "other\n", "other.txt": "other\n"})

	applied, kept, err := f.back(t, nil, defaultHomeLimits)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		"added.txt": "new\n", "newdir/n.txt": "n\n", "changed.txt": "agent\n", ".claude/history.jsonl": "{\"q\":1}\n",
		"keep.txt": "keep\n", ".claude/settings.json": "{}\n",
		// The host's, kept.
		"both.txt": "other\n", "removed-changed.txt": "other\n", "other.txt": "other\n",
	} {
		if got := readString(t, filepath.Join(f.host, p)); got != want {
			t.Errorf("%s: %q, want %q", p, got, want)
		}
	}
	mustAbsent(t, filepath.Join(f.host, "removed.txt"))
	mustAbsent(t, filepath.Join(f.host, "gone"))
	slices.Sort(f.kept)
	if !slices.Equal(f.kept, []string{"both.txt", "removed-changed.txt"}) || kept != 2 {
		t.Errorf("kept %v (%d), want both.txt and removed-changed.txt", f.kept, kept)
	}
	// added, newdir, newdir/n.txt, changed, history, removed, gone/x.txt, gone
	if applied != 8 {
		t.Errorf("applied %d paths, want 8", applied)
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(f.host), ".sluice-home-back-*"))
	tmps, _ := filepath.Glob(filepath.Join(f.host, ".sluice-home-*"))
	if len(leftovers)+len(tmps) > 0 {
		t.Errorf("left behind: %v %v", leftovers, tmps)
	}
	// Nothing changed since: a second read-back against the same baseline
	// applies nothing and keeps what it kept.
	f.kept = nil
	if applied, _, err := f.back(t, nil, defaultHomeLimits); err != nil || applied != 0 {
		t.Fatalf("second read-back: applied %d, %v", applied, err)
	}
}

// TestHomeBack_Links: a link the agent planted in the pod's HOME comes
// back as a link, never followed; a link planted on the host (by another
// session) in the way of the agent's change is never followed either: the
// host's is kept and nothing outside the HOME is written.
func TestHomeBack_Links(t *testing.T) {
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret": "secret\n", "dir/.keep": ""})
	f := newHomeFixture(t, map[string]string{"conf.json": "{}\n", "d/a.txt": "a\n", "e/.keep": "", "cfg": "c\n"})
	// In the pod: a new link out, a file changed under d/, a file added
	// under e/, the file cfg replaced by a link out.
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(f.pod, "out")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, f.pod, map[string]string{"d/a.txt": "agent\n", "e/new.txt": "agent\n", "conf.json": "agent\n"})
	if err := os.Remove(filepath.Join(f.pod, "cfg")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(f.pod, "cfg")); err != nil {
		t.Fatal(err)
	}
	// On the host meanwhile: d/ and e/ are links out, conf.json a link to
	// the person's secret.
	for _, p := range []string{"d", "e"} {
		if err := os.RemoveAll(filepath.Join(f.host, p)); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(outside, "dir"), filepath.Join(f.host, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(f.host, "conf.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(f.host, "conf.json")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.back(t, nil, defaultHomeLimits); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"out", "cfg"} {
		if target, err := os.Readlink(filepath.Join(f.host, p)); err != nil || target != filepath.Join(outside, "secret") {
			t.Errorf("%s: %q %v, want the agent's link", p, target, err)
		}
	}
	if got := readString(t, filepath.Join(outside, "secret")); got != "secret\n" {
		t.Fatalf("the file outside the HOME was written: %q", got)
	}
	entries, _ := os.ReadDir(filepath.Join(outside, "dir"))
	if len(entries) != 1 {
		t.Fatalf("something was written outside the HOME: %v", entries)
	}
	slices.Sort(f.kept)
	if !slices.Equal(f.kept, []string{"conf.json", "d/a.txt", "e/new.txt"}) {
		t.Errorf("kept %v", f.kept)
	}
}

// craftHome is an archive of the form pod-tree writes: the manifest of
// recs, then entries.
func craftHome(t *testing.T, recs []workspace.TreeRecord, entries []*tar.Header, bodies map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	m := (&workspace.TreeManifest{StartNs: 1, Records: recs}).Marshal()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: workspace.TreeManifestName, Mode: 0o600, Size: int64(len(m))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(m); err != nil {
		t.Fatal(err)
	}
	for _, h := range entries {
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(bodies[h.Name]))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(bodies[h.Name])); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// snapshot lists a tree's paths with their content (a link's target).
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "-> " + l
		case d.Type().IsRegular():
			out[rel] = readString(t, p)
		default:
			out[rel] = "dir"
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHomeBack_RefusesMalformed: an archive with a name that climbs out,
// an entry the manifest does not list (or lists as another type), an
// entry type the HOME does not take, or over the limits is refused whole:
// the good entry before the bad one is not written either.
func TestHomeBack_RefusesMalformed(t *testing.T) {
	file := func(p string) workspace.TreeRecord { return workspace.TreeRecord{Path: p, Type: 'f', Mode: 0o644} }
	good := &tar.Header{Typeflag: tar.TypeReg, Name: "added.txt", Mode: 0o644}
	for _, tc := range []struct {
		name    string
		recs    []workspace.TreeRecord
		entries []*tar.Header
		lim     homeLimits
		want    error
	}{
		{"a name that climbs out, in the manifest", []workspace.TreeRecord{file("added.txt"), file("../escape.txt")},
			[]*tar.Header{good}, defaultHomeLimits, workspace.ErrArchiveUnsafe},
		{"a name that climbs out, as an entry", []workspace.TreeRecord{file("added.txt")},
			[]*tar.Header{good, {Typeflag: tar.TypeReg, Name: "../escape.txt", Mode: 0o644}}, defaultHomeLimits, workspace.ErrArchiveUnsafe},
		{"an entry the manifest does not list", []workspace.TreeRecord{file("added.txt")},
			[]*tar.Header{good, {Typeflag: tar.TypeReg, Name: "unlisted.txt", Mode: 0o644}}, defaultHomeLimits, workspace.ErrArchiveUnsafe},
		{"an entry of another type than listed", []workspace.TreeRecord{file("added.txt"), file("l")},
			[]*tar.Header{good, {Typeflag: tar.TypeSymlink, Name: "l", Linkname: "/etc/passwd", Mode: 0o777}}, defaultHomeLimits, workspace.ErrArchiveUnsafe},
		{"a hard link", []workspace.TreeRecord{file("added.txt"), file("h")},
			[]*tar.Header{good, {Typeflag: tar.TypeLink, Name: "h", Linkname: "/etc/passwd"}}, defaultHomeLimits, workspace.ErrArchiveUnsafe},
		{"an entry twice", []workspace.TreeRecord{file("added.txt")},
			[]*tar.Header{good, {Typeflag: tar.TypeReg, Name: "added.txt", Mode: 0o644}}, defaultHomeLimits, workspace.ErrArchiveUnsafe},
		{"over the bytes", []workspace.TreeRecord{file("added.txt"), file("big.txt")},
			[]*tar.Header{good, {Typeflag: tar.TypeReg, Name: "big.txt", Mode: 0o644}}, homeLimits{entries: 100, bytes: 20}, workspace.ErrArchiveLimit},
		{"over the entries", []workspace.TreeRecord{file("added.txt"), file("b.txt"), file("c.txt")},
			[]*tar.Header{good, {Typeflag: tar.TypeReg, Name: "b.txt", Mode: 0o644}, {Typeflag: tar.TypeReg, Name: "c.txt", Mode: 0o644}},
			homeLimits{entries: 3, bytes: 1 << 20}, workspace.ErrArchiveLimit},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			f := newHomeFixture(t, map[string]string{"keep.txt": "keep\n"})
			before := snapshot(t, filepath.Dir(f.host))
			archive := craftHome(t, append([]workspace.TreeRecord{file("keep.txt")}, tc.recs...), tc.entries,
				map[string]string{"added.txt": "new\n", "big.txt": strings.Repeat("b", 64), "b.txt": "b", "c.txt": "c", "../escape.txt": "x", "unlisted.txt": "u"})
			_, _, err := f.back(t, archive, tc.lim)
			if !errors.Is(err, tc.want) {
				t.Fatalf("back: %v, want %v", err, tc.want)
			}
			if after := snapshot(t, filepath.Dir(f.host)); !maps.Equal(before, after) {
				t.Fatalf("something was written: %v, was %v", after, before)
			}
		})
	}
}

// TestHomeBack_KeptForTheApp: what went in, as kept in the session's
// directory for an app that ends the session itself, reads back as it was
// recorded.
func TestHomeBack_KeptForTheApp(t *testing.T) {
	f := newHomeFixture(t, map[string]string{"a.txt": "a\n", "d/b.txt": "b\n"})
	if err := os.Symlink("/elsewhere", filepath.Join(f.host, "l")); err != nil {
		t.Fatal(err)
	}
	f = newHomeFixtureFrom(t, f.host)
	copyHost := filepath.Join(t.TempDir(), "copy")
	if err := saveHomeIn(copyHost, f.host, f.in, f.base); err != nil {
		t.Fatal(err)
	}
	home, in, base, ok, err := loadHomeIn(copyHost)
	if err != nil || !ok || home != f.host || !bytes.Equal(base, f.base) || !maps.Equal(in, f.in) || len(in) != 4 {
		t.Fatalf("loaded %q %v %v %v, want %q %v", home, in, ok, err, f.host, f.in)
	}
	if _, _, _, ok, err := loadHomeIn(filepath.Join(t.TempDir(), "copy")); ok || err != nil {
		t.Fatalf("none kept: %v %v", ok, err)
	}
}
