package sidecar

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/gitx"
)

// Working-tree, worktree, submodule and conflict tools.

// WorktreeChangesIn selects uncommitted changes.
type WorktreeChangesIn struct {
	RepoPath         string   `json:"repoPath" jsonschema:"absolute path of the repository (or of a directory inside it)"`
	Paths            []string `json:"paths,omitempty" jsonschema:"only these paths (relative to the repository root)"`
	ExcludeUntracked bool     `json:"excludeUntracked,omitempty" jsonschema:"leave untracked files out"`
	Limit            int      `json:"limit,omitempty" jsonschema:"most paths to return (default 300, max 3000); totals are always complete"`
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
	RepoPath  string `json:"repoPath" jsonschema:"absolute path of the repository (or of a directory inside it)"`
	Theirs    string `json:"theirs" jsonschema:"merge: the branch or commit to merge in; rebase: the branch or commit to rebase onto"`
	Ours      string `json:"ours,omitempty" jsonschema:"the branch that would change (default HEAD)"`
	Operation string `json:"operation,omitempty" jsonschema:"merge (default) or rebase"`
}

// ConflictPreflightOut is repo_conflict_preflight's result.
type ConflictPreflightOut struct {
	gitx.Preflight
	ErrorField
}

// ConflictReadIn selects conflicted paths.
type ConflictReadIn struct {
	RepoPath        string   `json:"repoPath" jsonschema:"absolute path of the repository (or of a directory inside it)"`
	Paths           []string `json:"paths,omitempty" jsonschema:"only these unmerged paths"`
	MaxBytesPerSide int      `json:"maxBytesPerSide,omitempty" jsonschema:"most bytes of base, ours and theirs each (default 4096, max 65536), cut on a line boundary"`
	Limit           int      `json:"limit,omitempty" jsonschema:"most files (default 20, max 200)"`
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
		Description: "Uncommitted changes with line counts: for each path, what is staged (HEAD → index) and what is " +
			"unstaged (index → working tree), plus untracked files, with totals. Follow up with diff_text on the paths " +
			"that matter.",
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
		Description: "Every working tree of the repository (git worktree): path, branch or detached commit, locked and " +
			"prunable state, which one repoPath names, and whether each lies inside the allowed roots.",
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
		Description: "Every submodule in .gitmodules: path, URL (credentials removed), the commit the superproject records, " +
			"the commit checked out, and a state: clean, drifted (with ahead/behind), uninitialized, missing; plus " +
			"uncommitted changes inside it.",
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
		Description: "Predict a merge of theirs into ours, or a rebase of ours onto theirs, before proposing it: up to date, " +
			"fast-forward, clean, or the paths that would conflict and why (git merge-tree). Nothing is touched: not refs, " +
			"index, working tree, nor even the object store. For a rebase, also the commits that would be replayed and " +
			"which of them touch each conflict.",
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
		Description: "The conflict in progress as data: the operation (merge, rebase, cherry-pick, revert), what ours and " +
			"theirs mean in it, and for each unmerged path its kind, the base, ours and theirs versions (bounded; binary " +
			"flagged) and the line ranges of the conflict markers in the working-tree file.",
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
