package sidecar

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/gitx"
)

// The repository tools: one repository, read-only, each through the
// hardened runner in core/gitx.

// RepoBriefOut is repo_brief's result.
type RepoBriefOut struct {
	gitx.Brief
	ErrorField
}

// RepoScopeOut is repo_scope's result.
type RepoScopeOut struct {
	gitx.Scope
	ErrorField
}

// RepoStatusIn selects what repo_status reports.
type RepoStatusIn struct {
	RepoPath  string `json:"repoPath" jsonschema:"absolute path of the repository (or of a directory inside it)"`
	Untracked string `json:"untracked,omitempty" jsonschema:"untracked files: no, normal (directories collapsed; default) or all"`
	Limit     int    `json:"limit,omitempty" jsonschema:"most paths to return (default 200, max 5000); counts are always complete"`
}

// RepoStatusOut is repo_status's result.
type RepoStatusOut struct {
	gitx.StatusResult
	ErrorField
}

const (
	defaultStatusLimit = 200
	maxStatusLimit     = 5000
)

// RepoRefsIn selects refs.
type RepoRefsIn struct {
	RepoPath string   `json:"repoPath" jsonschema:"absolute path of the repository (or of a directory inside it)"`
	Kinds    []string `json:"kinds,omitempty" jsonschema:"any of branches, remotes, tags (default all)"`
	Pattern  string   `json:"pattern,omitempty" jsonschema:"only refs under this prefix, e.g. feature/ or origin/ (matched by whole path components or a glob)"`
	Sort     string   `json:"sort,omitempty" jsonschema:"recent (newest commit first; default) or name"`
	Limit    int      `json:"limit,omitempty" jsonschema:"most refs to return (default 100, max 1000)"`
}

// RepoRefsOut is repo_refs's result.
type RepoRefsOut struct {
	gitx.RefList
	ErrorField
}

// RepoBranchStackIn names the branch and base of a stack.
type RepoBranchStackIn struct {
	RepoPath string `json:"repoPath" jsonschema:"absolute path of the repository (or of a directory inside it)"`
	Branch   string `json:"branch,omitempty" jsonschema:"the branch to place in its stack (default: the checked-out branch)"`
	Base     string `json:"base,omitempty" jsonschema:"the branch stacks grow from (default: the default branch)"`
}

// RepoBranchStackOut is repo_branch_stack's result.
type RepoBranchStackOut struct {
	gitx.BranchStack
	ErrorField
}

// RepoHistoryIn selects commits.
type RepoHistoryIn struct {
	RepoPath    string   `json:"repoPath" jsonschema:"absolute path of the repository (or of a directory inside it)"`
	Rev         string   `json:"rev,omitempty" jsonschema:"where to start: a branch, tag, SHA or expression like HEAD~3 (default HEAD)"`
	Paths       []string `json:"paths,omitempty" jsonschema:"only commits touching these paths (relative to the repository root)"`
	Author      string   `json:"author,omitempty" jsonschema:"only commits whose author name or email contains this text"`
	Grep        string   `json:"grep,omitempty" jsonschema:"only commits whose message contains this text (case-insensitive)"`
	Since       string   `json:"since,omitempty" jsonschema:"only commits after this date (2024-05-01, 2 weeks ago, …)"`
	Until       string   `json:"until,omitempty" jsonschema:"only commits before this date"`
	FirstParent bool     `json:"firstParent,omitempty" jsonschema:"follow only the first parent of merges (the mainline)"`
	WithStats   bool     `json:"withStats,omitempty" jsonschema:"add files changed, insertions and deletions per commit"`
	Limit       int      `json:"limit,omitempty" jsonschema:"commits per page (default 20, max 200)"`
	Cursor      string   `json:"cursor,omitempty" jsonschema:"nextCursor from the previous page; repeat the same filters with it"`
}

// RepoHistoryOut is repo_history's result.
type RepoHistoryOut struct {
	gitx.History
	ErrorField
}

