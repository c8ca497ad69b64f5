package seal

import (
	"bytes"
	"crypto/sha1"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// TestWriteTreeLocal_SameAsGit: the tree of a temporary index written in
// this process is the one git write-tree writes from the same index, with
// objects git reads back (fsck); every index whose tree git must write
// (intent-to-add, conflicts, skip-worktree, a split index, an object that
// is not there, core.sharedRepository) is left to it. The repository has
// nested directories, an executable, symlinks, a submodule and names
// that sort around a slash; the indexes are the person's after a commit
// (with a cache-tree) and a copy of it after git add --all, as a seal
// makes them.
func TestWriteTreeLocal_SameAsGit(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, f *repoFixture) // committed as the base
		edit  func(t *testing.T, f *repoFixture)
		// index changes the temporary index after git add --all.
		index func(t *testing.T, f *repoFixture, git func(...string) string)
		local bool
		// bulk stages as a seal of many files does, into a pack.
		bulk bool
		// rootLoose: the root tree is a loose object afterwards.
		rootLoose bool
	}{
		{name: "changes in nested directories, new and removed ones", local: true, edit: func(t *testing.T, f *repoFixture) {
			f.repo.Write("src/a.txt", "changed\n")
			f.repo.Write("deep/er/still/text.txt", "changed deep\n")
			f.repo.Write("brand/new/dir/file.go", "package dir\n")
			rm(t, f, "gone")
			chmod(t, f, "run.sh", 0o755)
			relink(t, f, "link", "README.md")
		}},
		{name: "one deep file: the other subtrees come from the cache-tree", local: true, edit: func(t *testing.T, f *repoFixture) {
			f.repo.Write("deep/er/still/text.txt", "changed deep\n")
		}},
		{name: "names that sort around a slash", local: true, edit: func(t *testing.T, f *repoFixture) {
			f.repo.Write("a-b", "dash\n")
			f.repo.Write("a.c", "dot\n")
			f.repo.Write("a/b", "slash\n")
			f.repo.Write("a0", "zero\n")
			f.repo.Write("a/b-c/d", "deeper\n")
			f.repo.Write("a/b.c", "dot in a\n")
		}},
		{name: "everything packed, the new blobs in a pack of their own", local: true, bulk: true, edit: func(t *testing.T, f *repoFixture) {
			f.git("repack", "-adq")
			f.repo.Write("deep/er/still/text.txt", "changed deep\n")
			f.repo.Write("src/new.txt", "new\n")
		}},
		{name: "a version 4 index", local: true, setup: func(t *testing.T, f *repoFixture) {
			f.git("update-index", "--index-version", "4")
			for i := range 20 {
				f.repo.Write(fmt.Sprintf("v4/shared/prefix/file-%02d.txt", i), "x\n")
			}
		}, edit: func(t *testing.T, f *repoFixture) {
			requireIndexVersion(t, f, 4)
			f.repo.Write("v4/shared/prefix/file-07.txt", "changed\n")
			f.repo.Write("v4/other/new.txt", "new\n")
		}},
		{name: "an index without a cache-tree", local: true, edit: func(t *testing.T, f *repoFixture) {
			rm(t, f, ".git/index")
			f.repo.Write("src/a.txt", "changed\n")
		}},
		{name: "a submodule pointer moves", local: true, edit: func(t *testing.T, f *repoFixture) {
			f.git("-C", "sub", "commit", "-q", "--allow-empty", "-m", "moved")
		}},
		{name: "every file removed", local: true, edit: func(t *testing.T, f *repoFixture) {
			ents, err := os.ReadDir(f.repo.Dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if e.Name() != ".git" {
					rm(t, f, e.Name())
				}
			}
		}},
		{name: "an intent-to-add entry", edit: func(t *testing.T, f *repoFixture) {
			f.repo.Write("src/a.txt", "changed\n")
			f.repo.Write("later.txt", "later\n")
		}, index: func(t *testing.T, f *repoFixture, git func(...string) string) {
			git("rm", "-q", "--cached", "later.txt")
			git("add", "-N", "later.txt")
		}},
		{name: "a skip-worktree entry", edit: func(t *testing.T, f *repoFixture) {
			f.repo.Write("src/a.txt", "changed\n")
		}, index: func(t *testing.T, f *repoFixture, git func(...string) string) {
			git("update-index", "--skip-worktree", "README.md")
		}},
		{name: "a split index", edit: func(t *testing.T, f *repoFixture) {
			f.repo.Write("src/a.txt", "changed\n")
		}, index: func(t *testing.T, f *repoFixture, git func(...string) string) {
			git("update-index", "--split-index")
		}},
		{name: "an object that is not there", edit: func(t *testing.T, f *repoFixture) {
			f.repo.Write("src/a.txt", "changed\n")
		}, index: func(t *testing.T, f *repoFixture, git func(...string) string) {
			git("update-index", "--add", "--cacheinfo", "100644,"+strings.Repeat("ab", 20)+",ghost.txt")
		}},
		{name: "a conflict", edit: func(t *testing.T, f *repoFixture) {
			f.repo.Write("src/a.txt", "changed\n")
		}, index: func(t *testing.T, f *repoFixture, git func(...string) string) {
			blob := git("rev-parse", "HEAD:README.md")
			git("update-index", "--force-remove", "README.md")
			in := fmt.Sprintf("100644 %s 1\tREADME.md\n100644 %s 2\tREADME.md\n", blob, blob)
			c := exec.Command("git", "update-index", "--index-info")
			c.Dir = f.repo.Dir
			c.Env = append(gitxtest.Env(t.TempDir()), "GIT_INDEX_FILE="+filepath.Join(f.root, "scratch-index"))
			c.Stdin = strings.NewReader(in)
			if out, err := c.CombinedOutput(); err != nil {
				t.Fatalf("update-index: %v %s", err, out)
			}
		}},
		{name: "a pack's index left without its pack (a repack cut short)", edit: func(t *testing.T, f *repoFixture) {
			f.repo.Write("lost.txt", "lost\n")
		}, index: func(t *testing.T, f *repoFixture, git func(...string) string) {
			// The new blob only in a pack whose .pack is then gone: git
			// removes a pack before its index.
			blob := git("rev-parse", ":lost.txt")
			c := exec.Command("git", "pack-objects", "-q", filepath.Join(f.repo.Dir, ".git", "objects", "pack", "pack"))
			c.Dir = f.repo.Dir
			c.Env = gitxtest.Env(t.TempDir())
			c.Stdin = strings.NewReader(blob + "\n")
			if out, err := c.CombinedOutput(); err != nil {
				t.Fatalf("pack-objects: %v %s", err, out)
			}
			git("prune-packed")
			packs, _ := filepath.Glob(filepath.Join(f.repo.Dir, ".git", "objects", "pack", "*.pack"))
			for _, p := range packs {
				rm(t, f, strings.TrimPrefix(p, f.repo.Dir+"/"))
			}
		}},
		{name: "the tree exists only in a pack: written loose all the same", local: true, rootLoose: true, edit: func(t *testing.T, f *repoFixture) {
			// No cache-tree, and the same content as HEAD, whose tree is
			// packed: git would freshen the pack; this writes it loose.
			f.git("repack", "-adq")
			f.git("prune-packed")
			rm(t, f, ".git/index")
		}},
		{name: "core.sharedRepository", setup: func(t *testing.T, f *repoFixture) {
			f.git("config", "core.sharedRepository", "group")
		}, edit: func(t *testing.T, f *repoFixture) {
			f.repo.Write("src/a.txt", "changed\n")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newRepo(t)
			f.repo.Write("deep/er/still/text.txt", "deep\n")
			f.repo.Write("deep/er/other.txt", "other\n")
			f.repo.Write("gone/one.txt", "one\n")
			f.repo.Write("run.sh", "echo hi\n")
			relink(t, f, "link", "src/a.txt")
			sub := filepath.Join(f.repo.Dir, "sub")
			f.git("init", "-q", sub)
			f.git("-C", sub, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "sub")
			f.git("-C", sub, "config", "user.name", "t")
			f.git("-C", sub, "config", "user.email", "t@t")
			if tc.setup != nil {
				tc.setup(t, f)
			}
			f.git("add", "-A")
			f.git("commit", "-q", "-m", "base")
			tc.edit(t, f)

			// The seal's temporary index: a copy of the person's, with
			// git add --all.
			idx := filepath.Join(f.root, "scratch-index")
			if b, err := os.ReadFile(filepath.Join(f.repo.Dir, ".git", "index")); err == nil {
				if err := os.WriteFile(idx, b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			gitIdx := func(index string) func(...string) string {
				return func(args ...string) string {
					t.Helper()
					c := exec.Command("git", args...)
					c.Dir = f.repo.Dir
					c.Env = append(gitxtest.Env(t.TempDir()), "GIT_INDEX_FILE="+index)
					out, err := c.CombinedOutput()
					if err != nil {
						t.Fatalf("git %v: %v\n%s", args, err, out)
					}
					return strings.TrimSpace(string(out))
				}
			}
			if tc.bulk {
				gitIdx(idx)("-c", "core.bigFileThreshold=1", "add", "--all")
				if loose := f.git("count-objects"); !strings.HasPrefix(loose, "0 objects") {
					t.Fatalf("objects left loose: %s", loose)
				}
			} else {
				gitIdx(idx)("add", "--all")
			}
			if tc.index != nil {
				tc.index(t, f, gitIdx(idx))
			}
			// The same index twice: one for this process, one for git.
			raw, err := os.ReadFile(idx)
			if err != nil {
				t.Fatal(err)
			}
			forGit := filepath.Join(f.root, "git-index")
			if err := os.WriteFile(forGit, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			env := []string{"GIT_INDEX_FILE=" + idx}
			w := New(f.gitrun(t), t.TempDir())
			local, ok := w.writeTreeLocal(env)
			if ok != tc.local {
				t.Fatalf("written in this process: %v, want %v", ok, tc.local)
			}
			c := exec.Command("git", "write-tree")
			c.Dir = f.repo.Dir
			c.Env = append(gitxtest.Env(t.TempDir()), "GIT_INDEX_FILE="+forGit)
			var stderr bytes.Buffer
			c.Stderr = &stderr
			out, gitErr := c.Output()
			byGit := strings.TrimSpace(string(out))
			if ok {
				if gitErr != nil {
					t.Fatalf("git write-tree failed where this process wrote %s: %v %s", local, gitErr, stderr.String())
				}
				if local != byGit {
					t.Fatalf("tree written in this process %s, by git %s", local, byGit)
				}
				if ls := f.git("ls-tree", "-r", "-t", local); ls == "" && byGit != emptyTree {
					t.Fatal("git reads nothing in the tree written in this process")
				}
				if out, err := gitxtest.GitErr(t, f.repo.Dir, "fsck", "--no-dangling", "--no-progress"); err != nil {
					t.Fatalf("fsck after the tree was written in this process: %v %s", err, out)
				}
				if tc.rootLoose && !fileExists(filepath.Join(f.repo.Dir, ".git", "objects", local[:2], local[2:])) {
					t.Fatalf("the tree %s is not loose: a gc of its old pack would take the card's tree", local)
				}
				// Only the root: the packed subtrees it reaches stay as
				// they are, as with git.
				if n := f.git("count-objects"); tc.rootLoose && !strings.HasPrefix(n, "1 objects") {
					t.Fatalf("loose objects after writing the root alone: %s", n)
				}
			}
			// The seal's writeTree answers as git does, wherever the tree
			// was written.
			got, err := New(f.gitrun(t), t.TempDir()).writeTree(testCtx(t), env)
			if (err != nil) != (gitErr != nil) || err == nil && got != byGit {
				t.Fatalf("writeTree: %s %v; git: %s %v %s", got, err, byGit, gitErr, stderr.String())
			}
		})
	}
}

const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// An index whose header claims more entries than its file can hold is
// left to git before anything is allocated for them (a count of 2^32-1
// would ask for hundreds of GB and end the app).
func TestReadIndex_CountBeyondTheFile(t *testing.T) {
	b := []byte("DIRC\x00\x00\x00\x02\xff\xff\xff\xff")
	sum := sha1.Sum(b)
	if _, err := readIndex(append(b, sum[:]...)); err != errTreeByGit {
		t.Fatalf("readIndex: %v, want errTreeByGit", err)
	}
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
