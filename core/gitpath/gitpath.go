package gitpath

import (
	"strconv"
	"strings"
)

// IsGitName reports whether one path component is a name that git, on some
// file system, takes for ".git": any case (case-insensitive file systems
// fold ".GIT" into ".git"), trailing dots or spaces (Windows drops them),
// an NTFS alternate data stream (".git::$INDEX_ALLOCATION") and the NTFS
// short name "git~1".
func IsGitName(comp string) bool {
	if i := strings.IndexByte(comp, ':'); i >= 0 {
		comp = comp[:i]
	}
	c := strings.ToLower(strings.TrimRight(comp, ". "))
	return c == ".git" || c == "git~1"
}

// NamesMetadata reports whether a repository-relative path has a
// component, at any depth, that IsGitName takes for ".git": a nested
// repository's metadata is as dangerous as the top-level one. Both "/" and
// "\" separate components (git on Windows accepts either), and a path
// written in git's C-style quoting ("\056git/config") is read unquoted as
// well as literally.
func NamesMetadata(p string) bool {
	if hasGitComponent(p) {
		return true
	}
	if len(p) >= 2 && p[0] == '"' && p[len(p)-1] == '"' {
		if u, ok := Unquote(p); ok && hasGitComponent(u) {
			return true
		}
	}
	return false
}

func hasGitComponent(p string) bool {
	for _, comp := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if IsGitName(comp) {
			return true
		}
	}
	return false
}

// Unquote reads a name in git's C-style quoting (core.quotePath): a
// double-quoted string with backslash escapes, octal bytes included.
func Unquote(s string) (string, bool) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", false
	}
	var b strings.Builder
	body := s[1 : len(s)-1]
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c == '"' {
			return "", false
		}
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(body) {
			return "", false
		}
		switch e := body[i]; e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'v':
			b.WriteByte('\v')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case '"', '\\':
			b.WriteByte(e)
		default:
			if i+3 > len(body) {
				return "", false
			}
			n, err := strconv.ParseUint(body[i:i+3], 8, 8)
			if err != nil {
				return "", false
			}
			b.WriteByte(byte(n))
			i += 2
		}
	}
	return b.String(), true
}
