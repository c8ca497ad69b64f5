package sidecar

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// TestErrors_EveryCodeHasANextStep: every stable code in errors.go a
// model can act on has a next step, so a new code cannot be added without
// saying what to do about it.
func TestErrors_EveryCodeHasANextStep(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		vs, ok := node.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if !strings.HasPrefix(name.Name, "Code") || i >= len(vs.Values) {
				continue
			}
			lit, ok := vs.Values[i].(*ast.BasicLit)
			if !ok {
				continue
			}
			code := strings.Trim(lit.Value, `"`)
			n++
			if code == CodeInternal {
				continue // a bug, not something a model can act on
			}
			if nextSteps[code] == "" {
				t.Errorf("%s (%s) has no next step in nextSteps", name.Name, code)
			}
		}
		return true
	})
	if n < 20 {
		t.Fatalf("found only %d codes in errors.go: the parse is wrong", n)
	}
}

// TestErrors_RealFailures_NameTheNextStep calls tools the way a model gets
// them wrong and checks that each error message says what to do next.
func TestErrors_RealFailures_NameTheNextStep(t *testing.T) {
	r := gitxtest.Basic(t, 3)
	root := filepath.Dir(r.Dir)
	plain := filepath.Join(root, "plain")
	if err := os.MkdirAll(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	_, cfg := testEnv(t, root)
	cfg.WorkspaceImage = ""
	s, err := New(Options{Config: cfg, Toolsets: []string{"git", "propose", "workspace"}, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectInMemory(t, s)
	for _, c := range []struct {
		tool, code string
		args       map[string]any
	}{
		{"repo_brief", CodePathOutsideRoots, map[string]any{"repoPath": "/etc"}},
		{"repo_brief", CodeNotARepository, map[string]any{"repoPath": plain}},
		{"repo_brief", CodeInvalidArgument, map[string]any{"repoPath": "relative"}},
		{"diff_text", CodeInvalidArgument, map[string]any{"repoPath": r.Dir, "base": "-x"}},
		{"diff_text", CodeInvalidArgument, map[string]any{"repoPath": r.Dir, "base": "nosuchrev"}},
		{"repo_status", CodeInvalidArgument, map[string]any{"repoPath": r.Dir, "limit": 99999}},
		{"commit_details", CodeInvalidArgument, map[string]any{"repoPath": r.Dir, "rev": "nosuch"}},
		{"repo_history", CodeInvalidArgument, map[string]any{"repoPath": r.Dir, "cursor": "garbage"}},
		{"propose_commit", CodeGatewayUnavailable, map[string]any{"repoPath": r.Dir, "reason": "x", "message": "m", "stageAll": true}},
		{"proposal_status", CodeGatewayUnavailable, map[string]any{"proposalId": "abc"}},
		{"workspace_status", CodeUnsupported, map[string]any{"workspaceId": "ws-1"}},
	} {
		e := gitCallErr(t, cs, c.tool, c.args)
		if e.Code != c.code {
			t.Errorf("%s %v: code %s, want %s (%s)", c.tool, c.args, e.Code, c.code, e.Message)
			continue
		}
		if !nextStepCue.MatchString(e.Message) {
			t.Errorf("%s %v: %q names no next step", c.tool, c.args, e.Message)
		}
	}
}
