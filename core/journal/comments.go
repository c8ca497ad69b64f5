package journal

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// Comment is a person's note on one file of a proposal, or on one line of
// it, sent back to the agent with a rejection so that it knows what to
// change, and where.
type Comment struct {
	// Path is one of the proposal's files (repository-relative).
	Path string `json:"path"`
	// Line is 0 for a note on the whole file; otherwise a line number in
	// the version of the file Side names.
	Line int `json:"line"`
	// Side is "new" (the file as the proposal leaves it) or "old" (as it
	// was, for a line the proposal deletes); empty for a whole-file note.
	Side string `json:"side,omitempty"`
	Note string `json:"note"`
}

// Sides of a line comment.
const (
	SideNew = "new"
	SideOld = "old"
)

// Bounds of a rejection's comments: enough for a thorough review, small
// enough to travel to the agent in one answer.
const (
	MaxComments     = 200
	MaxCommentBytes = 2000
)

// CommentablePaths lists the files of p a person can comment on: the files
// its card's diff shows (the sealed outcome's, old paths of renames and
// the work it keeps or throws away included), else the files its
// arguments name. Sorted, without duplicates.
func CommentablePaths(p proposal.Proposal) []string {
	files, _ := p.FilesTouched()
	out := slices.Clone(files)
	var walk func(s *proposal.Sealed)
	walk = func(s *proposal.Sealed) {
		if s == nil {
			return
		}
		out = append(out, s.SealedPaths()...)
		for _, f := range slices.Concat(s.Kept, s.Work) {
			out = append(out, f.Path)
			if f.OldPath != "" {
				out = append(out, f.OldPath)
			}
		}
		for i := range s.Steps {
			walk(&s.Steps[i])
		}
	}
	walk(p.Sealed)
	slices.Sort(out)
	return slices.Compact(out)
}

// ValidateComments checks a rejection's comments against p: each names one
// of its files (CommentablePaths), a line ≥ 0 with a side for a line note
// and none for a whole-file note, and a note that is not blank, of at
// most MaxCommentBytes of UTF-8; at most MaxComments of them. The error
// is an invalid_argument *errcode.Error naming the comment (data: index).
func ValidateComments(p proposal.Proposal, cs []Comment) error {
	if len(cs) == 0 {
		return nil
	}
	if len(cs) > MaxComments {
		return &errcode.Error{Code: errcode.InvalidArgument,
			Msg:  fmt.Sprintf("a rejection carries at most %d comments, not %d", MaxComments, len(cs)),
			Data: map[string]any{"max": MaxComments}}
	}
	paths := CommentablePaths(p)
	for i, c := range cs {
		bad := func(format string, args ...any) error {
			return &errcode.Error{Code: errcode.InvalidArgument,
				Msg:  fmt.Sprintf("comment %d: ", i+1) + fmt.Sprintf(format, args...),
				Data: map[string]any{"index": i}}
		}
		if _, ok := slices.BinarySearch(paths, c.Path); !ok {
			if len(c.Path) > proposal.MaxPathBytes {
				return bad("its path is not one of the proposal's files")
			}
			return bad("%q is not one of the proposal's files", c.Path)
		}
		switch {
		case c.Line < 0:
			return bad("line %d is negative (0 is the whole file)", c.Line)
		case c.Line == 0 && c.Side != "":
			return bad("a note on the whole file (line 0) has no side")
		case c.Line > 0 && c.Side != SideNew && c.Side != SideOld:
			return bad("side must be %q or %q for a line, not %q", SideNew, SideOld, c.Side)
		}
		switch {
		case strings.TrimSpace(c.Note) == "":
			return bad("the note is empty")
		case len(c.Note) > MaxCommentBytes:
			return bad("the note is %d bytes, more than %d", len(c.Note), MaxCommentBytes)
		case !utf8.ValidString(c.Note):
			return bad("the note is not UTF-8 text")
		}
	}
	return nil
}

// RejectWith records a human rejection with comments on the proposal's
// files and lines, which the agent reads with the decision. Comments that
// do not fit the proposal (ValidateComments) are refused and nothing is
// recorded. A proposal's files stay the same for its life (a re-sealing
// keeps them), so they are checked before the transition.
func (j *Journal) RejectWith(id, by, note string, comments []Comment) (Record, error) {
	if len(comments) > 0 {
		rec, err := j.Get(id)
		if err != nil {
			return Record{}, err
		}
		if err := ValidateComments(rec.Proposal, comments); err != nil {
			return Record{}, err
		}
		comments = slices.Clone(comments)
	}
	return j.decideWith(id, "", by, note, false, false, func(d *Details, _ time.Time) {
		d.Decision.Comments = comments
	})
}

// rejectionComments are the comments an audit event of type typ carries:
// a rejection's, on its proposal_rejected event only.
func rejectionComments(rec Record, typ string) []Comment {
	if typ != EventRejected || rec.Decision == nil {
		return nil
	}
	return rec.Decision.Comments
}
