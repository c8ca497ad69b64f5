package gitx

import (
	"context"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/sluicehq/sluice/core/errcode"
)

// Ref is a branch, remote-tracking branch or tag.
type Ref struct {
	Name     string    `json:"name" jsonschema:"short name: main, origin/main, v1.2.3"`
	Kind     string    `json:"kind" jsonschema:"branch, remote or tag"`
	SHA      string    `json:"sha" jsonschema:"abbreviated commit id (tags are peeled to their commit)"`
	Date     string    `json:"date,omitempty" jsonschema:"commit (or tag) date, RFC 3339"`
	Subject  string    `json:"subject,omitempty"`
	Current  bool      `json:"current,omitempty" jsonschema:"checked out in this worktree"`
	Upstream *Upstream `json:"upstream,omitempty"`
	Symref   string    `json:"symref,omitempty" jsonschema:"the ref this one points to (origin/HEAD)"`
	Worktree string    `json:"worktree,omitempty" jsonschema:"checked out in this other worktree"`
}

// RefList is a listing of refs.
type RefList struct {
	Refs      []Ref `json:"refs"`
	Total     int   `json:"total" jsonschema:"refs matching before limit"`
	Truncated bool  `json:"truncated,omitempty"`
}

// RefsOptions select refs.
type RefsOptions struct {
	Kinds   []string
	Pattern string
	Sort    string
	Limit   int
}

// Ref listing limits.
const (
	DefaultRefsLimit = 100
	MaxRefsLimit     = 1000
)

var refKinds = map[string]string{"branches": "refs/heads/", "remotes": "refs/remotes/", "tags": "refs/tags/"}

// Refs lists refs with one for-each-ref.
func (repo *Repo) Refs(ctx context.Context, o RefsOptions) (*RefList, error) {
	limit := o.Limit
	if limit <= 0 {
		limit = DefaultRefsLimit
	}
	if limit > MaxRefsLimit {
		return nil, errcode.New(errcode.InvalidArgument, "limit must be at most %d", MaxRefsLimit)
	}
	kinds := o.Kinds
	if len(kinds) == 0 {
		kinds = []string{"branches", "remotes", "tags"}
	}
	if o.Pattern != "" {
		if err := CheckRev("pattern", o.Pattern); err != nil {
			return nil, err
		}
	}
	var patterns []string
	for _, k := range kinds {
		prefix, ok := refKinds[k]
		if !ok {
			return nil, errcode.New(errcode.InvalidArgument, "kinds must be branches, remotes or tags")
		}
		patterns = append(patterns, prefix+o.Pattern)
	}
	sortKey := "--sort=-creatordate"
	switch o.Sort {
	case "", "recent":
	case "name":
		sortKey = "--sort=refname"
	default:
		return nil, errcode.New(errcode.InvalidArgument, "sort must be recent or name")
	}
	format := "--format=%(refname)%00%(objectname:short=12)%00%(*objectname:short=12)%00%(creatordate:iso-strict)%00%(contents:subject)%00%(HEAD)%00%(upstream:short)%00%(upstream:track,nobracket)%00%(symref:short)%00%(worktreepath)"
	out, err := repo.git(ctx, &cmd{sub: []string{"for-each-ref"}, opts: []string{format, sortKey}, revs: patterns, limit: 16 << 20})
	if err != nil {
		return nil, err
	}
	res := &RefList{Refs: []Ref{}}
	for _, line := range strings.Split(string(out.Stdout), "\n") {
		f := strings.Split(line, "\x00")
		if len(f) < 10 {
			continue
		}
		r := Ref{SHA: f[1], Date: f[3], Subject: clip(f[4], 100), Current: f[5] == "*", Symref: f[8]}
		if f[2] != "" {
			r.SHA = f[2]
		}
		switch {
		case strings.HasPrefix(f[0], "refs/heads/"):
			r.Kind, r.Name = "branch", strings.TrimPrefix(f[0], "refs/heads/")
			if f[9] != "" && f[9] != repo.Root {
				r.Worktree = f[9]
			}
		case strings.HasPrefix(f[0], "refs/remotes/"):
			r.Kind, r.Name = "remote", strings.TrimPrefix(f[0], "refs/remotes/")
		case strings.HasPrefix(f[0], "refs/tags/"):
			r.Kind, r.Name = "tag", strings.TrimPrefix(f[0], "refs/tags/")
		default:
			continue
		}
		if f[6] != "" {
			r.Upstream = parseTrack(f[6], f[7])
		}
		res.Total++
		if len(res.Refs) >= limit {
			res.Truncated = true
			continue
		}
		res.Refs = append(res.Refs, r)
	}
	return res, nil
}

// parseTrack reads %(upstream:track,nobracket): "ahead 1, behind 2" or
// "gone".
func parseTrack(name, track string) *Upstream {
	u := &Upstream{Name: name}
	if track == "gone" {
		u.Gone = true
		return u
	}
	for _, part := range strings.Split(track, ", ") {
		w, n, ok := strings.Cut(part, " ")
		if !ok {
			continue
		}
		v, _ := strconv.Atoi(n)
		switch w {
		case "ahead":
			u.Ahead = v
		case "behind":
			u.Behind = v
		}
	}
	return u
}

