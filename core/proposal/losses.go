package proposal

import (
	"fmt"
	"strconv"
	"strings"
)

// Tense is when a card's sentences are said: before the proposal runs,
// after it landed, or after it ended without changing anything. The same
// sealed outcome reads "throws away", "threw away" or "would have thrown
// away" depending on it.
type Tense string

// Tenses.
const (
	// Future: the proposal has not run (pending, approved, executing) or
	// whether it ran is not known yet (needs reconciliation).
	Future Tense = "future"
	// Past: the proposal landed.
	Past Tense = "past"
	// Unrealized: the proposal ended and nothing was changed (rejected,
	// cancelled, expired, failed).
	Unrealized Tense = "unrealized"
)

// TenseOf is the tense a card in state st speaks in.
func TenseOf(st State) Tense {
	switch st {
	case Completed:
		return Past
	case Rejected, Cancelled, Expired, Failed:
		return Unrealized
	}
	return Future
}

// say picks the form of a sentence for t: now ("throws away"), past
// ("threw away"), would ("would have thrown away").
func say(t Tense, now, past, would string) string {
	switch t {
	case Past:
		return past
	case Unrealized:
		return would
	}
	return now
}

// Losses counts, by kind, what approving a proposal loses, from its
// sealed outcome. Every count is of distinct files or commits: a hard
// reset that throws away the changes in one file counts one file, however
// many other files the reset changes.
type Losses struct {
	// Modified: tracked files whose uncommitted changes are thrown away.
	Modified int `json:"modified"`
	// Added: new files (added to the index, never committed) that are
	// removed.
	Added int `json:"added"`
	// Deleted: files the person deleted without committing that come
	// back.
	Deleted int `json:"deleted"`
	// Untracked: untracked files deleted or overwritten.
	Untracked int `json:"untracked"`
	// Changed: files with uncommitted work whose kind the outcome does not
	// record (outcomes sealed before kinds were recorded).
	Changed int `json:"changed"`
	// Commits: commits that become unreachable from the branch (or the
	// remote).
	Commits int `json:"commits"`
}

// Files is the number of files whose work is lost.
func (l Losses) Files() int { return l.Modified + l.Added + l.Deleted + l.Untracked + l.Changed }

// None reports whether nothing is lost.
func (l Losses) None() bool { return l.Files() == 0 && l.Commits == 0 }

// Losses counts what s loses, plan steps included.
func (s *Sealed) Losses() Losses {
	var l Losses
	if s == nil {
		return l
	}
	if s.Lost != nil {
		l.Commits = s.Lost.Count
	}
	if s.Effect == EffectLoses {
		untracked := map[string]bool{}
		for _, u := range s.Untracked {
			untracked[u] = true
		}
		l.Untracked = len(untracked)
		if s.Work != nil {
			for _, w := range s.Work {
				if untracked[w.Path] {
					continue
				}
				switch w.Status {
				case FileAdded:
					l.Added++
				case FileDeleted:
					l.Deleted++
				default:
					l.Modified++
				}
			}
		} else {
			for _, p := range s.Uncommitted {
				if !untracked[p] {
					l.Changed++
				}
			}
		}
	}
	for i := range s.Steps {
		st := s.Steps[i].Losses()
		l.Modified += st.Modified
		l.Added += st.Added
		l.Deleted += st.Deleted
		l.Untracked += st.Untracked
		l.Changed += st.Changed
		l.Commits += st.Commits
	}
	return l
}

// Sentence says what is lost in one sentence without a subject, in tense
// t: "throws away uncommitted work in 1 modified file and makes 2
// commits unreachable". It is "" when nothing is lost.
func (l Losses) Sentence(t Tense) string {
	var kinds []string
	for _, k := range []struct {
		n    int
		what string
	}{
		{l.Modified, "modified file"}, {l.Added, "new file"}, {l.Deleted, "deleted file"},
		{l.Untracked, "untracked file"}, {l.Changed, "changed file"},
	} {
		if k.n > 0 {
			kinds = append(kinds, Count(k.n, k.what))
		}
	}
	var parts []string
	if len(kinds) > 0 {
		parts = append(parts, say(t, "throws away", "threw away", "would have thrown away")+" uncommitted work in "+joinAnd(kinds))
	}
	if l.Commits > 0 {
		verb := say(t, "makes", "made", "would have made")
		if len(parts) > 0 {
			// "would have" is said once for both.
			verb = say(t, "makes", "made", "made")
		}
		parts = append(parts, verb+" "+Count(l.Commits, "commit")+" unreachable")
	}
	if len(parts) == 2 && len(kinds) > 1 {
		// "in 1 modified file and 1 new file, and makes 1 commit
		// unreachable": the comma says where the list of files ends.
		return parts[0] + ", and " + parts[1]
	}
	return strings.Join(parts, " and ")
}

// Count writes n things: "1 file", "2 files", "1,000 files", "3
// branches". what is the singular; its plural adds "es" after s, x, ch or
// sh, else "s".
func Count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	plural := what + "s"
	for _, end := range []string{"s", "x", "ch", "sh"} {
		if strings.HasSuffix(what, end) {
			plural = what + "es"
		}
	}
	return Thousands(n) + " " + plural
}

// Thousands writes n with a comma between groups of three digits, as a
// person reads a count: 1,000.
func Thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// joinAnd lists items as a person does: "a", "a and b", "a, b and c".
func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// listNames names up to max items and counts the rest: "a, b and 3
// more".
func listNames(items []string, max int) string {
	if len(items) <= max {
		return joinAnd(items)
	}
	return strings.Join(items[:max], ", ") + fmt.Sprintf(" and %d more", len(items)-max)
}
