package gitx

import (
	"bytes"
	"context"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/sluicehq/sluice/core/errcode"
)

// DiffSpec says what to compare. The zero value compares the index with
// the working tree (unstaged changes), like git diff.
type DiffSpec struct {
	// Base is the old side: a revision. With Staged it replaces HEAD;
	// alone it is compared with the working tree.
	Base string `json:"base,omitempty" jsonschema:"old side: a revision (branch, tag, SHA, HEAD~2 …); alone it is compared with the working tree"`
	// Target is the new side; it needs Base.
	Target string `json:"target,omitempty" jsonschema:"new side: a revision; needs base"`
	// Staged compares Base (default HEAD) with the index.
	Staged bool `json:"staged,omitempty" jsonschema:"compare HEAD (or base) with the index: what is staged"`
	// MergeBase compares from the merge base of Base and Target (or HEAD):
	// what Target added since it forked, like git diff A...B.
	MergeBase bool     `json:"mergeBase,omitempty" jsonschema:"start from the merge base of base and target (or HEAD): only what the new side added since it forked"`
	Paths     []string `json:"paths,omitempty" jsonschema:"limit to these paths (files or directories, relative to the repository root)"`
}

// checked validates the spec and returns git diff options and revisions,
// a description of what is compared, and whether it reads the working
// tree or index.
func (repo *Repo) diffArgs(s DiffSpec) (opts, revs, paths []string, compared string, err error) {
	if paths, err = CheckPaths("paths", s.Paths); err != nil {
		return
	}
	for _, r := range []struct{ name, v string }{{"base", s.Base}, {"target", s.Target}} {
		if r.v != "" {
			if err = CheckRev(r.name, r.v); err != nil {
				return
			}
		}
	}
	switch {
	case s.Target != "" && s.Base == "":
		err = errcode.New(errcode.InvalidArgument, "target needs base")
	case s.Target != "" && s.Staged:
		err = errcode.New(errcode.InvalidArgument, "staged compares with the index; it cannot be combined with target")
	case s.MergeBase && s.Base == "":
		err = errcode.New(errcode.InvalidArgument, "mergeBase needs base")
	}
	if err != nil {
		return
	}
	if s.Target == "" {
		if err = repo.needWorkTree(); err != nil {
			return
		}
	}
	if s.MergeBase {
		opts = append(opts, "--merge-base")
	}
	switch {
	case s.Target != "":
		revs = []string{s.Base, s.Target}
		compared = s.Base + " → " + s.Target
	case s.Staged:
		opts = append(opts, "--cached")
		base := s.Base
		if base == "" {
			base = "HEAD"
		} else {
			revs = []string{s.Base}
		}
		compared = base + " → index"
	case s.Base != "":
		revs = []string{s.Base}
		compared = s.Base + " → working tree"
	default:
		compared = "index → working tree"
	}
	if s.MergeBase {
		compared = "merge base of " + compared
	}
	return
}

// diffCommon makes the output parseable whatever the repository's config
// says (prefixes, relative mode, colour) and compares submodules by commit
// only, so that no git runs inside them.
var diffCommon = []string{"--no-color", "--src-prefix=a/", "--dst-prefix=b/", "--no-relative", "--ignore-submodules=dirty", "-M"}

// DiffText is a bounded unified diff.
type DiffText struct {
	Compared      string   `json:"compared" jsonschema:"what was compared, old → new"`
	Diff          string   `json:"diff" jsonschema:"unified diff text, cut on a line boundary when truncated"`
	Files         int      `json:"files" jsonschema:"files in the whole diff"`
	Truncated     bool     `json:"truncated" jsonschema:"the diff was longer than maxBytes and was cut"`
	TotalBytes    int64    `json:"totalBytes" jsonschema:"size of the whole diff"`
	TotalLines    int64    `json:"totalLines" jsonschema:"lines in the whole diff"`
	ReturnedBytes int      `json:"returnedBytes"`
	ReturnedLines int      `json:"returnedLines"`
	OmittedFiles  []string `json:"omittedFiles,omitempty" jsonschema:"files whose diff starts after the cut (up to 50); ask for them with paths"`
	TotalsAreMin  bool     `json:"totalsAreLowerBounds,omitempty" jsonschema:"counting stopped early; the totals are lower bounds"`
}

// Diff text limits.
const (
	DefaultDiffBytes = 32 << 10
	MaxDiffBytes     = 1 << 20
	maxOmittedFiles  = 50
)

// DiffText returns a unified diff of spec, at most maxBytes long, cut on a
// line boundary. Totals always describe the whole diff. External diff
// programs, textconv and filters never run: binary files appear as
// "Binary files … differ".
func (repo *Repo) DiffText(ctx context.Context, spec DiffSpec, contextLines, maxBytes int) (*DiffText, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultDiffBytes
	}
	if maxBytes > MaxDiffBytes {
		return nil, errcode.New(errcode.InvalidArgument, "maxBytes must be at most %d", MaxDiffBytes)
	}
	return repo.diffText(ctx, spec, contextLines, maxBytes)
}

