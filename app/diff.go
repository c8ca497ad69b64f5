package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// DiffChunk is one piece of a proposal's diff. The UI keeps asking with
// nextOffset until done, so a large diff loads progressively and is never
// cut without saying so.
type DiffChunk struct {
	Text       string `json:"text"`
	Offset     int    `json:"offset"`
	NextOffset int    `json:"nextOffset"`
	TotalBytes int    `json:"totalBytes"`
	Done       bool   `json:"done"`
	// Compared says what the diff compares, e.g. "main…feature".
	Compared string `json:"compared,omitempty"`
	// Notices say where the diff is incomplete and why (a single file's
	// diff larger than the per-file bound, files beyond reach).
	Notices []string `json:"notices"`
}

// diffChunkBytes is the size of one chunk sent to the UI; the first is
// smaller, so that a card's diff paints its first files at once however
// large the whole is (the rest loads as the reader scrolls). The first is
// about a screen of diff: the browser highlights and draws every line of
// a chunk before any of it shows, and 24 KiB (some 120 files of a codemod)
// took 0.4 s of the 0.8 s before a 1,000-file card's first lines showed.
const (
	diffChunkBytes      = 256 << 10
	diffFirstChunkBytes = 6 << 10
)

// maxProposalDiffBytes bounds the diff kept in memory per proposal.
const maxProposalDiffBytes = 32 << 20

// proposalDiff is the whole diff of a proposal, computed once against its
// pinned SHAs (which never change) and cached.
type proposalDiff struct {
	text     string
	compared string
	notices  []string
	// invisible lists the lines of content that held invisible
	// characters; text shows each of them as ⟨U+XXXX⟩.
	invisible contentFlags
	// index is where each file's part of text lies, made the first time
	// the UI jumps to a file.
	indexOnce sync.Once
	index     map[string]DiffFileAt
}

type diffCache struct {
	mu    sync.Mutex
	items map[string]*proposalDiff
	order []string
	// flagged keeps each computed diff's invisible lines longer than the
	// diff itself: a queue of more cards than the cache holds is listed
	// without computing their diffs again.
	flagged      map[string]contentFlags
	flaggedOrder []string
	// computing makes the requests that need one proposal's diff at once
	// (the queue's flags, the card's first chunk, a second tab) wait for
	// one computation instead of each running git for the whole diff.
	computing singleflight.Group
}

const (
	diffCacheEntries    = 32
	flaggedCacheEntries = 4096
)

// flags are the invisible lines of proposal id's diff, if it was computed.
func (c *diffCache) flags(id string) (contentFlags, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.flagged[id]
	return f, ok
}

func (c *diffCache) get(id string) *proposalDiff {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.items[id]
}

func (c *diffCache) put(id string, d *proposalDiff) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == nil {
		c.items = map[string]*proposalDiff{}
	}
	if _, ok := c.items[id]; !ok {
		c.order = append(c.order, id)
	}
	c.items[id] = d
	for len(c.order) > diffCacheEntries {
		delete(c.items, c.order[0])
		c.order = c.order[1:]
	}
	if c.flagged == nil {
		c.flagged = map[string]contentFlags{}
	}
	if _, ok := c.flagged[id]; !ok {
		c.flaggedOrder = append(c.flaggedOrder, id)
	}
	c.flagged[id] = d.invisible
	for len(c.flaggedOrder) > flaggedCacheEntries {
		delete(c.flagged, c.flaggedOrder[0])
		c.flaggedOrder = c.flaggedOrder[1:]
	}
}

// ProposalDiff returns the chunk of a proposal's diff that starts at
// offset.
func (api *API) ProposalDiff(id string, offset int) (DiffChunk, error) {
	if !proposal.ValidID(id) {
		return DiffChunk{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: "invalid proposal id"}
	}
	a := api.app
	// A diff is cached only once its record was read: the chunks after the
	// first read nothing else.
	d := a.diffs.get(id)
	if d == nil {
		rec, err := a.record(id)
		if err != nil {
			return DiffChunk{}, err
		}
		if d, err = a.cardDiff(rec.Proposal); err != nil {
			return DiffChunk{}, err
		}
	}
	return chunkOf(d, offset)
}

