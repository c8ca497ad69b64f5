package seal

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/sluicehq/sluice/core/gitx"
)

// TestWriteTreeLocal_SameAsGit: the tree written in this process from a
// temporary index is git write-tree's from the same index (names git
// orders with a tree's slash, executables, symlinks, a submodule, nested
// and emptied directories, an empty index, an index of version 4, blobs
// loose and in the pack a bulk add writes), and its objects are there for
// git; and every index git must answer for is left to it: an entry only
// intended to be added, an unmerged path, a split index, a blob that is
// not in the repository, objects to be synced.
func TestWriteTreeLocal_SameAsGit(t *testing.T) {
	cases := []struct {
		name  string
		index func(t *testing.T, f *repoFixture) // fills the index at GIT_INDEX_FILE
		local bool
	}{
		{name: "names in git's order, modes, symlink, submodule", local: true, index: func(t *testing.T, f *repoFixture) {
			for _, p := range []string{"a", "a.txt", "a-b", "a0", "b/c", "b.c", "b/d/e/f.txt", "x/y z.txt", "ü.txt"} {
				f.repo.Write(filepath.Join("n", p, "leaf"), p+"\n")
				f.repo.Write(filepath.Join("n", p+"file"), p+"\n")
			}
			f.repo.Write("run.sh", "#!/bin/sh\n")
			if err := os.Chmod(filepath.Join(f.repo.Dir, "run.sh"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("README.md", filepath.Join(f.repo.Dir, "link")); err != nil {
				t.Fatal(err)
			}
			gitEnv(t, f, "add", "--all")
			gitEnv(t, f, "update-index", "--add", "--cacheinfo", "160000,"+f.git("rev-parse", "HEAD")+",mods/sub")
		}},
		{name: "bulk add, a directory emptied", local: true, index: func(t *testing.T, f *repoFixture) {
			for i := range 30 {
				f.repo.Write(filepath.Join("src", "pkg"+string(rune('a'+i%5)), "f"+string(rune('a'+i))+".go"), strings.Repeat("x", i)+"\n")
			}
			if err := os.RemoveAll(filepath.Join(f.repo.Dir, "src", "a.txt")); err != nil {
				t.Fatal(err)
			}
			gitEnv(t, f, "-c", "core.bigFileThreshold=1", "add", "--all")
		}},
		{name: "empty index", local: true, index: func(t *testing.T, f *repoFixture) {
			gitEnv(t, f, "rm", "-r", "-q", "--cached", ".")
		}},
		{name: "index version 4", local: true, index: func(t *testing.T, f *repoFixture) {
			f.repo.Write("v4/one.txt", "one\n")
			gitEnv(t, f, "add", "--all")
			gitEnv(t, f, "update-index", "--index-version", "4")
		}},
		{name: "intent to add", index: func(t *testing.T, f *repoFixture) {
			f.repo.Write("later.txt", "later\n")
			gitEnv(t, f, "add", "-N", "later.txt")
		}},
		{name: "unmerged", index: func(t *testing.T, f *repoFixture) {
			blob := f.git("rev-parse", "HEAD:README.md")
			gitEnvStdin(t, f, "100644 "+blob+" 1\tREADME.md\n100644 "+blob+" 2\tREADME.md\n", "update-index", "--index-info")
		}},
		{name: "split index", index: func(t *testing.T, f *repoFixture) {
			f.repo.Write("split.txt", "split\n")
			gitEnv(t, f, "add", "--all")
			gitEnv(t, f, "update-index", "--split-index")
		}},
		{name: "missing blob", index: func(t *testing.T, f *repoFixture) {
			gitEnv(t, f, "update-index", "--add", "--cacheinfo", "100644,"+strings.Repeat("e", 40)+",gone.txt")
		}},
		{name: "objects synced", index: func(t *testing.T, f *repoFixture) {
			f.git("config", "core.fsync", "loose-object")
			f.repo.Write("synced.txt", "synced\n")
			gitEnv(t, f, "add", "--all")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newRepo(t)
			f.git("read-tree", "HEAD")
			c.index(t, f)
			env := []string{"GIT_INDEX_FILE=" + filepath.Join(f.repo.Dir, ".git", "index")}
			w := New(f.gitrun(t), t.TempDir())
			got, ok := w.writeTreeLocal(env)
			if ok != c.local {
				t.Fatalf("written in this process: %v, want %v", ok, c.local)
			}
			if !ok {
				return
			}
			// git reads every object of the tree written here.
			if out, err := exec.Command("git", "-C", f.repo.Dir, "ls-tree", "-r", "-t", got).CombinedOutput(); err != nil {
				t.Fatalf("git ls-tree %s: %v\n%s", got, err, out)
			}
			objs := gitx.NewObjects(filepath.Join(f.repo.Dir, ".git"))
			defer objs.Close()
			if has, err := objs.Has(plumbing.NewHash(got)); !has || err != nil {
				t.Fatalf("tree %s not stored: %v", got, err)
			}
			if want := f.git("write-tree"); got != want {
				t.Fatalf("in process %s, git write-tree %s", got, want)
			}
		})
	}
}

func gitEnv(t *testing.T, f *repoFixture, args ...string) {
	t.Helper()
	gitEnvStdin(t, f, "", args...)
}

func gitEnvStdin(t *testing.T, f *repoFixture, stdin string, args ...string) {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir, c.Stdin = f.repo.Dir, strings.NewReader(stdin)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}