// DiffTextUpTo is DiffText bounded by maxBytes however large: for the app,
// which reads a card's whole diff once, in one git process, rather than
// for an answer to a model (bounded by MaxDiffBytes).
func (repo *Repo) DiffTextUpTo(ctx context.Context, spec DiffSpec, contextLines, maxBytes int) (*DiffText, error) {
	if maxBytes <= 0 {
		return nil, errcode.New(errcode.InvalidArgument, "maxBytes must be positive")
	}
	return repo.diffText(ctx, spec, contextLines, maxBytes)
}

func (repo *Repo) diffText(ctx context.Context, spec DiffSpec, contextLines, maxBytes int) (*DiffText, error) {
	if contextLines < 0 || contextLines > 100 {
		return nil, errcode.New(errcode.InvalidArgument, "contextLines must be between 0 and 100")
	}
	opts, revs, paths, compared, err := repo.diffArgs(spec)
	if err != nil {
		return nil, err
	}
	opts = append(append(append([]string{}, diffCommon...), "--unified="+strconv.Itoa(contextLines)), opts...)
	sc := &diffScanner{}
	out, err := repo.git(ctx, &cmd{sub: []string{"diff"}, opts: opts, revs: revs, paths: paths, dashdash: true,
		limit: int64(maxBytes), truncate: true, onChunk: sc.feed})
	if err != nil {
		return nil, err
	}
	sc.finish()
	d := &DiffText{Compared: compared, TotalBytes: out.TotalBytes, TotalLines: out.TotalLines, Files: len(sc.starts), TotalsAreMin: !out.Counted}
	text := out.Stdout
	if out.Truncated {
		d.Truncated = true
		if i := bytes.LastIndexByte(text, '\n'); i >= 0 {
			text = text[:i+1]
		} else {
			text = nil
		}
	}
	d.Diff = string(text)
	d.ReturnedBytes = len(text)
	d.ReturnedLines = bytes.Count(text, []byte{'\n'})
	if d.Truncated {
		for _, s := range sc.starts {
			if s.offset >= int64(len(text)) {
				if len(d.OmittedFiles) == maxOmittedFiles {
					break
				}
				d.OmittedFiles = append(d.OmittedFiles, s.path)
			}
		}
	}
	return d, nil
}

// diffScanner finds "diff --git" headers across chunk boundaries.
type diffScanner struct {
	offset    int64
	lineStart int64
	line      []byte
	inLine    bool
	overflow  bool
	starts    []fileStart
}

type fileStart struct {
	offset int64
	path   string
}

const diffHeader = "diff --git "

func (s *diffScanner) feed(chunk []byte) {
	for len(chunk) > 0 {
		if !s.inLine {
			s.inLine, s.lineStart, s.line, s.overflow = true, s.offset, s.line[:0], false
		}
		i := bytes.IndexByte(chunk, '\n')
		part := chunk
		if i >= 0 {
			part = chunk[:i]
		}
		// Only the start of a line matters, and only when it may be a header.
		if !s.overflow {
			if len(s.line)+len(part) > 4096 {
				s.overflow = true
			} else {
				s.line = append(s.line, part...)
				if len(s.line) >= len(diffHeader) && !bytes.HasPrefix(s.line, []byte(diffHeader)) {
					s.overflow = true
				}
			}
		}
		if i < 0 {
			s.offset += int64(len(chunk))
			return
		}
		s.offset += int64(i + 1)
		chunk = chunk[i+1:]
		s.endLine()
	}
}

func (s *diffScanner) finish() {
	if s.inLine {
		s.endLine()
	}
}

func (s *diffScanner) endLine() {
	s.inLine = false
	if s.overflow || !bytes.HasPrefix(s.line, []byte(diffHeader)) {
		return
	}
	s.starts = append(s.starts, fileStart{offset: s.lineStart, path: headerPath(string(s.line[len(diffHeader):]))})
}

// headerPath recovers the path from "a/X b/X" (unambiguous when both sides
// are equal); otherwise the header is returned as git wrote it.
func headerPath(rest string) string {
	if n := len(rest); n > 5 && (n-5)%2 == 0 {
		k := (n - 5) / 2
		if strings.HasPrefix(rest, "a/") && rest[2+k:2+k+3] == " b/" && rest[2:2+k] == rest[n-k:] {
			return rest[2 : 2+k]
		}
	}
	return rest
}

// ChangeStat is one side of a worktree change.
type ChangeStat struct {
	Status     string `json:"status" jsonschema:"added, modified, deleted, renamed, copied, typechange or unmerged"`
	Insertions int    `json:"insertions"`
	Deletions  int    `json:"deletions"`
	Binary     bool   `json:"binary,omitempty"`
}

