package sidecar

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
)

// The repository tools: one repository, read-only, each through the
// hardened runner in core/gitx.

// RepoBriefOut is repo_brief's result.
type RepoBriefOut struct {
	gitx.Brief
	// Recent shadows Brief's own: the brief is read first on every
	// repository, so it carries the last few commits, dated to the day;
	// repo_history has the rest.
	Recent []BriefCommit `json:"recent" jsonschema:"the last commits on HEAD, newest first (repo_history has more)"`
	ErrorField
}

// BriefCommit is one recent commit as repo_brief gives it.
type BriefCommit struct {
	SHA     string   `json:"sha"`
	Author  string   `json:"author"`
	Date    string   `json:"date" jsonschema:"author date, YYYY-MM-DD"`
	Subject string   `json:"subject"`
	Refs    []string `json:"refs,omitempty"`
}

// briefCommits is how many recent commits repo_brief returns.
const briefCommits = 3

func briefOut(b *gitx.Brief) RepoBriefOut {
	out := RepoBriefOut{Brief: *b, Recent: []BriefCommit{}}
	for i, c := range b.Recent {
		if i == briefCommits {
			break
		}
		day, _, _ := strings.Cut(c.Date, "T")
		out.Recent = append(out.Recent, BriefCommit{SHA: c.SHA, Author: c.Author, Date: day, Subject: c.Subject, Refs: c.Refs})
	}
	return out
}

// RepoScopeOut is repo_scope's result.
type RepoScopeOut struct {
	gitx.Scope
	ErrorField
}

// RepoStatusIn selects what repo_status reports.
type RepoStatusIn struct {
	RepoPath  string `json:"repoPath" jsonschema:"the repository or a folder in it"`
	Untracked string `json:"untracked,omitempty" jsonschema:"no, normal (default) or all"`
	Limit     int    `json:"limit,omitempty" jsonschema:"default 200, max 5000"`
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
	RepoPath string   `json:"repoPath" jsonschema:"the repository or a folder in it"`
	Kinds    []string `json:"kinds,omitempty" jsonschema:"branches, remotes, tags (default all)"`
	Pattern  string   `json:"pattern,omitempty" jsonschema:"prefix or glob, e.g. feature/ or origin/"`
	Sort     string   `json:"sort,omitempty" jsonschema:"recent (default) or name"`
	Limit    int      `json:"limit,omitempty" jsonschema:"default 100, max 1000"`
}

// RepoRefsOut is repo_refs's result.
type RepoRefsOut struct {
	gitx.RefList
	ErrorField
}

// RepoBranchStackIn names the branch and base of a stack.
type RepoBranchStackIn struct {
	RepoPath string `json:"repoPath" jsonschema:"the repository or a folder in it"`
	Branch   string `json:"branch,omitempty" jsonschema:"default: the checked-out branch"`
	Base     string `json:"base,omitempty" jsonschema:"default: the default branch"`
}

// RepoBranchStackOut is repo_branch_stack's result.
type RepoBranchStackOut struct {
	gitx.BranchStack
	ErrorField
}

// RepoHistoryIn selects commits.
type RepoHistoryIn struct {
	RepoPath    string   `json:"repoPath" jsonschema:"the repository or a folder in it"`
	Rev         string   `json:"rev,omitempty" jsonschema:"default HEAD"`
	Paths       []string `json:"paths,omitempty" jsonschema:"only commits touching these"`
	Author      string   `json:"author,omitempty" jsonschema:"name or email contains this"`
	Grep        string   `json:"grep,omitempty" jsonschema:"message contains this (case-insensitive)"`
	Since       string   `json:"since,omitempty" jsonschema:"date, e.g. 2024-05-01 or 2 weeks ago"`
	Until       string   `json:"until,omitempty" jsonschema:"date"`
	FirstParent bool     `json:"firstParent,omitempty" jsonschema:"mainline only"`
	WithStats   bool     `json:"withStats,omitempty" jsonschema:"add per-commit file and line counts"`
	Limit       int      `json:"limit,omitempty" jsonschema:"per page (default 20, max 200)"`
	Cursor      string   `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page, same filters"`
}

// RepoHistoryOut is repo_history's result.
type RepoHistoryOut struct {
	gitx.History
	ErrorField
}

// RepoReflogIn names a ref.
type RepoReflogIn struct {
	RepoPath string `json:"repoPath" jsonschema:"the repository or a folder in it"`
	Ref      string `json:"ref,omitempty" jsonschema:"HEAD (default), a branch or a remote-tracking branch"`
	Limit    int    `json:"limit,omitempty" jsonschema:"default 30, max 500"`
}

// RepoReflogOut is repo_reflog's result.
type RepoReflogOut struct {
	gitx.Reflog
	ErrorField
}

// CommitDetailsIn names a commit.
type CommitDetailsIn struct {
	RepoPath string `json:"repoPath" jsonschema:"the repository or a folder in it"`
	Rev      string `json:"rev" jsonschema:"SHA, branch, tag or expression like HEAD~2"`
	MaxFiles int    `json:"maxFiles,omitempty" jsonschema:"default 300, max 3000"`
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
		Description: "Start here on any repository: branch, upstream, an operation in progress, working-tree counts, " +
			"recent commits, conventions and suggested next steps, in one small answer.",
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
		return briefOut(b), nil
	})

	addTool(g.s.server, &mcp.Tool{
		Name:  "repo_scope",
		Title: "Repository scope",
		Description: "What a repository is: its root and allowed root, git directory, kind (worktree, submodule, bare, " +
			"shallow), remotes, size, layout and languages. Use it when you need the repository's shape rather " +
			"than its state.",
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
		Description: "git status as data: every staged, unstaged, untracked or unmerged path. Use it when repo_brief's " +
			"counts are not enough; worktree_changes adds line counts.",
		Annotations: readOnly("Repository status"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in RepoStatusIn) (RepoStatusOut, error) {
		limit := in.Limit
		if limit <= 0 {
			limit = defaultStatusLimit
		}
		if limit > maxStatusLimit {
			return RepoStatusOut{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: "limit must be at most 5000"}
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
		Description: "Branches, remote-tracking branches and tags with their commit, upstream, ahead/behind and worktree. " +
			"Use it to pick a branch or to see what is pushed.",
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
		Description: "A branch's stack of dependent branches: what it builds on, what builds on it, and which need a " +
			"restack. Use it before rebasing stacked branches.",
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
		Description: "Commits from a revision, newest first, paged with nextCursor; filter by paths, author, message or " +
			"dates. Use it to find when or why something changed.",
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
		Description: "Where a ref has been (checkouts, commits, resets, rebases) and the commits no branch holds any more, " +
			"with how to keep them. Use it after something went missing.",
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
		Description: "One commit in full: message, parents, refs and each changed file with line counts. Use it to inspect " +
			"a commit; diff_text with base <sha>^ and target <sha> gives its patch.",
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
