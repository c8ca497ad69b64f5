package sidecar

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/gitx"
)

// Working-tree, worktree, submodule and conflict tools.

// WorktreeChangesIn selects uncommitted changes.
type WorktreeChangesIn struct {
	RepoPath         string   `json:"repoPath" jsonschema:"the repository or a folder in it"`
	Paths            []string `json:"paths,omitempty" jsonschema:"relative to the repository root"`
	ExcludeUntracked bool     `json:"excludeUntracked,omitempty" jsonschema:"leave untracked files out"`
	Limit            int      `json:"limit,omitempty" jsonschema:"default 300, max 3000"`
}

// WorktreeChangesOut is worktree_changes's result.
type WorktreeChangesOut struct {
	gitx.WorktreeChanges
	ErrorField
}

// WorktreeListOut is worktree_list's result.
type WorktreeListOut struct {
	gitx.WorktreeList
	ErrorField
}

// SubmoduleStatusOut is submodule_status's result.
type SubmoduleStatusOut struct {
	gitx.SubmoduleList
	ErrorField
}

// ConflictPreflightIn names the two sides.
type ConflictPreflightIn struct {
	RepoPath  string `json:"repoPath" jsonschema:"the repository or a folder in it"`
	Theirs    string `json:"theirs" jsonschema:"merge: what to merge in; rebase: what to rebase onto"`
	Ours      string `json:"ours,omitempty" jsonschema:"default HEAD"`
	Operation string `json:"operation,omitempty" jsonschema:"merge (default) or rebase"`
}

// ConflictPreflightOut is repo_conflict_preflight's result.
type ConflictPreflightOut struct {
	gitx.Preflight
	ErrorField
}

// ConflictReadIn selects conflicted paths.
type ConflictReadIn struct {
	RepoPath        string   `json:"repoPath" jsonschema:"the repository or a folder in it"`
	Paths           []string `json:"paths,omitempty" jsonschema:"only these unmerged paths"`
	MaxBytesPerSide int      `json:"maxBytesPerSide,omitempty" jsonschema:"per side (default 4096, max 65536)"`
	Limit           int      `json:"limit,omitempty" jsonschema:"default 20, max 200"`
}

// ConflictReadOut is conflict_read's result.
type ConflictReadOut struct {
	gitx.ConflictState
	ErrorField
}

func (g *gitTools) registerWorktree() {
	addTool(g.s.server, &mcp.Tool{
		Name:  "worktree_changes",
		Title: "Uncommitted changes",
		Description: "Uncommitted changes with line counts: staged and unstaged per path, untracked files, totals. Use it " +
			"before propose_commit to choose paths.",
		Annotations: readOnly("Uncommitted changes"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in WorktreeChangesIn) (WorktreeChangesOut, error) {
		if _, err := gitx.CheckPaths("paths", in.Paths); err != nil {
			return WorktreeChangesOut{}, err
		}
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return WorktreeChangesOut{}, err
		}
		c, err := repo.WorktreeChanges(ctx, in.Paths, !in.ExcludeUntracked, in.Limit)
		if err != nil {
			return WorktreeChangesOut{}, err
		}
		return WorktreeChangesOut{WorktreeChanges: *c}, nil
	})

	addTool(g.s.server, &mcp.Tool{
		Name:  "worktree_list",
		Title: "Worktrees",
		Description: "Every working tree of the repository with its branch, state and whether it lies inside the allowed " +
			"roots. Use it when a branch is checked out elsewhere, or before propose_worktree (toolset propose_more).",
		Annotations: readOnly("Worktrees"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in RepoIn) (WorktreeListOut, error) {
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return WorktreeListOut{}, err
		}
		w, err := repo.Worktrees(ctx)
		if err != nil {
			return WorktreeListOut{}, err
		}
		return WorktreeListOut{WorktreeList: *w}, nil
	})

	addTool(g.s.server, &mcp.Tool{
		Name:  "submodule_status",
		Title: "Submodules",
		Description: "Every submodule: the commit recorded and the one checked out, drift, uninitialized or missing, local " +
			"changes. Use it before propose_submodule_pointer (toolset propose_more).",
		Annotations: readOnly("Submodules"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in RepoIn) (SubmoduleStatusOut, error) {
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return SubmoduleStatusOut{}, err
		}
		s, err := repo.Submodules(ctx)
		if err != nil {
			return SubmoduleStatusOut{}, err
		}
		return SubmoduleStatusOut{SubmoduleList: *s}, nil
	})

	addTool(g.s.server, &mcp.Tool{
		Name:  "repo_conflict_preflight",
		Title: "Merge/rebase preflight",
		Description: "Predict a merge or a rebase without touching anything: up to date, fast-forward, clean, or the paths " +
			"that would conflict and why. Use it before propose_merge or propose_rebase.",
		Annotations: readOnly("Merge/rebase preflight"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in ConflictPreflightIn) (ConflictPreflightOut, error) {
		if err := gitx.CheckRev("theirs", in.Theirs); err != nil {
			return ConflictPreflightOut{}, err
		}
		if err := checkRevs("ours", in.Ours); err != nil {
			return ConflictPreflightOut{}, err
		}
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return ConflictPreflightOut{}, err
		}
		p, err := repo.ConflictPreflight(ctx, in.Ours, in.Theirs, in.Operation)
		if err != nil {
			return ConflictPreflightOut{}, err
		}
		return ConflictPreflightOut{Preflight: *p}, nil
	})

	addTool(g.s.server, &mcp.Tool{
		Name:  "conflict_read",
		Title: "Read a conflict",
		Description: "The conflict in progress as data: what ours and theirs mean, and each unmerged path's base, ours and " +
			"theirs with the conflict marker lines. Use it when a merge or rebase has stopped on conflicts.",
		Annotations: readOnly("Read a conflict"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in ConflictReadIn) (ConflictReadOut, error) {
		if _, err := gitx.CheckPaths("paths", in.Paths); err != nil {
			return ConflictReadOut{}, err
		}
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return ConflictReadOut{}, err
		}
		c, err := repo.ConflictRead(ctx, in.Paths, in.MaxBytesPerSide, in.Limit)
		if err != nil {
			return ConflictReadOut{}, err
		}
		return ConflictReadOut{ConflictState: *c}, nil
	})
}
