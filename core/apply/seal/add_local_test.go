package seal

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// gitAddAll is the tree git's own add --all and write-tree make from a
// copy of the person's index (what a seal staged by git makes), with
// every git the test runs seeing the same HOME.
func gitAddAll(t *testing.T, f *repoFixture) string {
	t.Helper()
	idx := filepath.Join(t.TempDir(), "index")
	if b, err := os.ReadFile(filepath.Join(f.repo.Dir, ".git", "index")); err == nil {
		if err := os.WriteFile(idx, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = f.repo.Dir
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+idx)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("add", "--all")
	return git("write-tree")
}

// isolatedHome gives git and the seal one HOME and XDG_CONFIG_HOME, with
// nothing configured but what a case writes there.
func isolatedHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	return home
}

// TestAddAllLocal_SameAsGit: a stageAll staged in this process lands the
// tree git's own add --all and write-tree make from a copy of the
// person's index, on random working trees: nested directories, names that
// sort around a slash, executables, symbolic links (to files, to
// directories, dangling), empty and binary files, CRLF content, files
// modified, removed, added, replaced by links or by files where a
// directory was, and ignore files (.gitignore at several depths,
// info/exclude, the global file) with plain patterns, some matching
// tracked files. Its objects are whole (git fsck reads each). Most rounds
// must be staged in process; a round git stages instead only checks that
// git's answer is the one used.
func TestAddAllLocal_SameAsGit(t *testing.T) {
	home := isolatedHome(t)
	names := []string{"a", "a-b", "a.c", "a0", "b", "README.md", "x.log", "y.o", "top.txt", "keep.txt", "Makefile", "é.txt", "build", "tmp", "pkg"}
	dirs := []string{"", "a", "a/b", "a-b", "src", "src/pkg", "build", "tmp", "d1", "deep/er/still"}
	patterns := []string{"*.log", "build/", "/top.txt", "a/b", "tmp", "*.o", "d1/*.txt", "x*", "src/pkg/", "/a0", "deep/er/", "# comment", "", "*.tmp"}
	local, lists := 0, 0
	const rounds = 40
	for round := range rounds {
		rng := rand.New(rand.NewPCG(uint64(round), 7))
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			f := newRepo(t)
			pick := func(l []string) string { return l[rng.IntN(len(l))] }
			randPath := func() string {
				d := pick(dirs)
				n := pick(names)
				if d == "" {
					return n
				}
				return d + "/" + n
			}
			content := func() string {
				switch rng.IntN(5) {
				case 0:
					return ""
				case 1:
					return "bin\x00ary\x01\n"
				case 2:
					return "crlf\r\nline\r\n"
				}
				return fmt.Sprintf("line %d\n", rng.IntN(1000))
			}
			write := func(p, c string) {
				abs := filepath.Join(f.repo.Dir, filepath.FromSlash(p))
				// A file where a directory of the path is, or the other way
				// round, is left as it is.
				if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
					return
				}
				if st, err := os.Lstat(abs); err == nil && st.IsDir() {
					return
				}
				os.Remove(abs)
				os.WriteFile(abs, []byte(c), 0o644)
			}
			for range 8 + rng.IntN(10) {
				write(randPath(), content())
			}
			if rng.IntN(2) == 0 {
				os.Symlink("README.md", filepath.Join(f.repo.Dir, "link"))
			}
			f.git("add", "-A", "-f")
			f.git("commit", "-q", "-m", "base")
			// Ignore files, written after the base so that some tracked
			// files match them.
			ignore := func() string {
				var b strings.Builder
				for range 1 + rng.IntN(4) {
					b.WriteString(pick(patterns) + "\n")
				}
				return b.String()
			}
			for _, d := range []string{"", "a", "src", "deep"} {
				if rng.IntN(3) == 0 {
					write(strings.TrimPrefix(d+"/.gitignore", "/"), ignore())
				}
			}
			if rng.IntN(3) == 0 {
				os.MkdirAll(filepath.Join(f.repo.Dir, ".git", "info"), 0o755)
				os.WriteFile(filepath.Join(f.repo.Dir, ".git", "info", "exclude"), []byte(ignore()), 0o644)
			}
			if rng.IntN(4) == 0 {
				os.MkdirAll(filepath.Join(home, ".config", "git"), 0o755)
				os.WriteFile(filepath.Join(home, ".config", "git", "ignore"), []byte(ignore()), 0o644)
				t.Cleanup(func() { os.Remove(filepath.Join(home, ".config", "git", "ignore")) })
			}
			// Edits.
			for range 3 + rng.IntN(8) {
				p := randPath()
				abs := filepath.Join(f.repo.Dir, filepath.FromSlash(p))
				switch rng.IntN(7) {
				case 0, 1:
					write(p, content())
				case 2:
					os.Remove(abs)
				case 3:
					os.Chmod(abs, 0o755)
				case 4:
					if os.Remove(abs) == nil || rng.IntN(2) == 0 {
						os.MkdirAll(filepath.Dir(abs), 0o755)
						os.Symlink(pick([]string{"README.md", "src", "nowhere", "../a"}), abs)
					}
				case 5:
					// A directory replaced by a file.
					d := filepath.Join(f.repo.Dir, filepath.FromSlash(pick(dirs[1:])))
					if os.RemoveAll(d) == nil {
						os.WriteFile(d, []byte("was a directory\n"), 0o644)
					}
				case 6:
					os.RemoveAll(filepath.Join(f.repo.Dir, filepath.FromSlash(pick(dirs[1:]))))
				}
			}
			w := New(f.gitrun(t), t.TempDir())
			tree, ok := w.addAllLocal()
			if ok {
				local++
				if out, err := exec.Command("git", "-C", f.repo.Dir, "fsck", "--no-dangling", "--connectivity-only").CombinedOutput(); err != nil {
					t.Fatalf("fsck: %v\n%s", err, out)
				}
				if out, err := exec.Command("git", "-C", f.repo.Dir, "ls-tree", "-r", tree).CombinedOutput(); err != nil {
					t.Fatalf("ls-tree %s: %v\n%s", tree, err, out)
				}
				// The file list read with the objects staged in memory is the
				// one read from the repository alone.
				before := f.git("rev-parse", "HEAD^{tree}")
				if got, ok := w.changesLocal(before, tree); ok {
					lists++
					want, ok := New(f.gitrun(t), t.TempDir()).changesLocal(before, tree)
					if !ok || !reflect.DeepEqual(got, want) {
						t.Fatalf("file list from the staged objects:\n%+v\nfrom the repository (%v):\n%+v", got, ok, want)
					}
				}
			}
			want := gitAddAll(t, f)
			if ok && tree != want {
				t.Fatalf("staged in process: tree %s, git's add --all and write-tree: %s\n%s", tree, want, f.git("diff", "--stat", want, tree))
			}
		})
	}
	t.Logf("%d of %d rounds staged in process, %d file lists read in process", local, rounds, lists)
	if lists == 0 {
		t.Error("no file list was read in process from the staged objects")
	}
	if local < rounds*3/4 {
		t.Errorf("%d of %d rounds staged in process; the plain cases must not all go to git", local, rounds)
	}
}

