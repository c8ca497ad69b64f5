package gitx

import (
	"crypto/sha1"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// ageObjects sets the times of the object directory and of every
// directory in it an hour back (ageRefs does the same for the refs): the
// brief keeps a walk of its recent commits only while the directories
// that decided it are older than the racy window.
func ageObjects(t *testing.T, gitDir string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	var dirs []string
	err := filepath.WalkDir(filepath.Join(gitDir, "objects"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(dirs)
	for _, p := range dirs {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
}

// looseBeside writes, with git, a new blob (salt makes it new) whose id
// begins with the same two digits as id, so that it lands in id's
// fan-out directory.
func looseBeside(t *testing.T, r *gitxtest.Repo, id, salt string) {
	t.Helper()
	for i := 0; ; i++ {
		content := fmt.Sprintf("beside %s %d\n", salt, i)
		sum := sha1.Sum([]byte(fmt.Sprintf("blob %d\x00%s", len(content), content)))
		if fmt.Sprintf("%x", sum[:1]) != id[:2] {
			continue
		}
		r.Write("beside.txt", content)
		if got := r.Git("hash-object", "-w", "beside.txt"); got[:2] != id[:2] {
			t.Fatalf("blob %s is not beside %s", got, id)
		}
		if err := os.Remove(filepath.Join(r.Dir, "beside.txt")); err != nil {
			t.Fatal(err)
		}
		return
	}
}

// TestBrief_LogMemo_KeptAndDropped: a brief keeps its walk of the recent
// commits and walks again only when HEAD moves or a directory whose
// entries decided an abbreviation changes (a new loose object beside a
// recent commit, a repack), never within the racy window of a change;
// and after every change git makes between two calls (a commit, a tag at
// HEAD, an object beside a recent commit, a repack, a pack added, the configuration,
// the upstream moving, a branch switch) the second brief is the one a
// runner that never read the repository gives.
func TestBrief_LogMemo_KeptAndDropped(t *testing.T) {
	noUserAttributes(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := gitxtest.InitAt(t, dir)
	for i := range 8 {
		r.WriteCommit(fmt.Sprintf("f%d.txt", i), fmt.Sprintf("%d\n", i), fmt.Sprintf("feat: step %d", i))
	}
	r.Git("branch", "up", "HEAD~2")
	r.Git("branch", "--set-upstream-to=up")
	gitDir := filepath.Join(r.Dir, ".git")
	age := func() {
		ageRefs(t, gitDir)
		ageObjects(t, gitDir)
	}
	age()
	run := newRunner(t)
	var last *Brief
	// check briefs the repository as an agent's next call would (the
	// runner's open repository, reopened when its configuration
	// changed) and reports whether the recent commits were walked.
	check := func(step string, wantWalk bool) {
		t.Helper()
		repo := openIn(t, run, r.Dir)
		before := repo.logMemo.walks
		b, err := repo.Brief(ctx(t))
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if walked := repo.logMemo.walks != before; walked != wantWalk {
			t.Errorf("%s: walked the recent commits: %v, want %v", step, walked, wantWalk)
		}
		fresh, err := openIn(t, newRunner(t), r.Dir).Brief(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := mustJSON(t, b), mustJSON(t, fresh); got != want {
			t.Errorf("%s: brief\n%s\nfrom a runner that never read the repository:\n%s", step, got, want)
		}
		last = b
	}
	check("first", true)
	check("again", false)
	check("and again", false)

	// A change git makes writes objects or refs just now: the walk after
	// it is not kept until they are older than the racy window.
	changed := func(step string, change func()) {
		t.Helper()
		change()
		check(step, true)
		check(step+", within the racy window", true)
		age()
		check(step+", aged", true)
		check(step+", aged, again", false)
	}
	changed("commit", func() { r.WriteCommit("g.txt", "g\n", "fix: after the memo") })
	if last.Recent[0].Subject != "fix: after the memo" {
		t.Errorf("the newest commit is %q", last.Recent[0].Subject)
	}
	if last.Upstream == nil || last.Upstream.Ahead != 3 || last.Upstream.Behind != 0 {
		t.Errorf("upstream after the commit: %+v", last.Upstream)
	}

	// Refs are read at every call: a tag at HEAD decorates it at once,
	// without a walk.
	r.Git("tag", "v1")
	check("tag at HEAD", false)
	if !slices.Contains(last.Recent[0].Refs, "v1") {
		t.Errorf("HEAD's refs after the tag: %q", last.Recent[0].Refs)
	}

	head := r.Git("rev-parse", "HEAD")
	changed("object beside HEAD", func() { looseBeside(t, r, head, "loose") })
	changed("repacked", func() { r.Git("repack", "-q", "-a", "-d") })
	changed("object beside HEAD, packed", func() { looseBeside(t, r, head, "packed") })
	// A pack written beside the others changes the pack directory alone.
	changed("pack added", func() {
		c := exec.Command("git", "pack-objects", "-q", filepath.Join(gitDir, "objects", "pack", "pack"))
		c.Dir, c.Stdin = r.Dir, strings.NewReader(r.Git("rev-parse", "HEAD^{tree}")+"\n")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("pack-objects: %v\n%s", err, out)
		}
	})

	// The configuration reopens the repository (a memo of its own).
	r.Git("config", "init.defaultBranch", "up")
	check("configuration", true)
	if last.Conventions.DefaultBranch != "up" {
		t.Errorf("default branch after the configuration: %q", last.Conventions.DefaultBranch)
	}
	check("configuration, again", false)

	// The upstream moves (back, so that no object is written): the
	// status says so, the walk stays.
	r.Git("update-ref", "refs/heads/up", "HEAD~5")
	check("upstream moved", false)
	if last.Upstream == nil || last.Upstream.Ahead != 5 || last.Upstream.Behind != 0 {
		t.Errorf("upstream after it moved: %+v", last.Upstream)
	}

	// The branch moved by a ref update alone (no object written, HEAD's
	// file as it was): HEAD names another commit.
	tip := r.Git("rev-parse", "HEAD")
	r.Git("update-ref", "refs/heads/main", "HEAD~1")
	check("branch moved back", true)
	if last.Recent[0].Subject != "feat: step 7" {
		t.Errorf("after the branch moved back, the newest commit is %q", last.Recent[0].Subject)
	}
	check("branch moved back, again", false)
	r.Git("update-ref", "refs/heads/main", tip)
	check("branch moved forth", true)

	// Another branch checked out: HEAD names another commit.
	r.Git("checkout", "-q", "up")
	check("branch switched", true)
	if last.Branch != "up" || last.Recent[0].Subject != "feat: step 3" {
		t.Errorf("after the switch: branch %q, newest %q", last.Branch, last.Recent[0].Subject)
	}
	r.Git("checkout", "-q", "main")
	check("back on main", true)
	if !strings.HasPrefix(last.Recent[0].Subject, "fix: after the memo") {
		t.Errorf("back on main, the newest commit is %q", last.Recent[0].Subject)
	}
	check("back on main, again", false)
}

// TestRun_OnStarted: a call's OnStarted runs once when its process
// started, and not at all when none did.
func TestRun_OnStarted(t *testing.T) {
	run := newRunner(t)
	dir := t.TempDir()
	calls := 0
	if _, err := run.Run(ctx(t), Call{Profile: ProfileRead, Dir: dir, Args: []string{"version"}, OnStarted: func() { calls++ }}); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("OnStarted ran %d times for one process", calls)
	}
	if _, err := run.Run(ctx(t), Call{Profile: ProfileRead, Dir: dir, Args: []string{"log"}, Revs: Revs("--output=x"), OnStarted: func() { calls++ }}); err == nil {
		t.Fatal("an option as a revision was not refused")
	}
	if calls != 1 {
		t.Fatalf("OnStarted ran for a call refused before it started")
	}
}
