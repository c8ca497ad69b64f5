package gitx

import (
	"bytes"
	"context"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
)

// Upstream is the branch a local branch tracks.
type Upstream struct {
	Name   string `json:"name" jsonschema:"the upstream branch, e.g. origin/main"`
	Ahead  int    `json:"ahead" jsonschema:"commits on the branch that the upstream does not have"`
	Behind int    `json:"behind" jsonschema:"commits on the upstream that the branch does not have"`
	Gone   bool   `json:"gone,omitempty" jsonschema:"the upstream is configured but no longer exists (deleted on the remote and pruned)"`
}

// Counts summarise a working tree.
type Counts struct {
	Staged     int `json:"staged" jsonschema:"paths with changes staged in the index"`
	Unstaged   int `json:"unstaged" jsonschema:"tracked paths changed in the working tree but not staged"`
	Untracked  int `json:"untracked" jsonschema:"untracked paths (a new directory counts once unless untracked is all)"`
	Conflicted int `json:"conflicted" jsonschema:"unmerged paths"`
}

// FileStatus is one path that git status reports.
type FileStatus struct {
	Path     string `json:"path" jsonschema:"path relative to the repository root"`
	OrigPath string `json:"origPath,omitempty" jsonschema:"the source path of a rename or copy"`
	Staged   string `json:"staged,omitempty" jsonschema:"change in the index against HEAD: added, modified, deleted, renamed, copied or typechange"`
	Unstaged string `json:"unstaged,omitempty" jsonschema:"change in the working tree against the index: modified, deleted or typechange"`
	// Untracked and Conflict exclude the two fields above.
	Untracked bool   `json:"untracked,omitempty" jsonschema:"the path is not tracked"`
	Conflict  string `json:"conflict,omitempty" jsonschema:"unmerged path: both_modified, both_added, both_deleted, added_by_us, added_by_them, deleted_by_us or deleted_by_them"`
	Submodule string `json:"submodule,omitempty" jsonschema:"set for a submodule: commit_changed when its checked-out commit differs from the recorded one"`
}

// Status is the state of HEAD and the working tree.
type Status struct {
	Branch   string    `json:"branch,omitempty" jsonschema:"the checked-out branch; empty when HEAD is detached"`
	Head     string    `json:"head,omitempty" jsonschema:"the commit HEAD points at; empty in a repository with no commits"`
	Detached bool      `json:"detached,omitempty" jsonschema:"HEAD is detached"`
	Unborn   bool      `json:"unborn,omitempty" jsonschema:"the branch has no commits yet"`
	Upstream *Upstream `json:"upstream,omitempty"`
	Stashes  int       `json:"stashes" jsonschema:"entries in the stash"`
	Counts   Counts    `json:"counts"`
}

// StatusOptions select what Status reports.
type StatusOptions struct {
	// Untracked is "no", "normal" (directories collapsed, the default) or
	// "all".
	Untracked string
	// Limit caps the number of files returned (counts stay complete).
	Limit int
}

// StatusResult is Status plus the files.
type StatusResult struct {
	Status
	Files     []FileStatus `json:"files" jsonschema:"changed, untracked and unmerged paths, up to limit"`
	Truncated bool         `json:"truncated,omitempty" jsonschema:"more paths changed than limit; counts are still complete"`

	submoduleDrift int
}

var statusWords = map[byte]string{'M': "modified", 'T': "typechange", 'A': "added", 'D': "deleted", 'R': "renamed", 'C': "copied"}

var conflictWords = map[string]string{
	"DD": "both_deleted", "AU": "added_by_us", "UD": "deleted_by_them", "UA": "added_by_them",
	"DU": "deleted_by_us", "AA": "both_added", "UU": "both_modified",
}

// Status runs git status once (porcelain v2, NUL separated) and parses it.
// Submodules are compared by commit only: looking inside them would run
// git in each with that submodule's own configuration.
func (repo *Repo) Status(ctx context.Context, o StatusOptions) (*StatusResult, error) {
	return repo.status(ctx, o, nil)
}

