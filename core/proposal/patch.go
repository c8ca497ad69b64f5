package proposal

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/core/gitpath"
)

// patchFiles lists the paths a unified diff (git or plain, -p1 style)
// names, from its "diff --git" lines, ---/+++ lines and git's rename/copy
// lines. Every path in every one of those lines is validated: a patch that
// reaches outside the working tree or into .git is refused here, long
// before anything applies it. And each file of the patch must mean one
// thing: the lines that name its old and its new path must all agree
// (git apply reads some of them and not others, so a patch whose header
// says README.md while its ---/+++ lines say .git/config would show one
// file to a reader and to policy and let git decide on another).
func patchFiles(patch string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(p string) error {
		if p == "/dev/null" {
			return nil
		}
		if !validRelPath(p, false) {
			return errors.New("names a path outside the working tree or inside .git: " + strconv.Quote(p))
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
		return nil
	}
	// cur is the file being read; it ends at the next "diff --git" line,
	// at a "--- " line once it has its +++ line, and at the end.
	var cur *patchFile
	end := func() error {
		if cur == nil {
			return nil
		}
		f := cur
		cur = nil
		// Every path any line names is checked first, so a refused
		// path is named as such even where the lines also disagree.
		names, err := f.paths()
		for _, n := range names {
			if err := add(n); err != nil {
				return fmt.Errorf("has a file (line %d, %s) that %w", f.line, f.describe(), err)
			}
		}
		if err != nil {
			return fmt.Errorf("has a file (line %d, %s) %w", f.line, f.describe(), err)
		}
		return nil
	}
	// Inside a hunk, a removed line "-- x" reads like a file header, so hunk
	// bodies are skipped by their line counts.
	var oldLeft, newLeft int
	n := 0
	for line := range strings.Lines(patch) {
		n++
		line = strings.TrimRight(line, "\r\n")
		if oldLeft > 0 || newLeft > 0 {
			switch {
			case strings.HasPrefix(line, "\\"):
			case strings.HasPrefix(line, "-"):
				oldLeft--
			case strings.HasPrefix(line, "+"):
				newLeft--
			default: // context, including an empty line for an empty context line
				oldLeft--
				newLeft--
			}
			if oldLeft < 0 || newLeft < 0 {
				return nil, fmt.Errorf("has a hunk whose lines do not match its header (line %d)", n)
			}
			continue
		}
		switch {
		case strings.HasPrefix(line, "@@ "):
			o, nn, ok := hunkCounts(line)
			if !ok {
				return nil, fmt.Errorf("has a malformed hunk header (line %d)", n)
			}
			oldLeft, newLeft = o, nn
		case strings.HasPrefix(line, "diff --git "):
			if err := end(); err != nil {
				return nil, err
			}
			cur = &patchFile{line: n, git: true, header: strings.TrimPrefix(line, "diff --git ")}
		case strings.HasPrefix(line, "--- "), strings.HasPrefix(line, "+++ "):
			p, err := headerPath(line[4:], true)
			if err != nil {
				return nil, fmt.Errorf("%w (line %d)", err, n)
			}
			minus := line[0] == '-'
			if cur != nil && minus && (cur.hasOld || cur.hasNew) {
				if err := end(); err != nil {
					return nil, err
				}
			}
			if cur == nil {
				cur = &patchFile{line: n}
			}
			if err := cur.set(minus, p, n); err != nil {
				return nil, err
			}
		case strings.HasPrefix(line, "rename from "), strings.HasPrefix(line, "rename to "),
			strings.HasPrefix(line, "copy from "), strings.HasPrefix(line, "copy to "):
			_, rest, _ := strings.Cut(line, " ")
			_, rest, _ = strings.Cut(rest, " ")
			p, err := headerPath(rest, false)
			if err != nil {
				return nil, fmt.Errorf("%w (line %d)", err, n)
			}
			if cur == nil || !cur.git {
				return nil, fmt.Errorf("has a rename or copy line outside a \"diff --git\" file (line %d)", n)
			}
			if f := strings.Fields(line); f[1] == "from" {
				cur.from = append(cur.from, p)
			} else {
				cur.to = append(cur.to, p)
			}
		}
	}
	if err := end(); err != nil {
		return nil, err
	}
	if oldLeft > 0 || newLeft > 0 {
		return nil, errors.New("ends inside a hunk")
	}
	if len(out) == 0 {
		return nil, errors.New("names no files: it is not a unified diff")
	}
	slices.Sort(out)
	return out, nil
}

// patchFile is one file of a patch: every line that names its old or new
// path.
type patchFile struct {
	// line is where the file starts in the patch, for messages.
	line int
	// git: the file starts with a "diff --git" line, whose paths are
	// header.
	git    bool
	header string
	// old and new are the ---/+++ paths ("/dev/null" for a creation or a
	// deletion), set when hasOld or hasNew.
	old, new       string
	hasOld, hasNew bool
	// from and to are the rename/copy from and to paths.
	from, to []string
}

// set records a ---/+++ line; a second one of either is refused.
func (f *patchFile) set(minus bool, p string, n int) error {
	if (minus && f.hasOld) || (!minus && f.hasNew) {
		return fmt.Errorf("has two %s lines for one file (line %d)", map[bool]string{true: "---", false: "+++"}[minus], n)
	}
	if minus {
		f.old, f.hasOld = p, true
	} else {
		f.new, f.hasNew = p, true
	}
	return nil
}

func (f *patchFile) describe() string {
	if f.git {
		return strconv.Quote("diff --git " + f.header)
	}
	return strconv.Quote("--- a/" + f.old)
}

// paths returns every path the file's lines name, and an error when
// they do not all name the same old path and the same new path.
func (f *patchFile) paths() ([]string, error) {
	// Every name a line of the file gives, per side.
	var olds, news []string
	if f.hasOld && f.old != "/dev/null" {
		olds = append(olds, f.old)
	}
	if f.hasNew && f.new != "/dev/null" {
		news = append(news, f.new)
	}
	olds = append(olds, f.from...)
	news = append(news, f.to...)
	a, b, split := "", "", false
	if f.git {
		a, b, split = splitGitHeader(f.header)
	}
	all := slices.Concat(olds, news)
	if split {
		all = append(all, a, b)
	}
	switch {
	case f.hasOld != f.hasNew:
		return all, errors.New("with a --- line without its +++ line, or the reverse")
	case f.hasOld && f.old == "/dev/null" && f.new == "/dev/null":
		return all, errors.New("with /dev/null on both its --- and +++ lines")
	}
	for _, side := range [][]string{olds, news} {
		for _, p := range side[min(1, len(side)):] {
			if p != side[0] {
				return all, fmt.Errorf("whose lines name different paths: %q and %q", side[0], p)
			}
		}
	}
	// A creation names the file only on the new side, a deletion only on
	// the old; a header names it on both.
	oldName, newName := "", ""
	if len(olds) > 0 {
		oldName = olds[0]
	}
	if len(news) > 0 {
		newName = news[0]
	}
	if oldName == "" {
		oldName = newName
	}
	if newName == "" {
		newName = oldName
	}
	if !f.git {
		// A plain diff names its file once per side; git apply would pick
		// one of the two when they differ.
		if oldName != newName {
			return all, fmt.Errorf("whose --- and +++ lines name different paths: %q and %q", oldName, newName)
		}
		return all, nil
	}
	if oldName != newName && len(f.from) == 0 {
		return all, fmt.Errorf("whose --- and +++ lines name different paths without a rename or copy: %q and %q", oldName, newName)
	}
	switch {
	case !split && (oldName == "" || f.header != "a/"+oldName+" b/"+newName):
		// An unquoted header with a space in a path cannot be split by
		// itself; it must then be exactly the names the other lines give.
		return all, errors.New("whose \"diff --git\" line cannot be read")
	case !split, oldName == "":
		// The header is the other lines' names, or the only one (a binary
		// or mode change).
		return all, nil
	case a != oldName || b != newName:
		return all, fmt.Errorf("whose \"diff --git\" line names %q and %q but whose other lines name %q and %q", a, b, oldName, newName)
	}
	return all, nil
}

// hunkCounts reads the old and new line counts of "@@ -a[,b] +c[,d] @@".
func hunkCounts(line string) (int, int, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || f[0] != "@@" || f[3] != "@@" || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return 0, 0, false
	}
	count := func(r string) (int, bool) {
		_, c, found := strings.Cut(r[1:], ",")
		if !found {
			return 1, true
		}
		n, err := strconv.Atoi(c)
		return n, err == nil && n >= 0 && n <= 1<<24
	}
	o, ok1 := count(f[1])
	n, ok2 := count(f[2])
	return o, n, ok1 && ok2
}

