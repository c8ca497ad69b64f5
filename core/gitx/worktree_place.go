package gitx

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitpath"
)

// ErrWorktreeInGitDir: a new worktree's path is inside a git directory
// (a ".git" component in any case, or any directory git takes for a
// repository: a bare repository, a common directory, a separate git
// directory). Files checked out there would be git's own files: hooks
// that run at the person's next commit, configuration git obeys.
var ErrWorktreeInGitDir = &errcode.Error{Code: errcode.InvalidArgument, Msg: "a worktree cannot be created inside a git directory (.git, a bare repository or a common directory)"}

// WorktreePlace decides where a new linked worktree may go. p must be
// absolute; its parent must exist inside the roots. It returns the
// canonical path (the parent's symlinks resolved) and the canonical
// working tree the new worktree would be nested in ("" when none). It
// refuses a path with a .git component, a path inside any git directory,
// and a path under a working tree whose git directory is outside the
// roots. It runs no git, so the sidecar, the app's gateway and the
// executor reach the same answer from the same files.
func (r Roots) WorktreePlace(p string) (canon, nestedIn string, err error) {
	if p == "" || !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
		return "", "", errcode.New(errcode.InvalidArgument, "path must be an absolute path")
	}
	clean := filepath.Clean(p)
	if gitpath.NamesMetadata(clean) {
		// Checked on the cleaned path first ("x/../.git/hooks" is
		// .git/hooks), then again once symlinks are resolved.
		return "", "", ErrWorktreeInGitDir
	}
	parent, err := r.Confine(filepath.Dir(clean))
	if err != nil {
		return "", "", err
	}
	canon = filepath.Join(parent, filepath.Base(clean))
	if canon == parent || gitpath.NamesMetadata(canon) {
		return "", "", ErrWorktreeInGitDir
	}
	if err := r.ConfineGitDirs(parent); err != nil {
		return "", "", err
	}
	for d := parent; r.lexicallyInside(d); d = filepath.Dir(d) {
		if isGitDir(d) {
			return "", "", ErrWorktreeInGitDir
		}
		if nestedIn == "" {
			if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
				nestedIn = d
			}
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	return canon, nestedIn, nil
}

// isGitDir reports what git's discovery takes for a git directory: HEAD,
// objects and refs (the test git's is_git_directory makes, without the
// details).
func isGitDir(d string) bool {
	if st, err := os.Stat(filepath.Join(d, "HEAD")); err != nil || !st.Mode().IsRegular() {
		return false
	}
	for _, sub := range []string{"objects", "refs"} {
		if st, err := os.Stat(filepath.Join(d, sub)); err != nil || !st.IsDir() {
			return false
		}
	}
	return true
}
