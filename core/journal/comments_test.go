package journal

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

func TestCommentablePaths_SealedFilesRenamesAndWork(t *testing.T) {
	p := newProposal(t, newClock().Now(), "a", "README.md")
	p.Sealed = &proposal.Sealed{
		Files: []proposal.FileChange{
			{Status: proposal.FileRenamed, Path: "docs/new.md", OldPath: "docs/old.md"},
			{Status: proposal.FileDeleted, Path: "gone.txt"},
		},
		Work:  []proposal.FileChange{{Status: proposal.FileModified, Path: "draft.txt"}},
		Steps: []proposal.Sealed{{Files: []proposal.FileChange{{Status: proposal.FileAdded, Path: "step/a.go"}}}},
	}
	reseal(t, &p)
	got := CommentablePaths(p)
	want := []string{"docs/new.md", "docs/old.md", "draft.txt", "gone.txt", "step/a.go"}
	if !slices.Equal(got, want) {
		t.Fatalf("CommentablePaths = %q, want %q", got, want)
	}
}

func TestValidateComments(t *testing.T) {
	p := newProposal(t, newClock().Now(), "a", "README.md", "src/main.go")
	many := make([]Comment, MaxComments+1)
	for i := range many {
		many[i] = Comment{Path: "README.md", Note: "x"}
	}
	cases := []struct {
		name     string
		comments []Comment
		want     string // "" = valid; else a part of the message
	}{
		{"none", nil, ""},
		{"file and lines", []Comment{
			{Path: "README.md", Note: "say why"},
			{Path: "src/main.go", Line: 12, Side: SideNew, Note: "this loops forever"},
			{Path: "src/main.go", Line: 3, Side: SideOld, Note: "keep this line"},
		}, ""},
		{"the most", many[:MaxComments], ""},
		{"a note of the longest", []Comment{{Path: "README.md", Note: strings.Repeat("é", MaxCommentBytes/2)}}, ""},
		{"too many", many, "at most 200 comments"},
		{"another file", []Comment{{Path: "other.go", Note: "x"}}, `comment 1: "other.go" is not one of the proposal's files`},
		{"a directory", []Comment{{Path: "src", Note: "x"}}, "is not one of the proposal's files"},
		{"no path", []Comment{{Note: "x"}}, "is not one of the proposal's files"},
		{"negative line", []Comment{{Path: "README.md", Line: -1, Side: SideNew, Note: "x"}}, "line -1 is negative"},
		{"a line without a side", []Comment{{Path: "README.md", Line: 4, Note: "x"}}, `side must be "new" or "old"`},
		{"an unknown side", []Comment{{Path: "README.md", Line: 4, Side: "left", Note: "x"}}, `not "left"`},
		{"a file note with a side", []Comment{{Path: "README.md", Side: SideNew, Note: "x"}}, "has no side"},
		{"a blank note", []Comment{{Path: "README.md", Note: " \n\t"}}, "the note is empty"},
		{"a note too long", []Comment{{Path: "README.md", Note: strings.Repeat("a", MaxCommentBytes+1)}}, "2001 bytes, more than 2000"},
		{"a note not UTF-8", []Comment{{Path: "README.md", Note: "\xff\xfe"}}, "not UTF-8"},
		{"the second is bad", []Comment{{Path: "README.md", Note: "ok"}, {Path: "README.md", Note: ""}}, "comment 2: the note is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateComments(p, tc.comments)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("ValidateComments = %v, want nil", err)
				}
				return
			}
			e, ok := errcode.As(err)
			if !ok || e.Code != errcode.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ValidateComments = %v, want invalid_argument containing %q", err, tc.want)
			}
		})
	}
}

func TestJournal_RejectWith_StoresCommentsInDecisionAndEvent(t *testing.T) {
	j, rec, clk, path := setup(t)
	p := newProposal(t, clk.Now(), "a", "README.md", "src/main.go")
	if _, _, err := j.Submit(p); err != nil {
		t.Fatal(err)
	}
	cs := []Comment{
		{Path: "README.md", Note: "explain the new flag"},
		{Path: "src/main.go", Line: 7, Side: SideNew, Note: "off by one"},
	}
	got, err := j.RejectWith(p.ID, "owner:web", "not yet", cs)
	if err != nil || got.State != proposal.Rejected || got.Decision == nil || !slices.Equal(got.Decision.Comments, cs) {
		t.Fatalf("RejectWith = %s %+v, %v", got.State, got.Decision, err)
	}
	ev := rec.events[len(rec.events)-1]
	if ev.Type != EventRejected || !slices.Equal(ev.Comments, cs) || ev.Note != "not yet" {
		t.Fatalf("event = %+v", ev)
	}
	// They are stored: a journal opened again reads them back.
	j.Close()
	j2, err := Open(path, Options{Recorder: rec, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	again, err := j2.Get(p.ID)
	if err != nil || again.Decision == nil || !slices.Equal(again.Decision.Comments, cs) {
		t.Fatalf("Get after reopen = %+v, %v", again.Decision, err)
	}
}

func TestJournal_RejectWith_BadCommentsRecordNothing(t *testing.T) {
	j, rec, clk, _ := setup(t)
	p := newProposal(t, clk.Now(), "a", "README.md")
	j.Submit(p)
	before, _ := j.Get(p.ID)
	events := len(rec.events)
	_, err := j.RejectWith(p.ID, "owner:web", "no", []Comment{{Path: "README.md", Note: "fine"}, {Path: "../etc/passwd", Note: "x"}})
	if e, ok := errcode.As(err); !ok || e.Code != errcode.InvalidArgument {
		t.Fatalf("RejectWith with a foreign path = %v, want invalid_argument", err)
	}
	after, _ := j.Get(p.ID)
	if after.State != proposal.Pending || after.Version != before.Version || after.Decision != nil || len(rec.events) != events {
		t.Fatalf("a refused rejection changed the record: %s v%d %+v, %d events", after.State, after.Version, after.Decision, len(rec.events)-events)
	}
	// Without comments it is a plain rejection, and the event carries none.
	got, err := j.RejectWith(p.ID, "owner:web", "no", nil)
	if err != nil || got.State != proposal.Rejected || got.Decision.Comments != nil || rec.events[len(rec.events)-1].Comments != nil {
		t.Fatalf("RejectWith without comments = %+v, %v", got.Decision, err)
	}
	if _, err := j.RejectWith("p-missing", "owner:web", "", []Comment{{Path: "README.md", Note: "x"}}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("RejectWith of a missing proposal = %v, want ErrNotFound", err)
	}
}
