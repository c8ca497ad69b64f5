package gitx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// TestOpen_AlternatesOutsideRoots: a repository inside the roots whose
// objects/info/alternates leads to an object store outside them, however
// the file names it, is refused with path_outside_roots by Open and by
// ConfineGitDirs, and the error names no path. The same repository opens
// where the store is allowed, and reads what is only there.
func TestOpen_AlternatesOutsideRoots(t *testing.T) {
	run := newRunner(t)
	outsideObjects := func(f gitxtest.AlternateOutside) string { return filepath.Join(f.Outside.Dir, ".git", "objects") }
	alternates := func(f gitxtest.AlternateOutside) string {
		return filepath.Join(f.Inside.Dir, ".git", "objects", "info", "alternates")
	}
	write := func(t *testing.T, p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]func(t *testing.T, f gitxtest.AlternateOutside){
		"git clone --shared (absolute)": func(t *testing.T, f gitxtest.AlternateOutside) {},
		"relative": func(t *testing.T, f gitxtest.AlternateOutside) {
			write(t, alternates(f), "# borrowed\n../../../../outside/.git/objects\n")
		},
		"quoted": func(t *testing.T, f gitxtest.AlternateOutside) {
			write(t, alternates(f), `"`+strings.ReplaceAll(outsideObjects(f), "/", `\057`)+`"`+"\n")
		},
		"through a symlink inside the root": func(t *testing.T, f gitxtest.AlternateOutside) {
			if err := os.Symlink(outsideObjects(f), filepath.Join(f.Root, "objects-link")); err != nil {
				t.Fatal(err)
			}
			write(t, alternates(f), filepath.Join(f.Root, "objects-link")+"\n")
		},
		"an alternate's alternate": func(t *testing.T, f gitxtest.AlternateOutside) {
			mid := filepath.Join(f.Root, "mid", "objects")
			write(t, filepath.Join(mid, "info", "alternates"), outsideObjects(f)+"\n")
			write(t, alternates(f), mid+"\n")
		},
		"the object directory is a symlink": func(t *testing.T, f gitxtest.AlternateOutside) {
			objs := filepath.Join(f.Inside.Dir, ".git", "objects")
			if err := os.RemoveAll(objs); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outsideObjects(f), objs); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			f := gitxtest.NewAlternateOutside(t)
			setup(t, f)
			roots := Roots{f.Root}
			for _, p := range []string{f.Inside.Dir, filepath.Join(f.Inside.Dir, ".git")} {
				_, err := run.Open(ctx(t), roots, p)
				if !errors.Is(err, ErrObjectsOutsideRoots) {
					t.Fatalf("Open(%s) = %v, want the objects refused", p, err)
				}
				if strings.Contains(err.Error(), f.Outside.Dir) {
					t.Fatalf("error names the outside path: %v", err)
				}
			}
			if err := roots.ConfineGitDirs(f.Inside.Dir); !errors.Is(err, ErrObjectsOutsideRoots) {
				t.Fatalf("ConfineGitDirs = %v", err)
			}
			// Allowed where the store is inside the roots.
			repo, err := run.Open(ctx(t), Roots{filepath.Dir(f.Root)}, f.Inside.Dir)
			if err != nil {
				t.Fatalf("open with the store inside the roots: %v", err)
			}
			out, err := repo.Run(ctx(t), Call{Profile: ProfileRead, Args: []string{"cat-file", "-p", f.Secret + ":secret.txt"}})
			if err != nil || string(out.Stdout) != "outside secret\n" {
				t.Fatalf("read through the allowed alternate: %v %+v", err, out)
			}
		})
	}
}

// TestOpen_AlternatesInsideRoots: a `git clone --shared` of a repository
// inside the roots opens and reads what only its source holds; a comment
// in the alternates file is no entry.
func TestOpen_AlternatesInsideRoots(t *testing.T) {
	src := gitxtest.Basic(t, 2)
	only := src.WriteCommit("only-in-source.txt", "shared\n", "only in the source")
	root := filepath.Dir(src.Dir)
	gitxtest.Git(t, root, "clone", "-q", "--shared", src.Dir, "shared-clone")
	clone := filepath.Join(root, "shared-clone")
	p := filepath.Join(clone, ".git", "objects", "info", "alternates")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, append([]byte("# /somewhere/else/objects\n\n"), b...), 0o644); err != nil {
		t.Fatal(err)
	}
	repo := openIn(t, newRunner(t), clone, root)
	out, err := repo.Run(ctx(t), Call{Profile: ProfileRead, Args: []string{"cat-file", "-p", only + ":only-in-source.txt"}})
	if err != nil || string(out.Stdout) != "shared\n" {
		t.Fatalf("read through an alternate inside the roots: %v %+v", err, out)
	}
	if err := Roots([]string{root}).ConfineGitDirs(clone); err != nil {
		t.Fatal(err)
	}
}

