package gitx

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Indirection sentences: what a card says of a repository in which the
// person's own git reads other history than the objects hold. Every git
// Sluice runs ignores both (see onlyObjects in profile.go), so what
// Sluice shows, seals and lands are the objects themselves; the person's
// `git log` or `git show` in the same repository would not agree with it.
const (
	// ReplaceRefsNote: the repository has refs under refs/replace/.
	ReplaceRefsNote = "this repository has replace refs (refs/replace/): git log and git show here show other objects than the ones that land; Sluice shows the real ones"
	// GraftsNote: the repository has an info/grafts file.
	GraftsNote = "this repository has grafts (info/grafts): git log here shows other parents than the commits have; Sluice shows the real history"
)

// Indirections lists, as sentences for a card, what in the repository
// makes git's own view of its history differ from its objects: replace
// refs and grafts. It is empty for an ordinary repository.
func (repo *Repo) Indirections(ctx context.Context) ([]string, error) {
	var out []string
	replace, known := hasReplaceRefs(repo.CommonDir)
	if !known {
		refs, err := repo.git(ctx, &cmd{sub: []string{"for-each-ref"}, opts: []string{"--count=1", "--format=%(refname)", "refs/replace/"}, limit: 4096})
		if err != nil {
			return nil, err
		}
		replace = strings.TrimSpace(string(refs.Stdout)) != ""
	}
	if replace {
		out = append(out, ReplaceRefsNote)
	}
	// Git reads the graft file of the common directory; one with nothing
	// but comments and empty lines grafts nothing.
	if hasGrafts(filepath.Join(repo.CommonDir, "info", "grafts")) {
		out = append(out, GraftsNote)
	}
	return out, nil
}

// hasReplaceRefs reads, without starting git, whether the repository whose
// common directory is common has a ref under refs/replace/: a file below
// refs/replace, or a line of packed-refs naming one. known is false where
// that cannot be told from those files (a reftable repository, a file it
// cannot read); git for-each-ref answers then. A stray file under
// refs/replace that is not a ref counts as one: the sentence is a warning
// on the card, and saying it once too often is the safe side.
func hasReplaceRefs(common string) (has, known bool) {
	if reftable(common) {
		return false, false
	}
	found := false
	err := filepath.WalkDir(filepath.Join(common, "refs", "replace"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			found = true
			return fs.SkipAll
		}
		return nil
	})
	switch {
	case found:
		return true, true
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return false, false
	}
	return packedMentions(common, " refs/replace/")
}

// RefInFiles reads, without starting git, whether ref exists in the
// repository whose common directory is common: its loose file, or its
// line in packed-refs. known is false where only git can tell (a
// reftable repository, a file it cannot read). It is for Sluice's own
// refs, whose names it made; a person's ref is read through git.
func RefInFiles(common, ref string) (exists, known bool) {
	if reftable(common) {
		return false, false
	}
	if _, err := os.Lstat(filepath.Join(common, filepath.FromSlash(ref))); err == nil {
		return true, true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, false
	}
	return packedMentions(common, " "+ref+"\n")
}

// reftable reports whether the repository keeps its refs in a reftable.
func reftable(common string) bool {
	_, err := os.Stat(filepath.Join(common, "reftable"))
	return err == nil
}

// packedMentions reports whether packed-refs holds s (known false when it
// cannot be read; no packed-refs holds nothing).
func packedMentions(common, s string) (has, known bool) {
	packed, err := os.ReadFile(filepath.Join(common, "packed-refs"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, true
	case err != nil:
		return false, false
	}
	return bytes.Contains(packed, []byte(s)), true
}

func hasGrafts(p string) bool {
	b, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			return true
		}
	}
	return false
}
