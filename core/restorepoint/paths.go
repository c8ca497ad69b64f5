package restorepoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
)

// ErrNotAFile is returned by PathTrees when a path of the scope is a
// directory in the working tree: a scope records files, one by one, and
// a directory there is not something it can hold.
var ErrNotAFile = errors.New("restorepoint: a path of the scope is a directory")

// Git runs one git process in a working tree and returns its output.
type Git func(ctx context.Context, c Call) ([]byte, error)

// Call is one git process for Git: Args are the subcommand and its
// options, Revs revisions (placed after --end-of-options), Paths
// pathspecs (literal, after "--"), Env what adds to the process's
// environment (index and object directory), Stdin its input.
type Call struct {
	Args, Revs, Paths, Env []string
	Stdin                  []byte
}

// argPaths is how many paths go on a command line; more are read from
// the whole index and picked out here.
const argPaths = 1000

// PathTrees records, for the paths of a scope only, the worktree's index
// entries and the files on disk as two trees: index holds the index
// entries at those paths, files the content of those paths in the
// working tree (a path that is missing there is missing from the tree;
// an untracked or ignored file there is in it). Nothing outside the
// scope is read: the cost follows the paths, not the repository. The
// person's index is only read; the trees are built on a temporary index
// in tmp. objEnv says where the objects go (nil: the repository).
// entries are the index entries at the paths, as IndexEntries reads
// them (a caller that looks at one moment reads them once for several
// records).
//
// A scope is what an operation changes; a restore point whose worktree
// state has Paths records these two trees, and restoring it writes those
// paths alone (see WorktreeState.Paths).
func PathTrees(ctx context.Context, git Git, dir, tmp string, paths, objEnv []string, entries []byte) (index, files string, err error) {
	for _, p := range paths {
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
		if err == nil && fi.IsDir() {
			if _, gerr := os.Lstat(filepath.Join(dir, filepath.FromSlash(p), ".git")); gerr != nil {
				return "", "", fmt.Errorf("%w: %s", ErrNotAFile, p)
			}
		}
	}
	env := append([]string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "scope-index")}, objEnv...)
	if index, err = IndexTree(ctx, git, tmp, objEnv, entries); err != nil {
		return "", "", err
	}
	// --add takes a file that is not in the index, --remove drops one that
	// is gone from disk; update-index, unlike add, takes ignored files too,
	// which is right here: the scope says which paths, not .gitignore.
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(p)
		in.WriteByte(0)
	}
	if _, err := git(ctx, Call{Args: []string{"update-index", "--add", "--remove", "-z", "--stdin"}, Env: env, Stdin: in.Bytes()}); err != nil {
		return "", "", err
	}
	out, err := git(ctx, Call{Args: []string{"write-tree"}, Env: env})
	if err != nil {
		return "", "", err
	}
	return index, strings.TrimSpace(string(out)), nil
}

// IndexTree records index entries (as IndexEntries reads them) as a
// tree, on a temporary index in tmp (scope-index, which PathTrees goes
// on to fill with the files): the index half of a scope, for an
// operation that changes index entries at known paths and no file (a
// commit of them). objEnv says where the objects go (nil: the
// repository).
func IndexTree(ctx context.Context, git Git, tmp string, objEnv []string, entries []byte) (string, error) {
	env := append([]string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "scope-index")}, objEnv...)
	if len(entries) > 0 {
		if _, err := git(ctx, Call{Args: []string{"update-index", "-z", "--index-info"}, Env: env, Stdin: entries}); err != nil {
			return "", err
		}
	}
	out, err := git(ctx, Call{Args: []string{"write-tree"}, Env: env})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// IndexEntries is `git ls-files -s -z` of the worktree's index for the
// paths, in the form `update-index --index-info -z` reads. An index
// with unresolved conflicts at one of them is refused.
func IndexEntries(ctx context.Context, git Git, paths []string) ([]byte, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	args := []string{"ls-files", "-s", "-z"}
	var out []byte
	var err error
	if len(paths) <= argPaths {
		out, err = git(ctx, Call{Args: args, Paths: paths})
	} else {
		out, err = git(ctx, Call{Args: args})
	}
	if err != nil {
		return nil, err
	}
	// A pathspec also matches what lies under a directory of that name;
	// the scope is the paths themselves.
	want := map[string]bool{}
	for _, p := range paths {
		want[p] = true
	}
	var keep bytes.Buffer
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok {
			continue
		}
		if !want[string(path)] {
			continue
		}
		if f := bytes.Fields(meta); len(f) != 3 || string(f[2]) != "0" {
			return nil, conflictErr(string(path))
		}
		keep.Write(rec)
		keep.WriteByte(0)
	}
	return keep.Bytes(), nil
}

// TreeEntries lists a tree's files (ls-tree -r), by path, each as
// "mode sha".
func TreeEntries(ctx context.Context, git Git, tree string) (map[string]string, error) {
	out, err := git(ctx, Call{Args: []string{"ls-tree", "-r", "-z", "--full-tree"}, Revs: []string{tree}})
	if err != nil {
		return nil, err
	}
	entries := map[string]string{}
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok {
			continue
		}
		f := strings.Fields(string(meta))
		if len(f) != 3 {
			continue
		}
		entries[string(path)] = f[0] + " " + f[2]
	}
	return entries, nil
}

func conflictErr(path string) error {
	return errcode.New(errcode.OperationInProgress, "the index has unresolved conflicts at %s; resolve or abort them first", path)
}

// SortedPaths is paths sorted, without duplicates or empty ones.
func SortedPaths(paths []string) []string {
	out := slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return p == "" })
	slices.Sort(out)
	return slices.Compact(out)
}
