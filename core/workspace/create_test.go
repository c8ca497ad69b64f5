//go:build unix

package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

func TestCreate_RepoIsSelfContainedAtTheCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, false)
	repo, head := makeRepo(t)
	first := git(t, repo, "rev-parse", "HEAD~1")
	// Something that must not travel: another branch with a secret.
	git(t, repo, "checkout", "-q", "-b", "private")
	writeFile(t, filepath.Join(repo, "private.txt"), "PRIVATE-BRANCH-CONTENT\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "private")
	private := git(t, repo, "rev-parse", "HEAD")
	git(t, repo, "checkout", "-q", "main")

	w, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceRepo, Path: repo, Commit: first}})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if w.Base != first || w.Head != first || !w.GitVisible || w.State != StateReady {
		t.Fatalf("workspace: %+v", w)
	}
	gitDir, tree := m.gitDir(w.ID), m.treeDir(w.ID)
	wsGit := func(args ...string) string {
		out, err := m.git.run(ctx, gitCall{gitDir: gitDir, workTree: tree, args: args})
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	if got := wsGit("rev-parse", "HEAD"); got != first {
		t.Fatalf("HEAD = %s, want %s", got, first)
	}
	if _, err := os.Stat(filepath.Join(tree, "src", "util.go")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a file of a later commit is in the tree: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(tree, "README.md")); err != nil || string(b) != "hello\n" {
		t.Fatalf("README.md: %q %v", b, err)
	}
	if got := wsGit("status", "--porcelain"); got != "" {
		t.Fatalf("the checkout is not clean: %q", got)
	}
	if got := wsGit("remote"); got != "" {
		t.Fatalf("remotes came along: %q", got)
	}
	cfg, _ := os.ReadFile(filepath.Join(gitDir, "config"))
	for _, bad := range []string{"remote", "credential", "token-in-url", "hooksPath"} {
		if strings.Contains(string(cfg), bad) {
			t.Fatalf("workspace config mentions %q:\n%s", bad, cfg)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(gitDir, "hooks")); len(ents) != 0 {
		t.Fatalf("hooks came along: %v", ents)
	}
	if _, err := os.Stat(filepath.Join(gitDir, "objects", "info", "alternates")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the clone borrows objects: %v", err)
	}
	if _, err := m.git.run(ctx, gitCall{gitDir: gitDir, args: []string{"cat-file", "-e", private}}); err == nil {
		t.Fatalf("an object of another branch was copied")
	}
	if _, err := m.git.run(ctx, gitCall{gitDir: gitDir, args: []string{"cat-file", "-e", head}}); err == nil {
		t.Fatalf("a commit after the base was copied")
	}
	if got := wsGit("fsck", "--no-dangling"); got != "" {
		t.Fatalf("fsck: %s", got)
	}
	// No object file shares an inode with the person's repository.
	assertNoSharedInodes(t, filepath.Join(repo, ".git", "objects"), filepath.Join(gitDir, "objects"))
	if _, err := os.Stat(hookMark(repo)); err == nil {
		t.Fatalf("the person's post-checkout hook ran")
	}
	if m.own.chown && fileUID(t, filepath.Join(tree, "README.md")) != m.own.uid {
		t.Fatalf("the tree was not handed to the container user")
	}

	// HEAD and a branch name resolve too; a missing commit does not.
	if w2, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceRepo, Path: repo}}); err != nil || w2.Base != head {
		t.Fatalf("default HEAD: %+v %v", w2, err)
	}
	if _, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceRepo, Path: repo, Commit: "nonexistent"}}); !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Fatalf("missing commit: %v", err)
	}
	if _, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceRepo, Path: repo, Commit: "--upload-pack=touch /tmp/x"}}); !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Fatalf("option-like commit: %v", err)
	}
	// Refused as a revision before git runs, without echoing it.
	for bad, why := range map[string]string{"main\tx": "control characters", "main\x1b[2J": "control characters", "main\xff": "UTF-8"} {
		_, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceRepo, Path: repo, Commit: bad}})
		if !errcode.IsCode(err, errcode.InvalidArgument) || !strings.Contains(err.Error(), why) || strings.Contains(err.Error(), bad) {
			t.Fatalf("commit %q: %v", bad, err)
		}
	}
	if _, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceRepo, Path: t.TempDir()}}); !errcode.IsCode(err, errcode.NotARepository) {
		t.Fatalf("not a repository: %v", err)
	}
	// Nothing half-made is left by the failures.
	list, _ := m.List()
	if len(list) != 2 {
		t.Fatalf("%d workspaces, want 2", len(list))
	}
}

