package app

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// A card's file tree jumps to any file of a diff that loads in pages, and
// shows the images a proposal adds, changes or deletes. Both read only
// what the proposal's sealed outcome names.

// DiffFileAt is where one file's part of a proposal's diff lies: the UI
// loads the chunk at Offset to show a file far beyond what it loaded.
type DiffFileAt struct {
	Path string `json:"path"`
	// Offset is where the file's "diff --git" line starts; End is where
	// the next file's does (or the diff ends).
	Offset int `json:"offset"`
	End    int `json:"end"`
}

// ProposalDiffFile says where path's part of a proposal's diff starts and
// ends, so that the UI can load that part however far down it is.
func (api *API) ProposalDiffFile(id, path string) (DiffFileAt, error) {
	if !proposal.ValidID(id) {
		return DiffFileAt{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: "invalid proposal id"}
	}
	if path == "" || len(path) > 4096 {
		return DiffFileAt{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: "path must name a file of the diff"}
	}
	a := api.app
	d := a.diffs.get(id)
	if d == nil {
		rec, err := a.record(id)
		if err != nil {
			return DiffFileAt{}, err
		}
		if d, err = a.cardDiff(rec.Proposal); err != nil {
			return DiffFileAt{}, err
		}
	}
	d.indexOnce.Do(func() { d.index = indexDiffFiles(d.text) })
	at, ok := d.index[path]
	if !ok {
		return DiffFileAt{}, &errcode.Error{Code: errcode.NotFound, Msg: "this file is not in the proposal's diff"}
	}
	at.Path = path
	return at, nil
}

// indexDiffFiles finds each file's part of a unified diff by its path (the
// new path; a renamed file's old path too).
func indexDiffFiles(text string) map[string]DiffFileAt {
	out := map[string]DiffFileAt{}
	var starts []int
	if strings.HasPrefix(text, "diff --git ") {
		starts = append(starts, 0)
	}
	for i := 0; ; {
		j := strings.Index(text[i:], "\ndiff --git ")
		if j < 0 {
			break
		}
		starts = append(starts, i+j+1)
		i += j + 1
	}
	for k, start := range starts {
		end := len(text)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		newPath, oldPath := sectionPaths(text[start:end])
		for _, p := range []string{newPath, oldPath} {
			if _, seen := out[p]; p != "" && !seen {
				out[p] = DiffFileAt{Offset: start, End: end}
			}
		}
	}
	return out
}

// sectionPaths reads one file's section of a diff for its new and old
// paths: from the ---/+++ lines, the rename lines, or (a binary or
// mode-only change) the "diff --git a/P b/P" line itself.
func sectionPaths(sec string) (newPath, oldPath string) {
	head, _, _ := strings.Cut(sec, "\n@@")
	lines := strings.Split(head, "\n")
	for _, l := range lines[1:] {
		switch {
		case strings.HasPrefix(l, "+++ b/"), strings.HasPrefix(l, "+++ \"b/"):
			newPath = gitPath(strings.TrimPrefix(l, "+++ "), "b/")
		case strings.HasPrefix(l, "--- a/"), strings.HasPrefix(l, "--- \"a/"):
			oldPath = gitPath(strings.TrimPrefix(l, "--- "), "a/")
		case strings.HasPrefix(l, "rename to "):
			newPath = gitPath(strings.TrimPrefix(l, "rename to "), "")
		case strings.HasPrefix(l, "rename from "):
			oldPath = gitPath(strings.TrimPrefix(l, "rename from "), "")
		}
	}
	if newPath == "" && oldPath == "" {
		// "diff --git a/P b/P": without a rename both halves are the same.
		s := strings.TrimPrefix(lines[0], "diff --git ")
		if strings.HasPrefix(s, "\"") {
			if q, err := strconv.QuotedPrefix(s); err == nil {
				oldPath = gitPath(q, "a/")
				newPath = gitPath(strings.TrimSpace(s[len(q):]), "b/")
			}
		} else if n := (len(s) - 5) / 2; n > 0 && len(s) == 2*n+5 && s[:2] == "a/" && s[n+2:n+5] == " b/" && s[2:n+2] == s[n+5:] {
			newPath = s[2 : n+2]
		}
	}
	if newPath == "" {
		newPath = oldPath
	}
	if oldPath == newPath {
		oldPath = ""
	}
	return newPath, oldPath
}

// gitPath undoes git's C-style quoting of a path in a diff header and
// drops its a/ or b/ prefix.
func gitPath(s, prefix string) string {
	s = strings.TrimSuffix(s, "\t")
	if strings.HasPrefix(s, "\"") {
		u, err := strconv.Unquote(s)
		if err != nil {
			return ""
		}
		s = u
	}
	if s == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(s, prefix)
}

// maxImageBytes bounds an image preview: a larger blob is not read, and
// the card says "Binary file" as before.
const maxImageBytes = 8 << 20

