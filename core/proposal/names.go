package proposal

import (
	"path"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sluicehq/sluice/core/gitpath"
)

// validRevision accepts what an agent may name as a commit: a ref name,
// a SHA, or a ref with ~N/^N suffixes. It refuses what could turn a
// revision into something else: a leading '-' (an option), ':' (a path
// lookup or a commit-message search), '..' (a range), whitespace, control
// characters and glob characters.
func validRevision(s string) bool {
	if s == "" || len(s) > MaxRefBytes || s[0] == '-' || !utf8.ValidString(s) {
		return false
	}
	if strings.Contains(s, "..") {
		return false
	}
	for _, r := range s {
		if r < 0x21 || r == 0x7f || strings.ContainsRune(`:?*[\`, r) {
			return false
		}
	}
	return true
}

// validBranchName follows git check-ref-format for a short branch name
// (what goes after refs/heads/), a little stricter where git is lax.
func validBranchName(s string) bool {
	if !validRevision(s) || s == "HEAD" || s == "@" || strings.HasPrefix(s, "refs/") {
		return false
	}
	if strings.ContainsAny(s, "~^{}") || strings.Contains(s, "@{") || strings.Contains(s, "//") {
		return false
	}
	if strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") || strings.HasSuffix(s, ".") {
		return false
	}
	for _, c := range strings.Split(s, "/") {
		if strings.HasPrefix(c, ".") || strings.HasSuffix(c, ".lock") {
			return false
		}
	}
	return true
}

var remotePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`) })

func validRemoteName(s string) bool {
	return remotePattern().MatchString(s) && !strings.HasSuffix(s, ".lock")
}

// ValidPath reports whether s is a path a proposal may name: clean,
// repository-relative, outside .git.
func ValidPath(s string) bool { return validRelPath(s, false) }

// validRelPath accepts a clean repository-relative path that stays inside
// the working tree and does not reach into a .git directory (by the one
// rule of core/gitpath, at any depth). "." (the
// whole tree) is accepted only where allowDot says so.
func validRelPath(s string, allowDot bool) bool {
	if s == "" || len(s) > MaxPathBytes || !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return false
	}
	if s == "." {
		return allowDot
	}
	if strings.HasPrefix(s, "/") || path.Clean(s) != s || strings.Contains(s, `\`) {
		return false
	}
	for _, c := range strings.Split(s, "/") {
		if c == ".." || c == "." {
			return false
		}
	}
	return !gitpath.NamesMetadata(s)
}

// BranchRef is the full ref name of a short branch name.
func BranchRef(branch string) string { return "refs/heads/" + branch }

// PathsOverlap reports whether two repository-relative paths can name the
// same file: equal, one a directory above the other, or either "." (the
// whole tree).
func PathsOverlap(a, b string) bool {
	if a == "." || b == "." || a == b {
		return true
	}
	return strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}
