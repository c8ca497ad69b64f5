package seal

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// A sealed file list needs, for each changed file, its blobs, its size and
// whether its content is binary. git says which files are binary only
// through a diff with line counts (--numstat), which reads every blob on
// both sides and diffs it: for a 1,000-file commit, most of the seal's
// time after git add. git's rule itself is short, so the seal applies it
// to the content the list shows (the new content, or the old one of a
// deletion): binary when its diff attribute says so (-diff, the binary
// macro, a driver with diff.<driver>.binary), else when its first 8,000
// bytes hold a NUL. The attributes come from git check-attr, sizes and
// first bytes from git cat-file --batch, streamed. Where git's numstat
// calls a change binary because its old side was (binary content replaced
// by text), the list says what the new content is.
// TestChanges_ByRuleSameAsGit holds this and git's line counts
// (changesByNumstat) to the same answer everywhere else.

// firstFewBytes is how much of a blob git looks at for a NUL byte
// (FIRST_FEW_BYTES in git's xdiff-interface.c).
const firstFewBytes = 8000

// bigFileThreshold is core.bigFileThreshold's default: git treats a larger
// blob as binary without reading it.
const bigFileThreshold = 512 << 20

// changesByRule is changes without line counts (see the top of this
// file): read in this process for a small change where git's answer
// cannot differ (facts_local.go), else by git.
func (w *Work) changesByRule(ctx context.Context, a, b string) ([]proposal.FileChange, error) {
	if out, ok := w.changesLocal(a, b); ok {
		return out, nil
	}
	return w.changesByGit(ctx, a, b)
}

