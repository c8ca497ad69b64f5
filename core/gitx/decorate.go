package gitx

import (
	"bytes"
	"context"
	"slices"
	"strings"
)

// decoratedNamespaces are the refs a decoration names.
var decoratedNamespaces = []string{"refs/heads", "refs/tags", "refs/remotes"}

// refReading is one reading of the branches, tags and remote-tracking
// refs: the names a decoration gives each commit, and every ref listed
// with the ref it is a symbolic link to, which is what repo_brief takes
// from the refs (the local branches, where origin/HEAD points).
type refReading struct {
	names map[string][]string
	refs  []listedRef
}

// listedRef is one ref for-each-ref listed: its full name and, for a
// symbolic ref, the full name it points to.
type listedRef struct {
	name, symref string
}

// readRefs reads the refs under decoratedNamespaces with one for-each-ref
// and nothing else. The names of refNames are git's %D decoration of each
// commit: the branches, tags and remote-tracking refs that point at it (a
// tag by the commit it peels to), in its order: the branch checked out
// first, then by ref name, descending. git's own decoration loads every
// ref of the repository first, whatever --decorate-refs keeps, so that
// 10,000 of Sluice's refs (one per proposal) made each decorated read 40
// times slower.
func (repo *Repo) readRefs(ctx context.Context) (*refReading, error) {
	out, err := repo.git(ctx, &cmd{sub: []string{"for-each-ref"}, opts: []string{refReadingFormat}, revs: decoratedNamespaces, limit: 64 << 20})
	if err != nil {
		return nil, err
	}
	return parseRefReading(out.Stdout), nil
}

// refReadingFormat is readRefs' for-each-ref format.
const refReadingFormat = "--format=%(objectname)%00%(*objectname)%00%(refname)%00%(symref)"

// parseRefReading reads readRefs' for-each-ref answer.
func parseRefReading(b []byte) *refReading {
	rr := &refReading{names: map[string][]string{}}
	for _, l := range bytes.Split(b, []byte{'\n'}) {
		f := bytes.SplitN(l, []byte{0}, 4)
		if len(f) < 3 {
			continue
		}
		target := string(f[0])
		if len(f[1]) > 0 {
			target = string(f[1])
		}
		ref := listedRef{name: string(f[2])}
		if len(f) == 4 {
			ref.symref = string(f[3])
		}
		rr.refs = append(rr.refs, ref)
		rr.names[target] = append(rr.names[target], ref.name)
	}
	for sha, refs := range rr.names {
		refs = slices.Clone(refs)
		slices.Sort(refs)
		slices.Reverse(refs)
		for i, r := range refs {
			refs[i] = shortRefName(r)
		}
		rr.names[sha] = refs
	}
	return rr
}

// parseRefNames reads the names of a for-each-ref answer in
// refReadingFormat (the symref field may be left out).
func parseRefNames(b []byte) map[string][]string { return parseRefReading(b).names }

// shortRefName is a ref's name as a decoration shows it.
func shortRefName(ref string) string {
	for _, p := range []string{"refs/heads/", "refs/tags/", "refs/remotes/"} {
		if s, ok := strings.CutPrefix(ref, p); ok {
			return s
		}
	}
	return ref
}