// ImagePreview is one image of a proposal's sealed outcome as a data: URL,
// for the desktop window (the browser loads the same bytes from
// /api/proposals/{id}/blob/{blob}).
type ImagePreview struct {
	ContentType string `json:"contentType"`
	Size        int    `json:"size"`
	DataURL     string `json:"dataUrl"`
}

// ProposalImage returns a PNG, JPEG, GIF or WebP blob of a proposal's
// sealed outcome as a data: URL; anything else is refused.
func (api *API) ProposalImage(id, blob string) (ImagePreview, error) {
	ct, data, err := api.proposalBlob(id, blob)
	if err != nil {
		return ImagePreview{}, err
	}
	return ImagePreview{ContentType: ct, Size: len(data),
		DataURL: "data:" + ct + ";base64," + base64.StdEncoding.EncodeToString(data)}, nil
}

var objectID = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// proposalBlob reads blob, which must be one of the blobs proposal id's
// sealed outcome names, and returns its content type as its bytes say:
// one of the four image formats a browser shows without running anything
// (never SVG, which is a document). The agent chose these bytes and the
// path, so the name decides nothing.
func (api *API) proposalBlob(id, blob string) (string, []byte, error) {
	if !objectID.MatchString(blob) {
		return "", nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: "blob must be a full object id"}
	}
	a := api.app
	rec, err := a.record(id)
	if err != nil {
		return "", nil, err
	}
	p := rec.Proposal
	if p.Sealed == nil || !sealedNames(*p.Sealed, blob) {
		return "", nil, &errcode.Error{Code: errcode.NotFound, Msg: "this blob is not in the proposal's sealed outcome"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	r, err := gitx.Default()
	if err != nil {
		return "", nil, err
	}
	repo, err := r.Open(ctx, a.allowed(), p.Repo)
	if err != nil {
		return "", nil, err
	}
	size, err := repo.ReadGit(ctx, "cat-file", []string{"-s"}, []string{blob}, nil, 64)
	if err != nil {
		return "", nil, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(size.Stdout)), 10, 64)
	if err != nil {
		return "", nil, &errcode.Error{Code: errcode.GitFailed, Msg: "unexpected output from git cat-file -s"}
	}
	if n > maxImageBytes {
		return "", nil, &errcode.Error{Code: errcode.TooLarge,
			Msg: fmt.Sprintf("the file is %d bytes; images are previewed up to %d MiB", n, maxImageBytes>>20)}
	}
	// "blob" refuses any other kind of object.
	out, err := repo.ReadGit(ctx, "cat-file", []string{"blob"}, []string{blob}, nil, maxImageBytes)
	if err != nil {
		return "", nil, err
	}
	ct := sniffImage(out.Stdout)
	if ct == "" {
		return "", nil, &errcode.Error{Code: errcode.Unsupported, Msg: "not a PNG, JPEG, GIF or WebP image: shown as a binary file"}
	}
	return ct, out.Stdout, nil
}

// sealedNames reports whether s (or one of its steps) names blob as the
// old or new content of a file.
func sealedNames(s proposal.Sealed, blob string) bool {
	for _, list := range [][]proposal.FileChange{s.Files, s.Kept, s.Work} {
		for _, f := range list {
			if f.Blob == blob || f.OldBlob == blob {
				return true
			}
		}
	}
	for _, st := range s.Steps {
		if sealedNames(st, blob) {
			return true
		}
	}
	return false
}

// sniffImage is the content type of b by its leading bytes (the WHATWG
// signatures), or "" for anything but PNG, JPEG, GIF and WebP.
func sniffImage(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "image/gif"
	case len(b) >= 14 && bytes.HasPrefix(b, []byte("RIFF")) && string(b[8:14]) == "WEBPVP":
		return "image/webp"
	}
	return ""
}

// serveImage answers GET /api/proposals/{id}/blob/{blob} with the image
// proposalBlob read. The bytes are the agent's: the response says exactly
// what they were sniffed as, forbids the browser to guess otherwise, and
// would run nothing even if opened as a page.
func serveImage(rw http.ResponseWriter, ct string, data []byte, err error) {
	if err != nil {
		code := errcode.Of(err)
		status := statusFor(code)
		switch code {
		case errcode.Unsupported:
			status = http.StatusUnsupportedMediaType
		case errcode.TooLarge:
			status = http.StatusRequestEntityTooLarge
		case errcode.NotFound:
			status = http.StatusNotFound
		}
		writeAPIError(rw, status, code, err.Error())
		return
	}
	h := rw.Header()
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Content-Disposition", "inline")
	h.Set("Cache-Control", "private, max-age=300")
	h.Set("Content-Length", strconv.Itoa(len(data)))
	rw.WriteHeader(http.StatusOK)
	_, _ = rw.Write(data)
}
