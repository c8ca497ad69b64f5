package gitx

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

func TestRoots_WorktreePlace(t *testing.T) {
	parent, _ := filepath.EvalSymlinks(t.TempDir())
	root := filepath.Join(parent, "root")
	// A repository made without a template has no hooks directory: the
	// attack of finding 1 puts a worktree there.
	repo := gitxtest.InitAt(t, filepath.Join(root, "repo"), "--template=")
	repo.WriteCommit("a.txt", "a\n", "a")
	bare := filepath.Join(root, "store", "bare.git")
	gitxtest.Git(t, root, "init", "-q", "--bare", bare)
	sep := gitxtest.InitAt(t, filepath.Join(root, "sep"), "--separate-git-dir", filepath.Join(root, "store", "sep-git"))
	_ = sep
	if err := os.Symlink(filepath.Join(repo.Dir, ".git"), filepath.Join(root, "gitlink")); err != nil {
		t.Fatal(err)
	}
	out := gitxtest.NewPointsOutside(t)
	roots := Roots{root}

	refused := map[string]string{
		"hooks of .git":            filepath.Join(repo.Dir, ".git", "hooks"),
		"deep in .git":             filepath.Join(repo.Dir, ".git", "refs", "x"),
		".GIT in any case":         filepath.Join(repo.Dir, ".GIT", "hooks"),
		"through ..":               repo.Dir + "/sub/../.git/hooks",
		"the .git itself":          filepath.Join(repo.Dir, ".git"),
		"through a symlink":        filepath.Join(root, "gitlink", "hooks"),
		"in a bare repository":     filepath.Join(bare, "hooks"),
		"in a separate git dir":    filepath.Join(root, "store", "sep-git", "hooks"),
		"in a common dir's subdir": filepath.Join(bare, "refs", "wt"),
	}
	for name, p := range refused {
		t.Run(name, func(t *testing.T) {
			if _, _, err := roots.WorktreePlace(p); !errcode.IsCode(err, errcode.InvalidArgument) {
				t.Fatalf("WorktreePlace(%s) = %v, want invalid_argument", p, err)
			}
		})
	}
	if _, _, err := (Roots{out.Root}).WorktreePlace(filepath.Join(out.GitFile, "wt")); !errcode.IsCode(err, errcode.PathOutsideRoots) {
		t.Fatalf("under a tree whose git dir is outside: %v", err)
	}
	if _, _, err := roots.WorktreePlace(filepath.Join(parent, "elsewhere", "wt")); !errcode.IsCode(err, errcode.PathOutsideRoots) {
		t.Fatalf("outside the roots: %v", err)
	}

	canon, nested, err := roots.WorktreePlace(filepath.Join(root, "repo-wt"))
	if err != nil || canon != filepath.Join(root, "repo-wt") || nested != "" {
		t.Fatalf("sibling worktree = %q %q %v", canon, nested, err)
	}
	canon, nested, err = roots.WorktreePlace(filepath.Join(repo.Dir, "sub", "..", "nested-wt"))
	if err != nil || canon != filepath.Join(repo.Dir, "nested-wt") || nested != repo.Dir {
		t.Fatalf("nested worktree = %q %q %v", canon, nested, err)
	}
}
