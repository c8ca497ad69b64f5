package apply

import (
	"context"
	"encoding/binary"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// restoreFilesAlone says whether restoreSame may write the files alone
// when no index entry at the paths changes (filesAlone); tests turn it off
// to compare with git's own restore.
var restoreFilesAlone = true

// filesAlone reports whether the files of a scoped state (files: their
// recorded entries, which the index holds at those paths already) can be
// written without writing the index, leaving exactly what `git restore
// --source --staged --worktree` of the paths leaves but the stat data of
// their index entries, which git then finds stale and compares by
// content. For a path whose entry is unchanged, git's restore keeps the
// old entry, flags included, and checks its file out; here the same
// checkout code writes it. What stands in the way of that sameness makes
// it false, and git's restore runs:
//
//   - an entry git's restore would replace although its mode and object
//     are the same: an intent-to-add entry, whose object is the empty
//     blob (so any entry of the empty blob goes to git);
//   - a gitlink, whose directory a checkout does not write;
//   - an entry whose file the checkout would convert, so that its content
//     read back might not be the entry's: core.autocrlf on, or a text,
//     eol, crlf, ident, filter or working-tree-encoding attribute set for
//     a path, read from the working tree's .gitattributes files and from
//     the index's (a checkout reads either), or a .gitattributes among
//     the paths;
//   - a symbolic link where core.symlinks is off;
//   - an entry the checkout skips or whose flags only git reads: a sparse
//     checkout, or an index that can hold skip-worktree entries (any
//     version but 2, or a split index), or an fsmonitor that answers for
//     the index's entries.
func (g *gitEnv) filesAlone(ctx context.Context, wt worktree, files map[string]string) (bool, error) {
	if len(files) == 0 || wt.gitDir == "" {
		return false, nil
	}
	empty := emptyBlobs[g.repo.ObjectFormat]
	if empty == "" {
		return false, nil
	}
	symlinks := false
	paths := make([]string, 0, len(files))
	for p, e := range files {
		mode, sha, _ := strings.Cut(e, " ")
		switch {
		case sha == empty, mode == "160000", path.Base(p) == ".gitattributes":
			return false, nil
		case mode == "120000":
			symlinks = true
		case mode != "100644" && mode != "100755":
			return false, nil
		}
		paths = append(paths, p)
	}
	slices.Sort(paths)
	isFalse := func(v string) bool {
		switch strings.ToLower(v) {
		case "false", "no", "off", "0":
			return true
		}
		return false
	}
	for _, key := range []string{"core.autocrlf", "core.sparsecheckout", "core.splitindex", "core.fsmonitor"} {
		if v, set := g.repo.Config(key); set && !isFalse(v) {
			return false, nil
		}
	}
	if v, set := g.repo.Config("core.symlinks"); symlinks && set && isFalse(v) {
		return false, nil
	}
	// Someone else's git writing the index: git's restore fails on its
	// lock, as it should.
	if _, err := os.Lstat(filepath.Join(wt.gitDir, "index.lock")); err == nil {
		return false, nil
	}
	// Extended flags (skip-worktree, intent-to-add) need index version 3
	// or 4; version 2 cannot hold them. A split index keeps entries in a
	// shared file this header does not speak for.
	hdr := make([]byte, 8)
	f, err := os.Open(filepath.Join(wt.gitDir, "index"))
	if err != nil {
		return false, nil
	}
	_, err = io.ReadFull(f, hdr)
	f.Close()
	if err != nil || string(hdr[:4]) != "DIRC" || binary.BigEndian.Uint32(hdr[4:]) != 2 {
		return false, nil
	}
	if shared, _ := filepath.Glob(filepath.Join(wt.gitDir, "sharedindex.*")); len(shared) > 0 {
		return false, nil
	}
	for _, args := range [][]string{
		{"check-attr", "--stdin", "-z", "text", "eol", "crlf", "ident", "filter", "working-tree-encoding"},
		{"check-attr", "--cached", "--stdin", "-z", "text", "eol", "crlf", "ident", "filter", "working-tree-encoding"},
	} {
		res, err := g.run(ctx, call{dir: wt.path, args: args, stdin: nulList(paths)})
		if err != nil {
			return false, err
		}
		f := strings.Split(string(res.out), "\x00")
		for i := 0; i+2 < len(f); i += 3 {
			if f[i+2] != "unspecified" {
				return false, nil
			}
		}
	}
	return true, nil
}

var emptyBlobs = map[string]string{
	"":       "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
	"sha1":   "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
	"sha256": "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813",
}

// restoreFilesAlone is restoreSame where filesAlone holds: each file of
// the paths is checked out by git's own checkout (checkout-index, which
// writes modes and symbolic links as a checkout does and never writes
// through a leading symbolic link) from a temporary index that holds the
// recorded entries and nothing else, so the person's index is neither
// read nor written; an untracked file at a path the state does not hold
// is removed. A kill midway leaves some of the paths written and the
// index as it was, which a second restore completes as the first would
// have.
func (g *gitEnv) restoreFilesAlone(ctx context.Context, wt worktree, want WorktreeState, files map[string]string) error {
	for _, p := range want.Paths {
		if _, ok := files[p]; !ok {
			if err := removeFile(wt.path, p); err != nil {
				return err
			}
		}
	}
	tmp, err := os.MkdirTemp("", "sluice-restore-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if _, err := g.run(ctx, call{dir: wt.path, args: []string{"read-tree"}, revs: []string{want.Tree}, env: env}); err != nil {
		return err
	}
	_, err = g.run(ctx, call{dir: wt.path, args: []string{"checkout-index", "-a", "-f"}, env: env})
	return err
}
