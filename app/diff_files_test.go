package app

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// imageBytes encodes a small picture in one of Go's formats.
func imageBytes(t testing.TB, format string) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 12, 8))
	for x := range 12 {
		for y := range 8 {
			img.Set(x, y, color.RGBA{uint8(20 * x), uint8(30 * y), 200, 255})
		}
	}
	var b bytes.Buffer
	var err error
	switch format {
	case "png":
		err = png.Encode(&b, img)
	case "jpeg":
		err = jpeg.Encode(&b, img, nil)
	case "gif":
		err = gif.Encode(&b, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// webpBytes is a 1×1 lossless WebP.
var webpBytes = []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")

// sealedBlob is the blob the card's sealed outcome gives path.
func sealedBlob(t *testing.T, c Card, path string) string {
	t.Helper()
	for _, f := range c.Sealed.Files {
		if f.Path == path {
			if f.Blob != "" {
				return f.Blob
			}
			return f.OldBlob
		}
	}
	t.Fatalf("%s is not in the sealed outcome", path)
	return ""
}

// A proposal's images are served from its sealed objects to a logged-in
// browser, typed by their bytes (a GIF named .png is a GIF), with headers
// that keep the agent's bytes from being read as anything else; text, an
// SVG dressed as a PNG, an image past the size cap, a blob the outcome
// does not name and a request without a session get no image.
func TestProposalBlob_ServesSniffedImagesOnly(t *testing.T) {
	a, repo, env := flowEnv(t)
	api := &API{app: a, kind: "web"}
	writeFile(t, filepath.Join(repo, "keep.txt"), "not part of any proposal\n")
	gitxtest.Git(t, repo, "add", "keep.txt")
	gitxtest.Git(t, repo, "commit", "-q", "-m", "keep")
	pngData := imageBytes(t, "png")
	files := map[string][]byte{
		"img/chart.png":    pngData,
		"img/photo.jpg":    imageBytes(t, "jpeg"),
		"img/spinner.png":  imageBytes(t, "gif"),
		"img/tiny.webp":    webpBytes,
		"img/logo.png":     []byte("<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>\x00"),
		"img/huge.png":     append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, maxImageBytes)...),
		"docs/notes.md":    []byte("# Notes\n"),
		"img/gif-no-magic": []byte("GIF90a\x00\x00"),
	}
	var paths []string
	for p, data := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(repo, p)), 0o755)
		if err := os.WriteFile(filepath.Join(repo, p), data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	card := proposeCard(t, api, env, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Add the images", "message": "Add images", "paths": paths,
	})
	other := proposeCard(t, api, env, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Only the notes", "message": "Notes", "paths": []string{"docs/notes.md"},
	})
	keepBlob := strings.TrimSpace(gitxtest.Git(t, repo, "rev-parse", "HEAD:keep.txt"))

	w, token, err := NewWeb(a, testAssets, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go w.Serve()
	t.Cleanup(func() { w.Shutdown(t.Context()) })
	base := "http://" + w.Addr()
	c := newBrowserClient(t)
	blobURL := func(id, blob string) string { return base + "/api/proposals/" + id + "/blob/" + blob }

	// Without a session, nothing.
	resp, _ := get(t, c, blobURL(card.ID, sealedBlob(t, card, "img/chart.png")), nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a session: %d, want 401", resp.StatusCode)
	}
	get(t, c, w.LoginURL(token), nil)

	for _, tc := range []struct {
		path, contentType string
	}{
		{"img/chart.png", "image/png"},
		{"img/photo.jpg", "image/jpeg"},
		{"img/spinner.png", "image/gif"},
		{"img/tiny.webp", "image/webp"},
	} {
		resp, body := get(t, c, blobURL(card.ID, sealedBlob(t, card, tc.path)), map[string]string{"Sec-Fetch-Site": "same-origin"})
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d %s", tc.path, resp.StatusCode, body)
			continue
		}
		h := resp.Header
		if got := h.Get("Content-Type"); got != tc.contentType {
			t.Errorf("%s: Content-Type %q, want %q", tc.path, got, tc.contentType)
		}
		if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", tc.path, got)
		}
		if got := h.Get("Content-Security-Policy"); got != "default-src 'none'" {
			t.Errorf("%s: Content-Security-Policy %q", tc.path, got)
		}
		if body != string(files[tc.path]) {
			t.Errorf("%s: served %d bytes that are not the file's %d", tc.path, len(body), len(files[tc.path]))
		}
	}

	for _, tc := range []struct {
		what, id, blob string
		status         int
	}{
		{"an SVG named .png", card.ID, sealedBlob(t, card, "img/logo.png"), http.StatusUnsupportedMediaType},
		{"a text file", card.ID, sealedBlob(t, card, "docs/notes.md"), http.StatusUnsupportedMediaType},
		{"bytes that only start like a GIF", card.ID, sealedBlob(t, card, "img/gif-no-magic"), http.StatusUnsupportedMediaType},
		{"a PNG over the cap", card.ID, sealedBlob(t, card, "img/huge.png"), http.StatusRequestEntityTooLarge},
		{"a blob of the repository the outcome does not name", card.ID, keepBlob, http.StatusNotFound},
		{"another proposal's image", other.ID, sealedBlob(t, card, "img/chart.png"), http.StatusNotFound},
		{"a name that is no object id", card.ID, "HEAD", http.StatusBadRequest},
	} {
		resp, body := get(t, c, blobURL(tc.id, tc.blob), nil)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.what, resp.StatusCode, body, tc.status)
		}
		if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "image/") {
			t.Errorf("%s: answered as %s", tc.what, ct)
		}
	}

	// The desktop window gets the same image as a data: URL, and the same
	// refusals.
	prev, err := api.ProposalImage(card.ID, sealedBlob(t, card, "img/chart.png"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngData); prev.ContentType != "image/png" || prev.DataURL != want {
		t.Errorf("ProposalImage: %s %.60s…", prev.ContentType, prev.DataURL)
	}
	if _, err := api.ProposalImage(card.ID, sealedBlob(t, card, "img/logo.png")); err == nil {
		t.Error("ProposalImage served an SVG")
	}
	resp, body := get(t, c, base+"/api/proposals/"+card.ID+"/image?blob="+sealedBlob(t, card, "img/tiny.webp"), nil)
	var viaRoute ImagePreview
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &viaRoute) != nil || viaRoute.ContentType != "image/webp" {
		t.Errorf("image route: %d %.100s", resp.StatusCode, body)
	}
}

