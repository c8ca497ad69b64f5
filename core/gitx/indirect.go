package gitx

import (
	"context"
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
	refs, err := repo.git(ctx, &cmd{sub: []string{"for-each-ref"}, opts: []string{"--count=1", "--format=%(refname)", "refs/replace/"}, limit: 4096})
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(refs.Stdout)) != "" {
		out = append(out, ReplaceRefsNote)
	}
	// Git reads the graft file of the common directory; one with nothing
	// but comments and empty lines grafts nothing.
	if hasGrafts(filepath.Join(repo.CommonDir, "info", "grafts")) {
		out = append(out, GraftsNote)
	}
	return out, nil
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