// TestRunner_ProcessAlternatesNotInherited: object directories named in
// the environment of the process that runs Sluice's git never reach git.
func TestRunner_ProcessAlternatesNotInherited(t *testing.T) {
	f := gitxtest.NewAlternateOutside(t)
	plain := gitxtest.Basic(t, 1)
	t.Setenv("GIT_ALTERNATE_OBJECT_DIRECTORIES", filepath.Join(f.Outside.Dir, ".git", "objects"))
	t.Setenv("GIT_OBJECT_DIRECTORY", filepath.Join(f.Outside.Dir, ".git", "objects"))
	repo := openIn(t, newRunner(t), plain.Dir)
	for _, p := range Profiles {
		c := Call{Profile: p, Args: []string{"cat-file", "-e", f.Secret}, OK: []int{1, 128}}
		if p == ProfileHostileTree {
			c.Env = []string{"HOME=" + t.TempDir()}
		}
		out, err := repo.Run(ctx(t), c)
		if err != nil || out.ExitCode == 0 {
			t.Errorf("%s: an object only in the environment's store was found (%v)", p, err)
		}
	}
}

// TestRepo_Indirections: a repository says when it has replace refs or
// grafts, and an ordinary one (or a graft file of comments) says nothing.
func TestRepo_Indirections(t *testing.T) {
	run := newRunner(t)
	r := gitxtest.Basic(t, 3)
	if err := os.WriteFile(filepath.Join(r.Dir, ".git", "info", "grafts"), []byte("# none\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := openIn(t, run, r.Dir).Indirections(ctx(t))
	if err != nil || len(got) != 0 {
		t.Fatalf("ordinary repository: %q %v", got, err)
	}
	r.Graft("HEAD", "HEAD~2")
	r.ReplaceBlob("src/file3.txt", "benign\n")
	got, err = openIn(t, run, r.Dir).Indirections(ctx(t))
	if err != nil || len(got) != 2 || got[0] != ReplaceRefsNote || got[1] != GraftsNote {
		t.Fatalf("replace refs and grafts: %q %v", got, err)
	}
}

// Indirections reads replace refs from the ref files, without git: a
// packed one counts, a deleted one (its directory left behind) does not,
// and the answer is git's own in each state.
func TestRepo_Indirections_ReplaceRefsReadFromFiles(t *testing.T) {
	run := newRunner(t)
	r := gitxtest.Basic(t, 3)
	says := func(state string, want bool) {
		t.Helper()
		got, err := openIn(t, run, r.Dir).Indirections(ctx(t))
		if err != nil {
			t.Fatalf("%s: %v", state, err)
		}
		if has := len(got) == 1 && got[0] == ReplaceRefsNote; has != want || (!want && len(got) != 0) {
			t.Fatalf("%s: %q, want replace refs %v", state, got, want)
		}
		if git := r.Git("for-each-ref", "refs/replace/") != ""; git != want {
			t.Fatalf("%s: git for-each-ref says %v", state, git)
		}
	}
	r.ReplaceBlob("src/file3.txt", "benign\n")
	says("a loose replace ref", true)
	r.Git("pack-refs", "--all")
	if _, err := os.Stat(filepath.Join(r.Dir, ".git", "refs", "replace")); err == nil {
		if n, _ := os.ReadDir(filepath.Join(r.Dir, ".git", "refs", "replace")); len(n) != 0 {
			t.Fatalf("pack-refs left %d entries under refs/replace", len(n))
		}
	}
	says("a packed replace ref", true)
	for _, ref := range strings.Fields(r.Git("for-each-ref", "--format=%(refname)", "refs/replace/")) {
		r.Git("update-ref", "-d", ref)
	}
	if err := os.MkdirAll(filepath.Join(r.Dir, ".git", "refs", "replace", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	says("replace refs deleted, directories left", false)
}