// status is Status; onStarted, when set, is called once git has started.
func (repo *Repo) status(ctx context.Context, o StatusOptions, onStarted func()) (*StatusResult, error) {
	if err := repo.needWorkTree(); err != nil {
		return nil, err
	}
	u := o.Untracked
	switch u {
	case "":
		u = "normal"
	case "no", "normal", "all":
	default:
		return nil, errcode.New(errcode.InvalidArgument, "untracked must be no, normal or all")
	}
	out, err := repo.git(ctx, &cmd{sub: []string{"status"}, opts: []string{"--porcelain=v2", "-z", "--branch", "--show-stash",
		"--ignore-submodules=dirty", "--untracked-files=" + u, "--renames"}, onStarted: onStarted})
	if err != nil {
		return nil, err
	}
	return parseStatus(out.Stdout, o.Limit), nil
}

func parseStatus(b []byte, limit int) *StatusResult {
	res := &StatusResult{Files: []FileStatus{}}
	recs := bytes.Split(b, []byte{0})
	for i := 0; i < len(recs); i++ {
		rec := string(recs[i])
		if rec == "" {
			continue
		}
		var f *FileStatus
		switch rec[0] {
		case '#':
			parseStatusHeader(&res.Status, rec)
			continue
		case '1':
			// 1 XY sub mH mI mW hH hI path
			p := strings.SplitN(rec, " ", 9)
			if len(p) < 9 {
				continue
			}
			f = &FileStatus{Path: p[8]}
			setXY(f, p[1], p[2])
		case '2':
			// 2 XY sub mH mI mW hH hI Xscore path NUL origPath
			p := strings.SplitN(rec, " ", 10)
			if len(p) < 10 {
				continue
			}
			f = &FileStatus{Path: p[9]}
			if i+1 < len(recs) {
				i++
				f.OrigPath = string(recs[i])
			}
			setXY(f, p[1], p[2])
		case 'u':
			// u XY sub m1 m2 m3 mW h1 h2 h3 path
			p := strings.SplitN(rec, " ", 11)
			if len(p) < 11 {
				continue
			}
			f = &FileStatus{Path: p[10], Conflict: conflictWords[p[1]]}
			if f.Conflict == "" {
				f.Conflict = "unmerged"
			}
		case '?':
			f = &FileStatus{Path: rec[2:], Untracked: true}
		default:
			continue
		}
		switch {
		case f.Conflict != "":
			res.Counts.Conflicted++
		case f.Untracked:
			res.Counts.Untracked++
		default:
			if f.Staged != "" {
				res.Counts.Staged++
			}
			if f.Unstaged != "" {
				res.Counts.Unstaged++
			}
		}
		if f.Submodule != "" {
			res.submoduleDrift++
		}
		if limit > 0 && len(res.Files) >= limit {
			res.Truncated = true
			continue
		}
		res.Files = append(res.Files, *f)
	}
	return res
}

func setXY(f *FileStatus, xy, sub string) {
	if len(xy) == 2 {
		f.Staged = statusWords[xy[0]]
		f.Unstaged = statusWords[xy[1]]
	}
	// sub is "N..." for a file, "S<c><m><u>" for a submodule.
	if len(sub) == 4 && sub[0] == 'S' && sub[1] == 'C' {
		f.Submodule = "commit_changed"
	}
}

func parseStatusHeader(s *Status, rec string) {
	k, v, _ := strings.Cut(strings.TrimPrefix(rec, "# "), " ")
	switch k {
	case "branch.oid":
		if v == "(initial)" {
			s.Unborn = true
		} else {
			s.Head = v
		}
	case "branch.head":
		if v == "(detached)" {
			s.Detached = true
		} else {
			s.Branch = v
		}
	case "branch.upstream":
		if s.Upstream == nil {
			s.Upstream = &Upstream{Gone: true}
		}
		s.Upstream.Name = v
	case "branch.ab":
		// "+A -B"; present only when the upstream exists.
		if s.Upstream == nil {
			s.Upstream = &Upstream{}
		}
		s.Upstream.Gone = false
		for _, f := range strings.Fields(v) {
			n, _ := strconv.Atoi(f[1:])
			if f[0] == '+' {
				s.Upstream.Ahead = n
			} else {
				s.Upstream.Behind = n
			}
		}
	case "stash":
		s.Stashes, _ = strconv.Atoi(v)
	}
}
