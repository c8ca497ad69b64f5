package workspace

import (
	"os"
	"path"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitpath"
)

// Path confinement. A path from an agent is checked twice: lexically here
// (relative, no "..", not into .git), and again by the kernel at open time
// (openBeneath), because the container can swap any component for a
// symlink between the two.

const (
	maxPathLen = 4096
	maxNameLen = 255
)

// splitRel validates an agent-supplied workspace path and returns its
// components. "" and "." name the workspace root.
func splitRel(p string) ([]string, error) {
	if len(p) > maxPathLen || strings.ContainsRune(p, 0) {
		return nil, errcode.New(errcode.InvalidArgument, "the path is too long or contains a NUL byte")
	}
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) {
		return nil, ErrPathOutside
	}
	var comps []string
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			return nil, ErrPathOutside
		}
		if len(c) > maxNameLen {
			return nil, errcode.New(errcode.InvalidArgument, "a path component is longer than %d bytes", maxNameLen)
		}
		comps = append(comps, c)
	}
	if len(comps) > 0 && gitpath.IsGitName(comps[0]) {
		// The repository lives outside the tree (mounted read-only in the
		// container); tree/.git is only its mount point.
		return nil, errcode.New(errcode.InvalidArgument, "the .git directory is not part of the workspace files; use workspace_diff to see changes")
	}
	if gitpath.NamesMetadata(p) {
		// A nested .git (any case) would be a repository inside the tree
		// that the seal refuses anyway: refuse it before it is written.
		return nil, errcode.New(errcode.InvalidArgument, "the path names git metadata (.git, in any case or at any depth); such files cannot be part of a workspace's changes")
	}
	return comps, nil
}

func joinRel(comps []string) string {
	if len(comps) == 0 {
		return "."
	}
	return strings.Join(comps, "/")
}

// owner is who must own what Sluice creates in a tree, so that the
// container user can change it.
type owner struct {
	uid, gid int
	chown    bool
}

// symlinkEscapes says why a symlink at rel (relative to the tree root)
// pointing at target would leave the tree, or "" when it stays inside.
// The check is lexical; the file tools re-check at every open, and inside
// the container the tree's parent is not the host's.
func symlinkEscapes(rel, target string) string {
	if target == "" {
		return "the symlink is empty"
	}
	if strings.HasPrefix(target, "/") {
		return "the symlink points to an absolute path"
	}
	j := path.Join(path.Dir(rel), target)
	if j == ".." || strings.HasPrefix(j, "../") {
		return "the symlink points outside the directory"
	}
	if gitpath.NamesMetadata(j) {
		return "the symlink points into repository metadata"
	}
	return ""
}

func specialKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "FIFO"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

func displayRel(rel string) string {
	if rel == "" {
		return "the top level"
	}
	return rel
}