// WorktreeChange is a path with uncommitted changes.
type WorktreeChange struct {
	Path      string      `json:"path"`
	OrigPath  string      `json:"origPath,omitempty" jsonschema:"source of a staged rename"`
	Staged    *ChangeStat `json:"staged,omitempty" jsonschema:"HEAD → index"`
	Unstaged  *ChangeStat `json:"unstaged,omitempty" jsonschema:"index → working tree"`
	Untracked bool        `json:"untracked,omitempty"`
	Submodule bool        `json:"submodule,omitempty"`
}

// ChangeTotals add up one side.
type ChangeTotals struct {
	Files      int `json:"files"`
	Insertions int `json:"insertions"`
	Deletions  int `json:"deletions"`
}

// WorktreeChanges are the uncommitted changes with line counts.
type WorktreeChanges struct {
	Files     []WorktreeChange `json:"files"`
	Staged    ChangeTotals     `json:"staged"`
	Unstaged  ChangeTotals     `json:"unstaged"`
	Untracked int              `json:"untracked"`
	Truncated bool             `json:"truncated,omitempty" jsonschema:"more paths than limit; totals are complete"`
}

// WorktreeChanges lists staged, unstaged and untracked paths with line
// counts, from three concurrent git processes.
func (repo *Repo) WorktreeChanges(ctx context.Context, paths []string, includeUntracked bool, limit int) (*WorktreeChanges, error) {
	if err := repo.needWorkTree(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = DefaultMaxFiles
	}
	if limit > MaxFilesLimit {
		return nil, errcode.New(errcode.InvalidArgument, "limit must be at most %d", MaxFilesLimit)
	}
	ps, err := CheckPaths("paths", paths)
	if err != nil {
		return nil, err
	}
	base := []string{"--raw", "--numstat", "-z", "--no-color", "--no-relative", "--ignore-submodules=dirty", "--abbrev=40"}
	// Each process keeps its own error: the first in this order is the one
	// reported, whichever failed first.
	var (
		g                 errgroup.Group
		staged, unstaged  []FileChange
		untracked         []byte
		e1, e2, e3        error
		untrackedComplete = true
	)
	g.Go(func() error {
		staged, e1 = repo.rawNumstat(ctx, &cmd{sub: []string{"diff"}, opts: append(append([]string{}, base...), "--cached", "-M"), paths: ps, dashdash: true})
		return nil
	})
	g.Go(func() error {
		unstaged, e2 = repo.rawNumstat(ctx, &cmd{sub: []string{"diff"}, opts: base, paths: ps, dashdash: true})
		return nil
	})
	if includeUntracked {
		g.Go(func() error {
			var out *Output
			out, e3 = repo.git(ctx, &cmd{sub: []string{"ls-files"}, opts: []string{"--others", "--exclude-standard", "-z"}, paths: ps, dashdash: true, limit: 4 << 20, truncate: true})
			if out != nil {
				untracked = out.Stdout
				untrackedComplete = !out.Truncated
			}
			return nil
		})
	}
	g.Wait()
	for _, e := range []error{e1, e2, e3} {
		if e != nil {
			return nil, e
		}
	}
	res := &WorktreeChanges{Files: []WorktreeChange{}}
	byPath := map[string]int{}
	get := func(p string) *WorktreeChange {
		if i, ok := byPath[p]; ok {
			return &res.Files[i]
		}
		byPath[p] = len(res.Files)
		res.Files = append(res.Files, WorktreeChange{Path: p})
		return &res.Files[len(res.Files)-1]
	}
	for _, c := range staged {
		w := get(c.Path)
		w.OrigPath = c.OrigPath
		w.Submodule = w.Submodule || c.Submodule
		w.Staged = &ChangeStat{Status: c.Status, Insertions: c.Insertions, Deletions: c.Deletions, Binary: c.Binary}
		res.Staged.Files++
		res.Staged.Insertions += c.Insertions
		res.Staged.Deletions += c.Deletions
	}
	for _, c := range unstaged {
		w := get(c.Path)
		w.Submodule = w.Submodule || c.Submodule
		w.Unstaged = &ChangeStat{Status: c.Status, Insertions: c.Insertions, Deletions: c.Deletions, Binary: c.Binary}
		res.Unstaged.Files++
		res.Unstaged.Insertions += c.Insertions
		res.Unstaged.Deletions += c.Deletions
	}
	recs := bytes.Split(untracked, []byte{0})
	if !untrackedComplete && len(recs) > 0 {
		recs = recs[:len(recs)-1] // the last one may be cut
	}
	for _, p := range recs {
		if len(p) == 0 {
			continue
		}
		get(string(p)).Untracked = true
		res.Untracked++
	}
	if len(res.Files) > limit {
		res.Files = res.Files[:limit]
		res.Truncated = true
	}
	if !untrackedComplete {
		res.Truncated = true
	}
	return res, nil
}
