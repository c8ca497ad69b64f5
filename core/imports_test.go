package core

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// forbidden import path prefixes for anything under core/.
var forbidden = []string{
	"github.com/wailsapp/",
	"github.com/modelcontextprotocol/",
	"github.com/sluicehq/sluice/app",
	"github.com/sluicehq/sluice/sidecar",
	"fyne.io/systray",
	"github.com/gen2brain/beeep",
}

func TestImports_CoreStaysDomain(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			t.Errorf("parse %s: %v", path, err)
			return nil
		}
		files++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if p == bad || strings.HasPrefix(p, bad) {
					t.Errorf("%s imports %s: core/ must not depend on %s", path, p, bad)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk must have seen the domain packages, or the check proves
	// nothing.
	if files < 20 {
		t.Fatalf("only %d Go files found under core/; is the test running in core/?", files)
	}
}

// TestImports_DetectsViolation proves the checker is not vacuous: a file
// that imports a forbidden package is caught.
func TestImports_DetectsViolation(t *testing.T) {
	src := "package x\nimport _ \"github.com/wailsapp/wails/v2\"\n"
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Unquote(f.Imports[0].Path.Value)
	caught := false
	for _, bad := range forbidden {
		if strings.HasPrefix(p, bad) {
			caught = true
		}
	}
	if !caught {
		t.Fatal("a wails import was not flagged")
	}
}
