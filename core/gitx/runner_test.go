package gitx

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

func TestRunner_ResolvesAbsoluteGit(t *testing.T) {
	r := gitxtest.Init(t)
	// A "git" inside the repository and a relative PATH entry that would
	// find it must not matter.
	if err := os.WriteFile(filepath.Join(r.Dir, "git"), []byte("#!/bin/sh\necho pwned > pwned\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", ".:"+os.Getenv("PATH"))
	t.Chdir(r.Dir)
	run := newRunner(t)
	if !filepath.IsAbs(run.Path()) || strings.HasPrefix(run.Path(), r.Dir) {
		t.Fatalf("git resolved to %q", run.Path())
	}
	for _, kv := range run.env {
		if strings.HasPrefix(kv, "PATH=") && strings.Contains(kv, ".:") {
			t.Fatalf("relative PATH entry kept: %s", kv)
		}
	}
	if _, err := openIn(t, run, r.Dir).Brief(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "pwned")); err == nil {
		t.Fatal("the repository's git ran")
	}
}

func TestRunner_ScrubsEnvironment(t *testing.T) {
	h := gitxtest.NewHostile(t)
	for k, v := range gitxtest.HostileEnv(h) {
		t.Setenv(k, v)
	}
	t.Setenv("LD_PRELOAD", "/nonexistent/evil.so")
	run := newRunner(t)
	for _, kv := range run.env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "LD_PRELOAD" || k == "PAGER" || k == "SSH_ASKPASS" || (strings.HasPrefix(k, "GIT_") && !fixedEnvKey(k)) {
			t.Fatalf("%s reached git's environment", k)
		}
	}
	for _, want := range []string{"GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1"} {
		if !slices.Contains(run.env, want) {
			t.Fatalf("%s missing", want)
		}
	}
	repo := openIn(t, run, h.Dir)
	if repo.Root != h.Dir {
		t.Fatalf("GIT_DIR/GIT_WORK_TREE redirected the repository to %s", repo.Root)
	}
	if _, err := repo.DiffText(ctx(t), DiffSpec{}, 3, 0); err != nil {
		t.Fatal(err)
	}
	if m := h.MarkerFiles(t); len(m) > 0 {
		t.Fatalf("programs ran: %v", m)
	}
}

func fixedEnvKey(k string) bool {
	for _, kv := range profiles[ProfileRead].fixed {
		if strings.HasPrefix(kv, k+"=") {
			return true
		}
	}
	return false
}

func TestRunner_Argv(t *testing.T) {
	run := newRunner(t)
	argv := run.argv(&cmd{sub: []string{"log"}, opts: []string{"--oneline"}, revs: []string{"HEAD"}, paths: []string{"a"}})
	s := strings.Join(argv, " ")
	for _, want := range []string{"--no-pager --no-optional-locks", "-c core.fsmonitor=false", "-c core.hooksPath=/dev/null", "-c credential.helper=",
		"-c protocol.allow=never", "log --no-ext-diff --no-textconv --oneline --end-of-options HEAD -- a"} {
		if !strings.Contains(s, want) {
			t.Fatalf("argv lacks %q: %s", want, s)
		}
	}
}

// injections are option-shaped values an agent could pass; the two that
// would write a file if git took them as options write it in dir.
func injections(dir string) []string {
	return []string{"--output=" + filepath.Join(dir, "injected"), "-n1", "--upload-pack=touch " + filepath.Join(dir, "pwned"), "-", "--", "-c"}
}

