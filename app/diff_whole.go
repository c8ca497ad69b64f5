package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/core/gitx"
)

// diffAtOnce reads a sealed outcome's diff in one git process when it fits
// the bound a card's diff has (maxProposalDiffBytes): the 4 MB diff of a
// 20,000-file commit is one `git diff`, where pagedDiff ran the whole diff
// once and then eighty more calls naming 256 files each, and the card's
// first lines waited for all of them. Each file's part is still cut at
// gitx.MaxDiffBytes with the notice pagedDiff gives; a diff over the bound
// is collected by pagedDiff.
func diffAtOnce(ctx context.Context, repo *gitx.Repo, spec gitx.DiffSpec, all []string) (*proposalDiff, error) {
	d, err := repo.DiffTextUpTo(ctx, spec, 3, maxProposalDiffBytes)
	if err != nil {
		return nil, err
	}
	if d.Truncated {
		return pagedDiff(ctx, repo, spec, all)
	}
	out := &proposalDiff{compared: d.Compared}
	out.text, out.notices = capFileDiffs(d.Diff, gitx.MaxDiffBytes)
	return out, nil
}

// capFileDiffs cuts each file's part of a diff at max bytes, on a line
// boundary, with a notice for each file cut.
func capFileDiffs(text string, max int) (string, []string) {
	if len(text) <= max {
		return text, nil
	}
	var notices []string
	var b strings.Builder
	b.Grow(len(text))
	for rest := text; rest != ""; {
		part := rest
		if i := strings.Index(rest[1:], "\n"+diffFileHeader); i >= 0 {
			part = rest[:i+2]
		}
		rest = rest[len(part):]
		if len(part) > max {
			cut := part[:max]
			if i := strings.LastIndexByte(cut, '\n'); i >= 0 {
				cut = cut[:i+1]
			} else {
				cut = ""
			}
			part = cut
			notices = append(notices, fmt.Sprintf("one file's diff is larger than %d KiB and is shown cut at that size", max>>10))
		}
		b.WriteString(part)
	}
	return b.String(), notices
}

const diffFileHeader = "diff --git "
