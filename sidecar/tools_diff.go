package sidecar

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/gitx"
)

// DiffTextIn says what to compare and how much to return.
type DiffTextIn struct {
	RepoPath string `json:"repoPath" jsonschema:"the repository or a folder in it"`
	gitx.DiffSpec
	ContextLines *int `json:"contextLines,omitempty" jsonschema:"default 3, max 100"`
	MaxBytes     int  `json:"maxBytes,omitempty" jsonschema:"default 32768, max 1048576; cut on a line boundary"`
}

// DiffTextOut is diff_text's result.
type DiffTextOut struct {
	gitx.DiffText
	ErrorField
}

// DiffSemanticIn says what to compare.
type DiffSemanticIn struct {
	RepoPath string `json:"repoPath" jsonschema:"the repository or a folder in it"`
	gitx.DiffSpec
	MaxFiles int `json:"maxFiles,omitempty" jsonschema:"default 50, max 300"`
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

// diffSchema is the input schema of a diff tool with the comparison's
// arguments described for a model: the tools' descriptions already say
// which combination compares what, so each argument needs only a word.
func diffSchema[In any]() *jsonschema.Schema {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		panic(err)
	}
	for name, d := range map[string]string{
		"base":      "old side, a revision (branch, tag, SHA, HEAD~2)",
		"target":    "new side, a revision; needs base",
		"staged":    "compare with the index",
		"mergeBase": "compare from where target forked from base",
		"paths":     "files or folders, relative to the root",
	} {
		s.Properties[name].Description = d
	}
	return s
}

func (g *gitTools) registerDiff() {
	addTool(g.s.server, &mcp.Tool{
		Name:  "diff_text",
		Title: "Text diff",
		Description: "A bounded unified diff: unstaged by default; staged; base against the working tree or target; " +
			"mergeBase for what target added since it forked. Use it to read the changes themselves.",
		InputSchema: derived("diff_text", diffSchema[DiffTextIn]),
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
		Description: "Go changes declaration by declaration: added, removed, modified (signature changes flagged) or only " +
			"reformatted; other files come back with diff_text arguments. Use it to review Go changes quickly.",
		InputSchema: derived("diff_semantic", diffSchema[DiffSemanticIn]),
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