// The UI finds any file's part of a large diff: the chunk at the offset it
// is given starts with that file's header, whatever its name. The diff
// holds every file of the outcome, though it is larger than one git call
// answers and more files were cut off than git names at once.
func TestProposalDiffFile_FindsEachFilesPart(t *testing.T) {
	a, repo, env := flowEnv(t)
	api := &API{app: a, kind: "web"}
	var paths []string
	for i := range 400 {
		p := filepath.Join("pkg", string(rune('a'+i%7)), "file"+strings.Repeat("x", i%3)+"-"+strconv.Itoa(i)+".txt")
		os.MkdirAll(filepath.Dir(filepath.Join(repo, p)), 0o755)
		writeFile(t, filepath.Join(repo, p), strings.Repeat("line of "+p+"\n", 120))
		paths = append(paths, p)
	}
	for _, p := range []string{"with space.txt", "naïve.txt", "pic.bin"} {
		content := "odd name\n"
		if p == "pic.bin" {
			content = "\x00\x01binary"
		}
		writeFile(t, filepath.Join(repo, p), content)
		paths = append(paths, p)
	}
	card := proposeCard(t, api, env, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Many files", "message": "Many files", "paths": paths,
	})
	whole := wholeDiff(t, api, card.ID)
	if len(whole) < gitx.MaxDiffBytes+100<<10 {
		t.Fatalf("the diff is %d bytes: too small to need several git calls", len(whole))
	}
	for _, p := range paths {
		if _, err := api.ProposalDiffFile(card.ID, p); err != nil {
			t.Errorf("%s is not in the card's diff: %v", p, err)
		}
	}
	for _, p := range []string{paths[0], paths[200], paths[399], "with space.txt", "naïve.txt", "pic.bin"} {
		at, err := api.ProposalDiffFile(card.ID, p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		chunk, err := api.ProposalDiff(card.ID, at.Offset)
		if err != nil {
			t.Fatal(err)
		}
		header, _, _ := strings.Cut(chunk.Text, "\n")
		if !strings.HasPrefix(header, "diff --git ") || !strings.Contains(whole[at.Offset:at.End], p[len(p)-5:]) {
			t.Errorf("%s: the chunk at %d starts %q", p, at.Offset, header)
		}
		if at.End <= at.Offset || (at.End < len(whole) && !strings.HasPrefix(whole[at.End:], "diff --git ")) {
			t.Errorf("%s: its part ends at %d, not at the next file", p, at.End)
		}
	}
	if _, err := api.ProposalDiffFile(card.ID, "no/such/file.txt"); err == nil {
		t.Error("a file the diff does not have was found")
	}
}

// A paged diff names the outcome's files git has to be asked for one by
// one; a file whose name cannot be passed to git so (not UTF-8) does not
// fail the diff: the rest is there and a notice says what is missing.
func TestPagedDiff_UnnameableFile_NoticeNotFailure(t *testing.T) {
	root := t.TempDir()
	r := gitxtest.InitAt(t, filepath.Join(root, "repo"))
	base := r.WriteCommit("README.md", "hello\n", "first")
	var all []string
	for i := range 300 {
		p := fmt.Sprintf("a/file%03d.txt", i)
		r.Write(p, strings.Repeat("a line of "+p+"\n", 160))
		all = append(all, p)
	}
	odd := "zz\xff.txt"
	if err := os.WriteFile(filepath.Join(r.Dir, odd), []byte("odd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	all = append(all, odd)
	r.Git("add", "-A")
	r.Git("commit", "-q", "-m", "many")
	head := strings.TrimSpace(r.Git("rev-parse", "HEAD"))
	g, err := gitx.Default()
	if err != nil {
		t.Fatal(err)
	}
	repo, err := g.Open(t.Context(), gitx.Roots{root}, r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := pagedDiff(t.Context(), repo, gitx.DiffSpec{Base: strings.TrimSpace(base), Target: head}, all)
	if err != nil {
		t.Fatalf("the diff failed: %v", err)
	}
	if len(d.text) <= gitx.MaxDiffBytes {
		t.Fatalf("the diff is %d bytes: too small to need several calls", len(d.text))
	}
	idx := indexDiffFiles(d.text)
	for _, p := range all[:300] {
		if _, ok := idx[p]; !ok {
			t.Errorf("%s is missing", p)
		}
	}
	if !slices.ContainsFunc(d.notices, func(n string) bool { return strings.HasPrefix(n, "1 file is not shown") }) {
		t.Errorf("no notice for the file git cannot be asked for: %q", d.notices)
	}
}