// TestAddAllLocal_LeftToGit: every case whose staging git could make
// differently (see add_local.go) is left to git's add.
func TestAddAllLocal_LeftToGit(t *testing.T) {
	isolatedHome(t)
	cases := []struct {
		name string
		edit func(t *testing.T, f *repoFixture)
	}{
		{"an attributes file", func(t *testing.T, f *repoFixture) { f.repo.Write("src/.gitattributes", "*.txt text\n") }},
		{"an attributes file in an ignored directory of a tracked file", func(t *testing.T, f *repoFixture) {
			f.repo.Write(".gitignore", "src/\n")
			f.repo.Write("src/.gitattributes", "*.txt text eol=crlf\n")
		}},
		{"core.autocrlf", func(t *testing.T, f *repoFixture) { f.git("config", "core.autocrlf", "true") }},
		{"core.filemode off", func(t *testing.T, f *repoFixture) { f.git("config", "core.filemode", "false") }},
		{"core.ignorecase", func(t *testing.T, f *repoFixture) { f.git("config", "core.ignorecase", "true") }},
		{"a negated ignore pattern", func(t *testing.T, f *repoFixture) { f.repo.Write(".gitignore", "*.log\n!keep.log\n") }},
		{"a ** pattern", func(t *testing.T, f *repoFixture) { f.repo.Write(".gitignore", "**/out\n") }},
		{"an escaped pattern", func(t *testing.T, f *repoFixture) { f.repo.Write(".gitignore", "\\#x\n") }},
		{"trailing space", func(t *testing.T, f *repoFixture) { f.repo.Write(".gitignore", "a.txt \n") }},
		{"a CRLF ignore file", func(t *testing.T, f *repoFixture) { f.repo.Write(".gitignore", "a.txt\r\n") }},
		{"a relative core.excludesFile", func(t *testing.T, f *repoFixture) { f.git("config", "core.excludesFile", "ignores") }},
		{"a repository inside", func(t *testing.T, f *repoFixture) { gitInit(t, filepath.Join(f.repo.Dir, "inner")) }},
		{"a submodule", func(t *testing.T, f *repoFixture) {
			inner := filepath.Join(f.root, "inner")
			gitInit(t, inner)
			f.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", inner, "sub")
			f.git("commit", "-q", "-m", "sub")
			f.repo.Write("src/a.txt", "changed\n")
		}},
		{"assume-unchanged", func(t *testing.T, f *repoFixture) { f.git("update-index", "--assume-unchanged", "src/a.txt") }},
		{"intent to add", func(t *testing.T, f *repoFixture) {
			f.repo.Write("new.txt", "n\n")
			f.git("add", "-N", "new.txt")
		}},
		{"a fifo", func(t *testing.T, f *repoFixture) {
			if err := syscall.Mkfifo(filepath.Join(f.repo.Dir, "pipe"), 0o644); err != nil {
				t.Skip(err)
			}
		}},
		{"a tracked file's directory became a link", func(t *testing.T, f *repoFixture) {
			os.RemoveAll(filepath.Join(f.repo.Dir, "src"))
			os.Mkdir(filepath.Join(f.repo.Dir, "other"), 0o755)
			os.WriteFile(filepath.Join(f.repo.Dir, "other", "a.txt"), []byte("x\n"), 0o644)
			os.Symlink("other", filepath.Join(f.repo.Dir, "src"))
		}},
		{"a name git guards", func(t *testing.T, f *repoFixture) { f.repo.Write("src/.GIT", "x\n") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newRepo(t)
			f.repo.Write("src/a.txt", "changed before\n")
			c.edit(t, f)
			w := New(f.gitrun(t), t.TempDir())
			if tree, ok := w.addAllLocal(); ok {
				t.Fatalf("staged in process (tree %s); git must stage this", tree)
			}
		})
	}
}

func gitInit(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q", dir}, {"-C", dir, "commit", "-q", "--allow-empty", "-m", "x"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=T", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}
