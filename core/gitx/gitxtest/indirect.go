package gitxtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Fixtures for the things git consults besides the objects: replace refs,
// grafts and alternates. Each leaves the objects as they are and changes
// what a git that honours them reads.

// ReplaceBlob makes a replace ref that shows benign wherever the blob
// HEAD has at path is read, and returns the real blob's id.
func (r *Repo) ReplaceBlob(path, benign string) string {
	r.t.Helper()
	real := r.Git("rev-parse", "HEAD:"+path)
	tmp := filepath.Join(r.t.TempDir(), "benign")
	if err := os.WriteFile(tmp, []byte(benign), 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.Git("replace", "-f", real, r.Git("hash-object", "-w", tmp))
	return real
}

// Graft writes info/grafts so that commit has the given parents (none:
// a root) for a git that reads grafts.
func (r *Repo) Graft(commit string, parents ...string) {
	r.t.Helper()
	p := filepath.Join(r.Git("rev-parse", "--path-format=absolute", "--git-common-dir"), "info", "grafts")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	line := strings.Join(append([]string{r.Git("rev-parse", commit)}, r.revs(parents)...), " ") + "\n"
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		r.t.Fatal(err)
	}
}

// ReplaceGraft gives commit other parents with `git replace --graft`.
func (r *Repo) ReplaceGraft(commit string, parents ...string) {
	r.t.Helper()
	r.Git(append([]string{"replace", "-f", "--graft", r.Git("rev-parse", commit)}, r.revs(parents)...)...)
}

func (r *Repo) revs(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = r.Git("rev-parse", n)
	}
	return out
}

// AddAlternate appends dir (an object directory) to the repository's
// objects/info/alternates.
func (r *Repo) AddAlternate(dir string) {
	r.t.Helper()
	p := filepath.Join(r.Git("rev-parse", "--path-format=absolute", "--git-common-dir"), "objects", "info", "alternates")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(dir + "\n"); err != nil {
		r.t.Fatal(err)
	}
}

// AlternateOutside is a fixture for object-store confinement: Root is the
// allowed root; Outside is a repository next to it, outside the root,
// whose last commit (Secret, with secret.txt) exists only there; Inside
// is a `git clone --shared` of it inside the root, which reads Outside's
// objects through objects/info/alternates and has none of its own.
type AlternateOutside struct {
	Root, Secret    string
	Inside, Outside *Repo
}

// NewAlternateOutside builds an AlternateOutside fixture.
func NewAlternateOutside(t testing.TB) AlternateOutside {
	t.Helper()
	parent, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := AlternateOutside{Root: filepath.Join(parent, "root"), Outside: InitAt(t, filepath.Join(parent, "outside"))}
	f.Outside.WriteCommit("README", "outside\n", "outside start")
	f.Secret = f.Outside.WriteCommit("secret.txt", "outside secret\n", "outside commit")
	if err := os.MkdirAll(f.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, f.Root, "clone", "-q", "--shared", f.Outside.Dir, "borrowing")
	f.Inside = &Repo{t: t, Dir: filepath.Join(f.Root, "borrowing")}
	return f
}