// headerPath reads the path of a ---/+++ (strip is true: drop "a/" or
// "b/") or rename/copy line, unquoting git's C-style quoting and dropping
// a trailing tab and timestamp.
func headerPath(s string, strip bool) (string, error) {
	var p string
	if strings.HasPrefix(s, `"`) {
		q, err := unquoteC(s)
		if err != nil {
			return "", errors.New("has a quoted path that cannot be read")
		}
		p = q
	} else {
		p, _, _ = strings.Cut(s, "\t")
	}
	if p == "/dev/null" || !strip {
		return p, nil
	}
	if i := strings.IndexByte(p, '/'); i > 0 {
		return p[i+1:], nil
	}
	return "", errors.New("has a file header without an a/ or b/ prefix")
}

// splitGitHeader splits `a/X b/Y` (either side possibly C-quoted). An
// unquoted header with spaces is ambiguous in general; git itself resolves
// it by assuming X == Y, and so does this.
func splitGitHeader(h string) (a, b string, ok bool) {
	if strings.HasPrefix(h, `"`) {
		end := closingQuote(h)
		if end < 0 {
			return "", "", false
		}
		x, err := unquoteC(h[:end+1])
		if err != nil {
			return "", "", false
		}
		rest := strings.TrimPrefix(h[end+1:], " ")
		y, err := headerPath(rest, true)
		if err != nil || !strings.HasPrefix(x, "a/") {
			return "", "", false
		}
		return x[2:], y, true
	}
	if strings.HasSuffix(h, `"`) {
		i := strings.Index(h, ` "`)
		if i < 0 || !strings.HasPrefix(h, "a/") {
			return "", "", false
		}
		y, err := unquoteC(h[i+1:])
		if err != nil || !strings.HasPrefix(y, "b/") {
			return "", "", false
		}
		return h[2:i], y[2:], true
	}
	if (len(h)-1)%2 != 0 || !strings.HasPrefix(h, "a/") {
		return "", "", false
	}
	half := (len(h) - 1) / 2
	x, y := h[:half], h[half+1:]
	if h[half] != ' ' || !strings.HasPrefix(y, "b/") || x[2:] != y[2:] {
		return "", "", false
	}
	return x[2:], y[2:], true
}

func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// unquoteC undoes git's quoting of an unusual path name at the start of s
// (the one reading, core/gitpath's, that decides whether it names .git).
func unquoteC(s string) (string, error) {
	if len(s) < 2 || s[0] != '"' {
		return "", errors.New("not quoted")
	}
	end := closingQuote(s)
	if end < 0 {
		return "", errors.New("unterminated quote")
	}
	u, ok := gitpath.Unquote(s[:end+1])
	if !ok {
		return "", errors.New("bad escape")
	}
	return u, nil
}
