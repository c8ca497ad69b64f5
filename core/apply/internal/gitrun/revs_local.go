package gitrun

import "github.com/sluicehq/sluice/core/gitx"

// ErrNotLocal says that what was asked is not read in this process: git
// answers it (see gitx.ResolveLocal).
var ErrNotLocal = gitx.ErrNotLocal

// Resolved is what ResolveLocal read: each revision's commit, and HEAD.
type Resolved struct {
	Commits map[string]string
	Head    Head
}

// ResolveLocal is gitx's Repo.ResolveLocal for the repository of g: the
// commit of each of revs and, with head, HEAD, read from the ref files
// where git's answer is certain; ErrNotLocal where git must answer.
func (g *Git) ResolveLocal(revs []string, head bool) (Resolved, error) {
	commits, h, err := g.Repo.ResolveLocal(revs, head)
	if err != nil {
		return Resolved{}, err
	}
	out := Resolved{Commits: commits}
	if head {
		out.Head = Head{Sym: h.Sym, SHA: h.SHA, Tree: h.Tree}
		g.RememberTree(h.SHA, h.Tree)
	}
	return out, nil
}
