package app

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/sluicehq/sluice/core/proposal"
)

// Invisible characters are how a text says one thing on screen and another
// to git: a right-to-left override (U+202E) turns "txt.exe" around, a
// zero-width space makes two branch names look the same. Everything an
// agent wrote that a card, a notification or History shows passes through
// visible first, which writes each such character as ⟨U+XXXX⟩, and the card
// lists every field that held one, so the person sees both that something
// was hidden and what.

// isInvisible reports whether r changes how text reads without showing
// itself: Unicode format characters (bidi controls and isolates, zero-width
// space, joiners, word joiner, BOM, …) and control characters other than
// newline and tab.
func isInvisible(r rune) bool {
	switch r {
	case '\n', '\t':
		return false
	}
	return unicode.Is(unicode.Cf, r) || unicode.IsControl(r) || r == '\u180e'
}

// visible returns s with every invisible character written as ⟨U+XXXX⟩,
// and whether there was one.
func visible(s string) (string, bool) {
	if strings.IndexFunc(s, isInvisible) < 0 {
		return s, false
	}
	var b strings.Builder
	for _, r := range s {
		if isInvisible(r) {
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String(), true
}

// InvisibleText is one field of a card that held invisible characters.
type InvisibleText struct {
	// Field names it: "reason", "repo", "files[2]", "args.message",
	// "pinned.refs[refs/heads/…]".
	Field string `json:"field"`
	// Shown is its text with each invisible character written as ⟨U+XXXX⟩.
	Shown string `json:"shown"`
}

// invisibleIn lists every string in v (a JSON-shaped value) that holds
// invisible characters, sorted by field.
func invisibleIn(prefix string, v any, out *[]InvisibleText) {
	switch x := v.(type) {
	case string:
		if shown, ok := visible(x); ok {
			*out = append(*out, InvisibleText{Field: prefix, Shown: shown})
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			name, hidden := visible(k)
			if hidden {
				*out = append(*out, InvisibleText{Field: prefix + " (a key)", Shown: name})
			}
			invisibleIn(prefix+"."+name, x[k], out)
		}
	case []any:
		for i, e := range x {
			invisibleIn(fmt.Sprintf("%s[%d]", prefix, i), e, out)
		}
	}
}

// flagInvisible escapes the card's own text fields and lists every field,
// including those inside the operation's arguments (a commit message, a
// branch, paths) and the pinned refs, that held invisible characters.
func flagInvisible(c *Card) {
	var out []InvisibleText
	esc := func(field string, s *string) {
		if shown, ok := visible(*s); ok {
			out = append(out, InvisibleText{Field: field, Shown: shown})
			*s = shown
		}
	}
	esc("reason", &c.Reason)
	esc("repo", &c.Repo)
	esc("repoName", &c.RepoName)
	for i := range c.Files {
		esc(fmt.Sprintf("files[%d]", i), &c.Files[i])
	}
	for _, part := range []struct {
		name string
		v    any
	}{{"args", c.Args}, {"pinned", c.Pinned}, {"sealed", c.Sealed}} {
		b, err := json.Marshal(part.v)
		if err != nil {
			continue
		}
		var generic any
		if json.Unmarshal(b, &generic) == nil {
			invisibleIn(part.name, generic, &out)
		}
	}
	if len(out) > 0 {
		c.Sealed = escapedCopy(c.Sealed)
		if c.Args != nil && reflect.TypeOf(c.Args).Kind() == reflect.Pointer {
			// A copy of the same concrete type, its strings escaped.
			if b, err := json.Marshal(c.Args); err == nil {
				cp := reflect.New(reflect.TypeOf(c.Args).Elem())
				if json.Unmarshal(b, cp.Interface()) == nil {
					escapeStrings(cp.Elem())
					if a, ok := cp.Interface().(proposal.Args); ok {
						c.Args = a
					}
				}
			}
		}
	}
	c.Invisible = out
	if c.Invisible == nil {
		c.Invisible = []InvisibleText{}
	}
}

// invisibleOf lists the fields of p that hold invisible characters.
func invisibleOf(p proposal.Proposal) []InvisibleText {
	c := Card{Reason: p.Reason, Repo: p.Repo, Args: p.Args, Pinned: p.Pinned}
	c.Files, _ = p.FilesTouched()
	flagInvisible(&c)
	return c.Invisible
}

// escapedCopy returns a deep copy of v (a pointer to a JSON-shaped value)
// whose strings are all shown with their invisible characters escaped. The
// original is never changed: it is the proposal the digest covers.
func escapedCopy[T any](v *T) *T {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		return v
	}
	escapeStrings(reflect.ValueOf(out).Elem())
	return out
}

func escapeStrings(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			s, _ := visible(v.String())
			v.SetString(s)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			escapeStrings(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				escapeStrings(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			escapeStrings(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := v.MapIndex(k)
			if e.Kind() == reflect.String {
				s, _ := visible(e.String())
				v.SetMapIndex(k, reflect.ValueOf(s).Convert(e.Type()))
			}
		}
	}
}

// Invisible characters hide in content as well: a right-to-left override
// inside a string literal or a comment makes a line of code read
// differently from what the compiler sees ("Trojan Source"). The card's
// diff, a patch and a workspace run's output are shown with each such
// character written as ⟨U+XXXX⟩, and every line that held one is listed on
// the card with its file and line number. Content is judged by the same
// definition as names (isInvisible), with two things every text file may
// have: a carriage return ending a line, and a byte order mark starting
// the file.

// InvisibleLine is one line of content (a file in the diff, a run's
// output) that held invisible characters.
type InvisibleLine struct {
	// File is the repository path, or the run's stream
	// ("workspace run 2 stdout").
	File string `json:"file"`
	// Line is the line's number: in the new file for added and unchanged
	// lines, in the old one for removed lines (Removed), in the shown
	// output for a run; 0 for a run's argument.
	Line    int  `json:"line"`
	Removed bool `json:"removed,omitempty"`
	// Chars names each invisible character once: "right-to-left override
	// U+202E".
	Chars []string `json:"chars"`
	// Shown is the line with each invisible character written as
	// ⟨U+XXXX⟩, cut to maxShownLine bytes.
	Shown string `json:"shown"`
	// Text says it in one line: "src/auth.js line 12: right-to-left
	// override U+202E".
	Text string `json:"text"`
}

// maxInvisibleLines bounds the lines a card lists; the rest are counted.
const maxInvisibleLines = 100

// maxShownLine bounds the text of one listed line.
const maxShownLine = 300

// charNames are the invisible characters a reader may know by name.
var charNames = map[rune]string{
	0x00AD: "soft hyphen", 0x061C: "Arabic letter mark", 0x180E: "Mongolian vowel separator",
	0x200B: "zero-width space", 0x200C: "zero-width non-joiner", 0x200D: "zero-width joiner",
	0x200E: "left-to-right mark", 0x200F: "right-to-left mark",
	0x202A: "left-to-right embedding", 0x202B: "right-to-left embedding", 0x202C: "pop directional formatting",
	0x202D: "left-to-right override", 0x202E: "right-to-left override",
	0x2060: "word joiner", 0x2061: "function application", 0x2062: "invisible times",
	0x2063: "invisible separator", 0x2064: "invisible plus",
	0x2066: "left-to-right isolate", 0x2067: "right-to-left isolate", 0x2068: "first strong isolate",
	0x2069: "pop directional isolate", 0xFEFF: "zero-width no-break space (byte order mark)",
	0x0000: "NUL", 0x0007: "bell", 0x0008: "backspace", 0x000B: "vertical tab", 0x000C: "form feed",
	0x000D: "carriage return", 0x001B: "escape",
}

// charName is "right-to-left override U+202E".
func charName(r rune) string {
	name, ok := charNames[r]
	switch {
	case ok:
	case unicode.Is(unicode.Cf, r):
		name = "format character"
	default:
		name = "control character"
	}
	return fmt.Sprintf("%s U+%04X", name, r)
}

// contentLine escapes one line of content (without its newline) as
// visible does, except for a carriage return that ends it and, when
// fileStart, a byte order mark that starts it. It returns the line and
// the invisible characters it held, each once.
func contentLine(s string, fileStart bool) (string, []rune) {
	body, cr := strings.CutSuffix(s, "\r")
	if fileStart {
		if rest, ok := strings.CutPrefix(body, "\ufeff"); ok {
			shown, found := contentLine(rest, false)
			return "\ufeff" + shown, found
		}
	}
	if strings.IndexFunc(body, isInvisible) < 0 {
		return s, nil
	}
	var b strings.Builder
	var found []rune
	for _, r := range body {
		if isInvisible(r) {
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
			if !slices.Contains(found, r) {
				found = append(found, r)
			}
			continue
		}
		b.WriteRune(r)
	}
	if cr {
		b.WriteByte('\r')
	}
	return b.String(), found
}

// contentFlags collects the lines of content that held invisible
// characters, up to maxInvisibleLines, and counts the rest.
type contentFlags struct {
	lines []InvisibleLine
	more  int
}

func (f *contentFlags) add(file string, line int, removed bool, shown string, chars []rune) {
	if len(f.lines) >= maxInvisibleLines {
		f.more++
		return
	}
	names := make([]string, len(chars))
	for i, r := range chars {
		names[i] = charName(r)
	}
	shown = strings.TrimSuffix(shown, "\r")
	if len(shown) > maxShownLine {
		shown = strings.ToValidUTF8(shown[:maxShownLine], "") + "…"
	}
	where := file
	if line > 0 {
		where = fmt.Sprintf("%s line %d", file, line)
	}
	if removed {
		where += " (removed)"
	}
	f.lines = append(f.lines, InvisibleLine{File: file, Line: line, Removed: removed, Chars: names, Shown: shown,
		Text: where + ": " + strings.Join(names, ", ")})
}

// visibleDiff returns a unified diff (git's, or a patch) with every
// invisible character written as ⟨U+XXXX⟩, and the lines of its files'
// content that held one, each with its file and line number. Headers are
// escaped too; their paths are flagged as the card's files already.
func visibleDiff(text string, f *contentFlags) string {
	if strings.IndexFunc(text, isInvisible) < 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	var file string
	var oldLine, newLine, oldLeft, newLeft int
	for rest := text; rest != ""; {
		line, nl := rest, ""
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, nl, rest = rest[:i], "\n", rest[i+1:]
		} else {
			rest = ""
		}
		inHunk := oldLeft > 0 || newLeft > 0
		switch {
		case inHunk && line != "" && (line[0] == '+' || line[0] == '-' || line[0] == ' '):
			n, removed := newLine, line[0] == '-'
			if removed {
				n = oldLine
			}
			shown, chars := contentLine(line[1:], n == 1)
			if len(chars) > 0 {
				f.add(file, n, removed, shown, chars)
			}
			line = line[:1] + shown
			if line[0] != '+' {
				oldLine++
				oldLeft--
			}
			if line[0] != '-' {
				newLine++
				newLeft--
			}
		case inHunk && strings.HasPrefix(line, `\`):
			// "\ No newline at end of file"
		default:
			oldLeft, newLeft = 0, 0
			switch {
			case strings.HasPrefix(line, "diff --git "):
				file = headerPath(line)
			case strings.HasPrefix(line, "+++ "):
				if p := diffPath(line[4:]); p != "" {
					file = p
				}
			case strings.HasPrefix(line, "--- "):
				if p := diffPath(line[4:]); p != "" && file == "" {
					file = p
				}
			case strings.HasPrefix(line, "@@ "):
				oldLine, oldLeft, newLine, newLeft = hunkHeader(line)
			}
			line, _ = visible(line)
		}
		b.WriteString(line)
		b.WriteString(nl)
	}
	return b.String()
}

// hunkHeader reads "@@ -a,b +c,d @@": where each side starts and how many
// lines it has.
func hunkHeader(line string) (oldStart, oldCount, newStart, newCount int) {
	fields := strings.Fields(line)
	if len(fields) < 3 {
		return 0, 0, 0, 0
	}
	side := func(s, sign string) (int, int) {
		s, ok := strings.CutPrefix(s, sign)
		if !ok {
			return 0, 0
		}
		start, count, found := strings.Cut(s, ",")
		a, err1 := strconv.Atoi(start)
		c := 1
		var err2 error
		if found {
			c, err2 = strconv.Atoi(count)
		}
		if err1 != nil || err2 != nil {
			return 0, 0
		}
		return a, c
	}
	oldStart, oldCount = side(fields[1], "-")
	newStart, newCount = side(fields[2], "+")
	return
}

// headerPath is the b/ path of a "diff --git a/x b/x" line, shown.
func headerPath(line string) string {
	rest := strings.TrimPrefix(line, "diff --git ")
	if strings.HasSuffix(rest, `"`) {
		if i := strings.LastIndex(rest[:len(rest)-1], ` "`); i >= 0 {
			return diffPath(rest[i+1:])
		}
	}
	if i := strings.LastIndex(rest, " b/"); i >= 0 {
		return diffPath(rest[i+1:])
	}
	return ""
}

// diffPath reads a path of a diff header ("b/src/x.go", a C-quoted
// "\"b/\\342\\200\\256x\"", "/dev/null"), without its a/ or b/ prefix and
// with invisible characters shown.
func diffPath(s string) string {
	s = strings.TrimRight(s, "\t")
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		}
	} else if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	if s == "/dev/null" {
		return ""
	}
	if len(s) > 2 && (s[:2] == "a/" || s[:2] == "b/") {
		s = s[2:]
	}
	shown, _ := visible(strings.ToValidUTF8(s, "\uFFFD"))
	return shown
}

// visibleOutput returns a run's output with every invisible character
// written as ⟨U+XXXX⟩, listing each line that held one under stream.
func visibleOutput(stream, text string, f *contentFlags) string {
	if strings.IndexFunc(text, isInvisible) < 0 {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		shown, chars := contentLine(l, false)
		if len(chars) > 0 {
			f.add(stream, i+1, false, shown, chars)
		}
		lines[i] = shown
	}
	return strings.Join(lines, "\n")
}

// flagContent lists on c the lines of its diff and of its workspace
// evidence that held invisible characters, and raises its risk to at
// least medium when there is one: a line that reads differently from what
// lands is worth a careful look whatever the operation. The diff is
// computed when compute is set (a card read on its own or in the queue);
// History, which lists many cards, uses the diffs already computed.
func (a *App) flagContent(c *Card, p proposal.Proposal, compute bool) {
	var f contentFlags
	if known, ok := a.diffs.flags(p.ID); ok {
		f = known
	} else if compute {
		if d, err := a.cardDiff(p); err == nil {
			f = d.invisible
		}
	}
	lines := slices.Clone(f.lines)
	more := f.more
	if c.Evidence != nil {
		lines = append(lines, c.Evidence.invisible.lines...)
		more += c.Evidence.invisible.more
	}
	if len(lines) > maxInvisibleLines {
		more += len(lines) - maxInvisibleLines
		lines = lines[:maxInvisibleLines]
	}
	c.InvisibleContent, c.InvisibleContentMore = lines, more
	if len(lines) == 0 {
		c.InvisibleContent = []InvisibleLine{}
		return
	}
	why := "the content holds invisible characters (" + lines[0].Text + ")"
	if n := len(lines) + more - 1; n > 0 {
		why += fmt.Sprintf(" and %d more line(s)", n)
	}
	if c.Risk < proposal.RiskMedium {
		c.Risk, c.RiskWhy = proposal.RiskMedium, why
	} else {
		c.RiskWhy += "; " + why
	}
}

// holdAuto says why a rule must not approve p by itself: its diff, or a
// workspace run behind it, holds invisible characters (what lands reads
// otherwise than what anyone, a rule's author included, expects from
// its risk), or its diff cannot be read to tell. "" lets the rule decide.
func (a *App) holdAuto(p proposal.Proposal) string {
	// A rule approves only what would land: a card that cannot land now
	// (git's lock files, a checkout with uncommitted changes in the way, no
	// identity) waits for a person, who sees why and can fix it, instead of
	// failing after an approval nobody gave.
	if why := a.blockedNow(p); why != "" {
		return why
	}
	d, err := a.cardDiff(p)
	if err != nil {
		return "its diff could not be read to look for invisible characters: " + err.Error()
	}
	lines := d.invisible.lines
	if ev := a.evidenceFor(p); ev != nil {
		lines = append(slices.Clone(lines), ev.invisible.lines...)
	}
	if len(lines) == 0 {
		return ""
	}
	return "the content holds invisible characters (" + lines[0].Text + "): a person reads it first"
}

// blockedNow says why p could not land now ("" when it could), from the
// same preflight the card shows.
func (a *App) blockedNow(p proposal.Proposal) string {
	if a.executor == nil {
		return ""
	}
	pf, err := a.preflight(p)
	switch {
	case err != nil:
		return "it could not be checked before it runs: " + err.Error()
	case pf.Stale:
		return "it is stale: " + pf.Describe()
	case len(pf.Blockers) > 0:
		return "it cannot land now: " + pf.Blockers[0]
	}
	return ""
}
