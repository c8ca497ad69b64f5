package gitx

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// The pins a proposal names (HEAD, full ref names, branch names) are read
// when a proposal is made, sealed and executed. A git process for it
// costs a few milliseconds, much of a small proposal's way besides git
// add; reading the ref files is what git rev-parse does too. ResolveLocal
// reads them in this process where the answer is git's without doubt, and
// leaves every other case to git (ErrNotLocal):
//
//   - refs in files only (no reftable), read as git's files backend reads
//     them: the loose file (a regular file holding an object id or
//     "ref: <name>"), else its line in packed-refs;
//   - names git resolves by its usual rules with nothing else to weigh:
//     HEAD, a full name under refs/ that exists (shared by every worktree),
//     or a short name, tried as refs/<n>, refs/tags/<n>, refs/heads/<n>,
//     refs/remotes/<n>, refs/remotes/<n>/HEAD in that order; no object id,
//     no name of capitals alone (a pseudo-ref), nothing with rev syntax;
//   - a name that resolves to a commit (a tag is peeled by git), at most
//     one symbolic step deep (HEAD to its branch);
//   - SHA-1 objects, loose or in a pack (see Objects).
//
// TestResolveLocal_SameAsGit holds the answers to git's.

// LocalHead is HEAD as ResolveLocal reads it: the branch it names ("" when
// detached), its commit and that commit's tree.
type LocalHead struct {
	Sym, SHA, Tree string
}

// ResolveLocal resolves each of revs to the commit it names (as `git
// rev-parse <rev>^{commit}`) and, with head, HEAD, its tree and the branch
// it names (as `git rev-parse HEAD HEAD^{tree} --symbolic-full-name
// HEAD`), in this process. It returns ErrNotLocal when git must answer
// (see above), including when a revision names nothing.
func (repo *Repo) ResolveLocal(revs []string, head bool) (map[string]string, LocalHead, error) {
	commits, h, err := repo.resolveLocal(revs, head)
	if err != nil {
		return nil, LocalHead{}, ErrNotLocal
	}
	return commits, h, nil
}

func (repo *Repo) resolveLocal(revs []string, head bool) (map[string]string, LocalHead, error) {
	if f := repo.ObjectFormat; f != "" && f != "sha1" {
		return nil, LocalHead{}, ErrNotLocal
	}
	if _, ok := repo.Config("extensions.refstorage"); ok {
		return nil, LocalHead{}, ErrNotLocal
	}
	if _, err := os.Lstat(filepath.Join(repo.CommonDir, "reftable")); !errors.Is(err, os.ErrNotExist) {
		return nil, LocalHead{}, ErrNotLocal
	}
	r := &refFiles{gitDir: repo.GitDir, commonDir: repo.CommonDir, objs: NewObjects(repo.CommonDir)}
	defer r.objs.Close()
	out := map[string]string{}
	for _, rev := range revs {
		id, _, err := r.dwim(rev)
		if err != nil {
			return nil, LocalHead{}, err
		}
		if _, err := r.commit(id); err != nil {
			return nil, LocalHead{}, err
		}
		out[rev] = id
	}
	var h LocalHead
	if head {
		id, sym, err := r.ref("HEAD", true)
		if err != nil {
			return nil, LocalHead{}, err
		}
		tree, err := r.commit(id)
		if err != nil {
			return nil, LocalHead{}, err
		}
		h = LocalHead{Sym: sym, SHA: id, Tree: tree}
	}
	return out, h, nil
}

// refFiles reads the refs of one repository from its files.
type refFiles struct {
	gitDir, commonDir string
	objs              *Objects
	packed            map[string]string // nil until read
}

// dwim resolves a name as git's rev-parse does (see the top of this
// file): the object id and the full name of the ref it came from.
func (r *refFiles) dwim(name string) (string, string, error) {
	if name == "HEAD" {
		id, _, err := r.ref("HEAD", true)
		return id, "HEAD", err
	}
	if !plainRefName(name) {
		return "", "", ErrNotLocal
	}
	if strings.HasPrefix(name, "refs/") {
		id, _, err := r.ref(name, true)
		return id, name, err
	}
	if strings.Trim(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == "" || objectID.MatchString(name) ||
		strings.HasPrefix(name, "main-worktree/") || strings.HasPrefix(name, "worktrees/") {
		return "", "", ErrNotLocal
	}
	// git reads a file of that name in the git directory first.
	for _, dir := range []string{r.gitDir, r.commonDir} {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name))); !errors.Is(err, os.ErrNotExist) {
			return "", "", ErrNotLocal
		}
	}
	for _, full := range []string{"refs/" + name, "refs/tags/" + name, "refs/heads/" + name, "refs/remotes/" + name, "refs/remotes/" + name + "/HEAD"} {
		id, _, err := r.ref(full, true)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		return id, full, err
	}
	return "", "", ErrNotLocal
}

