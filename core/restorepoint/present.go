package restorepoint

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
)

// Present is the State of repo as git reads it now. Nothing is written to
// the repository: a working tree's index and files are hashed on a copy of
// its index into a temporary object directory that is deleted afterwards.
// The caller already confined and opened repo.
func Present(repo *gitx.Repo) State { return present{repo: repo} }

type present struct{ repo *gitx.Repo }

// git runs one git process in dir under the executor's profile (the
// temporary index and object directory need it) and classifies a failure.
func (g present) git(ctx context.Context, c gitx.Call) ([]byte, error) {
	c.Profile = gitx.ProfileWrite
	c.Timeout = gitx.DefaultTimeout
	out, err := g.repo.Run(ctx, c)
	if err != nil {
		return nil, gitx.Classify(err)
	}
	return out.Stdout, nil
}

func (g present) RefStates(ctx context.Context, refs []string) ([]RefState, error) {
	have := map[string]string{}
	if len(refs) > 0 {
		out, err := g.git(ctx, gitx.Call{Dir: g.repo.Root, Args: []string{"for-each-ref", "--format=%(refname) %(objectname)"}, Revs: gitx.Revs(refs...)})
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if ref, sha, ok := strings.Cut(line, " "); ok && slices.Contains(refs, ref) {
				have[ref] = sha
			}
		}
	}
	states := make([]RefState, 0, len(refs))
	for _, r := range refs {
		states = append(states, RefState{Ref: r, SHA: have[r]})
	}
	return states, nil
}

func (g present) ConfigSections(ctx context.Context, branches []string) ([]ConfigSection, error) {
	var out []ConfigSection
	for _, b := range branches {
		res, err := g.git(ctx, gitx.Call{Dir: g.repo.Root, Args: []string{"config", "--local", "-z", "--get-regexp", `^branch\.` + regexp.QuoteMeta(b) + `\.`}, OK: []int{1}})
		if err != nil {
			return nil, err
		}
		out = append(out, ParseConfigSection(b, res))
	}
	return out, nil
}

// ParseConfigSection reads the answer of `git config -z --get-regexp`
// for branch's section.
func ParseConfigSection(branch string, out []byte) ConfigSection {
	sec := ConfigSection{Branch: branch}
	for _, rec := range strings.Split(string(out), "\x00") {
		if k, v, ok := strings.Cut(rec, "\n"); ok {
			sec.Entries = append(sec.Entries, ConfigKV{Key: k, Value: v})
		} else if rec != "" {
			sec.Entries = append(sec.Entries, ConfigKV{Key: rec})
		}
	}
	return sec
}

// worktree is the working tree at path and its git directory;
// os.ErrNotExist when it is gone.
func (g present) worktree(ctx context.Context, path string) (dir, gitDir string, err error) {
	if path == g.repo.Root {
		return g.repo.Root, g.repo.GitDir, nil
	}
	if _, err := os.Lstat(path); err != nil {
		return "", "", err
	}
	wt, err := g.repo.Runner().Open(ctx, g.repo.Roots(), path)
	if err != nil {
		return "", "", err
	}
	return wt.Root, wt.GitDir, nil
}

func (g present) status(ctx context.Context, dir string) ([]byte, error) {
	return g.git(ctx, gitx.Call{Dir: dir, Args: []string{"status", "--porcelain=v1", "-z", "--untracked-files=normal", "--ignore-submodules=dirty"}})
}

func (g present) Changed(ctx context.Context, path string) (bool, bool, error) {
	dir, _, err := g.worktree(ctx, path)
	if err != nil {
		return false, false, nil
	}
	out, err := g.status(ctx, dir)
	return true, len(out) > 0, err
}

