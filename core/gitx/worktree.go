package gitx

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
)

// Worktree is one working tree of a repository.
type Worktree struct {
	Path           string `json:"path"`
	Head           string `json:"head,omitempty" jsonschema:"abbreviated commit checked out"`
	Branch         string `json:"branch,omitempty" jsonschema:"checked-out branch; empty when detached"`
	Detached       bool   `json:"detached,omitempty"`
	Bare           bool   `json:"bare,omitempty"`
	Current        bool   `json:"current,omitempty" jsonschema:"the worktree repoPath names"`
	Main           bool   `json:"main,omitempty" jsonschema:"the main worktree"`
	Locked         bool   `json:"locked,omitempty"`
	LockReason     string `json:"lockReason,omitempty"`
	Prunable       bool   `json:"prunable,omitempty" jsonschema:"its directory is gone; git worktree prune would remove the entry"`
	PrunableReason string `json:"prunableReason,omitempty"`
	InsideRoots    bool   `json:"insideRoots" jsonschema:"whether Sluice tools may be pointed at it"`
}

// WorktreeList lists the repository's worktrees.
type WorktreeList struct {
	Worktrees []Worktree `json:"worktrees"`
}

var minWorktreeZ = Version{2, 36, 0}

// Worktrees lists every worktree with git worktree list --porcelain -z.
func (repo *Repo) Worktrees(ctx context.Context) (*WorktreeList, error) {
	if !repo.r.version.AtLeast(minWorktreeZ) {
		return nil, errcode.New(errcode.Unsupported, "worktree_list needs git %s or newer (found %s)", minWorktreeZ, repo.r.version)
	}
	out, err := repo.git(ctx, &cmd{sub: []string{"worktree", "list"}, opts: []string{"--porcelain", "-z"}, limit: 4 << 20})
	if err != nil {
		return nil, err
	}
	res := &WorktreeList{Worktrees: []Worktree{}}
	var cur *Worktree
	for _, rec := range bytes.Split(out.Stdout, []byte{0}) {
		line := string(rec)
		if line == "" {
			cur = nil
			continue
		}
		k, v, _ := strings.Cut(line, " ")
		if k == "worktree" {
			res.Worktrees = append(res.Worktrees, Worktree{Path: v})
			cur = &res.Worktrees[len(res.Worktrees)-1]
			p := v
			if c, err := filepath.EvalSymlinks(v); err == nil {
				p = c
			}
			cur.Current = p == repo.Root
			cur.InsideRoots = repo.roots.lexicallyInside(p)
			cur.Main = len(res.Worktrees) == 1
			continue
		}
		if cur == nil {
			continue
		}
		switch k {
		case "HEAD":
			cur.Head = abbrev(v)
		case "branch":
			cur.Branch = strings.TrimPrefix(v, "refs/heads/")
		case "detached":
			cur.Detached = true
		case "bare":
			cur.Bare = true
		case "locked":
			cur.Locked, cur.LockReason = true, v
		case "prunable":
			cur.Prunable, cur.PrunableReason = true, v
		}
	}
	return res, nil
}