// RepoReflogIn names a ref.
type RepoReflogIn struct {
	RepoPath string `json:"repoPath" jsonschema:"absolute path of the repository (or of a directory inside it)"`
	Ref      string `json:"ref,omitempty" jsonschema:"HEAD (default), a branch, or a remote-tracking branch"`
	Limit    int    `json:"limit,omitempty" jsonschema:"most entries to return, newest first (default 30, max 500)"`
}

// RepoReflogOut is repo_reflog's result.
type RepoReflogOut struct {
	gitx.Reflog
	ErrorField
}

// CommitDetailsIn names a commit.
type CommitDetailsIn struct {
	RepoPath string `json:"repoPath" jsonschema:"absolute path of the repository (or of a directory inside it)"`
	Rev      string `json:"rev" jsonschema:"the commit: SHA, branch, tag or expression like HEAD~2"`
	MaxFiles int    `json:"maxFiles,omitempty" jsonschema:"most changed files to list (default 300, max 3000)"`
}

// CommitDetailsOut is commit_details's result.
type CommitDetailsOut struct {
	gitx.CommitDetails
	ErrorField
}

func (g *gitTools) registerRepo() {
	addTool(g.s.server, &mcp.Tool{
		Name:  "repo_brief",
		Title: "Repository brief",
		Description: "Start here: one call for situational awareness of a repository. Branch and HEAD, upstream ahead/behind, " +
			"a merge/rebase/cherry-pick in progress, working-tree counts, stashes, submodule drift, the latest commits, " +
			"conventions (default branch, share of Conventional Commits) and up to three suggested next steps. " +
			"Read-only: changes nothing and runs nothing the repository configures.",
		Annotations: readOnly("Repository brief"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in RepoIn) (RepoBriefOut, error) {
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return RepoBriefOut{}, err
		}
		b, err := repo.Brief(ctx)
		if err != nil {
			return RepoBriefOut{}, err
		}
		return RepoBriefOut{Brief: *b}, nil
	})

	addTool(g.s.server, &mcp.Tool{
		Name:  "repo_scope",
		Title: "Repository scope",
		Description: "What a repository is and what you may do with it: canonical root and the allowed root that contains it, " +
			"git directory, linked worktree / submodule / bare / shallow, remotes (credentials removed), tracked file count, " +
			"top-level layout, languages, and any filters Sluice does not run.",
		Annotations: readOnly("Repository scope"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in RepoIn) (RepoScopeOut, error) {
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return RepoScopeOut{}, err
		}
		s, err := repo.Scope(ctx)
		if err != nil {
			return RepoScopeOut{}, err
		}
		return RepoScopeOut{Scope: *s}, nil
	})

	addTool(g.s.server, &mcp.Tool{
		Name:  "repo_status",
		Title: "Repository status",
		Description: "git status as data: branch, upstream ahead/behind, stash count, counts, and every staged, unstaged, " +
			"untracked or unmerged path (up to limit). Submodules are compared by commit. For line counts use " +
			"worktree_changes; for content, diff_text.",
		Annotations: readOnly("Repository status"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in RepoStatusIn) (RepoStatusOut, error) {
		limit := in.Limit
		if limit <= 0 {
			limit = defaultStatusLimit
		}
		if limit > maxStatusLimit {
			return RepoStatusOut{}, &gitx.Error{Code: gitx.CodeInvalidArgument, Msg: "limit must be at most 5000"}
		}
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return RepoStatusOut{}, err
		}
		st, err := repo.Status(ctx, gitx.StatusOptions{Untracked: in.Untracked, Limit: limit})
		if err != nil {
			return RepoStatusOut{}, err
		}
		return RepoStatusOut{StatusResult: *st}, nil
	})

	addTool(g.s.server, &mcp.Tool{
		Name:  "repo_refs",
		Title: "Branches, remotes and tags",
		Description: "List branches, remote-tracking branches and tags with their commit, date and subject; local branches " +
			"with their upstream and ahead/behind (as of the last fetch) and the worktree that has them checked out.",
		Annotations: readOnly("Branches, remotes and tags"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in RepoRefsIn) (RepoRefsOut, error) {
		if err := checkRevs("pattern", in.Pattern); err != nil {
			return RepoRefsOut{}, err
		}
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return RepoRefsOut{}, err
		}
		r, err := repo.Refs(ctx, gitx.RefsOptions{Kinds: in.Kinds, Pattern: in.Pattern, Sort: in.Sort, Limit: in.Limit})
		if err != nil {
			return RepoRefsOut{}, err
		}
		return RepoRefsOut{RefList: *r}, nil
	})

	addTool(g.s.server, &mcp.Tool{
		Name:  "repo_branch_stack",
		Title: "Branch stack",
		Description: "Place a branch in its stack of dependent branches: the local branches it builds on from the base " +
			"(with commits per layer), the branches built on top of it, branches forked from an older version of the " +
			"stack (they need a restack), and how far the base has moved ahead.",
		Annotations: readOnly("Branch stack"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in RepoBranchStackIn) (RepoBranchStackOut, error) {
		if err := checkRevs("branch", in.Branch, "base", in.Base); err != nil {
			return RepoBranchStackOut{}, err
		}
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return RepoBranchStackOut{}, err
		}
		st, err := repo.BranchStack(ctx, in.Branch, in.Base)
		if err != nil {
			return RepoBranchStackOut{}, err
		}
		return RepoBranchStackOut{BranchStack: *st}, nil
	})

	addTool(g.s.server, &mcp.Tool{
		Name:  "repo_history",
		Title: "Commit history",
		Description: "Commits reachable from a revision, newest first, one page at a time: abbreviated id, author, date, " +
			"subject, refs; optionally per-commit stats. Filter by paths, author, message text or dates. Pass nextCursor " +
			"back (with the same filters) for the next page; pages stay consistent even if the branch moves.",
		Annotations: readOnly("Commit history"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in RepoHistoryIn) (RepoHistoryOut, error) {
		if err := checkRevs("rev", in.Rev); err != nil {
			return RepoHistoryOut{}, err
		}
		if _, err := gitx.CheckPaths("paths", in.Paths); err != nil {
			return RepoHistoryOut{}, err
		}
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return RepoHistoryOut{}, err
		}
		h, err := repo.History(ctx, gitx.HistoryOptions{Rev: in.Rev, Paths: in.Paths, Author: in.Author, Grep: in.Grep,
			Since: in.Since, Until: in.Until, FirstParent: in.FirstParent, WithStats: in.WithStats, Limit: in.Limit, Cursor: in.Cursor})
		if err != nil {
			return RepoHistoryOut{}, err
		}
		return RepoHistoryOut{History: *h}, nil
	})

	addTool(g.s.server, &mcp.Tool{
		Name:  "repo_reflog",
		Title: "Reflog and recovery",
		Description: "Where a ref (HEAD by default) has been: every checkout, commit, reset, rebase and merge, newest first, " +
			"as selectors like HEAD@{2}. Lists commits that no branch or tag contains any more (lost by a reset, a rebase " +
			"or a detached HEAD) with how to keep them. Use it after something went missing.",
		Annotations: readOnly("Reflog and recovery"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in RepoReflogIn) (RepoReflogOut, error) {
		if err := checkRevs("ref", in.Ref); err != nil {
			return RepoReflogOut{}, err
		}
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return RepoReflogOut{}, err
		}
		r, err := repo.Reflog(ctx, in.Ref, in.Limit)
		if err != nil {
			return RepoReflogOut{}, err
		}
		return RepoReflogOut{Reflog: *r}, nil
	})

	addTool(g.s.server, &mcp.Tool{
		Name:  "commit_details",
		Title: "Commit details",
		Description: "One commit in full: id, parents, author and committer, message, refs, and every changed file with " +
			"status and line counts (a merge is compared with its first parent). For the patch itself use diff_text " +
			"with base <sha>^ and target <sha>.",
		Annotations: readOnly("Commit details"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in CommitDetailsIn) (CommitDetailsOut, error) {
		if err := gitx.CheckRev("rev", in.Rev); err != nil {
			return CommitDetailsOut{}, err
		}
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return CommitDetailsOut{}, err
		}
		d, err := repo.CommitDetails(ctx, in.Rev, in.MaxFiles)
		if err != nil {
			return CommitDetailsOut{}, err
		}
		return CommitDetailsOut{CommitDetails: *d}, nil
	})
}
