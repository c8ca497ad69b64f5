package gitx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitpath"
)

// Errors of repository path confinement. Their messages never contain the
// path that was asked for: a model must not learn what exists outside the
// roots by probing.
var (
	// ErrPathOutsideRoots: the canonical path is not under any allowed root
	// (or no roots are configured).
	ErrPathOutsideRoots = &errcode.Error{Code: errcode.PathOutsideRoots, Msg: "the repository path is outside the allowed roots"}
	// ErrPathNotAbsolute: a relative path was given.
	ErrPathNotAbsolute = &errcode.Error{Code: errcode.InvalidArgument, Msg: "repoPath must be an absolute path"}
	// ErrPathNotFound: the path does not exist (only reported for paths
	// inside the roots).
	ErrPathNotFound = &errcode.Error{Code: errcode.InvalidArgument, Msg: "repoPath does not exist"}
)

// Roots is a set of canonical allowed directories.
type Roots []string

// Confine canonicalises p (absolute; symlinks resolved) and returns it if it
// lies inside one of the roots. The canonical path is what callers must use
// afterwards, so that a symlink swapped later cannot redirect them.
func (r Roots) Confine(p string) (string, error) {
	if p == "" || !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
		return "", ErrPathNotAbsolute
	}
	clean := filepath.Clean(p)
	// Check the lexical path first so that nothing outside the roots is
	// even stat'ed on behalf of an agent.
	if !r.lexicallyInside(clean) {
		return "", ErrPathOutsideRoots
	}
	canon, err := filepath.EvalSymlinks(clean)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", ErrPathNotFound
		}
		return "", &errcode.Error{Code: errcode.InvalidArgument, Msg: "repoPath cannot be resolved"}
	}
	if !r.lexicallyInside(canon) {
		return "", ErrPathOutsideRoots
	}
	return canon, nil
}

// lexicallyInside reports whether clean equals or is below a root. Roots
// are canonical; clean may still contain symlinks, which Confine resolves
// and checks again.
func (r Roots) lexicallyInside(clean string) bool {
	for _, root := range r {
		if clean == root {
			return true
		}
		prefix := root
		if !strings.HasSuffix(prefix, string(filepath.Separator)) {
			prefix += string(filepath.Separator)
		}
		if strings.HasPrefix(clean, prefix) {
			return true
		}
	}
	return false
}

// String is for logs and the capabilities tool.
func (r Roots) String() string { return fmt.Sprint([]string(r)) }

// NewRoots validates configured roots: each must be absolute, exist, be a
// directory, and not be the file system root. The result is canonical
// (symlinks resolved), as Confine requires. Configuration loading applies
// the same rules; this guards callers that build a configuration by hand.
func NewRoots(paths []string) (Roots, error) {
	out := make(Roots, 0, len(paths))
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: fmt.Sprintf("allowed root %q is not an absolute path", p)}
		}
		canon, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: fmt.Sprintf("allowed root %q cannot be resolved", p)}
		}
		if st, err := os.Stat(canon); err != nil || !st.IsDir() {
			return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: fmt.Sprintf("allowed root %q is not a directory", p)}
		}
		if canon == string(filepath.Separator) {
			return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: "the file system root is too broad to be an allowed root"}
		}
		out = append(out, canon)
	}
	return out, nil
}

// ConfineGitDirs checks what a working tree inside the roots points at: a
// ".git" file ("gitdir: /elsewhere/.git", as linked worktrees and
// submodules have), a ".git" symlink, and a git directory's "commondir"
// file can all name a repository outside the roots, whose history reads
// would then return and whose refs an approved proposal would move. canon
// must be a canonical path inside the roots; the check walks from it up to
// the root that allows it and stops at the first ".git" it finds, which is
// the repository git's own discovery would open. It reads a few small
// files and runs nothing, so the app's gateway can apply it to a path that
// does not have to be a repository.
func (r Roots) ConfineGitDirs(canon string) error {
	for d := canon; r.lexicallyInside(d); d = filepath.Dir(d) {
		// A git directory itself (a bare repository, or a linked
		// worktree's private directory) may name its common directory.
		if err := r.confineCommonDir(d); err != nil {
			return err
		}
		dotGit := filepath.Join(d, ".git")
		st, err := os.Lstat(dotGit)
		if err != nil {
			if d == filepath.Dir(d) {
				return nil
			}
			continue
		}
		gitDir := dotGit
		switch {
		case st.Mode()&os.ModeSymlink != 0:
			gitDir, err = filepath.EvalSymlinks(dotGit)
			if err != nil {
				return nil // a dangling .git: no repository there for git either
			}
		case st.Mode().IsRegular():
			target, ok := readGitLink(dotGit)
			if !ok {
				return nil // git refuses an unreadable .git file as well
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(d, target)
			}
			if gitDir, err = filepath.EvalSymlinks(target); err != nil {
				gitDir = filepath.Clean(target)
			}
		}
		if !r.lexicallyInside(gitDir) {
			return ErrGitDirOutsideRoots
		}
		if err := r.confineCommonDir(gitDir); err != nil {
			return err
		}
		return r.ConfineObjects(commonDirOf(gitDir))
	}
	return nil
}

