//go:build linux

package sidecar

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/workspace"
)

// pod-tree leaves the top-level .git out (a nested one is the tree's),
// carries a symlink as a symlink without reading through it, and starts
// with a manifest that lists exactly what it carried the first time.
func TestPodTree_FirstReadCarriesTreeNotGitNorLinkTargets(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	write := func(p, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "secret"), "host secret")
	write(filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(filepath.Join(root, "vendor", ".git", "HEAD"), "nested\n")
	write(filepath.Join(root, "a.txt"), "alpha")
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := podTree(strings.NewReader(""), &out, root, false, 0); err != nil {
		t.Fatalf("podTree: %v", err)
	}
	tr := tar.NewReader(&out)
	var names []string
	var manifest []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		if manifest == nil {
			if h.Name != workspace.TreeManifestName {
				t.Fatalf("first entry %q, want the manifest", h.Name)
			}
			manifest = body
			continue
		}
		if bytes.Contains(body, []byte("host secret")) {
			t.Fatalf("%s carries what the symlink points at", h.Name)
		}
		if h.Name == "out" && (h.Typeflag != tar.TypeSymlink || h.Linkname != outside) {
			t.Fatalf("out: type %q target %q, want a symlink to %s", h.Typeflag, h.Linkname, outside)
		}
		names = append(names, h.Name)
	}
	if got, want := strings.Join(names, ","), "a.txt,out,vendor/,vendor/.git/,vendor/.git/HEAD"; got != want {
		t.Fatalf("entries %s, want %s", got, want)
	}
	m, err := workspace.ParseTreeManifest(manifest, 0)
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if len(m.Records) != len(names) {
		t.Fatalf("the manifest lists %d paths, the archive carries %d", len(m.Records), len(names))
	}
}

// A previous manifest that cannot be read is refused before anything is
// written, as a usage without --root is.
func TestPodTree_RefusesBadInput(t *testing.T) {
	var out bytes.Buffer
	for _, prev := range []string{"not a manifest\n", "sluice-tree-manifest 1 0\nf 644 1 1 1 1 \"../x\"\n"} {
		out.Reset()
		if err := podTree(strings.NewReader(prev), &out, t.TempDir(), false, 0); err == nil || out.Len() != 0 {
			t.Fatalf("prev %q: err %v, %d bytes written; want a refusal and nothing written", prev, err, out.Len())
		}
	}
	var errs bytes.Buffer
	if code := Main([]string{"pod-tree"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "usage: sluice-sidecar pod-tree --root DIR") {
		t.Fatalf("no --root: exit %d, %q", code, errs.String())
	}
}

// --prev-size reads exactly that many bytes of stdin and no more: a
// transport that cannot close stdin does not hang pod-tree.
func TestPodTree_PrevSizeReadsExactly(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	first := []byte("sluice-tree-manifest 1 0\n")
	go pw.Write(first) // and never closed
	r := &exactReader{r: pr, n: int64(len(first))}
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, first) {
		t.Fatalf("read %q, %v; want %q", got, err, first)
	}
	short := &exactReader{r: strings.NewReader("abc"), n: 5}
	if _, err := io.ReadAll(short); err != io.ErrUnexpectedEOF {
		t.Fatalf("short stdin: %v, want unexpected EOF", err)
	}
}

// TestPodTree_ManifestOnly: --manifest-only writes the manifest of the
// whole tree and no entry (a session HOME's baseline).
func TestPodTree_ManifestOnly(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "d", "a.txt"), []byte("alpha"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := podTree(strings.NewReader(""), &out, root, true, 0); err != nil {
		t.Fatalf("podTree: %v", err)
	}
	tr := tar.NewReader(&out)
	h, err := tr.Next()
	if err != nil || h.Name != workspace.TreeManifestName {
		t.Fatalf("first entry %v %v, want the manifest", h, err)
	}
	body, _ := io.ReadAll(tr)
	m, err := workspace.ParseTreeManifest(body, 0)
	if err != nil || len(m.Records) != 2 || m.Records[1].Path != "d/a.txt" {
		t.Fatalf("manifest %v %v, want d and d/a.txt", m, err)
	}
	if h, err := tr.Next(); err != io.EOF {
		t.Fatalf("an entry after the manifest: %v %v", h, err)
	}
}

// fullWriter takes n bytes, then fails.
type fullWriter struct{ n int64 }

func (w *fullWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > w.n {
		return 0, errors.New("the reader stopped taking bytes")
	}
	w.n -= int64(len(p))
	return len(p), nil
}

// TestPodTree_MaxBytes: a sparse file of an apparent 8 TiB (a few blocks
// allocated) is not sent under --max-bytes: pod-tree fails before its
// header, having sent nothing of it; files within the bound are sent.
func TestPodTree_MaxBytes(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := podTree(strings.NewReader(""), &out, root, false, 1<<20); err != nil {
		t.Fatalf("within the bound: %v", err)
	}
	f, err := os.Create(filepath.Join(root, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8 << 40); err != nil {
		t.Skipf("no sparse file of 8 TiB here: %v", err)
	}
	f.Close()
	w := &fullWriter{n: 64 << 20}
	err = podTree(strings.NewReader(""), w, root, false, 1<<30)
	if err == nil || !strings.Contains(err.Error(), "more bytes than the bound") {
		t.Fatalf("err %v, want the bound", err)
	}
	if sent := 64<<20 - w.n; sent > 1<<20 {
		t.Fatalf("%d bytes sent", sent)
	}
}