func TestRunner_RefusesInjectionBeforeStart(t *testing.T) {
	r := gitxtest.Diverged(t)
	run := newRunner(t)
	repo := openIn(t, run, r.Dir)
	marks := t.TempDir()
	calls := map[string]func(v string) error{
		"ResolveCommit": func(v string) error { _, err := repo.ResolveCommit(ctx(t), "rev", v); return err },
		"History.rev":   func(v string) error { _, err := repo.History(ctx(t), HistoryOptions{Rev: v}); return err },
		"History.paths": func(v string) error { _, err := repo.History(ctx(t), HistoryOptions{Paths: []string{v}}); return err },
		"CommitDetails": func(v string) error { _, err := repo.CommitDetails(ctx(t), v, 0); return err },
		"DiffText.base": func(v string) error { _, err := repo.DiffText(ctx(t), DiffSpec{Base: v}, 3, 0); return err },
		"DiffText.target": func(v string) error {
			_, err := repo.DiffText(ctx(t), DiffSpec{Base: "HEAD", Target: v}, 3, 0)
			return err
		},
		"DiffText.paths":        func(v string) error { _, err := repo.DiffText(ctx(t), DiffSpec{Paths: []string{v}}, 3, 0); return err },
		"DiffSemantic.base":     func(v string) error { _, err := repo.DiffSemantic(ctx(t), DiffSpec{Base: v}, 0); return err },
		"DiffSemantic.paths":    func(v string) error { _, err := repo.DiffSemantic(ctx(t), DiffSpec{Paths: []string{v}}, 0); return err },
		"Refs.pattern":          func(v string) error { _, err := repo.Refs(ctx(t), RefsOptions{Pattern: v}); return err },
		"BranchStack.branch":    func(v string) error { _, err := repo.BranchStack(ctx(t), v, ""); return err },
		"BranchStack.base":      func(v string) error { _, err := repo.BranchStack(ctx(t), "", v); return err },
		"Reflog.ref":            func(v string) error { _, err := repo.Reflog(ctx(t), v, 0); return err },
		"Preflight.ours":        func(v string) error { _, err := repo.ConflictPreflight(ctx(t), v, "feature", ""); return err },
		"Preflight.theirs":      func(v string) error { _, err := repo.ConflictPreflight(ctx(t), "", v, ""); return err },
		"ConflictRead.paths":    func(v string) error { _, err := repo.ConflictRead(ctx(t), []string{v}, 0, 0); return err },
		"WorktreeChanges.paths": func(v string) error { _, err := repo.WorktreeChanges(ctx(t), []string{v}, true, 0); return err },
	}
	for name, call := range calls {
		for _, inj := range injections(marks) {
			before := run.Started()
			err := call(inj)
			if !errcode.IsCode(err, errcode.InvalidArgument) {
				t.Errorf("%s(%q): error %v, want invalid_argument", name, inj, err)
			}
			if run.Started() != before {
				t.Errorf("%s(%q): git was started", name, inj)
			}
		}
	}
	if ents, _ := os.ReadDir(marks); len(ents) != 0 {
		t.Fatalf("an injected option wrote a file: %v", ents)
	}
}

func TestRunner_OrdinaryRevisions(t *testing.T) {
	r := gitxtest.Basic(t, 5)
	r.Git("branch", "feature/x")
	r.Git("tag", "v1.2.3")
	r.Git("update-ref", "refs/remotes/origin/main", "HEAD~1")
	r.WriteCommit("more.txt", "more\n", "more")
	full := r.Git("rev-parse", "HEAD~2")
	repo := openIn(t, newRunner(t), r.Dir)
	for _, rev := range []string{"HEAD~3", "HEAD^{commit}", "origin/main", "refs/heads/feature/x", "v1.2.3", full, "main@{1}", ":/step 4", "HEAD@{0}"} {
		if _, err := repo.ResolveCommit(ctx(t), "rev", rev); err != nil {
			t.Errorf("ResolveCommit(%q): %v", rev, err)
		}
		if _, err := repo.History(ctx(t), HistoryOptions{Rev: rev, Limit: 2}); err != nil {
			t.Errorf("History(%q): %v", rev, err)
		}
		if _, err := repo.DiffText(ctx(t), DiffSpec{Base: rev, Target: "HEAD"}, 3, 0); err != nil {
			t.Errorf("DiffText(%q): %v", rev, err)
		}
	}
}

func TestPaths(t *testing.T) {
	parent, _ := filepath.EvalSymlinks(t.TempDir())
	inside := gitxtest.InitAt(t, filepath.Join(parent, "root", "inside"))
	inside.WriteCommit("a", "a\n", "a")
	outside := gitxtest.InitAt(t, filepath.Join(parent, "outside"))
	outside.WriteCommit("b", "b\n", "b")
	roots := Roots{filepath.Join(parent, "root")}
	run := newRunner(t)
	open := func(p string) error { _, err := run.Open(ctx(t), roots, p); return err }

	wantCode(t, open("root/inside"), errcode.InvalidArgument)
	wantCode(t, open(filepath.Join(parent, "root", "inside", "..", "..", "outside")), errcode.PathOutsideRoots)
	wantCode(t, open(outside.Dir), errcode.PathOutsideRoots)
	wantCode(t, open(filepath.Join(parent, "root")), errcode.NotARepository)
	wantCode(t, open(filepath.Join(parent, "root", "missing")), errcode.InvalidArgument)
	if err := open(inside.Dir); err != nil {
		t.Fatal(err)
	}
	// The error never echoes the path.
	if err := open(outside.Dir); strings.Contains(err.Error(), outside.Dir) {
		t.Fatalf("error echoes the path: %v", err)
	}
	// A symlink inside the roots that points outside is refused.
	link := filepath.Join(parent, "root", "link")
	if err := os.Symlink(outside.Dir, link); err != nil {
		t.Fatal(err)
	}
	wantCode(t, open(link), errcode.PathOutsideRoots)
	// A symlink swapped after validation: the canonical path is used, so
	// the repository opened is the one that was validated.
	swap := filepath.Join(parent, "root", "swap")
	if err := os.Symlink(inside.Dir, swap); err != nil {
		t.Fatal(err)
	}
	testHookAfterConfine = func() {
		_ = os.Remove(swap)
		_ = os.Symlink(outside.Dir, swap)
	}
	t.Cleanup(func() { testHookAfterConfine = nil })
	repo, err := run.Open(ctx(t), roots, swap)
	if err != nil {
		t.Fatal(err)
	}
	if repo.Root != inside.Dir {
		t.Fatalf("opened %s after the swap, want %s", repo.Root, inside.Dir)
	}
	testHookAfterConfine = nil
	// A directory inside the roots whose enclosing repository is outside:
	// discovery stops at the root.
	nested := filepath.Join(outside.Dir, "sub")
	_ = os.MkdirAll(nested, 0o755)
	if _, err := run.Open(ctx(t), Roots{nested}, nested); !errcode.IsCode(err, errcode.NotARepository) {
		t.Fatalf("discovery climbed above the root: %v", err)
	}
	// CheckPath.
	for _, bad := range []string{"../x", "a/../../x", "/etc/passwd", "-x", ".git/config", ".GIT/config", "sub/.git/HEAD", "GIT~1/config", "a\x00b", ""} {
		if _, err := CheckPath("path", bad); err == nil {
			t.Errorf("CheckPath(%q) accepted", bad)
		}
	}
	if p, err := CheckPath("path", "./-dash"); err != nil || p != "./-dash" {
		t.Errorf("CheckPath(./-dash) = %q, %v", p, err)
	}
}