// StackBranch is one branch of a stack.
type StackBranch struct {
	Name    string `json:"name"`
	SHA     string `json:"sha" jsonschema:"abbreviated tip"`
	Commits int    `json:"commits" jsonschema:"commits on this branch that the branch below it (or the base) does not have"`
	Current bool   `json:"current,omitempty"`
}

// BranchStack is the chain of local branches a branch builds on and the
// branches that build on it.
type BranchStack struct {
	Base       string        `json:"base" jsonschema:"the base branch the stack grows from"`
	Branch     string        `json:"branch" jsonschema:"the branch asked about (HEAD when detached)"`
	MergeBase  string        `json:"mergeBase,omitempty" jsonschema:"abbreviated commit where the stack leaves the base"`
	Stack      []StackBranch `json:"stack" jsonschema:"from the bottom (nearest the base) to the branch asked about"`
	Above      []StackBranch `json:"above" jsonschema:"branches that contain this branch's tip, nearest first; commits counted from this branch"`
	Forked     []string      `json:"forked,omitempty" jsonschema:"branches that forked from inside the stack but lack its tip: built on an older version, they need a restack"`
	BehindBase int           `json:"behindBase" jsonschema:"commits on the base that the stack does not have yet"`
	Merged     bool          `json:"merged,omitempty" jsonschema:"the branch is already contained in the base"`
}

const maxStackWalk = 2000

// BranchStack works out the stack around branch (default: the current
// branch) on base (default: the default branch).
func (repo *Repo) BranchStack(ctx context.Context, branch, base string) (*BranchStack, error) {
	for _, a := range []struct{ n, v string }{{"branch", branch}, {"base", base}} {
		if a.v != "" {
			if err := CheckRev(a.n, a.v); err != nil {
				return nil, err
			}
		}
	}
	out, err := repo.git(ctx, &cmd{sub: []string{"for-each-ref"}, opts: []string{"--format=%(objectname)%00%(refname)%00%(HEAD)%00%(symref)"},
		revs: []string{"refs/heads", "refs/remotes/origin/HEAD"}, limit: 16 << 20})
	if err != nil {
		return nil, err
	}
	bt := parseBranchTips(out.Stdout)
	if branch, base, err = repo.stackNames(bt, branch, base); err != nil {
		return nil, err
	}
	tip, err := repo.ResolveCommit(ctx, "branch", branch)
	if err != nil {
		return nil, err
	}
	baseSHA, err := repo.ResolveCommit(ctx, "base", base)
	if err != nil {
		return nil, err
	}
	st := &BranchStack{Base: base, Branch: branch, Stack: []StackBranch{}, Above: []StackBranch{}}
	mbOut, err := repo.git(ctx, &cmd{sub: []string{"merge-base"}, revs: []string{baseSHA, tip}, okExit: []int{1}, limit: 4096})
	if err != nil {
		return nil, err
	}
	mb := strings.TrimSpace(string(mbOut.Stdout))
	st.MergeBase = abbrev(mb)
	if mb == tip {
		st.Merged = true
	}
	w, err := repo.stackWalk(ctx, tip, baseSHA, mb)
	if err != nil {
		return nil, err
	}
	st.BehindBase = w.behind
	st.Stack = stackLayers(w.chain, bt, base, branch, tip)
	// Branches above: they contain the tip; count their own commits.
	for _, n := range aboveBranches(w.above, bt.local, base, branch, tip) {
		c, err := repo.countRevs(ctx, bt.local[n], "^"+tip)
		if err != nil {
			return nil, err
		}
		st.Above = append(st.Above, StackBranch{Name: n, SHA: abbrev(bt.local[n]), Commits: c, Current: n == bt.current})
	}
	sort.SliceStable(st.Above, func(i, j int) bool { return st.Above[i].Commits < st.Above[j].Commits })
	// Forked: contain the bottom of the stack but not its tip.
	if len(w.chain) > 1 {
		bottom := w.chain[len(w.chain)-1]
		forkOut, err := repo.git(ctx, &cmd{sub: []string{"for-each-ref"}, opts: []string{"--format=%(refname:short)", "--contains=" + bottom, "--no-contains=" + tip}, revs: []string{"refs/heads"}, limit: 4 << 20})
		if err != nil {
			return nil, err
		}
		st.Forked = forkedBranches(forkOut.Stdout, st.Stack, base)
	}
	return st, nil
}

// stackNames fills in branch (the checked-out one, else HEAD) and base
// (the default branch) when they are not given.
func (repo *Repo) stackNames(bt branchTips, branch, base string) (string, string, error) {
	if branch == "" {
		branch = bt.current
		if branch == "" {
			branch = "HEAD"
		}
	}
	if base == "" {
		present := map[string]bool{}
		for n := range bt.local {
			present[n] = true
		}
		base = repo.defaultBranch(bt.originHead, present)
		if base == "" {
			return "", "", errcode.New(errcode.InvalidArgument, "no default branch found; pass base")
		}
	}
	return branch, base, nil
}

