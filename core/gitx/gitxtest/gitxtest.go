package gitxtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
)

// clock advances one minute per commit so that fixtures are deterministic
// and ordered.
var clock atomic.Int64

// Repo is a fixture repository.
type Repo struct {
	t   testing.TB
	Dir string
}

// Env is the environment every fixture git runs with: no user or system
// configuration, a fixed identity.
func Env(home string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Ada Lovelace", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada Lovelace", "GIT_COMMITTER_EMAIL=ada@example.com",
		"LC_ALL=C",
	}
}

// Git runs git in dir and returns its trimmed stdout; it fails the test on
// error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := GitErr(t, dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// GitErr is Git that returns the error (with stderr) instead of failing.
func GitErr(t testing.TB, dir string, args ...string) (string, error) {
	t.Helper()
	n := clock.Add(60)
	date := fmt.Sprintf("%d +0000", 1_700_000_000+n)
	full := append([]string{"-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always", "-c", "commit.gpgSign=false",
		"-c", "core.hooksPath=/dev/null", "-c", "advice.detachedHead=false", "-c", "core.autocrlf=false"}, args...)
	c := exec.Command("git", full...)
	c.Dir = dir
	c.Env = append(Env(homeDir()), "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

func homeDir() string {
	// One empty home for every fixture: nothing of the developer's own
	// configuration leaks into fixtures.
	h := filepath.Join(os.TempDir(), "sluice-gitxtest-home")
	_ = os.MkdirAll(h, 0o700)
	return h
}

// Init creates an empty repository (no commits) in a new temp directory.
func Init(t testing.TB) *Repo {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return InitAt(t, dir)
}

// InitAt creates an empty repository in dir.
func InitAt(t testing.TB, dir string, initArgs ...string) *Repo {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, append([]string{"init", "-q"}, initArgs...)...)
	return &Repo{t: t, Dir: dir}
}

// Git runs git in the repository.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	return Git(r.t, r.Dir, args...)
}

// Write writes a file (creating directories).
func (r *Repo) Write(path, content string) {
	r.t.Helper()
	p := filepath.Join(r.Dir, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// Read returns a file's content ("" with a test failure when it cannot
// be read).
func (r *Repo) Read(path string) string {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.Dir, filepath.FromSlash(path)))
	if err != nil {
		r.t.Error(err)
	}
	return string(b)
}

// Commit stages everything and commits; it returns the full commit id.
func (r *Repo) Commit(msg string) string {
	r.t.Helper()
	r.Git("add", "-A")
	r.Git("commit", "-q", "--allow-empty", "-m", msg)
	return r.Git("rev-parse", "HEAD")
}

// WriteCommit writes one file and commits it.
func (r *Repo) WriteCommit(path, content, msg string) string {
	r.t.Helper()
	r.Write(path, content)
	return r.Commit(msg)
}

// Basic is a repository with n commits on main, touching a few files.
// Subjects alternate between conventional-commit and plain style.
func Basic(t testing.TB, n int) *Repo {
	t.Helper()
	r := Init(t)
	for i := 1; i <= n; i++ {
		msg := fmt.Sprintf("Update file %d", i)
		if i%2 == 0 {
			msg = fmt.Sprintf("feat(core): add step %d", i)
		}
		r.WriteCommit(fmt.Sprintf("src/file%d.txt", i%5), fmt.Sprintf("line %d\n", i), msg)
	}
	return r
}

// Diverged is main and feature that both changed conflict.txt since their
// fork, plus a clean change on each side.
func Diverged(t testing.TB) *Repo {
	t.Helper()
	r := Init(t)
	r.Write("conflict.txt", "one\ntwo\nthree\n")
	r.Write("shared.go", "package shared\n\nfunc A() int { return 1 }\n\nfunc B() int { return 2 }\n")
	r.Commit("base")
	r.Git("checkout", "-q", "-b", "feature")
	r.WriteCommit("conflict.txt", "one\nFEATURE\nthree\n", "feat: change two on feature")
	r.WriteCommit("feature-only.txt", "f\n", "feat: feature file")
	r.Git("checkout", "-q", "main")
	r.WriteCommit("conflict.txt", "one\nMAIN\nthree\n", "fix: change two on main")
	r.WriteCommit("main-only.txt", "m\n", "chore: main file")
	return r
}

// MergeInProgress leaves a conflicted merge of feature into main.
func MergeInProgress(t testing.TB) *Repo {
	t.Helper()
	r := Diverged(t)
	if _, err := GitErr(t, r.Dir, "merge", "--no-edit", "feature"); err == nil {
		t.Fatal("the fixture merge did not conflict")
	}
	return r
}

// RebaseInProgress leaves feature being rebased onto main, stopped on a
// conflict.
func RebaseInProgress(t testing.TB) *Repo {
	t.Helper()
	r := Diverged(t)
	r.Git("checkout", "-q", "feature")
	if _, err := GitErr(t, r.Dir, "rebase", "main"); err == nil {
		t.Fatal("the fixture rebase did not conflict")
	}
	return r
}

// Detached has HEAD detached one commit below main, with a commit made
// there that no branch contains, then HEAD moved back to main: that commit
// is recoverable only from the reflog.
func Detached(t testing.TB) *Repo {
	t.Helper()
	r := Basic(t, 4)
	r.Git("checkout", "-q", "--detach", "HEAD~1")
	return r
}

