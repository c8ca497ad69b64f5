package gitx

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// TestCreateRefLocal_SameAsGit: a ref created in this process is the file
// git update-ref writes (same bytes, no reflog, no lock left), in the
// common directory of a linked worktree too; and every case git must
// answer is left to it with nothing written: a reflog to keep
// (core.logAllRefUpdates=always, or one that exists), shared permissions,
// a reftable, the ref existing loose or packed, a packed ref where one of
// its directories goes or below it, a loose ref below it, its lock held,
// a name or id outside the rules.
func TestCreateRefLocal_SameAsGit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runner, err := NewRunner(RunnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	fresh := func(t *testing.T) (*gitxtest.Repo, string) {
		t.Helper()
		n++
		r := gitxtest.InitAt(t, filepath.Join(root, "repo"+string(rune('a'+n))))
		r.Write("a.txt", "one\n")
		return r, r.Commit("one")
	}
	open := func(t *testing.T, dir string) *Repo {
		t.Helper()
		repo, err := runner.Open(ctx, Roots{root}, dir)
		if err != nil {
			t.Fatal(err)
		}
		return repo
	}
	const ref = "refs/sluice/sealed/0b5c1f6e-4a4e-4d51-9a43-0d6a1c3b7f10"
	zero := "0000000000000000000000000000000000000000"

	t.Run("same file as git", func(t *testing.T) {
		mine, id := fresh(t)
		theirs, tid := fresh(t)
		if err := open(t, mine.Dir).CreateRefLocal(ref, id); err != nil {
			t.Fatalf("CreateRefLocal: %v", err)
		}
		theirs.Git("update-ref", "-m", "sluice: seal", ref, tid, zero)
		got, err := os.ReadFile(filepath.Join(mine.Dir, ".git", ref))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile(filepath.Join(theirs.Dir, ".git", ref))
		if string(got) != id+"\n" || string(want) != tid+"\n" {
			t.Fatalf("ref file %q, git writes %q", got, want)
		}
		gs, _ := os.Stat(filepath.Join(mine.Dir, ".git", ref))
		ws, _ := os.Stat(filepath.Join(theirs.Dir, ".git", ref))
		if gs.Mode() != ws.Mode() {
			t.Fatalf("ref file mode %v, git's %v", gs.Mode(), ws.Mode())
		}
		for _, dir := range []string{mine.Dir, theirs.Dir} {
			if _, err := os.Lstat(filepath.Join(dir, ".git", "logs", ref)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a reflog in %s: %v", dir, err)
			}
		}
		if _, err := os.Lstat(filepath.Join(mine.Dir, ".git", ref+".lock")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("lock left: %v", err)
		}
		if got := mine.Git("rev-parse", ref); got != id {
			t.Fatalf("git reads %q, want %s", got, id)
		}
		// Once it exists, git answers (and refuses to create it again).
		before := gitxtest.Snapshot(t, mine.Dir)
		if err := open(t, mine.Dir).CreateRefLocal(ref, id); !errors.Is(err, ErrNotLocal) {
			t.Fatalf("existing ref: %v, want ErrNotLocal", err)
		}
		if d := gitxtest.DiffSnapshots(before, gitxtest.Snapshot(t, mine.Dir)); len(d) > 0 {
			t.Fatalf("changed: %v", d)
		}
	})

	t.Run("linked worktree", func(t *testing.T) {
		r, id := fresh(t)
		linked := filepath.Join(root, "linked")
		r.Git("worktree", "add", "-q", linked)
		if err := open(t, linked).CreateRefLocal(ref, id); err != nil {
			t.Fatalf("CreateRefLocal: %v", err)
		}
		if got := r.Git("rev-parse", ref); got != id {
			t.Fatalf("main worktree reads %q, want %s", got, id)
		}
	})

	left := []struct {
		name  string
		ref   string
		id    func(id string) string
		setup func(r *gitxtest.Repo, id string)
	}{
		{name: "logAllRefUpdates always", setup: func(r *gitxtest.Repo, _ string) { r.Git("config", "core.logAllRefUpdates", "always") }},
		{name: "reflog exists", setup: func(r *gitxtest.Repo, _ string) {
			p := filepath.Join(r.Dir, ".git", "logs", ref)
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, nil, 0o644)
		}},
		{name: "shared repository", setup: func(r *gitxtest.Repo, _ string) { r.Git("config", "core.sharedRepository", "group") }},
		{name: "reftable", setup: func(r *gitxtest.Repo, _ string) { os.Mkdir(filepath.Join(r.Dir, ".git", "reftable"), 0o755) }},
		{name: "packed ref of the name", setup: func(r *gitxtest.Repo, id string) {
			r.Git("update-ref", ref, id)
			r.Git("pack-refs", "--all")
		}},
		{name: "packed ref where a directory goes", setup: func(r *gitxtest.Repo, id string) {
			r.Git("update-ref", "refs/sluice/sealed", id)
			r.Git("pack-refs", "--all")
		}},
		{name: "packed ref below", setup: func(r *gitxtest.Repo, id string) {
			r.Git("update-ref", ref+"/x", id)
			r.Git("pack-refs", "--all")
		}},
		{name: "loose ref below", setup: func(r *gitxtest.Repo, id string) { r.Git("update-ref", ref+"/x", id) }},
		{name: "loose ref where a directory goes", setup: func(r *gitxtest.Repo, id string) { r.Git("update-ref", "refs/sluice/sealed", id) }},
		{name: "lock held", setup: func(r *gitxtest.Repo, _ string) {
			p := filepath.Join(r.Dir, ".git", ref+".lock")
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, nil, 0o644)
		}},
		{name: "per-worktree ref", ref: "refs/bisect/bad"},
		{name: "not a plain name", ref: "refs/sluice/sealed/a..b"},
		{name: "not under refs", ref: "HEAD"},
		{name: "not an object id", id: func(string) string { return "HEAD" }},
	}
	for _, c := range left {
		t.Run(c.name, func(t *testing.T) {
			r, id := fresh(t)
			if c.setup != nil {
				c.setup(r, id)
			}
			name, to := ref, id
			if c.ref != "" {
				name = c.ref
			}
			if c.id != nil {
				to = c.id(id)
			}
			repo := open(t, r.Dir)
			before := gitxtest.Snapshot(t, r.Dir)
			if err := repo.CreateRefLocal(name, to); !errors.Is(err, ErrNotLocal) {
				t.Fatalf("CreateRefLocal: %v, want ErrNotLocal", err)
			}
			if d := gitxtest.DiffSnapshots(before, gitxtest.Snapshot(t, r.Dir)); len(d) > 0 {
				t.Fatalf("changed: %v", d)
			}
		})
	}
}
