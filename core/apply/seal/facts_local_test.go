package seal

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// TestChanges_LocalSameAsGit: the file list read in this process is
// git's (diff-tree, cat-file, check-attr) for every change it reads
// itself, and it leaves to git every change whose answer could differ:
// attributes in the working tree, only in the index (of version 2 or 4)
// or in info/attributes, a filter, a submodule pointer, a rename, a file
// that becomes a directory, a long list. The repository has CRLF files
// (with core.autocrlf), a symlink, an executable and a submodule
// throughout.
func TestChanges_LocalSameAsGit(t *testing.T) {
	cases := []struct {
		name  string
		setup func(f *repoFixture) // committed as the base
		edit  func(t *testing.T, f *repoFixture)
		local bool
	}{
		{name: "modified text, binary, CRLF, mode, symlink target, type changes", local: true, edit: func(t *testing.T, f *repoFixture) {
			f.repo.Write("src/a.txt", "a1\na2 changed\na3\n")
			f.repo.Write("deep/er/still/text.txt", "changed deep\n")
			f.repo.Write("crlf.txt", "one\r\ntwo changed\r\n")
			f.repo.Write("data.bin", "new\x00binary\n")
			f.repo.Write("late.dat", strings.Repeat("y", firstFewBytes)+"\x00")
			f.repo.Write("last-byte.dat", strings.Repeat("z", firstFewBytes-1)+"\x00")
			f.repo.Write("empty.txt", "")
			chmod(t, f, "run.sh", 0o755)
			relink(t, f, "link", "src/b.txt")
			// A file that becomes a symlink, and a symlink that becomes a
			// file, at the same path.
			rm(t, f, "src/b.txt")
			relink(t, f, "src/b.txt", "../README.md")
			rm(t, f, "link2")
			f.repo.Write("link2", "a file now\n")
		}},
		{name: "additions only", local: true, edit: func(t *testing.T, f *repoFixture) {
			f.repo.Write("new/dir/one.txt", "one\n")
			f.repo.Write("new/bin.dat", "\x00\x01")
			f.repo.Write("new-crlf.txt", "a\r\nb\r\n")
			f.repo.Write("new.sh", "#!/bin/sh\n")
			chmod(t, f, "new.sh", 0o755)
			relink(t, f, "new-link", "new/dir/one.txt")
		}},
		{name: "deletions only", local: true, edit: func(t *testing.T, f *repoFixture) {
			rm(t, f, "deep")
			rm(t, f, "data.bin")
			rm(t, f, "link")
			rm(t, f, "run.sh")
		}},
		{name: "core.autocrlf converts on add", local: true, setup: func(f *repoFixture) {
			f.git("config", "core.autocrlf", "true")
		}, edit: func(t *testing.T, f *repoFixture) {
			f.repo.Write("crlf.txt", "one\r\nthree\r\n")
			f.repo.Write("added-crlf.txt", "x\r\ny\r\n")
		}},
		{name: "a rename", edit: func(t *testing.T, f *repoFixture) {
			if err := os.Rename(filepath.Join(f.repo.Dir, "src/a.txt"), filepath.Join(f.repo.Dir, "src/moved.txt")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "an addition beside a deletion", edit: func(t *testing.T, f *repoFixture) {
			rm(t, f, "data.bin")
			f.repo.Write("other.txt", "unlike anything\n")
		}},
		{name: "a file that becomes a directory", edit: func(t *testing.T, f *repoFixture) {
			rm(t, f, "run.sh")
			f.repo.Write("run.sh/inside.txt", "x\n")
		}},
		{name: "attributes in a directory above", setup: func(f *repoFixture) {
			f.repo.Write("deep/.gitattributes", "*.txt -diff\n")
		}, edit: func(t *testing.T, f *repoFixture) {
			f.repo.Write("deep/er/still/text.txt", "now binary by attribute\n")
		}},
		{name: "a filter attribute", setup: func(f *repoFixture) {
			f.repo.Write(".gitattributes", "*.lfs filter=lfs\n")
		}, edit: func(t *testing.T, f *repoFixture) {
			f.repo.Write("x.lfs", "pointer\n")
		}},
		{name: "attributes only in the index", setup: func(f *repoFixture) {
			f.repo.Write("src/.gitattributes", "*.txt diff=bin\n")
			f.git("config", "diff.bin.binary", "true")
		}, edit: func(t *testing.T, f *repoFixture) {
			f.repo.Write("src/a.txt", "changed\n")
			rm(t, f, "src/.gitattributes")
			// The tree compared is written from another index: the
			// person's keeps the file.
		}},
		{name: "a version 4 index", local: true, setup: func(f *repoFixture) {
			f.git("update-index", "--index-version", "4")
			for i := range 30 {
				f.repo.Write(fmt.Sprintf("v4/shared/prefix/file-%02d.txt", i), "x\n")
			}
		}, edit: func(t *testing.T, f *repoFixture) {
			requireIndexVersion(t, f, 4)
			f.repo.Write("v4/shared/prefix/file-07.txt", "changed\n")
			f.repo.Write("src/a.txt", "changed\n")
		}},
		{name: "attributes only in a version 4 index", setup: func(f *repoFixture) {
			f.git("update-index", "--index-version", "4")
			f.repo.Write("src/.gitattributes", "*.txt diff=bin\n")
			f.git("config", "diff.bin.binary", "true")
		}, edit: func(t *testing.T, f *repoFixture) {
			requireIndexVersion(t, f, 4)
			f.repo.Write("src/a.txt", "changed\n")
			rm(t, f, "src/.gitattributes")
		}},
		{name: "info/attributes", setup: func(f *repoFixture) {
			f.repo.Write(".git/info/attributes", "*.txt -diff\n")
		}, edit: func(t *testing.T, f *repoFixture) {
			f.repo.Write("src/a.txt", "changed\n")
		}},
		{name: "a submodule pointer", edit: func(t *testing.T, f *repoFixture) {
			f.git("-C", "sub", "commit", "-q", "--allow-empty", "-m", "moved")
		}},
		{name: "more files than read locally", edit: func(t *testing.T, f *repoFixture) {
			for i := range maxLocalChanges + 1 {
				f.repo.Write(fmt.Sprintf("many/%03d.txt", i), fmt.Sprintf("%d\n", i))
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newRepo(t)
			f.repo.Write("crlf.txt", "one\r\ntwo\r\n")
			f.repo.Write("data.bin", "old\x00binary\n")
			f.repo.Write("late.dat", "text\n")
			f.repo.Write("empty.txt", "was not empty\n")
			f.repo.Write("deep/er/still/text.txt", "deep\n")
			f.repo.Write("run.sh", "echo hi\n")
			relink(t, f, "link", "src/a.txt")
			relink(t, f, "link2", "README.md")
			sub := filepath.Join(f.repo.Dir, "sub")
			f.git("init", "-q", sub)
			f.git("-C", sub, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "sub")
			f.git("-C", sub, "config", "user.name", "t")
			f.git("-C", sub, "config", "user.email", "t@t")
			if tc.setup != nil {
				tc.setup(f)
			}
			f.git("add", "-A")
			f.git("commit", "-q", "-m", "base")
			before := f.git("rev-parse", "HEAD^{tree}")
			tc.edit(t, f)
			// The new tree is written from a copy of the index, as a seal
			// writes it; the person's index stays as it was.
			idx := filepath.Join(t.TempDir(), "index")
			b, err := os.ReadFile(filepath.Join(f.repo.Dir, ".git", "index"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(idx, b, 0o600); err != nil {
				t.Fatal(err)
			}
			gitIdx := func(args ...string) string {
				t.Helper()
				c := exec.Command("git", args...)
				c.Dir = f.repo.Dir
				c.Env = append(gitxtest.Env(t.TempDir()), "GIT_INDEX_FILE="+idx)
				out, err := c.CombinedOutput()
				if err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
				return strings.TrimSpace(string(out))
			}
			gitIdx("add", "--all")
			after := gitIdx("write-tree")
			if after == before {
				t.Fatal("the edit changed nothing")
			}

			s := New(f.gitrun(t), t.TempDir())
			local, ok := s.changesLocal(before, after)
			if ok != tc.local {
				t.Fatalf("read in this process: %v, want %v", ok, tc.local)
			}
			byGit, err := New(f.gitrun(t), t.TempDir()).changesByGit(testCtx(t), before, after)
			if err != nil {
				t.Fatal(err)
			}
			if ok && !reflect.DeepEqual(local, byGit) {
				t.Fatalf("in this process:\n%+v\ngit:\n%+v", local, byGit)
			}
			got, err := s.Changes(testCtx(t), before, after)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, byGit) {
				t.Fatalf("changes:\n%+v\ngit:\n%+v", got, byGit)
			}
			// The filter check answers as it does after git's list.
			errLocal := s.refuseFilters(testCtx(t), got)
			sg := New(f.gitrun(t), t.TempDir())
			if _, err := sg.changesByGit(testCtx(t), before, after); err != nil {
				t.Fatal(err)
			}
			errGit := sg.refuseFilters(testCtx(t), byGit)
			if (errLocal == nil) != (errGit == nil) {
				t.Fatalf("filter check: %v, after git's list %v", errLocal, errGit)
			}
		})
	}
}

func chmod(t *testing.T, f *repoFixture, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(filepath.Join(f.repo.Dir, p), mode); err != nil {
		t.Fatal(err)
	}
}

func rm(t *testing.T, f *repoFixture, p string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(f.repo.Dir, p)); err != nil {
		t.Fatal(err)
	}
}

func relink(t *testing.T, f *repoFixture, p, to string) {
	t.Helper()
	os.Remove(filepath.Join(f.repo.Dir, p))
	if err := os.Symlink(to, filepath.Join(f.repo.Dir, p)); err != nil {
		t.Fatal(err)
	}
}

func requireIndexVersion(t *testing.T, f *repoFixture, v byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.repo.Dir, ".git", "index"))
	if err != nil || len(b) < 8 || b[7] != v {
		t.Fatalf("the person's index is not of version %d (%v)", v, err)
	}
}
