package gitx

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// loggedRunner is a runner whose git is a wrapper that appends each
// command line to a log file before running the real git.
func loggedRunner(t *testing.T) (*Runner, string) {
	t.Helper()
	real, err := findGit(searchPath())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "git.log")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '" + log + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(RunnerOptions{GitPath: filepath.Join(dir, "git")})
	if err != nil {
		t.Fatal(err)
	}
	return r, log
}

// maxCommitDetailsProcesses is how many git processes commit_details may
// start for one commit: the commit with its changed files, and the refs.
const maxCommitDetailsProcesses = 2

// TestCommitDetails_GitProcesses: describing one commit starts at most two
// git processes, whether the revision is a name, an expression or a full
// id, in a repository with many refs.
func TestCommitDetails_GitProcesses(t *testing.T) {
	r := gitxtest.Diverged(t)
	head := gitxtest.Git(t, r.Dir, "rev-parse", "HEAD")
	gitxtest.Git(t, r.Dir, "tag", "-a", "-m", "release", "v1")
	for _, name := range []string{"refs/sluice/sealed/a", "refs/sluice/sealed/b", "refs/heads/other"} {
		gitxtest.Git(t, r.Dir, "update-ref", name, head)
	}
	run, log := loggedRunner(t)
	repo := openIn(t, run, r.Dir)
	for _, rev := range []string{"HEAD", "main~1", head, "v1", "feature"} {
		if err := os.WriteFile(log, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := repo.CommitDetails(ctx(t), rev, 0); err != nil {
			t.Fatalf("%s: %v", rev, err)
		}
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > maxCommitDetailsProcesses {
			t.Errorf("commit_details %s started %d git processes, want at most %d:\n%s", rev, len(lines), maxCommitDetailsProcesses, b)
		}
	}
}

// commitDetailsReference is commit_details computed the long way, one git
// command per part (resolve, header and message, refs at the commit,
// changed files against the first parent): what the answer must equal.
func commitDetailsReference(ctx context.Context, repo *Repo, rev string, maxFiles int) (*CommitDetails, error) {
	sha, err := repo.ResolveCommit(ctx, "rev", rev)
	if err != nil {
		return nil, err
	}
	out, err := repo.git(ctx, &cmd{sub: []string{"show"}, opts: []string{"-s",
		"--format=%H%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%x00%B"}, revs: []string{sha}, dashdash: true, limit: 4 << 20})
	if err != nil {
		return nil, err
	}
	f := bytes.SplitN(out.Stdout, []byte{0}, commitDetailsFields)
	if len(f) < commitDetailsFields {
		return nil, &errcode.Error{Code: errcode.GitFailed, Msg: "unexpected output from git show"}
	}
	d := &CommitDetails{
		SHA:       string(f[0]),
		Parents:   strings.Fields(string(f[1])),
		Author:    Person{Name: string(f[2]), Email: string(f[3]), Date: string(f[4])},
		Committer: Person{Name: string(f[5]), Email: string(f[6]), Date: string(f[7])},
	}
	if d.Parents == nil {
		d.Parents = []string{}
	}
	refs, err := repo.git(ctx, &cmd{sub: []string{"for-each-ref"}, opts: []string{"--format=%(objectname)%00%(*objectname)%00%(refname)", "--points-at=" + sha},
		revs: []string{"refs/heads", "refs/tags", "refs/remotes"}})
	if err != nil {
		return nil, err
	}
	d.Refs = parseRefNames(refs.Stdout)[sha]
	msg := strings.TrimRight(string(f[9]), "\n")
	d.Subject, d.Body, _ = strings.Cut(msg, "\n")
	d.Body = strings.TrimLeft(d.Body, "\n")
	if len(d.Body) > maxBodyBytes {
		d.Body = clip(d.Body, maxBodyBytes)
		d.BodyTruncated = true
	}
	opts := []string{"-r", "-z", "--raw", "--numstat", "-M", "--no-commit-id", "--abbrev=40"}
	var revs []string
	if len(d.Parents) == 0 {
		opts = append(opts, "--root")
		revs = []string{sha}
	} else {
		d.ComparedTo = d.Parents[0]
		revs = []string{d.Parents[0], sha}
	}
	changes, err := repo.rawNumstat(ctx, &cmd{sub: []string{"diff-tree"}, opts: opts, revs: revs, dashdash: true})
	if err != nil {
		return nil, err
	}
	d.FilesTotal = len(changes)
	for _, c := range changes {
		d.Insertions += c.Insertions
		d.Deletions += c.Deletions
	}
	if len(changes) > maxFiles {
		changes = changes[:maxFiles]
		d.Truncated = true
	}
	d.Files = changes
	return d, nil
}

// TestCommitDetails_AsPlumbing: commit_details answers exactly what git's
// plumbing says part by part, for a root commit, a merge (against its
// first parent), renames, a binary file, a submodule, a long message and
// a message without a body, annotated and nested tags, a symbolic
// remote-tracking ref, and every form of revision an agent may pass; and
// it refuses what does not name one commit the same way.
func TestCommitDetails_AsPlumbing(t *testing.T) {
	sub := gitxtest.Init(t)
	sub.WriteCommit("s.txt", "s\n", "sub")
	subHead := gitxtest.Git(t, sub.Dir, "rev-parse", "HEAD")

	r := gitxtest.Init(t)
	r.Write("a.txt", "one\ntwo\nthree\n")
	r.Write("bin.dat", "\x00\x01\x02binary")
	r.Commit("root commit")
	r.Git("checkout", "-qb", "side")
	r.Git("mv", "a.txt", "renamed.txt")
	r.Write("side.txt", "side\n")
	r.Git("add", "side.txt")
	r.Git("commit", "-qm", "side: rename\n\n"+strings.Repeat("a long body line\n", 1000))
	r.Git("checkout", "-q", "main")
	r.Write("bin.dat", "\x00\x03binary changed")
	r.Write("main.txt", "m1\nm2\n")
	r.Git("add", "-A")
	r.Git("commit", "-qm", "main: binary and a new file\n\n\n\nbody after blank lines\n\n")
	r.Git("update-index", "--add", "--cacheinfo", "160000,"+subHead+",vendor/sub")
	r.Git("commit", "-qm", "a submodule")
	r.Git("merge", "-q", "--no-edit", "--no-ff", "side")
	r.Git("tag", "light")
	r.Git("tag", "-a", "-m", "annotated", "v1")
	r.Git("tag", "-a", "-m", "nested", "v1-nested", "v1")
	r.Git("tag", "-a", "-m", "older", "v0", "HEAD~1")
	r.Git("update-ref", "refs/remotes/origin/main", "HEAD")
	r.Git("checkout", "-qb", "extra")
	r.WriteCommit("extra.txt", "extra\n", "extra")
	r.Git("checkout", "-qb", "empty-merge", "main")
	r.Git("commit", "-q", "--allow-empty", "-m", "empty")
	r.Git("branch", "empty")
	r.Git("merge", "-q", "--no-edit", "--no-ff", "-s", "ours", "extra")
	r.Git("checkout", "-q", "main")
	r.Git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
	r.Git("update-ref", "refs/sluice/sealed/x", "HEAD")
	r.Git("pack-refs", "--all")
	r.Git("branch", "loose-after-pack", "HEAD~2")
	head := r.Git("rev-parse", "HEAD")
	tagObj := r.Git("rev-parse", "v1")

	repo := openIn(t, newRunner(t), r.Dir)
	revs := []string{"HEAD", "HEAD^1", "HEAD^2", "HEAD~1", "HEAD~2", "HEAD~3", "main", "side", "light", "v1", "v1-nested", "v0",
		"origin/HEAD", "refs/heads/loose-after-pack", head, head[:12], tagObj, "HEAD^{commit}", ":/side: rename", "HEAD@{0}", "v1^{}", "v1^{tag}", "empty", "empty-merge"}
	for _, rev := range revs {
		for _, maxFiles := range []int{300, 1} {
			want, werr := commitDetailsReference(ctx(t), repo, rev, maxFiles)
			got, gerr := repo.CommitDetails(ctx(t), rev, maxFiles)
			if werr != nil || gerr != nil {
				t.Fatalf("%s: %v / %v", rev, werr, gerr)
			}
			wj, _ := json.Marshal(want)
			gj, _ := json.Marshal(got)
			if !bytes.Equal(wj, gj) {
				t.Errorf("%s, maxFiles %d:\n got %s\nwant %s", rev, maxFiles, gj, wj)
			}
		}
	}
	for _, rev := range []string{"no-such-branch", "HEAD~1..HEAD", "HEAD...side", "HEAD^@", "HEAD^!", "HEAD^-", "^HEAD", "HEAD:a.txt",
		"HEAD^{tree}", ":/no such message", "HEAD~99", "HEAD:"} {
		_, werr := commitDetailsReference(ctx(t), repo, rev, 0)
		_, gerr := repo.CommitDetails(ctx(t), rev, 0)
		if werr == nil || gerr == nil || errcode.Of(werr) != errcode.Of(gerr) || werr.Error() != gerr.Error() {
			t.Errorf("%s: got error %v, want %v", rev, gerr, werr)
		}
	}
}

// TestCommitDetails_AttributesAsGitShow: a file's binary attribute comes
// from the working tree's .gitattributes, as git show reads it, not from
// a copy of it left in the index (commit_details does not read the
// index, whose size follows the repository, not the commit).
func TestCommitDetails_AttributesAsGitShow(t *testing.T) {
	r := gitxtest.Init(t)
	r.Write(".gitattributes", "*.dat binary\n")
	r.Write("x.dat", "a\n")
	r.Commit("a")
	r.Write("x.dat", "a\nb\n")
	r.Commit("b")
	repo := openIn(t, newRunner(t), r.Dir)
	for _, removed := range []bool{false, true} {
		if removed {
			if err := os.Remove(filepath.Join(r.Dir, ".gitattributes")); err != nil {
				t.Fatal(err)
			}
		}
		d, err := repo.CommitDetails(ctx(t), "HEAD", 0)
		if err != nil {
			t.Fatal(err)
		}
		show := r.Git("show", "--numstat", "--format=", "HEAD")
		binary := strings.HasPrefix(show, "-\t-\t")
		if len(d.Files) != 1 || d.Files[0].Binary != binary || binary == removed {
			t.Errorf(".gitattributes removed %v: commit_details %+v, git show %q", removed, d.Files, show)
		}
	}
}
