package apply

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/core/proposal"
)

// The discard's narrow check (hashing the files at its paths) must refuse
// whatever the whole comparison refuses. Each case changes a file after
// the card was sealed in a way only git's own conversion or its reading
// of names can tell, and the discard must fail stale, keeping the edit.

// TestDiscard_LineEndingsChangedAfterSealing: HEAD stores the file with
// CRLF and core.autocrlf (or text=auto) is on; the person rewrites the
// file with CRLF after the card. hash-object would store the same blob as
// the sealed one; git add would not.
func TestDiscard_LineEndingsChangedAfterSealing(t *testing.T) {
	for _, how := range []string{"core.autocrlf", "text=auto"} {
		t.Run(how, func(t *testing.T) {
			f := newFixture(t)
			f.git("config", "core.autocrlf", "false")
			f.repo.Write("f.txt", "a\r\nb\r\n")
			f.git("add", "f.txt")
			f.git("commit", "-qm", "crlf")
			if how == "core.autocrlf" {
				f.git("config", "core.autocrlf", "true")
			} else {
				f.repo.Write(".gitattributes", "* text=auto\n")
				f.git("add", ".gitattributes")
				f.git("commit", "-qm", "attributes")
			}
			f.repo.Write("f.txt", "a\nb\nc\n")
			rec := f.propose(&proposal.DiscardArgs{Paths: []string{"f.txt"}})
			edit := "a\r\nb\r\nc\r\n"
			f.repo.Write("f.txt", edit)
			if _, err := f.execute(rec); !errors.Is(err, ErrStaleBase) {
				t.Fatalf("err %v: want stale_base", err)
			}
			if b, _ := os.ReadFile(filepath.Join(f.repo.Dir, "f.txt")); string(b) != edit {
				t.Fatalf("the edit made after the card is gone: %q", b)
			}
		})
	}
}

// TestDiscard_NameEndingInCR: hash-object --stdin-paths reads "x\r" as
// "x"; the check must not vouch for one file by hashing another, and a
// discard of such a name alone still runs.
func TestDiscard_NameEndingInCR(t *testing.T) {
	f := newFixture(t)
	cr := "x\r"
	f.repo.Write("x", "base\n")
	f.repo.Write(cr, "base\n")
	f.git("add", "x", cr)
	f.git("commit", "-qm", "two")
	f.repo.Write("x", "hello\n")
	f.repo.Write(cr, "hello\n")
	rec := f.propose(&proposal.DiscardArgs{Paths: []string{cr}})
	edit := "an edit made after the card\n"
	f.repo.Write(cr, edit)
	if _, err := f.execute(rec); !errors.Is(err, ErrStaleBase) {
		t.Fatalf("err %v: want stale_base", err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.repo.Dir, cr)); string(b) != edit {
		t.Fatalf("the edit made after the card is gone: %q", b)
	}

	g := newFixture(t)
	alone := "y\r"
	g.repo.Write(alone, "base\n")
	g.git("add", alone)
	g.git("commit", "-qm", "one")
	g.repo.Write(alone, "mine\n")
	if _, err := g.execute(g.propose(&proposal.DiscardArgs{Paths: []string{alone}})); err != nil {
		t.Fatalf("an unchanged discard of %q: %v", alone, err)
	}
	if b, _ := os.ReadFile(filepath.Join(g.repo.Dir, alone)); string(b) != "base\n" {
		t.Fatalf("%q is %q after the discard", alone, b)
	}
}
