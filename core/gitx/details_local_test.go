package gitx

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// localCase is one commit of TestCommitDetails_LocalSameAsGit: how to make
// it, and whether commit_details must read it in process.
type localCase struct {
	name  string
	make  func(r *gitxtest.Repo) string // returns the revision to describe
	local bool
}

// rawCommit writes a commit object with exactly this text (header lines,
// then the message) and returns its id.
func rawCommit(t *testing.T, r *gitxtest.Repo, header, message string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "c")
	if err := os.WriteFile(p, []byte(header+"\n\n"+message), 0o600); err != nil {
		t.Fatal(err)
	}
	return r.Git("hash-object", "-t", "commit", "-w", "--literally", p)
}

// noUserAttributes gives the runners made after it, and git, a home
// without a per-user attributes file, whatever the machine's user has.
func noUserAttributes(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
}

// TestCommitDetails_LocalSameAsGit: what commit_details reads in process
// is, byte for byte, what it reads from git (the long way, one command per
// part), for every kind of commit it reads itself, from loose objects and
// from a pack; the kinds it leaves to git (a rename, lines a diff could
// pair in more than one way, attributes, a symbolic link, a submodule, an
// encoding, a large blob, a SHA-256 repository) are left to git and still
// answer the same.
func TestCommitDetails_LocalSameAsGit(t *testing.T) {
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) { testCommitDetailsLocal(t, format) })
	}
}

