package gitx

import (
	"path"
	"strings"
	"unicode/utf8"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitpath"
)

// maxArgLen bounds any revision or path an agent passes.
const maxArgLen = 4096

// CheckRev validates a revision, ref or range end an agent passed as the
// argument called name. Anything beginning with "-" is refused before git
// runs: git would read it as an option (--output=…, --upload-pack=…, -n1).
// Ordinary revision syntax (HEAD~3, HEAD^{commit}, origin/main,
// refs/heads/feature/x, v1.2.3, full SHAs, main@{1}, :/message) passes.
// The value is not echoed back in the error.
func CheckRev(name, v string) error {
	switch {
	case v == "":
		return errcode.New(errcode.InvalidArgument, "%s must not be empty", name)
	case len(v) > maxArgLen:
		return errcode.New(errcode.InvalidArgument, "%s is longer than %d bytes", name, maxArgLen)
	case strings.HasPrefix(v, "-"):
		return errcode.New(errcode.InvalidArgument, "%s must not begin with '-': git would read it as an option", name)
	case !utf8.ValidString(v):
		return errcode.New(errcode.InvalidArgument, "%s is not valid UTF-8", name)
	case hasControl(v):
		return errcode.New(errcode.InvalidArgument, "%s contains control characters", name)
	}
	return nil
}

// CheckPath validates a path an agent passed, relative to the repository
// root, and returns it cleaned and ready to be placed after "--". It must
// not be absolute, must not climb out of the repository with "..", and must
// not begin with "-".
func CheckPath(name, v string) (string, error) {
	switch {
	case v == "":
		return "", errcode.New(errcode.InvalidArgument, "%s must not be empty", name)
	case len(v) > maxArgLen:
		return "", errcode.New(errcode.InvalidArgument, "%s is longer than %d bytes", name, maxArgLen)
	case strings.HasPrefix(v, "-"):
		return "", errcode.New(errcode.InvalidArgument, "%s must not begin with '-': git would read it as an option", name)
	case !utf8.ValidString(v):
		return "", errcode.New(errcode.InvalidArgument, "%s is not valid UTF-8", name)
	case hasControl(v):
		return "", errcode.New(errcode.InvalidArgument, "%s contains control characters", name)
	case strings.HasPrefix(v, "/") || strings.HasPrefix(v, `\`) || (len(v) > 1 && v[1] == ':'):
		return "", errcode.New(errcode.InvalidArgument, "%s must be relative to the repository root", name)
	}
	clean := path.Clean(strings.ReplaceAll(v, `\`, "/"))
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", errcode.New(errcode.InvalidArgument, "%s must stay inside the repository (no '..' above the root)", name)
	}
	if gitpath.NamesMetadata(clean) {
		return "", errcode.New(errcode.InvalidArgument, "%s must not name git metadata (.git, in any case or at any depth)", name)
	}
	if strings.HasPrefix(clean, "-") {
		// The agent wrote "./-name": a real file that starts with a dash.
		clean = "./" + clean
	}
	return clean, nil
}

// CheckPaths validates a list of paths (see CheckPath).
func CheckPaths(name string, vs []string) ([]string, error) {
	if len(vs) > 256 {
		return nil, errcode.New(errcode.InvalidArgument, "%s: at most 256 paths", name)
	}
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		c, err := CheckPath(name, v)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// checkPathspec is the runner's last line: whatever reaches git after "--"
// must not begin with "-" or contain NUL.
func checkPathspec(name, v string) error {
	if v == "" || strings.HasPrefix(v, "-") || strings.ContainsRune(v, 0) {
		return errcode.New(errcode.InvalidArgument, "%s must not be empty, begin with '-' or contain NUL", name)
	}
	return nil
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}

// ValidFullSHA reports whether s is a full lower-case object id (SHA-1 or
// SHA-256), as git prints them.
func ValidFullSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
