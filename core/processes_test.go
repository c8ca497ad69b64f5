package core

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// reviewedPrograms are the only processes Sluice's own code (tests aside)
// starts outside core/gitx, by file and the expression that names the
// program. git is not among them: core/gitx is the one place that starts
// git, under a named, pinned profile (core/gitx/profile.go), so that a
// hardening fix cannot land in one runner and miss another. A new entry
// here is a reviewed decision.
var reviewedPrograms = map[string][]string{
	// The benchmark harness runs `go test`.
	"build/bench/main.go": {`"go"`},
	// The egress firewall of granted workspaces.
	"core/workspace/egress.go": {"f.iptables", "f.iptables"},
	// Confined sessions: bubblewrap builds the agent's sandbox (and the
	// session sidecar's view); doctor and the tests try it through
	// session.ProbeBubblewrap.
	"core/session/bwrap.go":      {"path"},
	"core/session/bwrapstart.go": {"bwrap"},
	"app/run.go":                 {"bwrap"},
	// Inside the sandbox, the agent itself.
	"sidecar/sandbox_init.go": {"argv[0]"},
	// sluice-sidecar started for stdio becomes sluice-sidecar-stdio of its
	// own build (execve of the descriptor it checked), and a serving
	// binary of another build goes back to sluice-sidecar.
	"sidecar/serve_exec_linux.go": {`"/proc/self/fd/" + strconv.Itoa(fd)`, "from"},
	// The local registry and image that workspace tests use.
	"core/workspace/workspacetest/registry.go": {"bin"},
	"core/workspace/workspacetest/image.go":    {`"/bin/busybox"`},
	// The Kubernetes that workspace tests on Kubernetes use: the control
	// plane's binaries, the node's containerd (image imports) and the
	// cluster script that says whether this host can run a node.
	"core/workspace/kube/kubetest/controlplane.go": {"path"},
	"core/workspace/kube/kubetest/image.go":        {"c.ctrPath"},
	"core/workspace/kube/kubetest/node.go":         {"script"},
}

// processStarts lists, for one parsed file, every call that starts a
// process (os/exec's Command, CommandContext and a Cmd literal;
// os.StartProcess; syscall's ForkExec, Exec and StartProcess) with the
// expression naming its program.
func processStarts(fset *token.FileSet, f *ast.File) []string {
	names := map[string]string{} // local name → import path
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if p != "os/exec" && p != "os" && p != "syscall" && p != "golang.org/x/sys/unix" {
			continue
		}
		n := filepath.Base(p)
		if imp.Name != nil {
			n = imp.Name.Name
		}
		names[n] = p
	}
	expr := func(e ast.Expr) string {
		var b strings.Builder
		_ = printer.Fprint(&b, fset, e)
		return b.String()
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			path, fn := names[pkg.Name], sel.Sel.Name
			prog := -1
			switch {
			case path == "os/exec" && fn == "Command":
				prog = 0
			case path == "os/exec" && fn == "CommandContext":
				prog = 1
			case path == "os" && fn == "StartProcess",
				(path == "syscall" || path == "golang.org/x/sys/unix") && (fn == "ForkExec" || fn == "Exec" || fn == "StartProcess"):
				prog = 0
			}
			if prog >= 0 && len(n.Args) > prog {
				found = append(found, expr(n.Args[prog]))
			}
		case *ast.CompositeLit:
			if sel, ok := n.Type.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok && names[pkg.Name] == "os/exec" && sel.Sel.Name == "Cmd" {
					found = append(found, "exec.Cmd literal")
				}
			}
		}
		return true
	})
	return found
}

// TestProcesses_OnlyGitxStartsGit walks every Go file of the module that
// is not a test and fails on a process started anywhere but core/gitx
// that is not a reviewed program above.
func TestProcesses_OnlyGitxStartsGit(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module root is not the parent of core/: %v", err)
	}
	fset := token.NewFileSet()
	got := map[string][]string{}
	inGitx := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || n == "node_modules" || n == "frontend" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("parse %s: %v", path, err)
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		starts := processStarts(fset, f)
		if strings.HasPrefix(rel, "core/gitx/") {
			inGitx += len(starts)
			return nil
		}
		if len(starts) > 0 {
			got[rel] = starts
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk must see the runner itself, or it proves nothing.
	if inGitx == 0 {
		t.Fatal("no process start found in core/gitx: the walk is not looking where it should")
	}
	var files []string
	for f := range got {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		want := reviewedPrograms[f]
		for _, p := range got[f] {
			if base := filepath.Base(strings.Trim(p, `"`)); base == "git" || base == "git.exe" {
				t.Errorf("%s starts git (%s): git runs only through core/gitx, under a profile", f, p)
			}
		}
		if !slices.Equal(got[f], want) {
			t.Errorf("%s starts %v; reviewed: %v. git runs only through core/gitx (gitx.Runner.Run, Repo.Run); any other program is added to reviewedPrograms with why", f, got[f], want)
		}
	}
	for f := range reviewedPrograms {
		if _, ok := got[f]; !ok {
			t.Errorf("%s is reviewed but starts nothing now: remove it from reviewedPrograms", f)
		}
	}
}

// TestProcesses_DetectsGitOutsideGitx proves the walk is not vacuous: the
// shapes in which git was started outside core/gitx before are found.
func TestProcesses_DetectsGitOutsideGitx(t *testing.T) {
	src := `package x
import (
	"context"
	run "os/exec"
)
type gitRunner struct{ path string }
func (g *gitRunner) a(ctx context.Context) { _ = run.CommandContext(ctx, g.path, "status") }
func b(bin string) { _ = run.Command(bin, "-c", "core.hooksPath=/dev/null", "commit") }
func c() { _ = &run.Cmd{Path: "/usr/bin/git"} }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := processStarts(fset, f), []string{"g.path", "bin", "exec.Cmd literal"}; !slices.Equal(got, want) {
		t.Fatalf("found %v, want %v", got, want)
	}
}