// cardDiff is the diff a card shows, from the cache or computed and
// cached: invisible characters in it are written as ⟨U+XXXX⟩ and the lines
// that held them listed, so the card that flags them and the diff that
// shows them are the same computation.
func (a *App) cardDiff(p proposal.Proposal) (*proposalDiff, error) {
	if d := a.diffs.get(p.ID); d != nil {
		return d, nil
	}
	v, err, _ := a.diffs.computing.Do(p.ID, func() (any, error) {
		if d := a.diffs.get(p.ID); d != nil {
			return d, nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		d, err := a.computeDiff(ctx, p)
		if err != nil {
			return nil, err
		}
		d.text = visibleDiff(d.text, &d.invisible)
		a.diffs.put(p.ID, d)
		return d, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*proposalDiff), nil
}

func chunkOf(d *proposalDiff, offset int) (DiffChunk, error) {
	total := len(d.text)
	if offset < 0 || offset > total {
		return DiffChunk{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: fmt.Sprintf("offset %d is outside the diff (0..%d)", offset, total)}
	}
	size := diffChunkBytes
	if offset == 0 {
		size = diffFirstChunkBytes
	}
	end := offset + size
	if end >= total {
		end = total
	} else if i := strings.LastIndexByte(d.text[offset:end], '\n'); i >= 0 {
		end = offset + i + 1
	}
	c := DiffChunk{Text: d.text[offset:end], Offset: offset, NextOffset: end, TotalBytes: total, Done: end == total,
		Compared: d.compared, Notices: d.notices}
	if c.Notices == nil {
		c.Notices = []string{}
	}
	return c, nil
}

// computeDiff builds the diff a person reviews. For a sealed proposal it
// is the diff between the sealed trees, which never change: what lands
// (or, for a discard or hard reset, the work as it is now against what
// remains: red lines are what is lost). The same diff stays in History
// after the proposal ran, whatever happened to the branch since.
// Every stored proposal is sealed (the app seals on arrival); one
// without an outcome has nothing true to show.
func (a *App) computeDiff(ctx context.Context, p proposal.Proposal) (*proposalDiff, error) {
	if p.Sealed == nil {
		return nil, errcode.New(errcode.Unsupported, "proposal %s has no sealed outcome, so what it would change cannot be shown", p.ID)
	}
	return a.sealedDiff(ctx, p)
}

// sealedDiff is the diff of a sealed outcome, step by step for a plan.
func (a *App) sealedDiff(ctx context.Context, p proposal.Proposal) (*proposalDiff, error) {
	outcomes := []proposal.Sealed{*p.Sealed}
	if len(p.Sealed.Steps) > 0 {
		outcomes = p.Sealed.Steps
	}
	var repo *gitx.Repo
	out := &proposalDiff{}
	for i, s := range outcomes {
		spec, compared, ok := sealedSpec(s)
		if len(outcomes) > 1 {
			compared = fmt.Sprintf("step %d: %s", i+1, compared)
		}
		if !ok {
			out.notices = append(out.notices, compared)
			continue
		}
		if repo == nil {
			r, err := gitx.Default()
			if err != nil {
				return nil, err
			}
			if repo, err = r.Open(ctx, a.allowed(), p.Repo); err != nil {
				return nil, err
			}
		}
		d, err := diffAtOnce(ctx, repo, spec, sealedPaths(s))
		if err != nil {
			return nil, err
		}
		out.text += d.text
		out.notices = append(out.notices, d.notices...)
		if len(outcomes) > 1 {
			out.notices = append(out.notices, compared)
		} else {
			out.compared = compared
		}
	}
	if len(outcomes) > 1 {
		out.compared = fmt.Sprintf("plan of %d steps", len(outcomes))
	}
	if out.compared == "" && len(out.notices) > 0 && len(outcomes) == 1 {
		out.compared, out.notices = out.notices[0], nil
	}
	return out, nil
}

// sealedSpec says which sealed trees to compare and how to describe it.
func sealedSpec(s proposal.Sealed) (gitx.DiffSpec, string, bool) {
	switch {
	case s.Effect == proposal.EffectLoses:
		return gitx.DiffSpec{Base: s.Before, Target: s.After}, "your work as it is now → after approval: red lines are lost", true
	case len(s.Kept) > 0:
		// A soft or mixed reset: the branch's changes stay, uncommitted.
		return gitx.DiffSpec{Base: s.After, Target: s.Before}, "these changes leave the branch and stay in the working tree, uncommitted", true
	case s.Before != "" && s.After != "" && s.Before != s.After:
		return gitx.DiffSpec{Base: s.Before, Target: s.After}, "the sealed outcome: exactly what lands", true
	}
	return gitx.DiffSpec{}, "no file changes: only refs move", false
}

// sealedPaths are the paths a sealed outcome's diff shows (old and new
// paths of renames), in its order: what pagedDiff asks for after a cut.
func sealedPaths(s proposal.Sealed) []string {
	files := s.Files
	if s.Effect != proposal.EffectLoses && len(s.Kept) > 0 {
		files = s.Kept
	}
	out := make([]string, 0, len(files))
	for _, f := range files {
		out = append(out, f.Path)
		if f.OldPath != "" {
			out = append(out, f.OldPath)
		}
	}
	return out
}

// pathsPerCall is how many paths one git diff call of a paged diff names
// (gitx takes at most 256).
const pathsPerCall = 256

// pagedDiff collects a whole diff with bounded git calls: when one call is
// cut, the next asks for the files that were cut off. When the files are
// known beforehand (all: a sealed outcome's paths), the next call names
// those not yet in the diff, however many there are; otherwise git names
// at most 50 cut-off files, and a diff with more says so. A file whose own
// diff exceeds the per-call bound is reported as a notice instead of
// disappearing.
func pagedDiff(ctx context.Context, repo *gitx.Repo, spec gitx.DiffSpec, all []string) (*proposalDiff, error) {
	out := &proposalDiff{}
	var b strings.Builder
	// The paths of all that are in b already (when all is known), and
	// those git cannot be asked for by name (gitx refuses them as
	// pathspecs: a leading "-", control characters), which are left out
	// with a notice rather than failing the whole diff.
	have := map[string]bool{}
	var unnamed []string
	for _, p := range all {
		if _, err := gitx.CheckPath("path", p); err != nil && !have[p] {
			have[p] = true
			unnamed = append(unnamed, p)
		}
	}
	for round := 0; ; round++ {
		d, err := repo.DiffText(ctx, spec, 3, gitx.MaxDiffBytes)
		if err != nil {
			return nil, err
		}
		if round == 0 {
			out.compared = d.Compared
		}
		text := d.Diff
		if d.Truncated {
			if i := strings.LastIndex(text, "diff --git "); i > 0 {
				// Keep whole files only; the cut file is asked for again.
				text = text[:i]
			} else {
				out.notices = append(out.notices, fmt.Sprintf("one file's diff is larger than %d KiB and is shown cut at that size", gitx.MaxDiffBytes>>10))
			}
		}
		b.WriteString(text)
		if b.Len() > maxProposalDiffBytes {
			out.notices = append(out.notices, fmt.Sprintf("the diff is larger than %d MiB; the rest is not shown here — inspect the repository", maxProposalDiffBytes>>20))
			break
		}
		if !d.Truncated && (all == nil || spec.Paths == nil) {
			// The whole diff in one call, or (paths unknown) the last part.
			break
		}
		var next []string
		if all != nil {
			for p := range indexDiffFiles(text) {
				have[p] = true
			}
			next = notYetIn(have, all, pathsPerCall)
			if len(next) == 0 && len(unnamed) > 0 {
				idx := indexDiffFiles(b.String())
				missing := 0
				for _, p := range unnamed {
					if _, ok := idx[p]; !ok {
						missing++
					}
				}
				if missing > 0 {
					what := fmt.Sprintf("%d files are", missing)
					if missing == 1 {
						what = "1 file is"
					}
					out.notices = append(out.notices, what+" not shown: git cannot be asked for such names one by one — inspect the repository")
				}
			}
			if len(next) == 0 || (text == "" && slices.Equal(next, spec.Paths)) {
				// Everything is there, or git answers nothing for what is
				// left (nothing to show for it): asking again would not help.
				break
			}
			spec.Paths = next
			if round > 400 {
				out.notices = append(out.notices, "the diff has more files than can be collected here; inspect the repository for the rest")
				break
			}
			continue
		}
		next = d.OmittedFiles
		if cut := lastHeaderPath(d.Diff); cut != "" && len(text) < len(d.Diff) {
			next = append([]string{cut}, next...)
		}
		if len(next) == 0 {
			break
		}
		if len(d.OmittedFiles) == 50 {
			out.notices = append(out.notices, "more files changed than one page can list; later pages may not show every file — inspect the repository for the full list")
		}
		spec.Paths = next
		if round > 200 {
			break
		}
	}
	out.text = b.String()
	return out, nil
}

// notYetIn is up to max of paths, in order, that are not in have.
func notYetIn(have map[string]bool, paths []string, max int) []string {
	var out []string
	for _, p := range paths {
		if have[p] || slices.Contains(out, p) {
			continue
		}
		out = append(out, p)
		if len(out) == max {
			break
		}
	}
	return out
}

// lastHeaderPath is the b/ path of the last "diff --git" header in text.
func lastHeaderPath(text string) string {
	i := strings.LastIndex(text, "diff --git ")
	if i < 0 {
		return ""
	}
	line := text[i:]
	if j := strings.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	if k := strings.LastIndex(line, " b/"); k >= 0 {
		return line[k+3:]
	}
	return ""
}