func (g present) Worktree(ctx context.Context, path string, like WorktreeState) (WorktreeState, error) {
	dir, gitDir, err := g.worktree(ctx, path)
	if err != nil {
		return WorktreeState{}, err
	}
	out, err := g.git(ctx, gitx.Call{Dir: dir, Args: []string{"rev-parse", "HEAD", "HEAD^{tree}", "--symbolic-full-name", "HEAD"}, DashDash: true})
	if err != nil {
		return WorktreeState{}, err
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 3 || !hexSHA.MatchString(lines[0]) || !hexSHA.MatchString(lines[1]) {
		return WorktreeState{}, errcode.New(errcode.GitFailed, "git rev-parse HEAD gave an unexpected answer")
	}
	headSHA, headTree := lines[0], lines[1]
	st := WorktreeState{Path: dir, HeadSHA: headSHA, Files: like.Files}
	if lines[2] != "HEAD" {
		st.Head = lines[2]
	}
	switch {
	case len(like.Paths) > 0:
		st.Paths = like.Paths
		st.Index, st.Tree, err = g.pathTrees(ctx, dir, like.Paths, like.Files)
		return st, err
	case like.Files:
		changes, err := g.status(ctx, dir)
		if err != nil {
			return WorktreeState{}, err
		}
		if len(changes) == 0 {
			st.Index, st.Tree, st.Clean = headTree, headTree, true
			return st, nil
		}
		st.Index, st.Tree, err = g.trees(ctx, dir, gitDir, true)
		return st, err
	case like.Index != "":
		st.Index, _, err = g.trees(ctx, dir, gitDir, false)
		return st, err
	}
	return st, nil
}

// trees hashes the worktree's index and, with files, its files (untracked
// included, ignored not) as trees, on a copy of its index and into a
// temporary object directory, both deleted before it returns.
func (g present) trees(ctx context.Context, dir, gitDir string, files bool) (index, tree string, err error) {
	tmp, err := os.MkdirTemp("", "sluice-snapshot-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	idx := filepath.Join(tmp, "index")
	if err := gitx.CopyIndex(filepath.Join(gitDir, "index"), idx); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", "", err
	}
	objs := filepath.Join(tmp, "objects")
	if err := os.Mkdir(objs, 0o700); err != nil {
		return "", "", err
	}
	env := []string{"GIT_INDEX_FILE=" + idx, "GIT_OBJECT_DIRECTORY=" + objs,
		"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(g.repo.CommonDir, "objects")}
	out, err := g.git(ctx, gitx.Call{Dir: dir, Args: []string{"write-tree"}, Env: env})
	if err != nil {
		if e, ok := errcode.As(err); ok && strings.Contains(stderr(e), "unmerged") {
			return "", "", errcode.New(errcode.OperationInProgress, "the index of %s has unresolved conflicts; resolve or abort them first", dir)
		}
		return "", "", err
	}
	index = strings.TrimSpace(string(out))
	if !files {
		return index, "", nil
	}
	if _, err := g.git(ctx, gitx.Call{Dir: dir, Args: []string{"add", "--all"}, Env: env}); err != nil {
		return "", "", err
	}
	if out, err = g.git(ctx, gitx.Call{Dir: dir, Args: []string{"write-tree"}, Env: env}); err != nil {
		return "", "", err
	}
	return index, strings.TrimSpace(string(out)), nil
}

// pathTrees is PathTrees of the paths of dir, into a temporary object
// directory deleted before it returns; without files, the index entries
// alone (IndexTree), as a scope of the index records them.
func (g present) pathTrees(ctx context.Context, dir string, paths []string, files bool) (index, tree string, err error) {
	tmp, err := os.MkdirTemp("", "sluice-snapshot-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	objs := filepath.Join(tmp, "objects")
	if err := os.Mkdir(objs, 0o700); err != nil {
		return "", "", err
	}
	run := func(ctx context.Context, c Call) ([]byte, error) {
		gc := gitx.Call{Dir: dir, Args: c.Args, Revs: gitx.Revs(c.Revs...), Paths: gitx.Paths(c.Paths...), Env: c.Env}
		if c.Stdin != nil {
			gc.Stdin = bytes.NewReader(c.Stdin)
		}
		return g.git(ctx, gc)
	}
	entries, err := IndexEntries(ctx, run, paths)
	if err != nil {
		return "", "", err
	}
	objEnv := []string{"GIT_OBJECT_DIRECTORY=" + objs, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(g.repo.CommonDir, "objects")}
	if !files {
		index, err = IndexTree(ctx, run, tmp, objEnv, entries)
		return index, "", err
	}
	return PathTrees(ctx, run, dir, tmp, paths, objEnv, entries)
}

// stderr is what git wrote to stderr, as a classified failure carries it.
func stderr(e *errcode.Error) string {
	if f, ok := e.Data.(errcode.GitFailure); ok {
		return f.Stderr
	}
	return ""
}