// plainRefName reports whether name is a ref name with nothing git could
// read otherwise: letters, digits, '.', '_', '-' and '/' between
// components, no component that starts with a dot or ends with ".lock",
// and no "..".
func plainRefName(name string) bool {
	if name == "" || strings.Contains(name, "..") {
		return false
	}
	for _, c := range strings.Split(name, "/") {
		if c == "" || c[0] == '.' || strings.HasSuffix(c, ".lock") {
			return false
		}
		for _, ch := range []byte(c) {
			if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == '-') {
				return false
			}
		}
	}
	return true
}

// ref reads the ref full (HEAD, or a name under refs/), following one
// symbolic step when follow is set: the object id, and the name of the
// ref a symbolic one points to ("" when it holds an id). os.ErrNotExist
// when it does not exist.
func (r *refFiles) ref(full string, follow bool) (string, string, error) {
	dir := r.commonDir
	if full == "HEAD" {
		dir = r.gitDir
	} else if !strings.HasPrefix(full, "refs/") || strings.HasPrefix(full, "refs/bisect/") ||
		strings.HasPrefix(full, "refs/worktree/") || strings.HasPrefix(full, "refs/rewritten/") {
		// Refs of one worktree alone, or of no rule here.
		return "", "", ErrNotLocal
	}
	p := filepath.Join(dir, filepath.FromSlash(full))
	st, err := os.Lstat(p)
	switch {
	case err == nil && st.Mode().IsRegular():
		b, err := os.ReadFile(p)
		if err != nil {
			return "", "", ErrNotLocal
		}
		if target, ok := bytes.CutPrefix(b, []byte("ref:")); ok {
			name := string(bytes.TrimSpace(target))
			if !follow || !strings.HasPrefix(name, "refs/") || !plainRefName(name) {
				return "", "", ErrNotLocal
			}
			id, sym, err := r.ref(name, false)
			if err != nil || sym != "" {
				// An unborn branch, or a second symbolic step.
				return "", "", ErrNotLocal
			}
			return id, name, nil
		}
		id := string(bytes.TrimRight(b, "\n"))
		if len(id) != 40 || !objectID.MatchString(id) {
			return "", "", ErrNotLocal
		}
		return id, "", nil
	case err == nil && !st.IsDir():
		// A symlink, or anything else git reads its own way.
		return "", "", ErrNotLocal
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return "", "", ErrNotLocal
	}
	if full == "HEAD" {
		return "", "", ErrNotLocal
	}
	if err := r.readPacked(); err != nil {
		return "", "", err
	}
	if id, ok := r.packed[full]; ok {
		return id, "", nil
	}
	return "", "", os.ErrNotExist
}

// readPacked reads packed-refs once.
func (r *refFiles) readPacked() error {
	if r.packed != nil {
		return nil
	}
	r.packed = map[string]string{}
	b, err := os.ReadFile(filepath.Join(r.commonDir, "packed-refs"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return ErrNotLocal
	}
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || l[0] == '#' || l[0] == '^' {
			continue
		}
		id, name, ok := strings.Cut(l, " ")
		if !ok || len(id) != 40 || !objectID.MatchString(id) {
			return ErrNotLocal
		}
		r.packed[name] = id
	}
	return nil
}

// commit checks that id is a commit and returns its tree.
func (r *refFiles) commit(id string) (string, error) {
	obj, err := r.objs.Object(plumbing.NewHash(id), plumbing.CommitObject)
	if err != nil {
		return "", ErrNotLocal
	}
	rd, err := obj.Reader()
	if err != nil {
		return "", ErrNotLocal
	}
	defer rd.Close()
	head := make([]byte, 46)
	if _, err := io.ReadFull(rd, head); err != nil || !bytes.HasPrefix(head, []byte("tree ")) || head[45] != '\n' {
		return "", ErrNotLocal
	}
	tree := string(head[5:45])
	if !objectID.MatchString(tree) {
		return "", ErrNotLocal
	}
	return tree, nil
}

// objectID matches a full object id (SHA-1 or SHA-256).
var objectID = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)