// ErrGitDirOutsideRoots: the working tree is inside the roots but its git
// directory or common directory is not. Like every confinement error it
// names no path.
var ErrGitDirOutsideRoots = &errcode.Error{Code: errcode.PathOutsideRoots, Msg: "the repository's git directory is outside the allowed roots (its .git file or commondir points elsewhere)"}

// confineCommonDir checks gitDir's "commondir" file, if it has one.
func (r Roots) confineCommonDir(gitDir string) error {
	c := readSmall(filepath.Join(gitDir, "commondir"))
	if c == "" {
		return nil
	}
	if !filepath.IsAbs(c) {
		c = filepath.Join(gitDir, c)
	}
	if canon, err := filepath.EvalSymlinks(c); err == nil {
		c = canon
	}
	if !r.lexicallyInside(filepath.Clean(c)) {
		return ErrGitDirOutsideRoots
	}
	return nil
}

// commonDirOf is the common directory of the git directory gitDir: what
// its commondir file names, or gitDir itself.
func commonDirOf(gitDir string) string {
	c := readSmall(filepath.Join(gitDir, "commondir"))
	if c == "" {
		return gitDir
	}
	if !filepath.IsAbs(c) {
		c = filepath.Join(gitDir, c)
	}
	if canon, err := filepath.EvalSymlinks(c); err == nil {
		return canon
	}
	return filepath.Clean(c)
}

// ErrObjectsOutsideRoots: the repository is inside the roots but some of
// its objects would be read from outside them. Like every confinement
// error it names no path.
var ErrObjectsOutsideRoots = &errcode.Error{Code: errcode.PathOutsideRoots, Msg: "the repository reads objects from outside the allowed roots " +
	"(its object directory, or an alternate object store its objects/info/alternates names, lies elsewhere); " +
	"Sluice reads no repository through it. Add that store's folder to the allowed roots, or make the repository " +
	"self-contained (git repack -a -d, then remove objects/info/alternates)"}

// maxAlternateDepth bounds how deep alternates of alternates are followed
// here. Git follows five levels and ignores deeper ones; every level it
// could reach is checked.
const maxAlternateDepth = 8

// ConfineObjects checks where the objects of the repository whose common
// directory is commonDir come from: its object directory, and every
// object store its objects/info/alternates names, and theirs in turn,
// must lie inside the roots. An alternate is another repository's object
// directory that git reads as if it were its own: a commit, tree or blob
// that exists only there would be shown by a read and pinned by a
// proposal as part of this repository. Git's own environment
// (GIT_OBJECT_DIRECTORY, GIT_ALTERNATE_OBJECT_DIRECTORIES) never reaches a
// git Sluice runs from the process environment (profiles keep only a
// short list of variables), so the files are all there is to check. It
// reads a few small files and runs nothing.
func (r Roots) ConfineObjects(commonDir string) error {
	seen := map[string]bool{}
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		canon, err := filepath.EvalSymlinks(dir)
		if err != nil {
			// Missing: git finds no object there either, but the path
			// must still not name a place outside the roots.
			canon = filepath.Clean(dir)
		}
		if !r.lexicallyInside(canon) {
			return ErrObjectsOutsideRoots
		}
		if seen[canon] || depth > maxAlternateDepth {
			return nil
		}
		seen[canon] = true
		for _, alt := range readAlternates(filepath.Join(canon, "info", "alternates")) {
			// Git resolves a relative entry against the real path of the
			// object directory whose file names it, then normalises it
			// lexically.
			if !filepath.IsAbs(alt) {
				alt = filepath.Join(canon, alt)
			}
			if err := walk(filepath.Clean(alt), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(filepath.Join(commonDir, "objects"), 0)
}

// readAlternates reads an objects/info/alternates file as git does: one
// object directory a line, lines starting with "#" and empty ones skipped,
// a line starting with a double quote read in git's C-style quoting.
func readAlternates(p string) []string {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, `"`) {
			if u, ok := gitpath.Unquote(line); ok {
				line = u
			}
		}
		out = append(out, line)
	}
	return out
}

// readGitLink reads the target of a ".git" file ("gitdir: <path>").
func readGitLink(p string) (string, bool) {
	s := readSmall(p)
	target, ok := strings.CutPrefix(s, "gitdir:")
	if !ok {
		return "", false
	}
	target = strings.TrimSpace(target)
	return target, target != ""
}
