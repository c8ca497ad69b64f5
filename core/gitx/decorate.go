package gitx

import (
	"bytes"
	"context"
	"slices"
	"strings"
)

// decoratedNamespaces are the refs a decoration names.
var decoratedNamespaces = []string{"refs/heads", "refs/tags", "refs/remotes"}

// refNames maps commit ids to the names of the branches, tags and
// remote-tracking refs that point at them (a tag by the commit it peels
// to), as git's %D decoration names them and in its order: the branch
// checked out first, then by ref name, descending. It reads those three
// namespaces with one for-each-ref and nothing else: git's own decoration
// loads every ref of the repository first, whatever --decorate-refs
// keeps, so that 10,000 of Sluice's refs (one per proposal) made each
// decorated read 40 times slower. With pointsAt set, only the refs that
// point at that commit are read.
func (repo *Repo) refNames(ctx context.Context, pointsAt string) (map[string][]string, error) {
	opts := []string{"--format=%(objectname)%00%(*objectname)%00%(refname)"}
	if pointsAt != "" {
		opts = append(opts, "--points-at="+pointsAt)
	}
	out, err := repo.git(ctx, &cmd{sub: []string{"for-each-ref"}, opts: opts, revs: decoratedNamespaces, limit: 64 << 20})
	if err != nil {
		return nil, err
	}
	return parseRefNames(out.Stdout), nil
}

// parseRefNames reads refNames' for-each-ref answer.
func parseRefNames(b []byte) map[string][]string {
	by := map[string][]string{}
	for _, l := range bytes.Split(b, []byte{'\n'}) {
		f := bytes.SplitN(l, []byte{0}, 3)
		if len(f) < 3 {
			continue
		}
		target := string(f[0])
		if len(f[1]) > 0 {
			target = string(f[1])
		}
		by[target] = append(by[target], string(f[2]))
	}
	for sha, refs := range by {
		slices.Sort(refs)
		slices.Reverse(refs)
		for i, r := range refs {
			refs[i] = shortRefName(r)
		}
		by[sha] = refs
	}
	return by
}

// shortRefName is a ref's name as a decoration shows it.
func shortRefName(ref string) string {
	for _, p := range []string{"refs/heads/", "refs/tags/", "refs/remotes/"} {
		if s, ok := strings.CutPrefix(ref, p); ok {
			return s
		}
	}
	return ref
}
