package app

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// Every event the app publishes (an Event literal, or the desktop
// window's own EventsEmit) is one of uiEvents and carries the payload
// type the table gives it, so that the TypeScript side, written from the
// table, is what arrives; and every event of the table is published.
func TestUIEvents_PublishedAsDeclared(t *testing.T) {
	declared := map[string]uiEvent{}
	for _, ev := range uiEvents {
		declared[ev.Name] = ev
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	published := map[string]bool{}
	// check compares what a publication carries (nil: nothing) with the
	// table's payload type for name.
	check := func(at string, name string, data ast.Expr) {
		published[name] = true
		ev, ok := declared[name]
		if !ok {
			t.Errorf("%s publishes %q, which uiEvents does not declare", at, name)
			return
		}
		switch {
		case data == nil && ev.Payload != nil:
			t.Errorf("%s publishes %q without the %s it carries", at, name, ev.Payload)
		case data != nil && ev.Payload == nil:
			t.Errorf("%s publishes %q with data; uiEvents says it carries nothing", at, name)
		case data != nil && ev.Payload.Kind() == reflect.Struct:
			lit, ok := data.(*ast.CompositeLit)
			if id, isID := typeIdent(lit); !ok || !isID || id != ev.Payload.Name() {
				t.Errorf("%s publishes %q with something other than a %s literal", at, name, ev.Payload.Name())
			}
		}
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The names a variable holds before it names an event
		// (name := "proposal:updated").
		names := map[string][]string{}
		ast.Inspect(f, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
				return true
			}
			if id, ok := as.Lhs[0].(*ast.Ident); ok {
				if s, ok := stringLit(as.Rhs[0]); ok {
					names[id.Name] = append(names[id.Name], s)
				}
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			if n == nil {
				return false
			}
			at := fset.Position(n.Pos()).String()
			switch n := n.(type) {
			case *ast.CompositeLit:
				if id, ok := typeIdent(n); !ok || id != "Event" {
					return true
				}
				var name ast.Expr
				var data ast.Expr
				for _, e := range n.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					switch key, _ := kv.Key.(*ast.Ident); {
					case key != nil && key.Name == "Name":
						name = kv.Value
					case key != nil && key.Name == "Data":
						data = kv.Value
					}
				}
				if s, ok := stringLit(name); ok {
					check(at, s, data)
				} else if id, ok := name.(*ast.Ident); ok && len(names[id.Name]) > 0 {
					for _, s := range names[id.Name] {
						check(at, s, data)
					}
				} else {
					t.Errorf("%s: an Event whose name the test cannot read", at)
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "EventsEmit" || len(n.Args) < 2 {
					return true
				}
				if s, ok := stringLit(n.Args[1]); ok {
					var data ast.Expr
					if len(n.Args) > 2 {
						data = n.Args[2]
					}
					check(at, s, data)
				}
			}
			return true
		})
	}
	for _, ev := range uiEvents {
		if !published[ev.Name] {
			t.Errorf("uiEvents declares %q, which nothing publishes", ev.Name)
		}
	}
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

func typeIdent(lit *ast.CompositeLit) (string, bool) {
	if lit == nil {
		return "", false
	}
	id, ok := lit.Type.(*ast.Ident)
	if !ok {
		return "", false
	}
	return id.Name, true
}
