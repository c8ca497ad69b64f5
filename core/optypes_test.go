package core

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestOperationTypes_OnlyTheirPackagesAskWhichOneItIs: what an operation
// knows is asked of it (core/proposal's methods and definitions), so no
// code outside core/proposal and core/apply switches on, asserts or
// compares an operation's type: no `case *proposal.XArgs`, no
// `.(*proposal.XArgs)` and no `== proposal.OpX`. Naming an operation (a
// tool table's row) is not asking which one it is.
func TestOperationTypes_OnlyTheirPackagesAskWhichOneItIs(t *testing.T) {
	fset := token.NewFileSet()
	var found []string
	files := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("..", path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel == ".":
				return nil
			case strings.HasPrefix(d.Name(), "."), d.Name() == "node_modules", d.Name() == "testdata",
				rel == "frontend", rel == "build", rel == "core/proposal", rel == "core/apply":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		found = append(found, opTypeQuestions(fset, rel, f)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d files; the walk missed the tree", files)
	}
	for _, f := range found {
		t.Errorf("%s: asks which operation it is outside core/proposal and core/apply", f)
	}
}

// opTypeQuestions lists where f switches on, asserts or compares an
// operation's type.
func opTypeQuestions(fset *token.FileSet, rel string, f *ast.File) []string {
	var out []string
	name := "proposal" // the import's name in f
	for _, imp := range f.Imports {
		if imp.Path.Value == `"github.com/sluicehq/sluice/core/proposal"` && imp.Name != nil {
			name = imp.Name.Name
		}
	}
	argsType := func(e ast.Expr) bool {
		if s, ok := e.(*ast.StarExpr); ok {
			e = s.X
		}
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		x, ok := sel.X.(*ast.Ident)
		return ok && x.Name == name && strings.HasSuffix(sel.Sel.Name, "Args") && sel.Sel.Name != "Args"
	}
	opConst := func(e ast.Expr) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		x, ok := sel.X.(*ast.Ident)
		return ok && x.Name == name && strings.HasPrefix(sel.Sel.Name, "Op") && len(sel.Sel.Name) > 2 && sel.Sel.Name[2] >= 'A' && sel.Sel.Name[2] <= 'Z'
	}
	at := func(n ast.Node) string { return rel + ":" + itoa(fset.Position(n.Pos()).Line) }
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.TypeAssertExpr:
			if n.Type != nil && argsType(n.Type) {
				out = append(out, at(n))
			}
		case *ast.CaseClause:
			for _, e := range n.List {
				if argsType(e) || opConst(e) {
					out = append(out, at(n))
				}
			}
		case *ast.BinaryExpr:
			if (n.Op == token.EQL || n.Op == token.NEQ) && (opConst(n.X) || opConst(n.Y)) {
				out = append(out, at(n))
			}
		}
		return true
	})
	return out
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
