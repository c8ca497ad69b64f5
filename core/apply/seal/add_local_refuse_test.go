package seal

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
)

// gitStages is git's own add --all and write-tree from a copy of the
// person's index (its time kept, as the seal's copy keeps it), run at the
// top of the working tree as the seal runs it; err is git's refusal.
func gitStages(t *testing.T, f *repoFixture) (string, error) {
	t.Helper()
	idx := filepath.Join(t.TempDir(), "index")
	src := filepath.Join(f.repo.Dir, ".git", "index")
	if b, err := os.ReadFile(src); err == nil {
		st, err := os.Stat(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(idx, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(idx, st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	var out []byte
	for _, args := range [][]string{{"add", "--all"}, {"write-tree"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = f.repo.Dir
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+idx)
		var err error
		if out, err = cmd.CombinedOutput(); err != nil {
			return "", &gitRefusal{args: args, out: strings.TrimSpace(string(out))}
		}
	}
	return strings.TrimSpace(string(out)), nil
}

type gitRefusal struct {
	args []string
	out  string
}

func (e *gitRefusal) Error() string { return "git " + strings.Join(e.args, " ") + ": " + e.out }

// stagedAsGit stages the repository in process and with git: where the
// seal staged in process, git must have staged the same tree. It returns
// whether the seal staged in process and git's refusal, if any.
func stagedAsGit(t *testing.T, f *repoFixture) (local bool, refused error) {
	t.Helper()
	tree, ok := New(f.gitrun(t), t.TempDir()).addAllLocal()
	want, err := gitStages(t, f)
	switch {
	case ok && err != nil:
		t.Errorf("staged in process (tree %s) where git refuses: %v", tree, err)
	case ok && tree != want:
		t.Errorf("staged in process: tree %s, git's add --all and write-tree: %s\n%s", tree, want, f.git("diff", "--raw", want, tree))
	}
	return ok, err
}

// TestAddAllLocal_NamesGitRefuses: a path git's add refuses (verify_path
// with core.protectNTFS, on by default) is never staged in process, in
// any directory: a symbolic link named
// .gitmodules in any case or by an NTFS name of it, .git followed by
// dots, spaces or an NTFS stream, git~1, a backslash. Names beside them
// that git takes are staged as git stages them, the plain ones in process.
func TestAddAllLocal_NamesGitRefuses(t *testing.T) {
	isolatedHome(t)
	link := func(name string) func(t *testing.T, f *repoFixture) {
		return func(t *testing.T, f *repoFixture) {
			abs := filepath.Join(f.repo.Dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("README.md", abs); err != nil {
				t.Fatal(err)
			}
		}
	}
	file := func(name string) func(t *testing.T, f *repoFixture) {
		return func(t *testing.T, f *repoFixture) { f.repo.Write(name, "x\n") }
	}
	refused := []struct {
		name string
		edit func(t *testing.T, f *repoFixture)
	}{
		{"a link .gitmodules", link(".gitmodules")},
		{"a link src/.GITMODULES", link("src/.GITMODULES")},
		{"a link gitmod~1", link("gitmod~1")},
		{"a link GITMOD~3", link("sub/GITMOD~3")},
		{"a link gi7eba~1", link("gi7eba~1")},
		{"a link .gitmodules..", link(".gitmodules..")},
		{"a link .gitmodules with a space", link("src/.gitmodules ")},
		{"a link .gitmodules:stream", link(".gitmodules:x")},
		{"a link in a directory .gitModules", link("d/.gitModules/x")},
		{"a file .git::$INDEX_ALLOCATION", file("src/.git::$INDEX_ALLOCATION")},
		{"a directory .GIT::$INDEX_ALLOCATION", file("d/.GIT::$INDEX_ALLOCATION/config")},
		{"a file .git. in a directory", file("src/.git.")},
		{"a file git~1", file("src/git~1")},
		{"a directory Git~1", file("d/Git~1/config")},
		{"a file after a backslash", file("src/a\\.git")},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			f := newRepo(t)
			c.edit(t, f)
			local, err := stagedAsGit(t, f)
			if err == nil {
				t.Fatalf("git stages this (staged in process: %v); the case must be one git refuses", local)
			}
			if local {
				t.Fatalf("staged in process; git refuses: %v", err)
			}
		})
	}
	taken := []struct {
		name string
		edit func(t *testing.T, f *repoFixture)
		// local: staged in process.
		local bool
	}{
		{"a file .gitmodules", file(".gitmodules"), true},
		{"a file .GITMODULES in a directory", file("src/.GITMODULES"), true},
		{"a file .gitkeep", file("d/.gitkeep"), true},
		{"a file .gitmodules.txt", file(".gitmodules.txt"), true},
		{"a link gitmodules", link("gitmodules"), true},
		{"a link .mailmap", link(".mailmap"), true},
		{"a link .gitmodulesx", link(".gitmodulesx"), false},
		{"a file ending in a tilde", file("notes~"), false},
		{"a file with a colon", file("a:b"), false},
		{"a file ending in a dot", file("a."), false},
		// git checks no name it replaces in the index.
		{"a tracked .gitmodules made a link", func(t *testing.T, f *repoFixture) {
			f.repo.Write(".gitmodules", "junk\n")
			f.git("add", ".gitmodules")
			f.git("commit", "-q", "-m", "modules")
			os.Remove(filepath.Join(f.repo.Dir, ".gitmodules"))
			link(".gitmodules")(t, f)
		}, false},
	}
	for _, c := range taken {
		t.Run(c.name, func(t *testing.T) {
			f := newRepo(t)
			c.edit(t, f)
			local, err := stagedAsGit(t, f)
			if err != nil {
				t.Fatalf("git refuses: %v", err)
			}
			if c.local && !local {
				t.Error("left to git; a name git takes as it is is staged in process")
			}
		})
	}
}

// TestAddAllLocal_SettingsGitDecides: a setting that changes which names
// git refuses or how git decides a tracked file is unchanged without
// reading it leaves the staging to git. With core.trustctime off or
// core.checkStat minimal, git keeps the staged blob of a file rewritten
// at its size whose modification time was put back, and with
// core.protectHFS it refuses .g<ZWNJ>it; the seal lands git's answer.
func TestAddAllLocal_SettingsGitDecides(t *testing.T) {
	isolatedHome(t)
	// rewrite changes src/a.txt at its size and puts its time back, after
	// the index recorded that time.
	rewrite := func(t *testing.T, f *repoFixture) {
		p := filepath.Join(f.repo.Dir, "src", "a.txt")
		old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		f.git("update-index", "--refresh")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		copy(b, "ZZ")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	differs := []struct {
		name string
		edit func(t *testing.T, f *repoFixture)
		// refuses: git's add fails; else git keeps src/a.txt's blob.
		refuses bool
	}{
		{"core.trustctime off", func(t *testing.T, f *repoFixture) {
			f.git("config", "core.trustctime", "false")
			rewrite(t, f)
		}, false},
		{"core.checkStat minimal", func(t *testing.T, f *repoFixture) {
			f.git("config", "core.checkStat", "minimal")
			f.git("config", "core.trustctime", "false")
			rewrite(t, f)
		}, false},
		{"core.protectHFS", func(t *testing.T, f *repoFixture) {
			f.git("config", "core.protectHFS", "true")
			f.repo.Write("d/.g\u200cit", "x\n")
		}, true},
	}
	for _, c := range differs {
		t.Run(c.name, func(t *testing.T) {
			f := newRepo(t)
			c.edit(t, f)
			local, err := stagedAsGit(t, f)
			switch {
			case c.refuses && err == nil:
				t.Fatal("git stages this; the case must be one git refuses")
			case !c.refuses && err != nil:
				t.Fatalf("git refuses: %v", err)
			case !c.refuses:
				// The case is one where git's answer is not the disk's.
				tree, _ := gitStages(t, f)
				if got, want := f.git("rev-parse", tree+":src/a.txt"), f.git("rev-parse", "HEAD:src/a.txt"); got != want {
					t.Fatalf("git staged src/a.txt as %s, not its old blob %s", got, want)
				}
			}
			if local {
				t.Fatal("staged in process; git decides this")
			}
		})
	}
	settings := [][]string{
		{"core.protectNTFS", "false"},
		{"core.protectHFS", "true"},
		{"core.trustctime", "false"},
		{"core.checkStat", "minimal"},
		{"core.ignoreStat", "true"},
		{"core.fsmonitor", "true"},
		{"core.untrackedCache", "true"},
		{"core.splitIndex", "true"},
		{"index.skipHash", "true"},
		{"feature.manyFiles", "true"},
	}
	for _, kv := range settings {
		t.Run(kv[0], func(t *testing.T) {
			f := newRepo(t)
			f.repo.Write("src/a.txt", "changed\n")
			f.git("config", kv[0], kv[1])
			if tree, ok := New(f.gitrun(t), t.TempDir()).addAllLocal(); ok {
				t.Fatalf("staged in process (tree %s); git stages this", tree)
			}
		})
	}
	t.Run("an untracked cache in the index", func(t *testing.T) {
		f := newRepo(t)
		f.repo.Write("src/a.txt", "changed\n")
		f.git("-c", "core.untrackedCache=true", "update-index", "--untracked-cache")
		if tree, ok := New(f.gitrun(t), t.TempDir()).addAllLocal(); ok {
			t.Fatalf("staged in process (tree %s); git stages this", tree)
		}
	})
	t.Run("defaults spelled out", func(t *testing.T) {
		f := newRepo(t)
		f.repo.Write("src/a.txt", "changed\n")
		for _, kv := range [][]string{{"core.protectNTFS", "true"}, {"core.protectHFS", "false"}, {"core.trustctime", "true"}, {"core.checkStat", "default"}} {
			f.git("config", kv[0], kv[1])
		}
		if local, _ := stagedAsGit(t, f); !local {
			t.Fatal("left to git; the default settings written out are staged in process")
		}
	})
}

// TestAddAllLocal_UnendingFiles: an ignore file or index that is not a
// regular file (a device that never ends, a fifo nobody writes) or is
// larger than this process reads leaves the staging to git, without
// reading it: the call returns.
func TestAddAllLocal_UnendingFiles(t *testing.T) {
	home := isolatedHome(t)
	fifo := func(t *testing.T, p string) {
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skip(err)
		}
	}
	big := strings.Repeat("# a comment line of an ignore file\n", (2<<20)/35)
	cases := []struct {
		name string
		edit func(t *testing.T, f *repoFixture)
	}{
		{"core.excludesFile the zero device", func(t *testing.T, f *repoFixture) { f.git("config", "core.excludesFile", "/dev/zero") }},
		{"info exclude a link to the zero device", func(t *testing.T, f *repoFixture) {
			p := filepath.Join(f.repo.Dir, ".git", "info", "exclude")
			os.Remove(p)
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}},
		{"the global ignore file a link to the zero device", func(t *testing.T, f *repoFixture) {
			p := filepath.Join(home, ".config", "git", "ignore")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(p) })
		}},
		{"info exclude a fifo", func(t *testing.T, f *repoFixture) { fifo(t, filepath.Join(f.repo.Dir, ".git", "info", "exclude")) }},
		{"info exclude of 2 MiB", func(t *testing.T, f *repoFixture) {
			if err := os.WriteFile(filepath.Join(f.repo.Dir, ".git", "info", "exclude"), []byte(big), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"a .gitignore of 2 MiB", func(t *testing.T, f *repoFixture) { f.repo.Write("src/.gitignore", big) }},
		{"the index a link to the zero device", func(t *testing.T, f *repoFixture) {
			p := filepath.Join(f.repo.Dir, ".git", "index")
			os.Remove(p)
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}},
		{"the index a fifo", func(t *testing.T, f *repoFixture) { fifo(t, filepath.Join(f.repo.Dir, ".git", "index")) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newRepo(t)
			f.repo.Write("src/a.txt", "changed\n")
			if err := os.MkdirAll(filepath.Join(f.repo.Dir, ".git", "info"), 0o755); err != nil {
				t.Fatal(err)
			}
			c.edit(t, f)
			w := New(f.gitrun(t), t.TempDir())
			type result struct {
				tree       string
				ok, noAttr bool
				entries    int
			}
			done := make(chan result, 1)
			go func() {
				var r result
				r.tree, r.ok = w.addAllLocal()
				r.noAttr = w.noAttributes(nil)
				r.entries = indexEntries(filepath.Join(f.repo.Dir, ".git", "index"))
				done <- r
			}()
			select {
			case r := <-done:
				if r.ok {
					t.Errorf("staged in process (tree %s); git stages this", r.tree)
				}
				if strings.Contains(c.name, "index") {
					if r.noAttr {
						t.Error("the index was taken for one without attributes")
					}
					if r.entries != bulkPaths {
						t.Errorf("the index was counted as %d entries, not as unreadable", r.entries)
					}
				}
			case <-time.After(time.Minute):
				// A backstop: reading a file that never ends does not return.
				t.Fatal("the staging did not return: it reads a file that never ends or never starts")
			}
		})
	}
}

// TestAddAllLocal_RelativeConfigHome: git reads the global ignore and
// attribute files of a relative XDG_CONFIG_HOME or HOME from the top of
// the working tree; the seal leaves that to git, and lands git's answer.
func TestAddAllLocal_RelativeConfigHome(t *testing.T) {
	isolatedHome(t)
	cases := []struct {
		name string
		edit func(t *testing.T, f *repoFixture)
	}{
		{"XDG_CONFIG_HOME's ignore file", func(t *testing.T, f *repoFixture) {
			t.Setenv("XDG_CONFIG_HOME", "xdg")
			f.repo.Write("xdg/git/ignore", "*.log\n")
		}},
		{"HOME's ignore file", func(t *testing.T, f *repoFixture) {
			t.Setenv("XDG_CONFIG_HOME", "")
			t.Setenv("HOME", "home")
			f.repo.Write("home/.config/git/ignore", "*.log\n")
		}},
		{"XDG_CONFIG_HOME's attributes", func(t *testing.T, f *repoFixture) {
			t.Setenv("XDG_CONFIG_HOME", "xdg")
			f.repo.Write("xdg/git/attributes", "*.log text\n")
		}},
		{"HOME's attributes", func(t *testing.T, f *repoFixture) {
			t.Setenv("XDG_CONFIG_HOME", "")
			t.Setenv("HOME", "home")
			f.repo.Write("home/.config/git/attributes", "*.log text\n")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newRepo(t)
			// git's text attribute stores it with LF.
			f.repo.Write("x.log", "a log\r\n")
			c.edit(t, f)
			w := New(f.gitrun(t), t.TempDir())
			if w.noAttributes(nil) {
				t.Error("no attribute file taken as certain with a relative configuration directory")
			}
			if local, err := stagedAsGit(t, f); err != nil {
				t.Fatalf("git refuses: %v", err)
			} else if local {
				t.Fatal("staged in process; git reads the configuration directory from the working tree")
			}
		})
	}
}

// TestIndexCopy_OnlyAFile: the copy of the person's index that a stageAll
// git stages into is made only from a regular file: an index that is a
// link to /dev/zero (copied, it would fill the disk) or a fifo (whose
// opening waits for a writer) is refused as unsupported, and the call
// returns.
func TestIndexCopy_OnlyAFile(t *testing.T) {
	cases := []struct {
		name string
		edit func(t *testing.T, index string)
	}{
		{"a link to the zero device", func(t *testing.T, index string) {
			if err := os.Symlink("/dev/zero", index); err != nil {
				t.Fatal(err)
			}
		}},
		{"a fifo", func(t *testing.T, index string) {
			if err := syscall.Mkfifo(index, 0o644); err != nil {
				t.Skip(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newRepo(t)
			w := New(f.gitrun(t), t.TempDir())
			index := filepath.Join(f.repo.Dir, ".git", "index")
			if err := os.Remove(index); err != nil {
				t.Fatal(err)
			}
			c.edit(t, index)
			done := make(chan error, 1)
			go func() {
				_, _, err := w.indexCopy(testCtx(t))
				done <- err
			}()
			select {
			case err := <-done:
				if !errcode.IsCode(err, errcode.Unsupported) {
					t.Fatalf("copying the index: %v; want unsupported", err)
				}
			case <-time.After(time.Minute):
				// A backstop: the copy of a file that never ends does not return.
				t.Fatal("copying the index did not return")
			}
		})
	}
}
