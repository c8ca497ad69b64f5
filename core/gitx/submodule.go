package gitx

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"
)

// Submodule is the state of one submodule.
type Submodule struct {
	Name       string `json:"name"`
	Path       string `json:"path"`
	URL        string `json:"url,omitempty" jsonschema:"configured URL, credentials removed"`
	Branch     string `json:"branch,omitempty" jsonschema:"branch configured in .gitmodules"`
	Recorded   string `json:"recorded,omitempty" jsonschema:"abbreviated commit the superproject records (index)"`
	CheckedOut string `json:"checkedOut,omitempty" jsonschema:"abbreviated commit checked out in the submodule"`
	State      string `json:"state" jsonschema:"clean, drifted (checked out at another commit than recorded), uninitialized (not checked out), missing (in .gitmodules, not in the index) or error"`
	Dirty      bool   `json:"dirty,omitempty" jsonschema:"the submodule has uncommitted changes to tracked files"`
	Ahead      *int   `json:"ahead,omitempty" jsonschema:"drifted: commits checked out that the recorded commit lacks"`
	Behind     *int   `json:"behind,omitempty" jsonschema:"drifted: recorded commits that the checkout lacks"`
	Problem    string `json:"problem,omitempty" jsonschema:"why the state could not be read"`
}

// SubmoduleList lists submodules.
type SubmoduleList struct {
	Submodules []Submodule `json:"submodules"`
}

// Submodules reports every submodule in .gitmodules: recorded commit from
// the index, checked-out commit and dirtiness from a hardened git run in
// the submodule itself (with its own configuration neutralised), never
// from git submodule, which would run git there unhardened.
func (repo *Repo) Submodules(ctx context.Context) (*SubmoduleList, error) {
	if err := repo.needWorkTree(); err != nil {
		return nil, err
	}
	mods := repo.gitmodules()
	res := &SubmoduleList{Submodules: []Submodule{}}
	if len(mods) == 0 {
		return res, nil
	}
	var paths []string
	for _, m := range mods {
		paths = append(paths, m.Path)
	}
	out, err := repo.git(ctx, &cmd{sub: []string{"ls-files"}, opts: []string{"--stage", "-z"}, paths: paths, dashdash: true, limit: 4 << 20})
	if err != nil {
		return nil, err
	}
	recorded := map[string]string{}
	for _, rec := range bytes.Split(out.Stdout, []byte{0}) {
		meta, p, ok := strings.Cut(string(rec), "\t")
		f := strings.Fields(meta)
		if ok && len(f) == 3 && f[0] == "160000" {
			recorded[p] = f[1]
		}
	}
	res.Submodules = make([]Submodule, len(mods))
	var g errgroup.Group
	g.SetLimit(4)
	for i, m := range mods {
		s := &res.Submodules[i]
		*s = Submodule{Name: m.Name, Path: m.Path, URL: RedactURL(m.URL), Branch: m.Branch}
		rec, ok := recorded[m.Path]
		if !ok {
			s.State = "missing"
			continue
		}
		s.Recorded = abbrev(rec)
		if !repo.submoduleCheckedOut(m.Path) {
			s.State = "uninitialized"
			continue
		}
		g.Go(func() error {
			repo.inspectSubmodule(ctx, s, rec)
			return nil
		})
	}
	g.Wait() // an inspection records its failure in the submodule's State
	return res, nil
}

func (repo *Repo) inspectSubmodule(ctx context.Context, s *Submodule, recorded string) {
	// Confined like any path an agent names: a submodule directory that is
	// a symlink out of the roots is not followed.
	sub, err := repo.r.Open(ctx, repo.roots, filepath.Join(repo.Root, filepath.FromSlash(s.Path)))
	if err != nil || sub.Root == repo.Root {
		s.State, s.Problem = "error", "the submodule's repository cannot be opened"
		return
	}
	// One status gives the HEAD commit (its branch header comes first,
	// whatever the truncation) and whether tracked files changed.
	st, err := sub.git(ctx, &cmd{sub: []string{"status"}, opts: []string{"--porcelain=v2", "-z", "--branch", "--untracked-files=no", "--ignore-submodules=all"}, limit: 1 << 20, truncate: true})
	head := ""
	if err == nil {
		for _, rec := range bytes.Split(st.Stdout, []byte{0}) {
			if oid, ok := bytes.CutPrefix(rec, []byte("# branch.oid ")); ok {
				head = string(oid)
			} else if len(rec) > 0 && !bytes.HasPrefix(rec, []byte("# ")) {
				s.Dirty = true
			}
		}
	}
	if !isHex(head) {
		s.State, s.Problem, s.Dirty = "error", "the submodule has no HEAD commit", false
		return
	}
	s.CheckedOut = abbrev(head)
	s.State = "clean"
	if head == recorded {
		return
	}
	s.State = "drifted"
	out, err := sub.git(ctx, &cmd{sub: []string{"rev-list"}, opts: []string{"--left-right", "--count"}, revs: []string{head + "..." + recorded}, limit: 4096})
	if err != nil {
		return // the recorded commit may not have been fetched into the submodule
	}
	if f := strings.Fields(string(out.Stdout)); len(f) == 2 {
		a, _ := strconv.Atoi(f[0])
		b, _ := strconv.Atoi(f[1])
		s.Ahead, s.Behind = &a, &b
	}
}