func TestRunner_TimeoutKillsGroup(t *testing.T) {
	r := gitxtest.Basic(t, 1)
	// The short limit is the one command's: the runner's own git (version,
	// config, rev-parse while opening) keeps the default, however slow the
	// machine.
	repo := openIn(t, newRunner(t), r.Dir)
	// cat-file --batch waits on a pipe that never delivers a line: only
	// the kill at the limit can end it, so returning at all proves it.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	defer pr.Close()
	done := make(chan error, 1)
	go func() {
		_, err := repo.git(context.Background(), &cmd{sub: []string{"cat-file"}, opts: []string{"--batch"}, stdin: pr, timeout: 300 * time.Millisecond})
		done <- err
	}()
	select {
	case err := <-done:
		if !errcode.IsCode(err, errcode.Timeout) {
			t.Fatalf("err = %v, want timeout", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("cat-file still running 2m after its 300ms limit")
	}
}

func TestRunner_OutputLimit(t *testing.T) {
	r := gitxtest.Basic(t, 20)
	repo := openIn(t, newRunner(t), r.Dir)
	_, err := repo.git(ctx(t), &cmd{sub: []string{"log"}, limit: 100})
	wantCode(t, err, errcode.OutputLimit)
	out, err := repo.git(ctx(t), &cmd{sub: []string{"log"}, limit: 100, truncate: true})
	if err != nil || !out.Truncated || len(out.Stdout) != 100 || out.TotalBytes <= 100 || !out.Counted {
		t.Fatalf("%v %+v", err, out)
	}
}

func TestParseVersion_Table(t *testing.T) {
	for in, want := range map[string]Version{
		"git version 2.39.5\n":               {2, 39, 5},
		"git version 2.38.0.windows.1":       {2, 38, 0},
		"git version 2.37.1 (Apple Git-137)": {2, 37, 1},
		"git version 2.40":                   {2, 40, 0},
	} {
		if got, ok := parseVersion(in); !ok || got != want {
			t.Errorf("parseVersion(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	if _, ok := parseVersion("something else"); ok {
		t.Errorf("parseVersion accepted something else")
	}
}

// TestOpen_GitDirOutsideRoots: a working tree inside the roots whose .git
// file (or linked worktree's common directory) is outside them is refused
// with path_outside_roots, from the tree and from below it, and the error
// names no path.
func TestOpen_GitDirOutsideRoots(t *testing.T) {
	f := gitxtest.NewPointsOutside(t)
	roots := Roots{f.Root}
	run := newRunner(t)
	for _, p := range []string{f.GitFile, filepath.Join(f.GitFile, "sub"), f.Worktree} {
		_, err := run.Open(ctx(t), roots, p)
		wantCode(t, err, errcode.PathOutsideRoots)
		if strings.Contains(err.Error(), f.Outside.Dir) {
			t.Fatalf("error names the outside path: %v", err)
		}
		if err := roots.ConfineGitDirs(p); !errcode.IsCode(err, errcode.PathOutsideRoots) {
			t.Fatalf("ConfineGitDirs(%s) = %v", p, err)
		}
	}
	// The same repository is fine where its git directory is allowed.
	if _, err := run.Open(ctx(t), Roots{filepath.Dir(f.Root)}, f.Worktree); err != nil {
		t.Fatalf("open with the git directory inside the roots: %v", err)
	}
}