func assertNoSharedInodes(t *testing.T, a, b string) {
	t.Helper()
	inodes := map[uint64]string{}
	filepath.Walk(a, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			inodes[fi.Sys().(*syscall.Stat_t).Ino] = p
		}
		return nil
	})
	filepath.Walk(b, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if src, ok := inodes[fi.Sys().(*syscall.Stat_t).Ino]; ok {
				t.Errorf("%s is a hard link of %s", p, src)
			}
		}
		return nil
	})
}

func TestCreate_ShallowAndRoots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, head := makeRepo(t)
	m := newManager(t, false, func(o *Options) { o.AllowedRoots = gitx.Roots{filepath.Dir(repo)} })
	m2 := newManager(t, false)
	w, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceRepo, Path: repo, Depth: 1}})
	if err != nil || w.Base != head {
		t.Fatalf("shallow create: %+v %v", w, err)
	}
	out, err := m.git.run(ctx, gitCall{gitDir: m.gitDir(w.ID), args: []string{"rev-list", "--count", "HEAD"}})
	if err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Fatalf("history depth: %q %v", out, err)
	}
	// A shallow source repository keeps its boundary in the workspace.
	shallowSrc := filepath.Join(t.TempDir(), "shallow")
	git(t, filepath.Dir(shallowSrc), "clone", "-q", "--depth=1", "file://"+repo, shallowSrc)
	w, err = m2.Create(ctx, CreateRequest{Source: Source{Kind: SourceRepo, Path: shallowSrc}})
	if err != nil || w.Base != head {
		t.Fatalf("create from a shallow repository: %+v %v", w, err)
	}
	if out, err := m2.git.run(ctx, gitCall{gitDir: m2.gitDir(w.ID), args: []string{"log", "--oneline"}}); err != nil || strings.Count(string(out), "\n") != 1 {
		t.Fatalf("history of the shallow import: %q %v %+v", out, err, err.(*errcode.Error).Data)
	}

	// A linked worktree: its objects live in the main repository.
	wt := filepath.Join(filepath.Dir(repo), "wt")
	git(t, repo, "worktree", "add", "-q", "-b", "feature", wt, "HEAD~1")
	w, err = m.Create(ctx, CreateRequest{Source: Source{Kind: SourceRepo, Path: wt}})
	if err != nil || w.Base != git(t, repo, "rev-parse", "HEAD~1") {
		t.Fatalf("create from a worktree: %+v %v", w, err)
	}
	if _, err := os.Stat(filepath.Join(m.treeDir(w.ID), "src", "util.go")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the worktree's commit was not the one checked out")
	}
	other, _ := makeRepo(t)
	if _, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceRepo, Path: other}}); !errcode.IsCode(err, errcode.PathOutsideRoots) {
		t.Fatalf("repository outside the roots: %v", err)
	}
}