func testCommitDetailsLocal(t *testing.T, format string) {
	noUserAttributes(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := gitxtest.InitAt(t, dir, "--object-format="+format)
	head := func(r *gitxtest.Repo) string { return r.Git("rev-parse", "HEAD") }
	ident := func(r *gitxtest.Repo, name, date string) string {
		return name + " <" + strings.ToLower(strings.Fields(name)[0]) + "@example.com> " + date
	}
	tree := func(r *gitxtest.Repo) string { return r.Git("rev-parse", "HEAD^{tree}") }
	cases := []localCase{
		{"root commit", func(r *gitxtest.Repo) string {
			r.Write("a.txt", "one\ntwo\nthree\nfour\nfive\n")
			r.Write("dir/b.txt", "b\n")
			r.Write("dir/sub/c.txt", "no newline at the end")
			r.Write("dir.txt", "sorts before dir/\n")
			r.Write("empty.txt", "")
			r.Write("bin.dat", "\x00\x01binary")
			r.Write("crlf.txt", "a\r\nb\r\n")
			return r.Commit("root: files of each kind\n\nA body.")
		}, true},
		{"one line changed", func(r *gitxtest.Repo) string {
			return r.WriteCommit("a.txt", "one\ntwo\nTHREE\nfour\nfive\n", "fix: three")
		}, true},
		{"lines added in the middle", func(r *gitxtest.Repo) string {
			return r.WriteCommit("a.txt", "one\ntwo\nTHREE\nthree and a half\nfour\nfive\n", "feat: more")
		}, true},
		{"lines removed at the end", func(r *gitxtest.Repo) string {
			return r.WriteCommit("a.txt", "one\ntwo\nTHREE\n", "chore: less")
		}, true},
		{"a newline at the end added", func(r *gitxtest.Repo) string {
			return r.WriteCommit("dir/sub/c.txt", "no newline at the end\n", "fix: newline")
		}, true},
		{"lines a diff could pair otherwise", func(r *gitxtest.Repo) string {
			return r.WriteCommit("a.txt", "THREE\none\nx\ntwo\n", "refactor: reorder")
		}, false},
		{"files added in new directories", func(r *gitxtest.Repo) string {
			r.Write("new/deep/x.go", "package x\n")
			r.Write("new/y.go", "package y\n\nfunc Y() {}\n")
			r.Write("newer.txt", "n\n")
			return r.Commit("feat: new files")
		}, true},
		{"files deleted", func(r *gitxtest.Repo) string {
			r.Git("rm", "-q", "-r", "new", "dir.txt")
			return r.Commit("chore: remove")
		}, true},
		{"added beside deleted", func(r *gitxtest.Repo) string {
			r.Git("mv", "newer.txt", "newest.txt")
			return r.Commit("chore: rename")
		}, false},
		{"binary changed", func(r *gitxtest.Repo) string {
			return r.WriteCommit("bin.dat", "\x00\x02binary, changed", "chore: binary")
		}, true},
		{"mode changed", func(r *gitxtest.Repo) string {
			r.Git("update-index", "--chmod=+x", "dir/b.txt")
			return r.Commit("chore: executable")
		}, true},
		{"empty commit", func(r *gitxtest.Repo) string {
			r.Git("commit", "-q", "--allow-empty", "-m", "empty")
			return head(r)
		}, true},
		{"merge", func(r *gitxtest.Repo) string {
			r.Git("checkout", "-q", "-b", "side", "HEAD~2")
			r.WriteCommit("side.txt", "side\n", "side")
			r.Git("checkout", "-q", "main")
			r.Git("merge", "-q", "--no-edit", "--no-ff", "side")
			return head(r)
		}, true},
		{"time zones and a signature header", func(r *gitxtest.Repo) string {
			return rawCommit(t, r, "tree "+tree(r)+"\nparent "+head(r)+"\nauthor "+ident(r, "Ada Lovelace", "1600000000 +0530")+
				"\ncommitter "+ident(r, "Grace Hopper", "1600003600 -0800")+"\ngpgsig -----BEGIN PGP SIGNATURE-----\n line\n -----END PGP SIGNATURE-----",
				"\n\nsubject after blank lines\n\nbody\n\n\n")
		}, true},
		{"zero offsets", func(r *gitxtest.Repo) string {
			return rawCommit(t, r, "tree "+tree(r)+"\nparent "+head(r)+"\nauthor "+ident(r, "Ada Lovelace", "0 +0000")+
				"\ncommitter "+ident(r, "Grace Hopper", "1700000000 -0000"), "utc")
		}, true},
		{"an encoding header", func(r *gitxtest.Repo) string {
			return rawCommit(t, r, "tree "+tree(r)+"\nparent "+head(r)+"\nauthor "+ident(r, "Ada Lovelace", "1600000000 +0100")+
				"\ncommitter "+ident(r, "Ada Lovelace", "1600000000 +0100")+"\nencoding ISO-8859-1", "caf\xe9")
		}, false},
		{"a name ending in a space", func(r *gitxtest.Repo) string {
			return rawCommit(t, r, "tree "+tree(r)+"\nparent "+head(r)+"\nauthor Ada  <ada@example.com> 1600000000 +0100"+
				"\ncommitter "+ident(r, "Ada Lovelace", "1600000000 +0100"), "two spaces")
		}, false},
		{"attributes", func(r *gitxtest.Repo) string {
			r.Write("attr/.gitattributes", "*.txt binary\n")
			r.Write("attr/b.txt", "b\n")
			r.Commit("attributes")
			return r.WriteCommit("attr/b.txt", "b\nb\n", "under attributes")
		}, false},
		{"attributes elsewhere", func(r *gitxtest.Repo) string {
			return r.WriteCommit("a.txt", "uno\n", "not under them")
		}, true},
		{"a symbolic link", func(r *gitxtest.Repo) string {
			if err := os.Symlink("a.txt", filepath.Join(r.Dir, "link")); err != nil {
				t.Fatal(err)
			}
			return r.Commit("link")
		}, false},
		{"a large blob", func(r *gitxtest.Repo) string {
			return r.WriteCommit("large.txt", strings.Repeat("large line\n", maxLocalBlob/8), "large")
		}, false},
	}
	var revs []string
	for _, c := range cases {
		revs = append(revs, c.make(r))
		// Each case is described from the branch, as an agent would name it.
		r.Git("update-ref", "refs/heads/c/"+strings.ReplaceAll(c.name, " ", "-"), revs[len(revs)-1])
	}
	check := func(where string) {
		t.Helper()
		repo := openIn(t, newRunner(t), r.Dir)
		for i, c := range cases {
			for _, rev := range []string{revs[i], "c/" + strings.ReplaceAll(c.name, " ", "-")} {
				want, werr := commitDetailsReference(ctx(t), repo, rev, 300)
				got, gerr := repo.CommitDetails(ctx(t), rev, 300)
				if werr != nil || gerr != nil {
					t.Fatalf("%s, %s: %v / %v", where, c.name, werr, gerr)
				}
				wj, _ := json.Marshal(want)
				gj, _ := json.Marshal(got)
				if !bytes.Equal(wj, gj) {
					t.Errorf("%s, %s (%s):\n got %s\nwant %s", where, c.name, rev, gj, wj)
				}
				_, _, lerr := repo.commitDetailsLocal(rev)
				if local := lerr == nil && format == "sha1"; local != (c.local && format == "sha1") {
					t.Errorf("%s, %s (%s): read in process %v (%v), want %v", where, c.name, rev, local, lerr, c.local)
				}
			}
		}
	}
	check("loose")
	r.Git("repack", "-q", "-a", "-d", "-f", "--depth=10", "--window=10")
	r.Git("prune-packed")
	check("packed")

	// A per-user attributes file could apply to any path: git answers.
	user := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "git", "attributes")
	if err := os.MkdirAll(filepath.Dir(user), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, []byte("*.txt binary\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := openIn(t, newRunner(t), r.Dir)
	if _, _, err := repo.commitDetailsLocal(revs[1]); err == nil {
		t.Error("read in process beside a per-user attributes file")
	}
	d, err := repo.CommitDetails(ctx(t), revs[1], 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 1 || !d.Files[0].Binary {
		t.Errorf("under a per-user attributes file: %+v, want a binary file as git says", d.Files)
	}
}

// TestObjectsCache_Bounded: a runner keeps the objects of at most
// maxCachedObjects repositories, dropping the one read longest ago.
func TestObjectsCache_Bounded(t *testing.T) {
	noUserAttributes(t)
	run := newRunner(t)
	var dirs []string
	for range maxCachedObjects + 3 {
		r := gitxtest.Basic(t, 2)
		dirs = append(dirs, filepath.Join(r.Dir, ".git"))
		if _, err := openIn(t, run, r.Dir).CommitDetails(ctx(t), "HEAD", 0); err != nil {
			t.Fatal(err)
		}
	}
	run.objects.mu.Lock()
	defer run.objects.mu.Unlock()
	if n := len(run.objects.m); n != maxCachedObjects {
		t.Errorf("%d repositories' objects kept, want %d", n, maxCachedObjects)
	}
	for i, d := range dirs {
		d, _ = filepath.EvalSymlinks(d)
		if _, kept := run.objects.m[d]; kept != (i >= len(dirs)-maxCachedObjects) {
			t.Errorf("repository %d of %d kept: %v", i, len(dirs), kept)
		}
	}
}

// TestObjectsCache_Dropped: an idle sidecar drops the objects read in
// process; the next read reads them again and answers the same.
func TestObjectsCache_Dropped(t *testing.T) {
	noUserAttributes(t)
	run := newRunner(t)
	r := gitxtest.Basic(t, 2)
	first, err := openIn(t, run, r.Dir).CommitDetails(ctx(t), "HEAD", 0)
	if err != nil {
		t.Fatal(err)
	}
	run.DropObjects()
	run.objects.mu.Lock()
	n := len(run.objects.m)
	run.objects.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d repositories' objects kept after DropObjects", n)
	}
	again, err := openIn(t, run, r.Dir).CommitDetails(ctx(t), "HEAD", 0)
	if err != nil || !reflect.DeepEqual(first, again) {
		t.Fatalf("after the drop: %+v %v, want %+v", again, err, first)
	}
}

// TestCommitDetails_LocalAttributesThroughSymlink: a changed path's
// directory that is, in the working tree, a symbolic link out of it is
// not looked through for a .gitattributes: git answers, as it reads one.
func TestCommitDetails_LocalAttributesThroughSymlink(t *testing.T) {
	noUserAttributes(t)
	r := gitxtest.Init(t)
	r.Write("ext/f.txt", "a\n")
	r.Commit("a")
	rev := r.WriteCommit("ext/f.txt", "b\n", "b")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, ".gitattributes"), []byte("*.txt binary\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(r.Dir, "ext")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(r.Dir, "ext")); err != nil {
		t.Fatal(err)
	}
	repo := openIn(t, newRunner(t), r.Dir)
	if _, _, err := repo.commitDetailsLocal(rev); err == nil {
		t.Error("read in process through a directory linked out of the working tree")
	}
	want, err := commitDetailsReference(ctx(t), repo, rev, 300)
	if err != nil {
		t.Fatal(err)
	}
	got, err := repo.CommitDetails(ctx(t), rev, 300)
	if err != nil {
		t.Fatal(err)
	}
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if !bytes.Equal(wj, gj) {
		t.Errorf("got %s\nwant %s", gj, wj)
	}
}