// branchTips is what for-each-ref says of the local branches: which
// branches point at each commit, each branch's commit, the one checked
// out, and the branch origin's HEAD names.
type branchTips struct {
	tips                map[string][]string // sha -> branches
	local               map[string]string   // branch -> sha
	current, originHead string
}

// parseBranchTips reads for-each-ref's NUL-separated objectname, refname,
// HEAD and symref lines over refs/heads and refs/remotes/origin/HEAD.
func parseBranchTips(out []byte) branchTips {
	bt := branchTips{tips: map[string][]string{}, local: map[string]string{}}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, "\x00")
		if len(f) < 4 {
			continue
		}
		if f[1] == "refs/remotes/origin/HEAD" {
			bt.originHead = strings.TrimPrefix(f[3], "refs/remotes/origin/")
			continue
		}
		name := strings.TrimPrefix(f[1], "refs/heads/")
		bt.tips[f[0]] = append(bt.tips[f[0]], name)
		bt.local[name] = f[0]
		if f[2] == "*" {
			bt.current = name
		}
	}
	return bt
}

// stackWalkOut is what BranchStack reads in parallel: the first-parent
// chain from the tip down to the merge base (newest first), for-each-ref's
// branches that contain the tip, and how far the base is ahead.
type stackWalkOut struct {
	chain  []string
	above  []byte
	behind int
}

// stackWalk runs those three reads at once (the base's count only when
// there is a merge base). Each process keeps its own error: the first in
// this order is the one reported, whichever failed first.
func (repo *Repo) stackWalk(ctx context.Context, tip, baseSHA, mb string) (stackWalkOut, error) {
	var (
		g                             errgroup.Group
		chainOut, aboveOut, behindOut *Output
		e1, e2, e4                    error
	)
	chainRevs := []string{tip}
	if mb != "" {
		chainRevs = append(chainRevs, "^"+mb)
	}
	g.Go(func() error {
		chainOut, e1 = repo.git(ctx, &cmd{sub: []string{"rev-list"}, opts: []string{"--first-parent", "--max-count=" + strconv.Itoa(maxStackWalk)}, revs: chainRevs, limit: 1 << 20})
		return nil
	})
	g.Go(func() error {
		aboveOut, e2 = repo.git(ctx, &cmd{sub: []string{"for-each-ref"}, opts: []string{"--format=%(refname:short)", "--contains=" + tip}, revs: []string{"refs/heads"}, limit: 4 << 20})
		return nil
	})
	if mb != "" {
		g.Go(func() error {
			behindOut, e4 = repo.git(ctx, &cmd{sub: []string{"rev-list"}, opts: []string{"--count"}, revs: []string{baseSHA, "^" + mb}, limit: 4096})
			return nil
		})
	}
	g.Wait()
	for _, e := range []error{e1, e2, e4} {
		if e != nil {
			return stackWalkOut{}, e
		}
	}
	w := stackWalkOut{chain: strings.Fields(string(chainOut.Stdout)), above: aboveOut.Stdout}
	if behindOut != nil {
		w.behind, _ = strconv.Atoi(strings.TrimSpace(string(behindOut.Stdout)))
	}
	return w, nil
}

// countRevs is rev-list --count over revs.
func (repo *Repo) countRevs(ctx context.Context, revs ...string) (int, error) {
	o, err := repo.git(ctx, &cmd{sub: []string{"rev-list"}, opts: []string{"--count"}, revs: revs, limit: 4096})
	if err != nil {
		return 0, err
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(o.Stdout)))
	return n, nil
}

// stackLayers walks chain (newest first) from the bottom: every local
// branch whose tip is on it is a layer of the stack, and branch is the
// top.
func stackLayers(chain []string, bt branchTips, base, branch, tip string) []StackBranch {
	stack := []StackBranch{}
	last := len(chain)
	for i := len(chain) - 1; i >= 1; i-- {
		for _, name := range bt.tips[chain[i]] {
			if name == base || name == branch {
				continue
			}
			stack = append(stack, StackBranch{Name: name, SHA: abbrev(chain[i]), Commits: last - i, Current: name == bt.current})
			last = i
		}
	}
	return append(stack, StackBranch{Name: branch, SHA: abbrev(tip), Commits: last, Current: branch == bt.current})
}

// aboveBranches are the branches of for-each-ref's answer other than
// branch and base that have commits of their own on top of tip, at most
// 20.
func aboveBranches(out []byte, local map[string]string, base, branch, tip string) []string {
	var above []string
	for _, n := range strings.Fields(string(out)) {
		if n != branch && n != base && local[n] != tip {
			above = append(above, n)
		}
	}
	if len(above) > 20 {
		above = above[:20]
	}
	return above
}

// forkedBranches are the branches of for-each-ref's answer that are
// neither a layer of stack nor base.
func forkedBranches(out []byte, stack []StackBranch, base string) []string {
	inStack := map[string]bool{}
	for _, s := range stack {
		inStack[s.Name] = true
	}
	var forked []string
	for _, n := range strings.Fields(string(out)) {
		if !inStack[n] && n != base {
			forked = append(forked, n)
		}
	}
	return forked
}