// Orphaned makes a commit that only the reflog knows (made detached, then
// left) and a reset that drops one commit from main.
func Orphaned(t testing.TB) (r *Repo, lostDetached, lostReset string) {
	t.Helper()
	r = Basic(t, 3)
	r.Git("checkout", "-q", "--detach")
	lostDetached = r.WriteCommit("lost.txt", "lost\n", "wip: detached experiment")
	r.Git("checkout", "-q", "main")
	lostReset = r.WriteCommit("dropped.txt", "dropped\n", "feat: will be reset away")
	r.Git("reset", "-q", "--hard", "HEAD~1")
	return r, lostDetached, lostReset
}

// Stashes has two stash entries and a clean tree.
func Stashes(t testing.TB) *Repo {
	t.Helper()
	r := Basic(t, 2)
	r.Write("src/file1.txt", "stashed one\n")
	r.Git("stash", "push", "-q", "-m", "first")
	r.Write("src/file2.txt", "stashed two\n")
	r.Git("stash", "push", "-q", "-m", "second")
	return r
}

// Worktrees has a linked worktree on branch wt and a detached one, both
// inside the same temp directory as the main worktree's parent.
func Worktrees(t testing.TB) (main *Repo, linked string) {
	t.Helper()
	parent, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := InitAt(t, filepath.Join(parent, "main"))
	r.WriteCommit("a.txt", "a\n", "first")
	linked = filepath.Join(parent, "linked wt")
	r.Git("worktree", "add", "-q", "-b", "wt", linked)
	r.Git("worktree", "add", "-q", "--detach", filepath.Join(parent, "detached"))
	r.Git("worktree", "lock", "--reason", "on a USB disk", filepath.Join(parent, "detached"))
	return r, linked
}

// Binary has a committed binary file, then a modified one.
func Binary(t testing.TB) *Repo {
	t.Helper()
	r := Init(t)
	r.Write("img.bin", "\x00\x01\x02PNG\x00data")
	r.Write("text.txt", "hello\n")
	r.Commit("add binary")
	r.Write("img.bin", "\x00\x01\x02PNG\x00changed data")
	return r
}

// Unicode has paths with spaces and non-ASCII characters, committed and
// modified.
func Unicode(t testing.TB) *Repo {
	t.Helper()
	r := Init(t)
	r.Write("docs/read me.md", "hello\n")
	r.Write("données/élan.txt", "un\n")
	r.Write("日本/ファイル.go", "package x\n\nfunc A() {}\n")
	r.Commit("unicode paths")
	r.Write("docs/read me.md", "hello world\n")
	r.Write("日本/ファイル.go", "package x\n\nfunc A() {}\n\nfunc B() {}\n")
	r.Write("new file ✓.txt", "new\n")
	return r
}

// NoCommits is an initialised repository with a staged file and no commit.
func NoCommits(t testing.TB) *Repo {
	t.Helper()
	r := Init(t)
	r.Write("first.txt", "first\n")
	r.Git("add", "first.txt")
	return r
}

// Submodules is a superproject with three submodules: "clean" checked
// out at the recorded commit, "drifted" checked out one commit ahead, and
// "uninit" registered but not checked out.
func Submodules(t testing.TB) *Repo {
	t.Helper()
	parent, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lib := InitAt(t, filepath.Join(parent, "lib"))
	lib.WriteCommit("lib.txt", "v1\n", "lib v1")
	lib.WriteCommit("lib.txt", "v2\n", "lib v2")
	super := InitAt(t, filepath.Join(parent, "super"))
	super.WriteCommit("README.md", "super\n", "super")
	for _, name := range []string{"clean", "drifted", "uninit"} {
		super.Git("submodule", "add", "-q", lib.Dir, "mods/"+name)
	}
	super.Commit("add submodules")
	// drifted: move its checkout back one commit.
	Git(t, filepath.Join(super.Dir, "mods", "drifted"), "checkout", "-q", "HEAD~1")
	// uninit: deinit removes the checkout but keeps the gitlink.
	super.Git("submodule", "deinit", "-q", "-f", "mods/uninit")
	return super
}

// Snapshot hashes every file under dir (including .git), keyed by path,
// with its mode; symlinks are recorded by target.
func Snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			snap[rel] = "symlink:" + target
		case d.IsDir():
			snap[rel+"/"] = info.Mode().String()
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			snap[rel] = info.Mode().String() + " " + hex.EncodeToString(h[:])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// DiffSnapshots describes the differences between two snapshots.
func DiffSnapshots(before, after map[string]string) []string {
	var d []string
	for k, v := range before {
		if a, ok := after[k]; !ok {
			d = append(d, "removed "+k)
		} else if a != v {
			d = append(d, "changed "+k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			d = append(d, "added "+k)
		}
	}
	sort.Strings(d)
	return d
}

// PointsOutside is a fixture for git-directory confinement: Root is the
// allowed root; Outside is a repository next to it, outside the root;
// GitFile is a directory inside the root whose .git file says
// "gitdir: <Outside>/.git"; Worktree is a linked worktree of Outside that
// was added inside the root (its .git file points out as well).
type PointsOutside struct {
	Root, GitFile, Worktree string
	Outside                 *Repo
}

// NewPointsOutside builds a PointsOutside fixture.
func NewPointsOutside(t testing.TB) PointsOutside {
	t.Helper()
	parent, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := PointsOutside{Root: filepath.Join(parent, "root"), Outside: InitAt(t, filepath.Join(parent, "outside"))}
	f.Outside.WriteCommit("secret.txt", "outside history\n", "outside commit")
	f.GitFile = filepath.Join(f.Root, "looks-local")
	if err := os.MkdirAll(filepath.Join(f.GitFile, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.GitFile, ".git"), []byte("gitdir: "+filepath.Join(f.Outside.Dir, ".git")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.Worktree = filepath.Join(f.Root, "linked")
	f.Outside.Git("worktree", "add", "-q", "-b", "linked", f.Worktree)
	return f
}