func TestCreate_SnapshotIsDefended(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, false, func(o *Options) { o.SnapshotMaxFiles = 50; o.SnapshotMaxBytes = 1 << 20 })
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret"), "OUTSIDE")
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "a.txt"), "a\n")
	writeFile(t, filepath.Join(src, "sub", "b.txt"), "b\n")
	writeFile(t, filepath.Join(src, "run.sh"), "#!/bin/sh\n")
	os.Chmod(filepath.Join(src, "run.sh"), 0o4755)
	writeFile(t, filepath.Join(src, ".gitignore"), "ignored.log\n")
	writeFile(t, filepath.Join(src, "ignored.log"), "kept anyway\n")
	os.Symlink("sub/b.txt", filepath.Join(src, "inside-link"))
	os.Symlink("../a.txt", filepath.Join(src, "sub", "up-link"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(src, "abs-link"))
	os.Symlink("../../../../../../etc/passwd", filepath.Join(src, "sub", "escape-link"))
	writeFile(t, filepath.Join(src, ".git", "config"), "[core]\n\thooksPath = /tmp\n")
	// Names git takes for .git on other file systems, at any depth.
	writeFile(t, filepath.Join(src, "sub", ".GIT", "config"), "[core]\n\thooksPath = /tmp\n")
	writeFile(t, filepath.Join(src, ".git.", "config"), "[core]\n\thooksPath = /tmp\n")

	w, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceSnapshot, Path: src}})
	if err != nil {
		t.Fatalf("Create snapshot: %v", err)
	}
	tree := m.treeDir(w.ID)
	skipped := map[string]bool{}
	for _, s := range w.Skipped {
		skipped[s.Path] = true
	}
	for _, p := range []string{"abs-link", "sub/escape-link", ".git", "sub/.GIT", ".git."} {
		if !skipped[p] {
			t.Errorf("%s not reported as skipped: %+v", p, w.Skipped)
		}
		if _, err := os.Lstat(filepath.Join(tree, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was copied", p)
		}
	}
	if got, _ := os.Readlink(filepath.Join(tree, "inside-link")); got != "sub/b.txt" {
		t.Errorf("inside symlink: %q", got)
	}
	if got, _ := os.Readlink(filepath.Join(tree, "sub", "up-link")); got != "../a.txt" {
		t.Errorf("inside up symlink: %q", got)
	}
	if st, _ := os.Stat(filepath.Join(tree, "run.sh")); st == nil || st.Mode().Perm() != 0o755 || st.Mode()&os.ModeSetuid != 0 {
		t.Errorf("run.sh mode: %v", st.Mode())
	}
	if w.Base == "" || w.GitVisible {
		t.Errorf("snapshot base/visibility: %+v", w)
	}
	// The base commit holds the whole import, ignored files included, so
	// the diff starts empty.
	d, err := m.Diff(ctx, w.ID, DiffOptions{})
	if err != nil || len(d.Files) != 0 {
		t.Fatalf("diff right after the import: %+v %v", d, err)
	}

	// Special files refuse the import, and leave nothing behind.
	fifoSrc := t.TempDir()
	writeFile(t, filepath.Join(fifoSrc, "ok.txt"), "ok")
	if err := syscall.Mkfifo(filepath.Join(fifoSrc, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, CreateRequest{ID: "fifo", Source: Source{Kind: SourceSnapshot, Path: fifoSrc}}); !errcode.IsCode(err, errcode.InvalidArgument) || !strings.Contains(err.Error(), "FIFO") {
		t.Fatalf("FIFO: %v", err)
	}
	if _, err := os.Stat(m.dir("fifo")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused snapshot left its directory")
	}
	// Caps.
	many := t.TempDir()
	for i := 0; i < 60; i++ {
		writeFile(t, filepath.Join(many, "f", string(rune('a'+i%26))+strings.Repeat("x", i/26)), "x")
	}
	if _, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceSnapshot, Path: many}}); !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Fatalf("file cap: %v", err)
	}
	big := t.TempDir()
	writeFile(t, filepath.Join(big, "big"), strings.Repeat("x", 2<<20))
	if _, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceSnapshot, Path: big}}); !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Fatalf("byte cap: %v", err)
	}
}

func TestCreate_Fresh(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, false)
	w, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceFresh, GitInit: true}})
	if err != nil || w.Base != "" || !w.GitVisible {
		t.Fatalf("fresh: %+v %v", w, err)
	}
	if _, err := m.WriteFile(ctx, w.ID, "new.txt", []byte("new\n"), 0); err != nil {
		t.Fatal(err)
	}
	d, err := m.Diff(ctx, w.ID, DiffOptions{})
	if err != nil || len(d.Files) != 1 || d.Files[0].Status != "A" || !strings.Contains(d.Patch, "+new") {
		t.Fatalf("diff of a fresh workspace: %+v %v", d, err)
	}
	if _, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceFresh, Path: "/tmp"}}); !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Fatalf("fresh with a path: %v", err)
	}
	if _, err := m.Create(ctx, CreateRequest{Source: Source{Kind: "url"}}); !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Fatalf("unknown kind: %v", err)
	}
}

// TestCreate_GitDirOutsideRoots: a repository source inside the roots
// whose .git file (or a linked worktree's common directory) leads outside
// them is refused with path_outside_roots, and so is a handoff into it.
func TestCreate_GitDirOutsideRoots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	po := gitxtest.NewPointsOutside(t)
	m := newManager(t, false, func(o *Options) { o.AllowedRoots = gitx.Roots{po.Root} })
	for _, p := range []string{po.GitFile, po.Worktree} {
		if _, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceRepo, Path: p}}); !errcode.IsCode(err, errcode.PathOutsideRoots) {
			t.Fatalf("create from %s: %v", p, err)
		}
		if _, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceSnapshot, Path: p}}); !errcode.IsCode(err, errcode.PathOutsideRoots) {
			t.Fatalf("snapshot of %s: %v", p, err)
		}
	}
	w, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceFresh}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.FetchInto(ctx, w.ID, po.GitFile, "refs/sluice/proposals/"+w.ID); !errcode.IsCode(err, errcode.PathOutsideRoots) {
		t.Fatalf("fetch into a tree whose git directory is outside: %v", err)
	}
	if refs := po.Outside.Git("for-each-ref", "refs/sluice/"); refs != "" {
		t.Fatalf("the outside repository gained refs: %s", refs)
	}
}
