package sidecar

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/gitx"
)

// DiffTextIn says what to compare and how much to return.
type DiffTextIn struct {
	RepoPath string `json:"repoPath" jsonschema:"absolute path of the repository (or of a directory inside it)"`
	gitx.DiffSpec
	ContextLines *int `json:"contextLines,omitempty" jsonschema:"lines of context around each change (default 3, max 100)"`
	MaxBytes     int  `json:"maxBytes,omitempty" jsonschema:"most bytes of diff to return (default 32768, max 1048576); the cut is on a line boundary and reported"`
}

// DiffTextOut is diff_text's result.
type DiffTextOut struct {
	gitx.DiffText
	ErrorField
}

// DiffSemanticIn says what to compare.
type DiffSemanticIn struct {
	RepoPath string `json:"repoPath" jsonschema:"absolute path of the repository (or of a directory inside it)"`
	gitx.DiffSpec
	MaxFiles int `json:"maxFiles,omitempty" jsonschema:"most files to look at (default 50, max 300)"`
}

// DiffSemanticOut is diff_semantic's result.
type DiffSemanticOut struct {
	gitx.SemanticDiff
	ErrorField
}

// checkSpec validates every revision and path before anything runs.
func checkSpec(s gitx.DiffSpec) error {
	if err := checkRevs("base", s.Base, "target", s.Target); err != nil {
		return err
	}
	_, err := gitx.CheckPaths("paths", s.Paths)
	return err
}

func (g *gitTools) registerDiff() {
	addTool(g.s.server, &mcp.Tool{
		Name:  "diff_text",
		Title: "Text diff",
		Description: "A unified diff, bounded: by default unstaged changes (index → working tree); staged for HEAD → index; " +
			"base alone for base → working tree; base and target for two revisions; mergeBase for what target added " +
			"since it forked from base. Cut on a line boundary at maxBytes, with truncated, totalBytes, totalLines and " +
			"the files left out. Binary files show as 'Binary files … differ'; no textconv or external diff runs.",
		Annotations: readOnly("Text diff"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in DiffTextIn) (DiffTextOut, error) {
		if err := checkSpec(in.DiffSpec); err != nil {
			return DiffTextOut{}, err
		}
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return DiffTextOut{}, err
		}
		lines := 3
		if in.ContextLines != nil {
			lines = *in.ContextLines
		}
		d, err := repo.DiffText(ctx, in.DiffSpec, lines, in.MaxBytes)
		if err != nil {
			return DiffTextOut{}, err
		}
		return DiffTextOut{DiffText: *d}, nil
	})

	addTool(g.s.server, &mcp.Tool{
		Name:  "diff_semantic",
		Title: "Structural diff",
		Description: "What changed, declaration by declaration, for Go files (parsed with go/parser): functions, methods, " +
			"types, vars, consts and imports added, removed, modified (with signature changes flagged) or only " +
			"reformatted, with line ranges. Every other file, and any Go file that does not parse, is marked " +
			"fallbackToText with the reason and ready diff_text arguments. Same comparison arguments as diff_text.",
		Annotations: readOnly("Structural diff"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in DiffSemanticIn) (DiffSemanticOut, error) {
		if err := checkSpec(in.DiffSpec); err != nil {
			return DiffSemanticOut{}, err
		}
		repo, err := g.open(ctx, in.RepoPath)
		if err != nil {
			return DiffSemanticOut{}, err
		}
		d, err := repo.DiffSemantic(ctx, in.DiffSpec, in.MaxFiles)
		if err != nil {
			return DiffSemanticOut{}, err
		}
		return DiffSemanticOut{SemanticDiff: *d}, nil
	})
}
