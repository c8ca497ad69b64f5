package proposal

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/core/gitpath"
)

// patchFiles lists the paths a unified diff (git or plain, -p1 style)
// names, from its ---/+++ lines, git's rename/copy lines, and the
// "diff --git" line when nothing else names the file (binary or mode-only
// changes). Every path is validated: a patch that reaches outside the
// working tree or into .git is refused here, long before anything applies
// it.
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
	var gitHeader string // pending "diff --git" paths, used if no ---/+++ follows
	flushHeader := func() error {
		if gitHeader == "" {
			return nil
		}
		a, b, ok := splitGitHeader(gitHeader)
		gitHeader = ""
		if !ok {
			return errors.New("has a \"diff --git\" line whose paths cannot be read")
		}
		if err := add(a); err != nil {
			return err
		}
		return add(b)
	}
	// Inside a hunk, a removed line "-- x" reads like a file header, so hunk
	// bodies are skipped by their line counts.
	var oldLeft, newLeft int
	for line := range strings.Lines(patch) {
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
				return nil, errors.New("has a hunk whose lines do not match its header")
			}
			continue
		}
		switch {
		case strings.HasPrefix(line, "@@ "):
			o, n, ok := hunkCounts(line)
			if !ok {
				return nil, errors.New("has a malformed hunk header")
			}
			oldLeft, newLeft = o, n
		case strings.HasPrefix(line, "diff --git "):
			if err := flushHeader(); err != nil {
				return nil, err
			}
			gitHeader = strings.TrimPrefix(line, "diff --git ")
		case strings.HasPrefix(line, "--- "), strings.HasPrefix(line, "+++ "):
			p, err := headerPath(line[4:], true)
			if err != nil {
				return nil, err
			}
			gitHeader = ""
			if err := add(p); err != nil {
				return nil, err
			}
		case strings.HasPrefix(line, "rename from "), strings.HasPrefix(line, "rename to "),
			strings.HasPrefix(line, "copy from "), strings.HasPrefix(line, "copy to "):
			_, rest, _ := strings.Cut(line, " ")
			_, rest, _ = strings.Cut(rest, " ")
			p, err := headerPath(rest, false)
			if err != nil {
				return nil, err
			}
			gitHeader = ""
			if err := add(p); err != nil {
				return nil, err
			}
		}
	}
	if err := flushHeader(); err != nil {
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