// changesByGit is changesByRule with git reading the comparison, the
// blobs and the attributes.
func (w *Work) changesByGit(ctx context.Context, a, b string) ([]proposal.FileChange, error) {
	res, err := w.run(ctx, gitrun.Call{Args: []string{"diff-tree", "-r", "-z", "-M", "--raw", "--no-commit-id", "--no-abbrev"}, Revs: []string{a, b}, DashDash: true})
	if err != nil {
		return nil, err
	}
	recs := gitx.ParseRawNumstat(res.Out)
	var paths []string
	for _, r := range recs {
		paths = append(paths, r.Path)
		if r.OrigPath != "" {
			paths = append(paths, r.OrigPath)
		}
	}
	var byAttr map[string]bool
	var filters map[string]string
	var attrErr error
	var wg sync.WaitGroup
	wg.Go(func() { byAttr, filters, attrErr = w.binaryByAttributes(ctx, paths) })
	facts, err := w.blobFacts(ctx, recs)
	wg.Wait()
	if err == nil {
		err = attrErr
	}
	if err != nil {
		return nil, err
	}
	w.rememberFilters(filters)
	out := make([]proposal.FileChange, 0, len(recs))
	for _, r := range recs {
		c := fileChangeOf(r)
		// The content the list shows: the new one, or the old one of a
		// deletion. Its size, and whether git treats it as binary (its
		// attributes, else its first bytes); a gitlink is a commit, never
		// binary.
		mode, blob, path := c.Mode, c.Blob, c.Path
		if blob == "" {
			mode, blob = c.OldMode, c.OldBlob
			if c.OldPath != "" {
				path = c.OldPath
			}
		}
		if blob != "" && mode != proposal.ModeGitlink {
			f := facts[blob]
			c.Size, c.Binary = f.size, f.binary
			if v, ok := byAttr[path]; ok {
				c.Binary = v
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// blobFact is what the file list needs of one blob.
type blobFact struct {
	size   int64
	binary bool
}

// blobFacts reads the size and git's binary test of each blob the file
// list shows (the new content, or the old for a deletion; gitlinks
// excepted) from git cat-file --batch, streamed: only each blob's first
// bytes are kept. A long list is read by two processes at once.
func (w *Work) blobFacts(ctx context.Context, recs []gitx.RawChange) (map[string]blobFact, error) {
	var ids []string
	seen := map[string]bool{}
	for _, r := range recs {
		mode, blob := r.Mode, r.Blob
		if strings.Trim(blob, "0") == "" {
			mode, blob = r.OldMode, r.OldBlob
		}
		if mode == proposal.ModeGitlink || strings.Trim(blob, "0") == "" || seen[blob] {
			continue
		}
		seen[blob] = true
		ids = append(ids, blob)
	}
	out := map[string]blobFact{}
	if len(ids) == 0 {
		return out, nil
	}
	parts := [][]string{ids}
	if len(ids) >= 200 {
		parts = [][]string{ids[:len(ids)/2], ids[len(ids)/2:]}
	}
	got := make([]*batchHeads, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, part := range parts {
		got[i] = &batchHeads{facts: map[string]blobFact{}}
		wg.Go(func() {
			_, errs[i] = w.run(ctx, gitrun.Call{Args: []string{"cat-file", "--buffer", "--batch=%(objectname) %(objectsize)"},
				Stdin: []byte(strings.Join(part, "\n") + "\n"), Stdout: got[i]})
		})
	}
	wg.Wait()
	for i := range parts {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if got[i].err != nil {
			return nil, got[i].err
		}
		for id, f := range got[i].facts {
			out[id] = f
		}
	}
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			return nil, fmt.Errorf("apply: blob %s of the sealed outcome is not in the repository", id)
		}
	}
	return out, nil
}

// batchHeads reads git cat-file --batch's answer as it streams: each
// object's header ("<id> <size>"), then its content, of which it keeps
// the first firstFewBytes to test for a NUL, then a newline.
type batchHeads struct {
	facts map[string]blobFact
	err   error
	line  []byte // the header read so far
	id    string
	size  int64
	left  int64 // content bytes of the object still to come
	head  []byte
	nl    bool // the newline after the content is still to come
}

func (w *batchHeads) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && w.err == nil {
		switch {
		case w.nl:
			p, w.nl = p[1:], false
		case w.left > 0:
			k := int(min(int64(len(p)), w.left))
			if room := firstFewBytes - len(w.head); room > 0 {
				w.head = append(w.head, p[:min(room, k)]...)
			}
			p, w.left = p[k:], w.left-int64(k)
			if w.left == 0 {
				w.done()
			}
		default:
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				w.line = append(w.line, p...)
				p = nil
				continue
			}
			w.line = append(w.line, p[:i]...)
			p = p[i+1:]
			id, sz, _ := strings.Cut(string(w.line), " ")
			w.line = w.line[:0]
			size, err := strconv.ParseInt(sz, 10, 64)
			if err != nil || size < 0 {
				w.err = fmt.Errorf("apply: git cat-file answered %q for a blob of the sealed outcome", id+" "+sz)
				continue
			}
			w.id, w.size, w.left, w.head = id, size, size, w.head[:0]
			if size == 0 {
				w.done()
			}
		}
	}
	return n, nil
}

// done records the object just read.
func (w *batchHeads) done() {
	w.facts[w.id] = blobFact{size: w.size, binary: w.size > bigFileThreshold || bytes.IndexByte(w.head, 0) >= 0}
	w.nl = true
}

// binaryByAttributes is, for each path whose diff attribute decides, whether
// git treats it as binary: -diff (or the binary macro) is binary, a diff
// driver is binary when diff.<driver>.binary says so; paths the
// attributes leave to the bytes are not in the map. The same process
// reads each path's filter attribute, which refuseFilters asks next.
func (w *Work) binaryByAttributes(ctx context.Context, paths []string) (map[string]bool, map[string]string, error) {
	out := map[string]bool{}
	filters := map[string]string{}
	if len(paths) == 0 {
		return out, filters, nil
	}
	res, err := w.run(ctx, gitrun.Call{Args: []string{"check-attr", "--stdin", "-z", "diff", "filter"}, Stdin: gitrun.NulList(paths)})
	if err != nil {
		return nil, nil, err
	}
	f := strings.Split(string(res.Out), "\x00")
	for i := 0; i+2 < len(f); i += 3 {
		if f[i+1] == "filter" {
			filters[f[i]] = f[i+2]
			continue
		}
		switch v := f[i+2]; v {
		case "unspecified", "set", "":
		case "unset":
			out[f[i]] = true
		default:
			if b, ok := w.git.Repo.Config("diff." + v + ".binary"); ok {
				on, err := strconv.ParseBool(b)
				out[f[i]] = err == nil && on
			}
		}
	}
	return out, filters, nil
}

// fileChangeOf is a raw comparison's record as a sealed file change,
// without its size and binary flag: git's status letter as a word, and no
// mode or blob where a side has none.
func fileChangeOf(r gitx.RawChange) proposal.FileChange {
	status := map[byte]string{'A': proposal.FileAdded, 'D': proposal.FileDeleted, 'R': proposal.FileRenamed, 'T': proposal.FileTypeChanged}
	c := proposal.FileChange{Status: status[r.Status], Path: r.Path, OldPath: r.OrigPath,
		OldMode: r.OldMode, Mode: r.Mode, OldBlob: r.OldBlob, Blob: r.Blob}
	if c.Status == "" {
		c.Status = proposal.FileModified
	}
	for _, p := range []*string{&c.OldMode, &c.Mode} {
		if *p == "000000" {
			*p = ""
		}
	}
	for _, p := range []*string{&c.OldBlob, &c.Blob} {
		if strings.Trim(*p, "0") == "" {
			*p = ""
		}
	}
	return c
}
